"""Family-wise error control: Holm's step-down and Bonferroni.

Both are valid under any dependence between the p-values, which is what rank intervals built from
pairwise tests on shared items need (the pairwise statistics are strongly correlated).

References
----------
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal of
Statistics 6(2), 65-70.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from rankci._base import RankciWarning, check_alpha, check_choice
from rankci.certify.certification import Certification
from rankci.evidence.auto import rule_words
from rankci.evidence.moments import MIN_CERTIFYING_UNITS
from rankci.evidence.pairwise import pairwise_tests
from rankci.evidence.resampling import default_reps
from rankci.evidence.ttest import TailPValues
from rankci.method import COVERAGES, UNIT_SCOPE
from rankci.registry import TEST_REGISTRY

if TYPE_CHECKING:
    from rankci.data import Scores
    from rankci.evidence.pairwise import Pairwise
    from rankci.method import MethodSpec

#: The procedures of this module (``multiplicity=``).
PROCEDURES = ("holm", "bonferroni")

__all__ = [
    "PROCEDURES",
    "adjust_pvalues",
    "certifiable_pvalues",
    "certify_holm",
    "certify_tests",
    "explain_nothing_certified",
    "explain_pvalues",
    "plain_pvalues",
    "units_needed",
    "nothing_certified_message",
    "reject",
    "rejections_per_row",
]


def adjust_pvalues(pvalues: np.ndarray, multiplicity: str = "holm") -> np.ndarray:
    """Adjusted p-values, as R's ``p.adjust``; NaN entries are not part of the family.

    With K finite p-values sorted as p_(1) <= ... <= p_(K):

    * Bonferroni: ``min(1, K p_(i))``.
    * Holm: ``max_{k <= i} min(1, (K - k + 1) p_(k))``.

    A hypothesis is rejected at level alpha when its adjusted p-value is <= alpha.

    Parameters
    ----------
    pvalues : array_like
        Any shape (for example M x M with NaN on the diagonal).
    multiplicity : {"holm", "bonferroni"}

    Returns
    -------
    ndarray
        The adjusted p-values, the shape of ``pvalues``; NaN where ``pvalues`` is NaN.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70. R Core Team, ``stats::p.adjust``.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    check_choice("multiplicity", multiplicity, PROCEDURES)
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    values = p[finite]
    k = values.size
    if k == 0:
        return out
    if multiplicity == "bonferroni":
        out[finite] = np.minimum(1.0, k * values)
        return out
    order = np.argsort(values, kind="stable")
    stepped = np.minimum(1.0, (k - np.arange(k)) * values[order])
    adjusted = np.empty(k)
    adjusted[order] = np.maximum.accumulate(stepped)
    out[finite] = adjusted
    return out


def reject(pvalues: np.ndarray, alpha: float, multiplicity: str = "holm") -> np.ndarray:
    """Which hypotheses the procedure rejects at family-wise level ``alpha``.

    Holm rejects ``H_(1), ..., H_(r)`` where r is the largest index with
    ``p_(i) <= alpha / (K - i + 1)`` for every ``i <= r``. Only p-values <= alpha can be rejected,
    so only those are sorted (the family size K still counts every finite p-value); the result is
    the set ``{p <= p_(r)}``.

    Parameters
    ----------
    pvalues : array_like
    alpha : float
    multiplicity : {"holm", "bonferroni"}

    Returns
    -------
    ndarray of bool, the shape of ``pvalues``; False where the p-value is NaN.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.

    Examples
    --------
    >>> reject([0.01, 0.04, 0.03], 0.05).tolist()
    [True, False, False]
    """
    method = multiplicity
    check_choice("multiplicity", method, PROCEDURES)
    alpha = check_alpha(alpha)
    if isinstance(pvalues, TailPValues):  # p-values not yet computed: the same decisions
        return _reject_tail(pvalues, alpha, method)
    p = np.asarray(pvalues, dtype=float)
    finite = np.isfinite(p)
    k = int(finite.sum())
    if method == "bonferroni":
        return finite & (p * k <= alpha)
    # Every p-value <= alpha / K passes its own threshold (the thresholds only grow), so those
    # come first in the sorted order and pass: only the ones between alpha / K and alpha are
    # sorted, which gives the same r with far less sorting on a large board.
    with np.errstate(invalid="ignore"):
        sure = int(np.count_nonzero(p <= alpha / k)) if k else 0
        rest = p[(p > alpha / k) & (p <= alpha)] if k else p[:0]
    if sure + rest.size == 0:
        return np.zeros(p.shape, dtype=bool)
    candidates = np.sort(rest)
    passes = candidates <= alpha / (k - sure - np.arange(candidates.size))
    n_rejected = sure + (candidates.size if passes.all() else int(np.argmin(passes)))
    if n_rejected == 0:
        return np.zeros(p.shape, dtype=bool)
    # Tied p-values get the same decision (a tie with p_(r) passes its later, larger threshold),
    # so the rejected set is exactly {p <= p_(r)}.
    # (when only the sure ones are rejected, {p <= alpha / K} is that same set)
    cutoff = candidates[n_rejected - sure - 1] if n_rejected > sure else alpha / k
    return finite & (p <= cutoff)


