"""Paired tests for every ordered pair of models: the evidence behind rank intervals.

For each ordered pair (j, l) the null hypothesis is ``H_jl: theta_j - theta_l <= delta`` (delta >= 0
is the indifference margin) against ``theta_j - theta_l > delta``; rejecting ``H_jl`` certifies
"j is better than l". The result holds M x M arrays, row = j, column = l, NaN on the diagonal.

Each test is one module of this package, listed in :data:`rankci.registry.TEST_REGISTRY` with
its options and their allowed values; :func:`pairwise_tests` dispatches through it.

All-pairs statistics come from matrix products over the units x models matrix (one covariance, or
masked cross-products when cells are missing), never from a Python loop over pairs. The rank-based
and resampling tests loop over models (M iterations), each vectorised over the other models.

Tests (``d = x_j - x_l`` per unit, n units):

=============  ==============================================================  ================
test           statistic and reference distribution                            targets
=============  ==============================================================  ================
auto           per pair: the exact McNemar (sign) test where both models'      mean difference
               units are 0/1 and delta = 0, else the plain paired t (default)
t              ``(mean(d) - delta) / (sd(d)/sqrt(n))``, Student t, n - 1 df     mean difference
z              the same statistic, standard normal                             mean difference
wilcoxon       signed-rank statistic of ``d - delta`` (zeros dropped),          pseudo-median
               exact for n <= 50 without ties, else normal with tie correction
yuen           Yuen's dependent-groups trimmed-mean t (20 % trimming)          trimmed means
sign           exact binomial (McNemar) test on discordant units; binary       mean difference
               unit scores and delta = 0 only
bootstrap      centred paired bootstrap of mean(d) (items resampled jointly)   mean difference
permutation    sign-flip (within-unit label swap) test of mean(d - delta)       mean difference
=============  ==============================================================  ================

References
----------
Yuen, K. K. (1974). The two-sample trimmed t for unequal population variances. Biometrika 61.
Wilcox, R. R. (2022). Introduction to Robust Estimation and Hypothesis Testing, 5th ed., Sec. 5.9.
Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from rankci._base import (
    DeferredField,
    LazyModule,
    RankciWarning,
    check_choice,
    check_nonnegative,
    peek,
)
from rankci.data import UnitScores
from rankci.evidence.auto import (
    CONTINUOUS_MIN_UNITS,
    binary_columns,
    continuous_few_units_warning,
)
from rankci.evidence.moments import bounded_pvalue, is_bounded, largest_n, studentize
from rankci.evidence.ttest import MeanDifferences, TailPValues, t_or_z, t_smallest_pvalue
from rankci.method import TESTS
from rankci.registry import TEST_REGISTRY

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "Pairwise",
    "pairwise_tests",
    "signed_margin_tests",
    "bounded_pvalue",
    "studentize",
    "SMALL_N",
    "TESTS",
    "RankciWarning",
]

#: the tests :func:`signed_margin_tests` runs (a margin of either sign; ``auto`` is the t there
#: unless the margin is 0 and the units 0/1, where :func:`pairwise_tests` gives the sign test)
SIGNED_MARGIN_TESTS = ("auto", "t", "z")

#: Designs with at most this many units get an explanation when nothing is certified.
SMALL_N = 30

#: Every option of every test (a keyword no test takes is a TypeError).
_KNOWN_OPTIONS = frozenset(name for entry in TEST_REGISTRY.values() for name in entry.option_names)


@dataclass(frozen=True, repr=False, eq=False)
class Pairwise:
    """One-sided evidence for every ordered pair of models.

    Attributes
    ----------
    models : tuple of str
    test : str
    delta : float
        Indifference margin of ``H_jl: theta_j - theta_l <= delta``.
    estimate : ndarray (M, M)
        Estimated difference ``theta_j - theta_l`` on the units the pair shares (difference of
        trimmed means for ``yuen``, mean difference otherwise). On large boards the t and z tests
        compute it on its first read (:class:`rankci.evidence.ttest.MeanDifferences`).
    statistic : ndarray (M, M)
        The test statistic for ``H_jl`` (t, z, signed-rank sum W+, count of j-only wins, ...).
    pvalue : ndarray (M, M)
        One-sided p-value for ``H_jl``; NaN on the diagonal. The t and z tests compute it on
        its first read (:class:`rankci.evidence.ttest.TailPValues`, a
        :class:`~rankci._base.DeferredField`): Holm reads only what it needs of it
        (:func:`pvalue_source`), every other reader the whole array.
    n : ndarray (M, M) of int
        Units used for the pair.
    se, df : ndarray (M, M) or None
        Standard error of the estimate and degrees of freedom, where the test has them.
    unit, missing : str
        How the scores were aggregated and how missing cells were handled.
    score : ndarray (M,)
        Each model's mean unit score (over the units it has).
    n_units : int
        Units in the analysis.
    options : dict
        Test options actually used (trim, reps, zero_method, ...), and what the test reports
        beside them: ``test_rule`` (``auto``: "sign", "t" or "mixed", the rule its pairs were
        tested by), ``small_sample_warning`` (continuous single-item units below 25 units).
    smallest_pvalue : float
        The smallest p-value this test can give on these units (or resamples): ``2^-n`` for
        the sign and exact signed-rank tests, ``1 / (reps + 1)`` for resampling, 1 with fewer
        than 2 units, 0 where it is not bounded (t, z, Yuen). The certifiers warn when it cannot
        pass the first Holm threshold.
    excluded : dict
        What was left out before testing, and why.
    """

    models: tuple[str, ...]
    test: str
    delta: float
    estimate: np.ndarray = DeferredField()
    statistic: np.ndarray
    pvalue: np.ndarray = DeferredField()
    n: np.ndarray
    se: np.ndarray | None = None
    df: np.ndarray | None = None
    unit: str = "item"
    missing: str = "complete"
    options: dict = field(default_factory=dict)
    excluded: dict = field(default_factory=dict)
    score: np.ndarray | None = None
    n_units: int = 0
    smallest_pvalue: float = 0.0

    @property
    def n_models(self) -> int:
        return len(self.models)

    def pvalue_source(self) -> np.ndarray | TailPValues:
        """The p-values as held: the array, or the :class:`~rankci.evidence.ttest.TailPValues`
        not yet computed (which answers Holm's questions without computing every p-value)."""
        return peek(self, "pvalue")

    def to_frame(self) -> pd.DataFrame:
        """One row per ordered pair: first, second, estimate, se, statistic, df, n, pvalue."""
        j, l = np.nonzero(~np.eye(self.n_models, dtype=bool))
        names = np.asarray(self.models, dtype=object)
        frame = {
            "first": names[j],
            "second": names[l],
            "estimate": self.estimate[j, l],
            "se": self.se[j, l] if self.se is not None else np.nan,
            "statistic": self.statistic[j, l],
            "df": self.df[j, l] if self.df is not None else np.nan,
            "n": self.n[j, l],
            "pvalue": self.pvalue[j, l],
        }
        return pd.DataFrame(frame)

    def to_dict(self) -> dict:
        """JSON-safe: settings plus the list of ordered pairs."""
        rows = self.to_frame().replace({np.nan: None}).to_dict(orient="records")
        return {
            "test": self.test,
            "delta": self.delta,
            "unit": self.unit,
            "missing": self.missing,
            "options": dict(self.options),
            "excluded": dict(self.excluded),
            "pairs": rows,
        }

    def __repr__(self) -> str:
        return (
            f"Pairwise(test={self.test!r}, delta={self.delta:g}, unit={self.unit!r}, "
            f"models={self.n_models}, pairs={self.n_models * (self.n_models - 1)})"
        )

    def _repr_html_(self) -> str:
        """Jupyter: the pairs table and what its p-values guarantee, in one sentence."""
        import html

        head = (
            f"Pairwise {self.test} tests: {self.n_models} models, {self.n_units} "
            f"{self.unit} units, margin {self.delta:g}"
        )
        note = (
            f"Each p-value is a valid one-sided p-value for H: theta_first - theta_second <= "
            f"{self.delta:g} on its own; they are not adjusted for multiplicity (rankci.rank or "
            "rankci.certify.holm makes joint statements)."
        )
        table = self.to_frame().to_html(
            index=False, border=0, float_format=lambda v: f"{v:.4g}", na_rep="-", max_rows=60
        )
        return (
            f"<div><p><b>{html.escape(head)}</b></p>{table}"
            f"<p><small>{html.escape(note)}</small></p></div>"
        )


def pairwise_tests(
    units: UnitScores,
    test: str = "auto",
    *,
    delta: float = 0.0,
    rng: int | np.random.Generator | None = None,
    **options: object,
) -> Pairwise:
    """Test ``H_jl: theta_j - theta_l <= delta`` for every ordered pair of models.

    Parameters
    ----------
    units : UnitScores
        From :meth:`Scores.units`; NaN cells (``missing="pairwise"``) are handled pair by pair.
    test : {"auto", "t", "wilcoxon", "yuen", "z", "sign", "bootstrap", "permutation"}
        See the module docstring and :data:`rankci.registry.TEST_REGISTRY`. The default
        ``auto`` (:mod:`rankci.evidence.auto`) is, per pair, the exact McNemar (sign) test where
        both models' units are 0/1 and ``delta = 0``, else the plain paired t; the rule used is
        ``options["test_rule"]``.
    delta : float, default 0
        Indifference margin (>= 0): only differences larger than delta are certified.
    rng : int, Generator or None
        Seed for ``bootstrap`` and ``permutation``.
    **options
        The test's options, checked by the registry (an option of another test is an error):

        * ``exact_bound_n`` (auto, t, z), int >= 0, default 0: the opt-in exact floor. With
          scores in [0, 1], a pair tested by the t (or z) with at most this many units gets
          ``p = max(p_t, p_exact)``, where ``p_exact`` is Hoeffding's exact bound
          (:func:`bounded_pvalue`), valid for every law of the differences at every n, at a
          large cost in power (n units can reach at best ``p = ((1 + delta) / 2)^n``). It is
          off by default: ``validation/small_sample_rule.py`` found it a power cliff (power
          about 0 up to N units, the plain t above) and the plain t's level held on 0/1 pairs
          under ``auto`` (the sign test) and on cluster means; the one case where it is the
          conservative choice is continuous single-item scores with fewer than 25 units, which
          warn (:class:`RankciWarning`, ``options["small_sample_warning"]``).
        * ``trim`` (yuen), in [0, 0.5), default 0.2: proportion trimmed from each tail (0 gives
          the paired t).
        * ``zero_method`` (wilcoxon), "wilcox" or "pratt": drop zero differences (as R) or rank
          them and drop their ranks.
        * ``correction`` (wilcoxon), bool, default False: normal approximation with continuity
          correction (R's ``correct=TRUE``).
        * ``distribution`` (wilcoxon), "auto", "exact" or "approx": the null distribution of
          the statistic; ``auto`` is exact when n <= 50 and no ties or zeros, otherwise normal
          (scipy calls this ``method``; rankci keeps "method" for the choice of an analysis).
        * ``reps`` (bootstrap, permutation), int >= 1, default 9999: resamples; the p-value is
          (1 + #exceed)/(reps + 1).

    Returns
    -------
    Pairwise

    Raises
    ------
    ValueError
        An unknown test, an option of another test, or a value outside its allowed range.
    TypeError
        A keyword that no test takes.

    References
    ----------
    Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6), 80-83.
    Yuen, K. K. (1974). The two-sample trimmed t for unequal population variances. Biometrika
    61(1), 165-170.
    Wilcox, R. R. (2022). Introduction to Robust Estimation and Hypothesis Testing, 5th ed.,
    Sec. 5.9. Academic Press, London.
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated proportions
    or percentages. Psychometrika 12(2), 153-157.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
    New York.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> pw = pairwise_tests(Scores.from_matrix(x).units())  # 0/1 units: the exact sign test
    >>> float(pw.pvalue[0, 1]), pw.options["test_rule"]  # 4 wins of 4 discordant: 2^-4
    (0.0625, 'sign')
    >>> pw = pairwise_tests(Scores.from_matrix(x).units(), "t")
    >>> round(float(pw.pvalue[0, 1]), 6)  # the plain paired t
    0.012516
    >>> pw = pairwise_tests(Scores.from_matrix(x).units(), "t", exact_bound_n=30)
    >>> round(float(pw.pvalue[0, 1]), 6)  # 6 units under the opt-in floor: the exact bound
    0.23328
    """
    if not isinstance(units, UnitScores):
        raise ValueError(
            f"pairwise_tests expects UnitScores (Scores.units(...)), got {type(units).__name__}"
        )
    check_choice("test", test, TESTS)
    unexpected = sorted(set(options) - _KNOWN_OPTIONS)
    if unexpected:
        raise TypeError(f"pairwise_tests() got an unexpected keyword argument {unexpected[0]!r}")
    delta = check_nonnegative(delta, "delta")
    entry = TEST_REGISTRY[test]
    options = entry.resolve(options, "test")
    function = entry.load()
    out = (
        function(units, delta, rng=rng, **options)
        if entry.random
        else function(units, delta, **options)
    )
    pvalue, estimate = peek(out, "pvalue"), peek(out, "estimate")
    for matrix in (estimate, out.statistic, pvalue):
        if isinstance(matrix, (TailPValues, MeanDifferences)):
            matrix.fill_diagonal_nan()
        elif matrix.ndim == 2 and matrix.shape[0] == matrix.shape[1]:
            matrix.flat[:: matrix.shape[1] + 1] = np.nan  # np.fill_diagonal, without its checks
        else:
            np.fill_diagonal(matrix, np.nan)
    notes = dict(out.notes)
    n_pair = np.asarray(out.n)
    # the same warning as auto's, for the t on continuous few units (never when every pair has
    # CONTINUOUS_MIN_UNITS units or more: then the models' 0/1 flags are not needed)
    if test in ("t", "z") and n_pair.size and _fewest(n_pair) < CONTINUOUS_MIN_UNITS:
        warning = continuous_few_units_warning(
            units, out.n, binary_columns(units.values), options["exact_bound_n"]
        )
        if warning is not None:
            notes["small_sample_warning"] = warning
    if "small_sample_warning" in notes:
        warnings.warn(notes["small_sample_warning"], RankciWarning, stacklevel=2)
    options = {**options, **notes}
    return Pairwise(
        models=units.models,
        test=test,
        delta=delta,
        estimate=estimate,
        statistic=out.statistic,
        pvalue=pvalue,
        n=out.n,
        se=out.se,
        df=out.df,
        unit=units.unit,
        missing=units.missing,
        options=options,
        excluded=dict(units.excluded),
        score=units.model_scores() if out.score is None else out.score,
        n_units=units.n_units,
        smallest_pvalue=out.smallest_pvalue,
    )


def _fewest(n: np.ndarray) -> int:
    """The fewest units of any pair; one read when every pair has the same (a broadcast view)."""
    return int(n.flat[0]) if not any(n.strides) else int(n.min())


def signed_margin_tests(
    units: UnitScores, margin: float, test: str = "auto", exact_bound_n: int = 0
) -> Pairwise:
    """Paired t (or z) tests of ``H_jl: theta_j - theta_l <= margin`` for a margin of either sign.

    :func:`pairwise_tests` takes an indifference margin ``delta >= 0`` ("j better than l by more
    than delta"). Claims need the other sign too: non-inferiority "j >= l - m" is the one-sided
    test of ``H: theta_j - theta_l <= -m`` (margin ``-m``), equivalence by two one-sided tests
    needs ``H: theta_j - theta_l <= -e`` for both orders. The statistic is the same paired
    ``t = (mean(d) - margin) / (sd(d) / sqrt(n))`` on n - 1 df (``z``: standard normal), computed
    by the same code as :func:`pairwise_tests`, with the same rule for a zero variance (the exact
    bound of :func:`bounded_pvalue`, which needs ``|margin| < 1``; outside it the p-value is 1).

    Parameters
    ----------
    units : UnitScores
    margin : float
        Any finite number; ``Pairwise.delta`` holds it (negative for non-inferiority).
    test : {"auto", "t", "z"}
        ``auto`` is the paired t here (a margin on the mean difference has no exact McNemar
        form; with margin 0 on 0/1 units :func:`pairwise_tests` gives the sign test), recorded
        as ``options["test_rule"] = "t"``.
    exact_bound_n : int, default 0
        As in :func:`pairwise_tests`: the opt-in floor; with at most this many units, the
        p-value is never below the exact bound (scores in [0, 1], ``|margin| < 1``).

    Returns
    -------
    Pairwise

    References
    ----------
    Wellek, S. (2010). Testing Statistical Hypotheses of Equivalence and Noninferiority, 2nd ed.,
    Ch. 2 and 7. Chapman & Hall/CRC, Boca Raton.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[0.6, 0.62], [0.5, 0.49], [0.7, 0.71], [0.4, 0.42], [0.55, 0.56]])
    >>> import warnings
    >>> with warnings.catch_warnings(record=True):  # 5 continuous units: the t's level warned
    ...     pw = signed_margin_tests(Scores.from_matrix(x).units(), -0.05)
    >>> bool(pw.pvalue[0, 1] < 0.01)  # the plain t: model 0 is not worse by 0.05 or more
    True
    >>> pw.options["small_sample_warning"][:52]
    '5 item units of continuous (not 0/1) scores: below 2'
    >>> pw = signed_margin_tests(Scores.from_matrix(x).units(), -0.05, exact_bound_n=30)
    >>> bool(pw.pvalue[0, 1] < 0.01)  # 5 units under the opt-in exact floor
    False
    """
    if not isinstance(units, UnitScores):
        raise ValueError(
            "signed_margin_tests expects UnitScores (Scores.units(...)), got "
            f"{type(units).__name__}"
        )
    check_choice("test", test, SIGNED_MARGIN_TESTS)
    margin = float(margin)
    if not np.isfinite(margin):
        raise ValueError(f"margin must be a finite number, got {margin!r}")
    exact_bound_n = TEST_REGISTRY[test].option("exact_bound_n").check(exact_bound_n)
    estimate, statistic, pvalue, n, se, df = t_or_z(
        units.values, margin, normal=test == "z", exact_bound_n=exact_bound_n
    )
    options = {"signed_margin": margin, "exact_bound_n": exact_bound_n}
    if test == "auto":
        options["test_rule"] = "t"
    warning = continuous_few_units_warning(units, n, binary_columns(units.values), exact_bound_n)
    if warning is not None:
        options["small_sample_warning"] = warning
        warnings.warn(warning, RankciWarning, stacklevel=2)
    pvalue = np.where(np.isnan(pvalue), 1.0, pvalue)  # |margin| >= 1 and zero variance: no evidence
    for matrix in (estimate, statistic, pvalue):
        np.fill_diagonal(matrix, np.nan)
    return Pairwise(
        models=units.models,
        test=test,
        delta=margin,
        estimate=estimate,
        statistic=statistic,
        pvalue=pvalue,
        n=n,
        se=se,
        df=df,
        unit=units.unit,
        missing=units.missing,
        options=options,
        excluded=dict(units.excluded),
        score=units.model_scores(),
        n_units=units.n_units,
        smallest_pvalue=t_smallest_pvalue(
            largest_n(n), exact_bound_n, margin, is_bounded(units.values)
        ),
    )
