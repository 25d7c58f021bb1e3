"""The default paired test, ``test="auto"``: the test exact, or validated, for the unit type.

For each ordered pair (j, l), ``H_jl: theta_j - theta_l <= delta``:

* **both models' units 0/1 and delta = 0: the exact McNemar (sign) test** on the discordant
  units. With ``b = #{i: x_ij = 1, x_il = 0}`` and ``c = #{i: x_ij = 0, x_il = 1}``,

      ``p_jl = P(Binomial(b + c, 1/2) >= b)``   (1 when ``b = 0``),

  exact conditionally on ``b + c``, hence at every n and for every joint law of the pair
  (McNemar 1947; :func:`rankci.evidence.exact_small.mcnemar_pvalue`). For 0/1 scores
  ``theta_j - theta_l = P(10) - P(01)``, so the null is ``P(10) <= P(01)``: the test targets the
  mean difference. Its smallest p-value on a pair with D discordant units is ``2^-D``.
* **otherwise: the plain paired t** (:func:`rankci.evidence.ttest.t_test` with no floor unless
  ``exact_bound_n`` asks for it), ``t = (mean(d) - delta) / (sd(d) / sqrt(n))`` on n - 1 df.
  With ``delta > 0`` on 0/1 units the t is used too: the exact conditional test of a margin on
  the mean difference needs the nuisance ``P(10) + P(01)``, which the sign test conditions away,
  so it has no exact McNemar form (the null ``P(10) - P(01) <= delta`` is not a statement about
  ``b`` given ``b + c``).

Why (``validation/small_sample_rule.py``, ``validation/README.md``, "A small-sample rule that keeps
its power"): on 0/1 item units the plain t's Holm family-wise error reached 0.062 at n = 10 and
the exact McNemar test's stayed <= 0.027 at every n = 5-50; on means of real clusters (ten-item
units of MMLU-Pro and ChemBench) the plain t held (Holm FWER <= 0.040) from n = 5. The old
default, Hoeffding's floor for <= 30 units (``exact_bound_n=30``), gave power about 0 up to 30
units and the plain t at 31: a cliff, not a level guard. There is no threshold in n here, so
no cliff.

The one case the study found where no candidate holds: continuous single-item scores whose shape
differs between tied models (beta designs), where the t's Holm FWER was up to 0.126 at n = 5 and
<= 0.055 from n = 25. Then :func:`auto_test` (and ``t``, ``z``) warn with fewer than
:data:`CONTINUOUS_MIN_UNITS` units and name ``exact_bound_n`` (Hoeffding's bound, valid for every
law of scores in [0, 1]) as the conservative choice. Means of several scores per unit (cluster
and prompt units) do not warn: the study shows the t holds there.

The statistic of a pair is ``b`` (j's wins) where the sign test is used and the t statistic
elsewhere; estimate, se and df are the paired t's for every pair (the estimate equals
``(b - c) / n`` on complete 0/1 units). The rule used is recorded in the result's options as
``test_rule`` ("sign", "t" or "mixed", with ``sign_pairs``, the number of ordered pairs tested
by the sign test).

References
----------
McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions
or percentages. Psychometrika 12(2), 153-157.
Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.
Hoeffding, W. (1963). Probability inequalities for sums of bounded random variables. Journal of
the American Statistical Association 58(301), 13-30.
"""

from __future__ import annotations

import numpy as np

from rankci.data import UnitScores
from rankci.evidence.exact_small import mcnemar_pvalue
from rankci.evidence.moments import MIN_CERTIFYING_UNITS, TestArrays, is_bounded, largest_n
from rankci.evidence.ttest import ROW_BLOCK, t_or_z, t_smallest_pvalue

__all__ = [
    "CONTINUOUS_MIN_UNITS",
    "SINGLE_SCORE_UNITS",
    "auto_test",
    "binary_columns",
    "continuous_few_units_warning",
    "rule_words",
]

#: Below this many units of continuous single-item scores the t's level is not assured
#: (validation/small_sample_rule.py: Holm FWER up to 0.126 at n = 5, <= 0.055 from n = 25).
CONTINUOUS_MIN_UNITS = 25