def _reject_tail(p: TailPValues, alpha: float, method: str) -> np.ndarray:
    """:func:`reject` on p-values computed as read: the same decisions, asking ``p`` only
    which p-values are at most a threshold (:meth:`~rankci.evidence.ttest.TailPValues.at_most`
    computes the tail only near it) and the values of the few that decide.

    With K hypotheses, s p-values <= alpha / K (all rejected) and c more <= alpha, Holm's
    threshold at the candidates' positions grows up to ``T = alpha / (K - s - c + 1)``: a
    candidate above T fails wherever it stands. So the values needed are those <= min(T, alpha):
    if they all pass, the next candidate (above T) is the first failure. A bound c' >= c gives a
    larger T, so the same decisions (c' counts the statistics near alpha's too: no tail needed).
    """
    k = p.count_finite()
    if k == 0:
        return np.zeros(p.shape, dtype=bool)
    if method == "bonferroni":
        return p.at_most(alpha / k, lambda values: values * k <= alpha)
    sure_mask = p.at_most(alpha / k)
    sure = int(np.count_nonzero(sure_mask))
    c = min(p.count_at_most_bound(alpha), k) - sure
    if c <= 0:
        return sure_mask
    top = min(alpha, alpha / (k - sure - c + 1))
    head = (p.at_most(top) & ~sure_mask).ravel().nonzero()[0]  # the first candidates by p
    values = p.values(head)
    candidates = np.sort(values)
    passes = candidates <= alpha / (k - sure - np.arange(candidates.size))
    n_rejected = sure + (candidates.size if passes.all() else int(np.argmin(passes)))
    if n_rejected > sure:  # {p <= cutoff}: the sure ones and the candidates up to the cutoff
        cutoff = candidates[n_rejected - sure - 1]
        sure_mask.ravel()[head[values <= cutoff]] = True
    return sure_mask


def rejections_per_row(
    pvalues: np.ndarray, alpha: float, multiplicity: str = "holm"
) -> np.ndarray:
    """Number of rejections when each row of ``pvalues`` is its own family (NaN excluded).

    Used by the marginal rank intervals, where each model's comparisons form one family. Holm's
    step-down runs on all rows at once: rows are sorted, and the count is the length of the leading
    run of ``p_(i) <= alpha / (K_row - i + 1)``.

    Parameters
    ----------
    pvalues : array_like (R, K)
        One family per row; NaN entries are not part of their row's family.
    alpha : float
    multiplicity : {"holm", "bonferroni"}

    Returns
    -------
    ndarray (R,) of int

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.

    Examples
    --------
    >>> import numpy as np
    >>> rejections_per_row(np.array([[0.001, 0.02], [0.2, np.nan]]), 0.05).tolist()
    [2, 0]
    """
    method = multiplicity
    check_choice("multiplicity", method, PROCEDURES)
    alpha = check_alpha(alpha)
    p = np.atleast_2d(np.asarray(pvalues, dtype=float))
    sizes = np.isfinite(p).sum(axis=1)
    if method == "bonferroni":
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.isfinite(p) & (p * sizes[:, None] <= alpha)).sum(axis=1)
    ordered = np.sort(np.where(np.isfinite(p), p, np.inf), axis=1)
    steps = sizes[:, None] - np.arange(p.shape[1])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        passes = (ordered <= alpha / steps) & (steps > 0)
    failed = ~passes
    first_failure = np.where(failed.any(axis=1), failed.argmax(axis=1), p.shape[1])
    return first_failure


# ---------------------------------------------------------------------- rank intervals
def _procedure_of(pairwise: Pairwise, multiplicity: str) -> dict:
    return {
        "test": pairwise.test,
        "unit": pairwise.unit,
        "delta": pairwise.delta,
        "multiplicity": multiplicity,
        "missing": pairwise.missing,
        **({"test_options": dict(pairwise.options)} if pairwise.options else {}),
    }


def describe_test(pairwise: Pairwise) -> str:
    """The paired test in words: ``"paired t tests"``; for ``auto``, the rule it used.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> describe_test(rankci.pairwise_tests(rankci.Scores.from_matrix(x).units()))
    'paired tests (test auto: exact McNemar (sign) test on 0/1 units)'
    """
    rule = pairwise.options.get("test_rule")
    if pairwise.test == "auto" and rule is not None:
        return f"paired tests (test auto: {rule_words(rule)})"
    return f"paired {pairwise.test} tests"


def _test_name(pairwise: Pairwise) -> str:
    """``"t test"``; for ``auto``, ``"auto test (exact McNemar (sign) test on 0/1 units)"``."""
    rule = pairwise.options.get("test_rule")
    if pairwise.test == "auto" and rule is not None:
        return f"auto test ({rule_words(rule)})"
    return f"{pairwise.test} test"


def caveats_of(pairwise: Pairwise) -> str:
    """What the test reported beside its p-values (a small-sample warning, the rule's note)."""
    out = ""
    if pairwise.options.get("test_rule_note"):
        out += f"; {pairwise.options['test_rule_note']}"
    if pairwise.options.get("small_sample_warning"):
        out += f"; warning: {pairwise.options['small_sample_warning']}"
    return out


def _evidence_words(pairwise: Pairwise, multiplicity: str) -> str:
    margin = f" with indifference margin {pairwise.delta:g}" if pairwise.delta > 0 else ""
    return (
        f"{multiplicity.capitalize()} over one-sided {describe_test(pairwise)}{margin} on "
        f"{pairwise.n_units} {pairwise.unit} units; inference extends to "
        f"{UNIT_SCOPE[pairwise.unit]}{caveats_of(pairwise)}"
    )


def _uses_t(pairwise: Pairwise) -> bool:
    """Whether the pairs' p-values come from the t (or z): t, z, or auto outside 0/1 pairs."""
    if pairwise.test == "auto":
        return pairwise.options.get("test_rule") == "t"
    return pairwise.test in ("t", "z")


def _sign_discordant(pairwise: Pairwise) -> np.ndarray | None:
    """D = b + c of every pair where ``auto`` used the sign test on all pairs, else None."""
    sign = pairwise.test == "sign" or (
        pairwise.test == "auto" and pairwise.options.get("test_rule") == "sign"
    )
    if not sign:
        return None
    wins = np.nan_to_num(np.asarray(pairwise.statistic, dtype=float))  # b of every pair
    return wins + wins.T


def first_threshold(n_hypotheses: int, alpha: float, coverage: str = "simultaneous") -> float:
    """The smallest p-value threshold Holm (and Bonferroni) use: ``alpha / K``.

    Simultaneous coverage: K = M(M - 1) ordered pairs at level alpha. Marginal: each model's
    family of M - 1 hypotheses at alpha / 2. A p-value above it can never be rejected.

    Examples
    --------
    >>> first_threshold(6, 0.05)
    0.008333333333333333
    """
    if coverage == "marginal":
        m = (1 + int(np.sqrt(1 + 4 * n_hypotheses))) // 2
        return alpha / 2 / max(m - 1, 1)
    return alpha / max(n_hypotheses, 1)