#: The units that hold one score each (the others are means of several scores).
SINGLE_SCORE_UNITS = ("item", "observation")

_TABLE_CELLS = 4_000_000  # the McNemar p-values of every (b, c) are tabulated up to this many

#: The words of each rule in guarantees and messages.
RULE_WORDS = {
    "sign": "exact McNemar (sign) test on 0/1 units",
    "t": "paired t",
    "mixed": "exact McNemar (sign) test on pairs of 0/1 units, paired t on the others",
}


def binary_columns(x: np.ndarray) -> np.ndarray:
    """Per model: whether every finite unit score is 0 or 1 (a model with no score counts).

    Examples
    --------
    >>> binary_columns(np.array([[0.0, 0.5], [1.0, np.nan]])).tolist()
    [True, False]
    """
    x = np.asarray(x, dtype=float)
    zero_or_one = (x == 0) | (x == 1)
    if x.size and np.isfinite(x.min()) and np.isfinite(x.max()):  # complete: no NaN to allow
        return zero_or_one.all(axis=0)
    return np.all(~np.isfinite(x) | zero_or_one, axis=0)


def rule_words(rule: str) -> str:
    """The rule in words (``"sign"`` -> ``"exact McNemar (sign) test on 0/1 units"``)."""
    return RULE_WORDS[rule]


def continuous_few_units_warning(
    units: UnitScores, n: np.ndarray, binary: np.ndarray, exact_bound_n: int
) -> str | None:
    """The warning for continuous single-item units below :data:`CONTINUOUS_MIN_UNITS`, or None.

    It concerns the pairs tested by the t whose scores are not both 0/1 (``binary``: per model,
    :func:`binary_columns`) with 3 to 24 units; a pair whose units are all under the exact floor
    (``n <= exact_bound_n``, scores in [0, 1]) does not warn.
    """
    binary = np.asarray(binary, dtype=bool)
    n = np.asarray(n)
    if units.unit not in SINGLE_SCORE_UNITS or binary.all() or binary.size < 2:
        return None
    if int(n.min()) >= CONTINUOUS_MIN_UNITS:  # the usual board: no pair is concerned
        return None
    continuous = ~(binary[:, None] & binary[None, :])
    floored = n <= exact_bound_n if is_bounded(units.values) else np.zeros(n.shape, bool)
    concerned = continuous & (n >= MIN_CERTIFYING_UNITS) & (n < CONTINUOUS_MIN_UNITS) & ~floored
    np.fill_diagonal(concerned, False)
    if not concerned.any():
        return None
    fewest = int(n[concerned].min())
    return (
        f"{fewest} {units.unit} units of continuous (not 0/1) scores: below "
        f"{CONTINUOUS_MIN_UNITS} such units the paired t's level is not assured. On tied models "
        "whose score distributions differ in shape (validation/small_sample_rule.py, beta "
        "designs) its Holm family-wise error reached 0.126 at n = 5 (0.073-0.102 at n = 8) "
        "against alpha = 0.05, and stayed <= 0.055 from n = 25. The conservative choice is "
        f"exact_bound_n={CONTINUOUS_MIN_UNITS - 1} (Hoeffding's exact bound for scores in [0, 1], "
        "valid for every law, at a large cost in power); means of several scores per unit "
        "(unit='cluster') are not concerned"
    )