def certifiable_pvalues(pairwise: Pairwise) -> np.ndarray:
    """The p-values Holm decides on: 1 for a pair with fewer than 3 units (NaN stays NaN).

    Two units never certify anything (:data:`rankci.evidence.moments.MIN_CERTIFYING_UNITS`),
    whatever the test and alpha: their p-values (at best 1/4 for the exact tests) are kept in
    the evidence but not used to certify.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> units = rankci.Scores.from_matrix(np.array([[1.0, 0.0], [1.0, 0.0]])).units()
    >>> pairwise = rankci.pairwise_tests(units, "t")
    >>> float(pairwise.pvalue[0, 1]), float(certifiable_pvalues(pairwise)[0, 1])
    (0.25, 1.0)
    """
    p = np.asarray(pairwise.pvalue, dtype=float)
    few = np.asarray(pairwise.n) < MIN_CERTIFYING_UNITS
    return np.where(few & ~np.isnan(p), 1.0, p)


def _certifiable_source(pairwise: Pairwise) -> np.ndarray | TailPValues:
    """:func:`certifiable_pvalues`, or the p-values not yet computed when there is nothing to
    set to 1 (every pair has every unit, at least 3): :func:`reject` reads only what it needs."""
    source = pairwise.pvalue_source()
    if isinstance(source, TailPValues) and source.units >= MIN_CERTIFYING_UNITS:
        return source
    return certifiable_pvalues(pairwise)


def _warn_if_unreachable(pairwise: Pairwise, alpha: float, coverage: str) -> None:
    """Warn when no p-value of this test can pass Holm's first threshold on this board.

    Resampling tests announce their own resolution (:func:`rankci.pairwise_tests`).
    """
    entry = TEST_REGISTRY.get(pairwise.test)  # None for evidence of a model (mixed contrasts)
    if entry is not None and entry.random:
        return
    source = pairwise.pvalue_source()
    if isinstance(source, TailPValues):
        k = source.count_finite()
    else:
        k = int(np.isfinite(source).sum())
    threshold = first_threshold(k, alpha, coverage)
    smallest = float(pairwise.smallest_pvalue)
    if k == 0 or smallest <= threshold:
        return
    n = int(np.max(pairwise.n, initial=0))
    extra = ""
    if n < 2:
        need = "at least 2 units scored by both models of a pair"
    elif n < MIN_CERTIFYING_UNITS and smallest >= 1.0:
        need = (
            f"at least {MIN_CERTIFYING_UNITS} units scored by both models of a pair (two units "
            "never certify anything)"
        )
    else:  # sign and exact signed-rank: 2^-n; t and z below exact_bound_n: ((1 + delta) / 2)^n
        uses_t = _uses_t(pairwise)
        base = (1.0 + pairwise.delta) / 2.0 if uses_t else 0.5
        units = int(np.ceil(np.log(threshold) / np.log(base)))
        floor = int(pairwise.options.get("exact_bound_n", 0))
        if uses_t:  # above exact_bound_n the floor no longer applies
            units = min(units, floor + 1)
        need = f"at least {units} {pairwise.unit} units"
        if uses_t and units <= floor:
            extra = (
                f" With the opt-in exact floor for few units, {units} units suffice only if one "
                f"model wins every unit by the whole score range; realistic differences need more "
                f"than {floor} units, or exact_bound_n=0 (the default: the plain t test)."
            )
        elif uses_t and floor and n <= floor:
            extra = (
                f" What blocks it is the opt-in exact floor for few units (exact_bound_n={floor}); "
                f"exact_bound_n=0 (the default) gives the plain t test, whose level is asymptotic "
                "(the floor's guarantee holds for every law of bounded scores)."
            )
        elif not uses_t and pairwise.test in ("auto", "sign"):
            need = (
                f"a pair with at least {units} discordant {pairwise.unit} units (scored 1 by one "
                "model and 0 by the other), all won by the same model"
            )
            extra = (
                " The exact McNemar (sign) test's p-value on a pair with D discordant units is "
                f"at least 2^-D, and with {n} units D <= {n}."
            )
    warnings.warn(
        f"with {n} {pairwise.unit} units the smallest attainable p-value of the "
        f"{_test_name(pairwise)} is {smallest:.3g}, above {threshold:.3g}, the first Holm "
        f"threshold for {k} hypotheses at alpha = {alpha:g} ({coverage} coverage): nothing can "
        f"be certified. That needs {need} for this alpha, or a larger alpha.{extra}",
        RankciWarning,
        stacklevel=3,
    )


def nothing_certified_message(
    n_units: int,
    unit: str,
    evidence: str,
    bar: str,
    need: str,
    *,
    floor: int = 0,
    floor_blocks: bool = False,
    test: str = "auto",
    alpha: float | None = None,
) -> str:
    """The one sentence every certifier gives when it certifies nothing (library keywords).

    ``evidence`` is the strongest evidence on the board (the smallest p-value, or the largest
    |t|), ``bar`` what it had to pass, ``need`` what would be needed. When the exact floor for
    few units (``exact_bound_n``) is what blocks certification, the sentence names it and its
    cost; :func:`rankci.commands.messages.cli_message` turns the keywords into flags.

    Examples
    --------
    >>> nothing_certified_message(14, "cluster", "p = 0.04", "0.008", "about 40 units")[:40]
    'nothing is certified: with 14 cluster un'
    """
    text = (
        f"nothing is certified: with {n_units} {unit} units the strongest evidence, {evidence}, "
        f"does not pass {bar}; that needs {need}"
        + (f", or a larger alpha (now alpha={alpha:g})" if alpha is not None else "")
        + "."
    )
    plain = "t" if test == "auto" else test  # the floor only ever applies to the t (or z)
    if floor_blocks:
        text += (
            f" What blocks it is the opt-in exact floor for few units (exact_bound_n={floor}: "
            f"pairs with at most {floor} units get Hoeffding's bound): exact_bound_n=0 (the "
            f"default, the plain {plain} test) would certify here. The cost: the floor's "
            f"guarantee holds for every law of bounded scores, while the plain {plain} test's "
            "level is asymptotic (it rests on the unit means being close to normal)."
        )
    elif floor and n_units <= floor:
        text += (
            f" The opt-in exact floor for few units applies (exact_bound_n={floor}); "
            f"exact_bound_n=0 (the default) gives the plain {plain} test, whose level is "
            "asymptotic, not valid for every law."
        )
    return text


def units_needed(needed: int, have: int, what: str) -> str:
    """What would be needed, in words: about ``needed`` units (``what``), or larger differences.

    Beyond 100 times the units there are, the differences look like ties: larger differences.

    Examples
    --------
    >>> units_needed(90, 30, "item units")
    'about 90 item units at these differences, or larger differences'
    """
    if needed > 100 * max(have, 1):
        return f"larger differences (these look like ties: more than 100 times the {what})"
    return f"about {needed} {what} at these differences, or larger differences"


def plain_pvalues(pairwise: Pairwise) -> np.ndarray | None:
    """The p-values of the plain t (or z) test, without the exact floor; None for other tests.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = np.array([[0.9, 0.5], [0.8, 0.5], [0.7, 0.6], [0.9, 0.4]])
    >>> pw = rankci.pairwise_tests(rankci.Scores.from_matrix(x).units("observation"), "t",
    ...                            exact_bound_n=30)  # the opt-in floor
    >>> bool(plain_pvalues(pw)[0, 1] < pw.pvalue[0, 1])  # the floor raised it
    True
    """
    if not _uses_t(pairwise) or pairwise.statistic is None:
        return None
    from scipy import stats

    stat = np.asarray(pairwise.statistic, dtype=float)
    if pairwise.test == "z" or pairwise.df is None:
        return stats.norm.sf(stat)
    return stats.t.sf(stat, np.asarray(pairwise.df, dtype=float))