def _sign_pairs(
    x: np.ndarray, binary: np.ndarray, pvalue: np.ndarray, statistic: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The exact McNemar p-values and counts b written over the t's on the pairs of 0/1 models.

    ``b[j, l] = #{i: x_ij = 1, x_il = 0} = (1[X = 1])^T 1[X = 0]`` (missing cells count in
    neither), computed in blocks of :data:`rankci.evidence.ttest.ROW_BLOCK` rows so that only the
    t's M x M arrays are held whole (the same memory as the plain t on a large board).
    """
    if not pvalue.flags.writeable:
        pvalue = pvalue.copy()
    if not statistic.flags.writeable:
        statistic = statistic.copy()
    idx = np.flatnonzero(binary)
    every = idx.size == x.shape[1]
    finite = np.isfinite(x[:, idx])
    ones = (finite & (x[:, idx] == 1)).astype(float)
    zeros = (finite & (x[:, idx] == 0)).astype(float)
    size = x.shape[0] + 1  # b, c <= n: with few units, P(Bin(b + c, 1/2) >= b) is tabulated
    table = (
        mcnemar_pvalue(np.arange(size)[:, None], np.arange(size)[None, :])
        if size * size <= _TABLE_CELLS
        else None
    )
    for r0 in range(0, idx.size, ROW_BLOCK):
        r1 = min(r0 + ROW_BLOCK, idx.size)
        wins = (ones[:, r0:r1].T @ zeros).round().astype(np.int64)  # b of rows r0..r1
        losses = (zeros[:, r0:r1].T @ ones).round().astype(np.int64)  # c
        p = mcnemar_pvalue(wins, losses) if table is None else table[wins, losses]
        if every:  # the usual board, every model 0/1: whole rows
            pvalue[r0:r1] = p
            statistic[r0:r1] = wins
        else:
            block = np.ix_(idx[r0:r1], idx)
            pvalue[block] = p
            statistic[block] = wins
    return pvalue, statistic


def auto_test(units: UnitScores, delta: float, *, exact_bound_n: int = 0) -> TestArrays:
    """The default paired test (:func:`rankci.pairwise_tests` with ``test="auto"``).

    Per ordered pair: the exact McNemar (sign) test ``P(Bin(b + c, 1/2) >= b)`` where both
    models' units are 0/1 and ``delta = 0``, else the plain paired t (see the module docstring).
    ``exact_bound_n`` is the t's opt-in Hoeffding floor (default 0: none); the sign test needs
    none.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> out = auto_test(Scores.from_matrix(x).units(), 0.0)
    >>> float(out.pvalue[0, 1]), out.notes["test_rule"]  # 4 wins of 4 discordant: 2^-4
    (0.0625, 'sign')
    >>> from scipy import stats
    >>> float(stats.binomtest(4, 4, 0.5, alternative="greater").pvalue)
    0.0625
    >>> y = np.array([[0.9, 0.5], [0.8, 0.5], [0.7, 0.6], [0.9, 0.4]] * 8)
    >>> out = auto_test(Scores.from_matrix(y).units(), 0.0)
    >>> out.notes["test_rule"], bool(out.pvalue[0, 1] < 1e-6)  # continuous: the paired t
    ('t', True)
    """
    x = units.values
    estimate, statistic, pvalue, n, se, df = t_or_z(x, delta, False, exact_bound_n)
    m = x.shape[1]
    binary = binary_columns(x)
    n_binary = int(binary.sum())
    n_pairs = m * (m - 1)
    n_sign = n_binary * (n_binary - 1) if delta == 0 else 0  # ordered pairs of 0/1 models
    notes: dict = {}
    if n_sign:
        pvalue, statistic = _sign_pairs(x, binary, pvalue, statistic)
        notes["sign_pairs"] = n_sign
    rule = "sign" if n_sign == n_pairs and n_pairs else ("mixed" if n_sign else "t")
    notes["test_rule"] = rule
    if delta != 0 and n_binary >= 2:
        notes["test_rule_note"] = (
            f"delta = {delta:g} > 0 on 0/1 units: the paired t is used, since the exact McNemar "
            "(sign) test conditions on the discordant units and so cannot test a margin on the "
            "mean difference; the sign test is used only with delta = 0"
        )
    n_max = largest_n(n)
    if n_sign == n_pairs:
        smallest = 1.0 if n_max < MIN_CERTIFYING_UNITS else 0.5**n_max
    else:
        smallest = t_smallest_pvalue(n_max, exact_bound_n, delta, is_bounded(x))
        if n_sign and n_max >= MIN_CERTIFYING_UNITS:
            smallest = min(smallest, 0.5**n_max)
    warning = continuous_few_units_warning(units, n, binary, exact_bound_n)
    if warning is not None:
        notes["small_sample_warning"] = warning
    return TestArrays(estimate, statistic, pvalue, n, se, df, smallest, notes)