def explain_nothing_certified(
    pairwise: Pairwise,
    alpha: float,
    coverage: str,
    *,
    warn: bool = True,
    n_hypotheses: int | None = None,
    prefix: str = "",
) -> str | None:
    """Why a board certified nothing: the evidence against Holm's first threshold, the need.

    Returns the explanation (in library keywords), and warns it as a
    :class:`~rankci.RankciWarning` unless ``warn=False``; None when the test cannot reach the
    threshold at all (that warning comes from :func:`certify_holm` before testing) or when
    there is nothing to test. ``n_hypotheses`` is the size of the family when the board is part
    of a larger one (several benchmarks in one family); ``prefix`` starts the message.
    """
    p = certifiable_pvalues(pairwise)
    finite = np.isfinite(p)
    if not finite.any():
        return None
    k = int(finite.sum()) if n_hypotheses is None else int(n_hypotheses)
    if float(pairwise.smallest_pvalue) > first_threshold(k, alpha, coverage):
        return None  # already explained by _warn_if_unreachable
    plain = plain_pvalues(pairwise)
    discordant = _sign_discordant(pairwise)
    return explain_pvalues(
        p[finite],
        np.asarray(pairwise.n)[finite],
        unit=pairwise.unit,
        test=pairwise.test,
        alpha=alpha,
        coverage=coverage,
        n_hypotheses=k,
        floor=int(pairwise.options.get("exact_bound_n", 0)) if _uses_t(pairwise) else 0,
        plain=None if plain is None else plain[finite],
        statistic=None if plain is None else np.asarray(pairwise.statistic)[finite],
        wins=None if discordant is None else np.asarray(pairwise.statistic)[finite],
        discordant=None if discordant is None else discordant[finite],
        warn=warn,
        prefix=prefix,
        stacklevel=4,
    )


def explain_pvalues(
    pvalues: np.ndarray,
    n: np.ndarray,
    *,
    unit: str,
    test: str,
    alpha: float,
    coverage: str = "simultaneous",
    n_hypotheses: int | None = None,
    floor: int = 0,
    plain: np.ndarray | None = None,
    statistic: np.ndarray | None = None,
    wins: np.ndarray | None = None,
    discordant: np.ndarray | None = None,
    warn: bool = True,
    prefix: str = "",
    stacklevel: int = 3,
) -> str:
    """The explanation of a Holm family that rejected nothing, from its hypotheses' arrays.

    ``pvalues`` (as certified, with the exact floor) and ``n`` (units per hypothesis) are flat;
    ``plain`` and ``statistic`` are the t (or z) test's p-values without the floor and its
    statistics, where the test has them (they size the need and decide whether the floor
    ``exact_bound_n`` is what blocks). ``wins`` and ``discordant`` are the exact McNemar (sign)
    test's ``b`` and ``D = b + c`` per hypothesis, where every hypothesis was tested by it
    (``test="auto"`` on 0/1 units, or ``"sign"``): its p-value on a pair is at least ``2^-D``,
    so the need is said in discordant units. Used by :func:`explain_nothing_certified` and by
    the certifiers whose families are not one board (``rankci.check_claims``).

    Examples
    --------
    >>> explain_pvalues(np.array([0.2]), np.array([14]), unit="item", test="t", alpha=0.05,
    ...                 warn=False)[:45]
    'nothing is certified: with 14 item units the '
    """
    pvalues = np.asarray(pvalues, dtype=float)
    n_arr = np.asarray(n)
    k = pvalues.size if n_hypotheses is None else int(n_hypotheses)
    threshold = first_threshold(k, alpha, coverage)
    smallest = float(pvalues.min()) if pvalues.size else 1.0
    m = int(n_arr.max(initial=0))
    floor = floor if test in ("auto", "t", "z") else 0
    floor_blocks = False
    if floor and m <= floor and plain is not None:
        usable = n_arr >= MIN_CERTIFYING_UNITS
        floor_blocks = bool(
            usable.any() and np.nanmin(np.where(usable, plain, np.nan)) <= threshold
        )
    need = "more units or larger differences"
    sign_words = ""
    if discordant is not None and wins is not None and pvalues.size:
        need, sign_words = _sign_need(
            np.asarray(wins, dtype=float), np.asarray(discordant, dtype=float), m, unit, threshold
        )
    elif floor_blocks:
        need = f"more than {floor} {unit} units (where the floor stops), or larger differences"
    elif statistic is not None and m >= MIN_CERTIFYING_UNITS and np.isfinite(statistic).any():
        from scipy import stats

        t_max = float(np.nanmax(statistic))
        if t_max > 0:  # the statistic grows like sqrt(n) at fixed differences
            units = int(np.ceil(m * (float(stats.norm.isf(threshold)) / t_max) ** 2)) + 1
            if floor and m <= floor:
                units = max(units, floor + 1)
            if units > m:
                need = units_needed(units, m, f"{unit} units")
    message = prefix + nothing_certified_message(
        m,
        unit,
        f"the smallest p-value of the {test} tests, {smallest:.3g}",
        f"{threshold:.3g}, the first Holm threshold for {k} hypotheses at "
        f"alpha = {alpha:g} ({coverage} coverage)",
        need,
        floor=floor,
        floor_blocks=floor_blocks,
        test=test,
        alpha=alpha,
    ) + sign_words
    if warn:
        warnings.warn(message, RankciWarning, stacklevel=stacklevel)
    return message


def _sign_need(
    wins: np.ndarray, discordant: np.ndarray, n: int, unit: str, threshold: float
) -> tuple[str, str]:
    """What the exact McNemar (sign) test would need, and the words on its smallest p-value.

    A pair with D discordant units has p >= 2^-D (every discordant unit won by one model), so
    a p-value <= ``threshold`` needs ``D >= k = ceil(log2(1 / threshold))``. When the most
    discordant pair has fewer, the need is k discordant units (about ``n k / D_max`` units at
    the board's rate of discordance); otherwise the sign statistic ``z = (2b - D) / sqrt(D)``
    grows like sqrt(n) and the need is ``n (z_threshold / z_max)^2`` units.
    """
    from scipy import stats

    k = int(np.ceil(np.log2(1.0 / threshold)))
    d_max = int(np.nanmax(discordant, initial=0))
    words = (
        f" The exact McNemar (sign) test's p-value on a pair with D discordant units (one model "
        f"1, the other 0) is at least 2^-D; the most discordant pair has D = {d_max} "
        f"(2^-{d_max} = {0.5 ** d_max:.3g})"
    )
    if d_max < k:
        words += f", and a p-value <= {threshold:.3g} needs D >= {k}."
        if d_max > 0:
            more = int(np.ceil(n * k / d_max))
            need = (
                f"a pair with at least {k} discordant {unit} units, all won by one model "
                f"(about {more} {unit} units at this rate of discordance), or larger differences"
            )
        else:
            need = (
                f"a pair with at least {k} discordant {unit} units, all won by one model (no "
                "pair has any: the models agree on every unit)"
            )
        return need, words
    words += "."
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(discordant > 0, (2.0 * wins - discordant) / np.sqrt(discordant), np.nan)
    z_max = float(np.nanmax(z)) if np.isfinite(z).any() else 0.0
    need = "more units or larger differences"
    if z_max > 0 and n >= MIN_CERTIFYING_UNITS:
        units = int(np.ceil(n * (float(stats.norm.isf(threshold)) / z_max) ** 2)) + 1
        if units > n:
            need = units_needed(units, n, f"{unit} units")
    return need, words


def _note_nothing_certified(common: dict, message: str | None) -> None:
    """Record the explanation of an empty certification in the result's ``details``."""
    if message is not None:
        common["details"] = {"nothing_certified": message}


def certify_holm(
    pairwise: Pairwise,
    alpha: float = 0.05,
    coverage: str = "simultaneous",
    multiplicity: str = "holm",
) -> Certification:
    """Certified dominances (simultaneous) or per-model bounds (marginal) from paired p-values.

    * Simultaneous (Algorithm 2 of Al Mohamad et al.): one family of all M(M-1) ordered pairs at
      family-wise level alpha, ``D = {(j, l) : H_jl rejected}``. With probability >= 1 - alpha
      every rejection is true, hence so is its transitive closure, and then every interval
      contains its model's true rank and every tier statement holds (Neuhof and Benjamini 2024,
      Thm. 1).
    * Marginal (Algorithm 1): for each model j, the family ``{H_lj : l != j}`` at alpha/2 gives
      ``L_j = 1 + #rejections`` and ``{H_jl : l != j}`` at alpha/2 gives
      ``U_j = M - #rejections``; each interval covers its model's true rank with probability
      >= 1 - alpha (Holm 2013), not jointly.

    Parameters
    ----------
    pairwise : Pairwise
        One-sided p-values for every ordered pair (:func:`rankci.pairwise_tests`).
    alpha : float, default 0.05
    coverage : {"simultaneous", "marginal"}
    multiplicity : {"holm", "bonferroni"}

    Returns
    -------
    Certification

    References
    ----------
    Holm, S. (2013). Confidence intervals for ranks. Unpublished manuscript.
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Neuhof, B. and Benjamini, Y. (2024). Confidence intervals for ranks: theory and practice.

    Examples
    --------
    >>> import rankci
    >>> units = rankci.datasets.load_chembench().units("item", "complete")
    >>> c = certify_holm(rankci.pairwise_tests(units), 0.05)
    >>> int(c.dominance.sum()) > 0
    True
    """
    alpha = check_alpha(alpha)
    check_choice("coverage", coverage, COVERAGES)
    check_choice("multiplicity", multiplicity, PROCEDURES)
    _warn_if_unreachable(pairwise, alpha, coverage)
    common = dict(
        models=pairwise.models,
        score=np.asarray(pairwise.score, dtype=float),
        coverage=coverage,
        alpha=alpha,
        evidence=_evidence_words(pairwise, multiplicity),
        procedure=_procedure_of(pairwise, multiplicity),
        n_units=pairwise.n_units,
        excluded=dict(pairwise.excluded),
        pairwise=pairwise,
    )
    if coverage == "simultaneous":  # two units never certify anything
        dominance = reject(_certifiable_source(pairwise), alpha, multiplicity)
        if not dominance.any():
            _note_nothing_certified(common, explain_nothing_certified(pairwise, alpha, coverage))
        return Certification(dominance=dominance, lower=None, upper=None, **common)
    m = pairwise.n_models
    pvalue = certifiable_pvalues(pairwise)  # two units never certify anything
    better_than_j = rejections_per_row(pvalue.T, alpha / 2, multiplicity)
    worse_than_j = rejections_per_row(pvalue, alpha / 2, multiplicity)
    if not better_than_j.any() and not worse_than_j.any():  # every interval is [1, M]
        _note_nothing_certified(common, explain_nothing_certified(pairwise, alpha, coverage))
    return Certification(
        dominance=None, lower=1 + better_than_j, upper=m - worse_than_j, **common
    )


def certify_tests(
    scores: Scores, spec: MethodSpec, rng: int | np.random.Generator | None = None
) -> Certification:
    """The certifier of ``multiplicity="holm"`` and ``"bonferroni"`` in the registry.

    Units (``spec.unit``, ``spec.missing``), the paired test ``spec.test`` with its options
    (a resampling test without ``reps`` gets :func:`rankci.evidence.resampling.default_reps`),
    then :func:`certify_holm`.

    Examples
    --------
    >>> import rankci
    >>> from rankci.method import MethodSpec
    >>> c = certify_tests(rankci.datasets.load_chembench(), MethodSpec(multiplicity="bonferroni"))
    >>> c.procedure["multiplicity"]
    'bonferroni'
    """
    units = scores.units(spec.unit, spec.missing)
    options = dict(spec.test_options)
    if TEST_REGISTRY[spec.test].random and "reps" not in options:
        options["reps"] = default_reps(units.n_models, spec.alpha, spec.coverage)
    pairwise = pairwise_tests(units, spec.test, delta=spec.delta, rng=rng, **options)
    return certify_holm(pairwise, spec.alpha, spec.coverage, spec.multiplicity)

