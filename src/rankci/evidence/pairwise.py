"""Paired tests for every ordered pair of models: the evidence behind rank intervals.

For each ordered pair (j, l) the null hypothesis is ``H_jl: theta_j - theta_l <= delta`` (delta >= 0
is the indifference margin) against ``theta_j - theta_l > delta``; rejecting ``H_jl`` certifies
"j is better than l". The result holds M x M arrays, row = j, column = l, NaN on the diagonal.

All-pairs statistics come from matrix products over the units x models matrix (one covariance, or
masked cross-products when cells are missing), never from a Python loop over pairs. The rank-based
and resampling tests loop over models (M iterations), each vectorised over the other models.

Tests (``d = x_j - x_l`` per unit, n units):

=============  ==============================================================  ================
test           statistic and reference distribution                            targets
=============  ==============================================================  ================
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

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import (
    RankciWarning,
    as_generator,
    check_choice,
    check_nonnegative,
    check_positive_int,
    renamed_keyword,
)
from rankci._progress import Progress
from rankci.data import UnitScores
from rankci.evidence.bootstrap import resample_counts
from rankci.method import TESTS

ZERO_METHODS = ("wilcox", "pratt")
WILCOXON_METHODS = ("auto", "exact", "approx")

__all__ = [
    "Pairwise",
    "pairwise_tests",
    "signed_margin_tests",
    "bounded_pvalue",
    "SMALL_N",
    "TESTS",
    "RankciWarning",
]

#: the tests :func:`signed_margin_tests` runs (a margin of either sign)
SIGNED_MARGIN_TESTS = ("t", "z")


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
        trimmed means for ``yuen``, mean difference otherwise).
    statistic : ndarray (M, M)
        The test statistic for ``H_jl`` (t, z, signed-rank sum W+, count of j-only wins, ...).
    pvalue : ndarray (M, M)
        One-sided p-value for ``H_jl``; NaN on the diagonal.
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
        Test options actually used (trim, reps, zero_method, ...).
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
    estimate: np.ndarray
    statistic: np.ndarray
    pvalue: np.ndarray
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

        head = (f"Pairwise {self.test} tests: {self.n_models} models, {self.n_units} "
                f"{self.unit} units, margin {self.delta:g}")
        note = (
            f"Each p-value is a valid one-sided p-value for H: theta_first - theta_second <= "
            f"{self.delta:g} on its own; they are not adjusted for multiplicity (rankci.rank or "
            "rankci.certify.holm makes joint statements)."
        )
        table = self.to_frame().to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}",
                                        na_rep="-", max_rows=60)
        return (f"<div><p><b>{html.escape(head)}</b></p>{table}"
                f"<p><small>{html.escape(note)}</small></p></div>")


def pairwise_tests(
    units: UnitScores,
    test: str = "t",
    *,
    delta: float = 0.0,
    trim: float = 0.2,
    zero_method: str = "wilcox",
    correction: bool = False,
    distribution: str = "auto",
    reps: int = 9999,
    rng: int | np.random.Generator | None = None,
    exact_bound_n: int = 30,
    **deprecated,
) -> Pairwise:
    """Test ``H_jl: theta_j - theta_l <= delta`` for every ordered pair of models.

    Parameters
    ----------
    units : UnitScores
        From :meth:`Scores.units`; NaN cells (``missing="pairwise"``) are handled pair by pair.
    test : {"t", "wilcoxon", "yuen", "z", "sign", "bootstrap", "permutation"}
        See the module docstring. The paired t is the default.
    delta : float, default 0
        Indifference margin (>= 0): only differences larger than delta are certified.
    trim : float, default 0.2
        Proportion trimmed from each tail for ``yuen`` (0 gives the paired t).
    zero_method : {"wilcox", "pratt"}
        Wilcoxon: drop zero differences (``"wilcox"``, as R) or rank them and drop their ranks.
    correction : bool, default False
        Wilcoxon normal approximation with continuity correction (R's ``correct=TRUE``).
    distribution : {"auto", "exact", "approx"}
        Wilcoxon: the null distribution of the statistic. ``auto`` is exact when n <= 50 and no
        ties or zeros, otherwise normal (scipy calls this ``method``; rankci keeps "method" for
        the choice of an analysis, and accepts ``method=`` here with a DeprecationWarning).
    reps : int, default 9999
        Resamples for ``bootstrap`` and ``permutation``; the p-value is (1 + #exceed)/(reps + 1).
    rng : int, Generator or None
        Seed for ``bootstrap`` and ``permutation``.
    exact_bound_n : int, default 30
        ``t`` and ``z`` with scores in [0, 1]: a pair with at most this many units gets
        ``p = max(p_t, p_exact)``, where ``p_exact`` is Hoeffding's exact bound
        (:func:`bounded_pvalue`), valid for every law of the differences at every n. The t and
        z tests are asymptotic: with few units and skewed scores their level fails (tied models
        covered 0.86 at n = 2-20 in ``validation/tiny_designs.py``); the floor restores the
        guarantee, at the price of power (n units can reach at best ``p = ((1 + delta) / 2)^n``).
        0 turns the floor off (the plain asymptotic tests).

    Returns
    -------
    Pairwise

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
    >>> pw = pairwise_tests(Scores.from_matrix(x).units(), exact_bound_n=0)
    >>> round(float(pw.pvalue[0, 1]), 6)  # the plain paired t: model 0 beats model 1
    0.012516
    >>> pw = pairwise_tests(Scores.from_matrix(x).units())  # 6 units: never below the exact bound
    >>> round(float(pw.pvalue[0, 1]), 6)
    0.23328
    """
    if not isinstance(units, UnitScores):
        raise ValueError(
            f"pairwise_tests expects UnitScores (Scores.units(...)), got {type(units).__name__}"
        )
    distribution = renamed_keyword(
        "pairwise_tests",
        distribution,
        deprecated,
        "method",
        "distribution",
        accepted="units, test, delta, trim, zero_method, correction, distribution, reps, rng",
    )
    check_choice("test", test, TESTS)
    delta = check_nonnegative(delta, "delta")
    x = units.values
    options: dict = {}
    if test in ("t", "z"):
        exact_bound_n = check_positive_int(exact_bound_n, "exact_bound_n", minimum=0)
        options = {"exact_bound_n": exact_bound_n}
        out = _t_or_z(x, delta, normal=test == "z", exact_bound_n=exact_bound_n)
    elif test == "wilcoxon":
        check_choice("zero_method", zero_method, ZERO_METHODS)
        check_choice("distribution", distribution, WILCOXON_METHODS)
        options = {
            "zero_method": zero_method,
            "correction": bool(correction),
            "distribution": distribution,
        }
        out = _wilcoxon(x, delta, zero_method, bool(correction), distribution)
    elif test == "yuen":
        if not 0.0 <= trim < 0.5:
            raise ValueError(f"trim must be in [0, 0.5), got {trim!r}")
        options = {"trim": float(trim)}
        out = _yuen(x, delta, float(trim))
    elif test == "sign":
        if not units.binary:
            raise ValueError(
                f"the sign (McNemar) test needs binary unit scores, but unit={units.unit!r} "
                "gives scores other than 0 and 1; it targets the median difference, not the mean. "
                "Use test='t' or 'wilcoxon' for non-binary scores"
            )
        if delta != 0:
            raise ValueError("the sign test supports only delta = 0; use test='t' for a margin")
        out = _sign(x)
    else:
        reps = check_positive_int(reps, "reps")
        generator = as_generator(rng)
        options = {"reps": reps}
        resampler = _bootstrap if test == "bootstrap" else _permutation
        out = resampler(x, delta, reps, generator)
    estimate, statistic, pvalue, n, se, df = out
    for matrix in (estimate, statistic, pvalue):
        np.fill_diagonal(matrix, np.nan)
    return Pairwise(
        models=units.models,
        test=test,
        delta=delta,
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
        smallest_pvalue=_smallest_pvalue(
            test, int(np.max(n, initial=0)), options, delta, _bounded(x)
        ),
    )


def signed_margin_tests(
    units: UnitScores, margin: float, test: str = "t", exact_bound_n: int = 30
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
    test : {"t", "z"}
    exact_bound_n : int, default 30
        As in :func:`pairwise_tests`: with at most this many units, the p-value is never below
        the exact bound (scores in [0, 1], ``|margin| < 1``).

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
    >>> pw = signed_margin_tests(Scores.from_matrix(x).units(), -0.05, exact_bound_n=0)
    >>> bool(pw.pvalue[0, 1] < 0.01)  # the plain t: model 0 is not worse by 0.05 or more
    True
    >>> pw = signed_margin_tests(Scores.from_matrix(x).units(), -0.05)  # 5 units: exact floor
    >>> bool(pw.pvalue[0, 1] < 0.01)
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
    exact_bound_n = check_positive_int(exact_bound_n, "exact_bound_n", minimum=0)
    estimate, statistic, pvalue, n, se, df = _t_or_z(
        units.values, margin, normal=test == "z", exact_bound_n=exact_bound_n
    )
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
        options={"signed_margin": margin, "exact_bound_n": exact_bound_n},
        excluded=dict(units.excluded),
        score=units.model_scores(),
        n_units=units.n_units,
        smallest_pvalue=_smallest_pvalue(
            test,
            int(np.max(n, initial=0)),
            {"exact_bound_n": exact_bound_n},
            margin,
            _bounded(units.values),
        ),
    )


# ---------------------------------------------------------------------- moments
def _paired_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For every pair, over the units both models have: n, mean of d, variance of d, scale.

    Complete data use one covariance matrix: ``var(d_jl) = S_jj + S_ll - 2 S_jl``. With missing
    cells, masked cross-products of the column-centred matrix give the same quantities on each
    pair's common units. ``scale`` (mean square of the centred scores) lets callers recognise a
    variance that is zero up to rounding.
    """
    finite = np.isfinite(x)
    if finite.all():
        n_units = x.shape[0]
        mu = x.mean(axis=0)
        centred = x - mu
        cov = centred.T @ centred / max(n_units - 1, 1)
        var_j = np.diag(cov)
        var = var_j[:, None] + var_j[None, :] - 2.0 * cov
        mean = mu[:, None] - mu[None, :]
        n = np.full(cov.shape, n_units, dtype=np.int64)
        scale = var_j[:, None] + var_j[None, :]
        return n, mean, np.maximum(var, 0.0), scale
    weight = finite.astype(float)
    centre = _nanmean(x)
    centred = np.where(finite, x - centre, 0.0)
    n = weight.T @ weight
    sums = centred.T @ weight  # sums[j, l] = sum over units shared by j and l of centred x_j
    squares = (centred**2).T @ weight
    cross = centred.T @ centred
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_c = (sums - sums.T) / n
        ss = squares + squares.T - 2.0 * cross
        var = (ss - n * mean_c**2) / (n - 1)
        scale = (squares + squares.T) / n
    mean = mean_c + (centre[:, None] - centre[None, :])
    return n.round().astype(np.int64), mean, np.maximum(var, 0.0), scale


def _nanmean(x: np.ndarray) -> np.ndarray:
    counts = np.isfinite(x).sum(axis=0)
    return np.where(counts > 0, np.nansum(x, axis=0) / np.maximum(counts, 1), 0.0)


def studentize(estimate: np.ndarray, delta: float, se: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """(estimate - delta) / se, with a zero standard error giving +-inf (or 0 when equal)."""
    shift = estimate - delta
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = shift / se
    infinite = np.where(shift > 0, np.inf, np.where(shift < 0, -np.inf, 0.0))
    return np.where(zero, infinite, stat)


#: Designs with at most this many units get an explanation when nothing is certified.
SMALL_N = 30


def bounded_pvalue(mean: np.ndarray, delta: float, n: np.ndarray) -> np.ndarray:
    """Exact p-value for ``H: E[d] <= delta`` from the mean of n i.i.d. differences in [-1, 1].

    With ``u = (d + 1) / 2`` in [0, 1], ``ubar = (dbar + 1) / 2`` and ``u0 = (1 + delta) / 2``,

    ``p = exp(-n KL(ubar || u0))`` when ``ubar > u0``, else 1,

    where ``KL(a || b) = a log(a / b) + (1 - a) log((1 - a) / (1 - b))``. Hoeffding's (1963,
    Theorem 1) bound ``P(ubar >= u0 + s) <= exp(-n KL(u0 + s || u0))`` holds for any law on
    [0, 1] with mean ``u0``, and the right side only grows as the mean moves below ``u0``; p is
    decreasing in ``ubar``, so ``P(p <= a) <= a`` under H: a valid p-value for every n, with no
    variance estimate. Its smallest value, at ``dbar = 1``, is ``u0^n``.

    Parameters
    ----------
    mean : array_like
        Mean differences ``dbar`` (any shape).
    delta : float
        The margin of the null hypothesis, ``0 <= delta < 1``.
    n : array_like of int
        Number of differences behind each mean (broadcast against ``mean``).

    Returns
    -------
    ndarray
        The p-values, the shape of ``mean``.

    References
    ----------
    Hoeffding, W. (1963). Probability inequalities for sums of bounded random variables.
    Journal of the American Statistical Association 58(301), 13-30.

    Examples
    --------
    >>> import numpy as np
    >>> float(bounded_pvalue(np.array(1.0), 0.0, np.array(2)))  # two wins out of two: 1/4
    0.25
    >>> float(bounded_pvalue(np.array(-0.2), 0.0, np.array(50)))
    1.0
    """
    u = (np.asarray(mean, dtype=float) + 1.0) / 2.0
    u0 = (1.0 + float(delta)) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        kl = special.xlogy(u, u / u0) + special.xlogy(1.0 - u, (1.0 - u) / (1.0 - u0))
        p = np.exp(-np.asarray(n, dtype=float) * kl)
    return np.where(u > u0, np.minimum(p, 1.0), 1.0)


def _bounded(x: np.ndarray) -> bool:
    """Whether every finite score lies in [0, 1] (the premise of :func:`bounded_pvalue`)."""
    finite = x[np.isfinite(x)]
    return bool(finite.size and finite.min() >= 0.0 and finite.max() <= 1.0)


def _t_or_z(x: np.ndarray, delta: float, normal: bool, exact_bound_n: int = 0):
    if np.isfinite(x).all():
        return _t_or_z_complete(x, delta, normal, exact_bound_n)
    n, mean, var, scale = _paired_moments(x)
    zero = var <= 1e-12 * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(var / n)
    stat = studentize(mean, delta, se, zero)
    df = (n - 1).astype(float)
    if normal:
        pvalue = special.ndtr(-stat)
        df_out = None
    else:
        pvalue = t_upper_tail(stat, np.maximum(df, 1.0))
        df_out = df
    pvalue = _exact_floor(x, pvalue, mean, delta, n, zero, exact_bound_n)
    pvalue = np.where(n >= 2, pvalue, 1.0)
    stat = np.where(n >= 2, stat, np.nan)
    return mean, stat, pvalue, n, np.where(n >= 2, se, np.nan), df_out


#: Threads for the t tail probabilities of a large board (scipy releases the GIL).
THREADS = min(4, os.cpu_count() or 1)

#: Rows of the M x M arrays computed at a time by :func:`_t_or_z_complete` (a block of 256 rows
#: of 10,000 models is 20 MB per temporary, instead of 800 MB for the whole matrix).
ROW_BLOCK = 256


def _t_or_z_complete(x: np.ndarray, delta: float, normal: bool, exact_bound_n: int = 0):
    """:func:`_t_or_z` without missing cells, computed in blocks of rows.

    The same operations as the general path, element by element, so the same numbers; but each
    temporary is one block of rows, so memory holds the covariance and the outputs (estimate,
    statistic, p-value, se) and not a dozen M x M temporaries, and the one-sided t
    p-values are computed once per unordered pair (:func:`t_upper_tail`). ``n`` and ``df``
    (one value for every pair) are read-only broadcast views, with no memory of their own.
    """
    n_units, m = x.shape
    mu = x.mean(axis=0)
    centred = x - mu
    cov = centred.T @ centred / max(n_units - 1, 1)
    del centred
    var_j = np.diag(cov).copy()
    bounded = _bounded(x)
    enough = n_units >= 2
    mean = np.empty((m, m))
    stat = np.empty((m, m))
    se = np.empty((m, m))
    pvalue = np.empty((m, m))
    zero_rows = []
    for r0 in range(0, m, ROW_BLOCK):
        rows = slice(r0, min(r0 + ROW_BLOCK, m))
        scale = var_j[rows, None] + var_j[None, :]
        var = np.maximum(scale - 2.0 * cov[rows], 0.0)
        block_mean = mu[rows, None] - mu[None, :]
        zero = var <= 1e-12 * scale
        with np.errstate(invalid="ignore", divide="ignore"):
            block_se = np.sqrt(var / n_units)
        mean[rows] = block_mean
        stat[rows] = studentize(block_mean, delta, block_se, zero)
        se[rows] = block_se if enough else np.nan
        if zero.any():
            zero_rows.append((rows, zero))
    del cov
    df = float(n_units - 1)
    if normal:
        for r0 in range(0, m, ROW_BLOCK):
            rows = slice(r0, min(r0 + ROW_BLOCK, m))
            pvalue[rows] = special.ndtr(-stat[rows])
        df_out = None
    else:
        t_upper_tail(stat, max(df, 1.0), out=pvalue)
        df_out = np.broadcast_to(df, (m, m))  # one value: a read-only view, no M x M array
    for rows, zero in zero_rows:  # the rule for a zero variance, on the few pairs it concerns
        block = pvalue[rows]
        if bounded:
            floor = bounded_pvalue(mean[rows][zero], delta, np.full(int(zero.sum()), n_units))
            block[zero] = np.maximum(block[zero], floor)
        else:
            block[zero] = 1.0
    if bounded and n_units <= exact_bound_n and abs(delta) < 1:  # few units: the exact floor
        np.maximum(pvalue, bounded_pvalue(mean, delta, n_units), out=pvalue)
    if not enough:
        pvalue[:] = 1.0
        stat[:] = np.nan
    n = np.broadcast_to(np.int64(n_units), (m, m))  # as df: every pair has every unit
    return mean, stat, pvalue, n, se, df_out


def t_upper_tail(
    stat: np.ndarray, df: np.ndarray | float, out: np.ndarray | None = None
) -> np.ndarray:
    """``P(T_df >= stat)`` for an M x M array of statistics, ``scipy.special.stdtr(df, -stat)``.

    The same numbers as that call, about twice as fast for a square array: scipy computes
    ``stdtr(df, t)`` for ``t > 0`` as ``1 - stdtr(df, -t)``, so with ``q = stdtr(df, -|stat|)``
    the p-value is ``q`` where ``stat >= 0`` and ``1 - q`` where ``stat < 0``, bit for bit. Where
    ``|stat|`` and ``df`` are symmetric (every pair when delta = 0), ``q`` is computed once per
    unordered pair and mirrored; the other entries are computed directly. Works in blocks of
    :data:`ROW_BLOCK` rows.
    """
    stat = np.asarray(stat, dtype=float)
    m = stat.shape[0]
    if stat.ndim != 2 or stat.shape[1] != m:
        return special.stdtr(df, -stat)
    scalar_df = np.ndim(df) == 0
    if out is None:
        out = np.empty((m, m))

    def upper(r0: int) -> None:
        r1 = min(r0 + ROW_BLOCK, m)
        a = -np.abs(stat[r0:r1, r0:])
        d = df if scalar_df else df[r0:r1, r0:]
        q = special.stdtr(d, a)
        out[r0:r1, r0:] = q
        if r1 < m:  # mirror into the rows below the block, where the pair is the same
            mirror = a[:, r1 - r0 :].T
            below = -np.abs(stat[r1:, r0:r1])
            same = below == mirror
            if not scalar_df:
                same &= df[r1:, r0:r1] == df[r0:r1, r1:].T
            lower = q[:, r1 - r0 :].T.copy()
            if not same.all():
                differ = ~same
                dl = df if scalar_df else df[r1:, r0:r1][differ]
                lower[differ] = special.stdtr(dl, below[differ])
            out[r1:, r0:r1] = lower

    # scipy's ufuncs release the GIL: blocks run in threads (each writes its own rows of the
    # upper triangle and its own columns below it, so they never overlap)
    starts = range(0, m, ROW_BLOCK)
    workers = min(THREADS, len(starts))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(upper, starts))
    else:
        for r0 in starts:
            upper(r0)
    for r0 in range(0, m, ROW_BLOCK):  # q -> p: 1 - q where the statistic is negative
        rows = slice(r0, min(r0 + ROW_BLOCK, m))
        block = out[rows]
        negative = stat[rows] < 0
        block[negative] = 1.0 - block[negative]
    return out


def _exact_floor(x, pvalue, mean, delta, n, zero, exact_bound_n):
    """Where the test's p-value is replaced or floored by the exact bound of :func:`bounded_pvalue`.

    * A zero variance of the differences is never evidence. A pair whose differences are all
      equal has ``sd = 0``, so ``t = +-inf`` and ``p = 0``: two items won twice would be
      "certain". There the studentized statistic is undefined, and the p-value is instead the
      exact bound (valid for any law of the differences on [-1, 1], at every n): two wins out of
      two give p = 1/4, never 0. Scores outside [0, 1] (``bounds=None``) have no exact bound: a
      zero variance then gives p = 1.
    * Few units: a pair with at most ``exact_bound_n`` units gets ``max(p, bound)`` (scores in
      [0, 1] and ``|delta| < 1`` only, where the bound is defined).

    Elsewhere the test is used as it is. :func:`_t_or_z_complete` applies the same rule to its
    blocks of rows.
    """
    floored = zero | (n <= exact_bound_n) if exact_bound_n and abs(delta) < 1 else zero
    if not np.any(floored):
        return pvalue
    if _bounded(x):
        return np.where(floored, np.maximum(pvalue, bounded_pvalue(mean, delta, n)), pvalue)
    return np.where(zero, 1.0, pvalue)


def _smallest_pvalue(
    test: str, n_max: int, options: dict, delta: float = 0.0, bounded: bool = False
) -> float:
    """The smallest p-value the test can give with at most ``n_max`` units per pair."""
    if n_max < 2 and test not in ("bootstrap", "permutation"):
        return 1.0
    if test in ("bootstrap", "permutation"):
        return 1.0 / (options["reps"] + 1)
    if test == "sign":
        return 0.5**n_max
    if test == "wilcoxon":
        if options["distribution"] != "approx" and n_max <= 50:
            return 0.5**n_max
        z_max = np.sqrt(3.0 * n_max * (n_max + 1) / (2 * n_max + 1))
        return float(special.ndtr(-z_max))
    if bounded and n_max <= options.get("exact_bound_n", 0) and abs(delta) < 1:
        return ((1.0 + delta) / 2.0) ** n_max  # the exact bound at dbar = 1
    return 0.0


# ---------------------------------------------------------------------- Wilcoxon
def _column_ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) within each column, ignoring NaN; and each column's sum of t^3 - t
    over tie groups of size t.

    Works on the transposed copy so that every sort runs over contiguous memory (about 5x faster
    than sorting strided columns); average ranks do not depend on the order within ties, so the
    sort need not be stable.
    """
    rows = np.ascontiguousarray(a.T)
    n = rows.shape[1]
    order = np.argsort(rows, axis=1)  # NaN last
    s = np.take_along_axis(rows, order, axis=1)
    index = np.arange(n)[None, :]
    starts = np.ones(s.shape, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    ends = np.ones(s.shape, dtype=bool)
    ends[:, :-1] = s[:, :-1] != s[:, 1:]
    first = np.maximum.accumulate(np.where(starts, index, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, index, n - 1)[:, ::-1], axis=1)[:, ::-1]
    run = (last - first + 1).astype(float)
    valid = ~np.isnan(s)
    tie_term = np.where(valid, run**2 - 1.0, 0.0).sum(axis=1)  # sum over runs of t^3 - t
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    ranks[np.isnan(rows)] = np.nan
    return ranks.T, tie_term


def _wilcoxon_exact_sf(w_plus: np.ndarray, count: np.ndarray) -> np.ndarray:
    """P(W+ >= w) under the exact null (no ties, no zeros), via the subset-sum distribution."""
    out = np.empty(w_plus.shape)
    for size in np.unique(count):
        size = int(size)
        pmf = np.zeros(size * (size + 1) // 2 + 1)
        pmf[0] = 1.0
        for k in range(1, size + 1):
            pmf[k:] = pmf[k:] + pmf[:-k].copy()
        pmf /= 2.0**size
        tail = np.cumsum(pmf[::-1])[::-1]  # tail[w] = P(W+ >= w)
        pick = count == size
        w = np.floor(w_plus[pick] + 1e-9).astype(int)
        out[pick] = tail[np.clip(w, 0, tail.size - 1)]
    return out


#: at most this many distinct nonzero |differences| are ranked by counting instead of sorting
MAX_COUNTED_LEVELS = 16


def _difference_levels(x: np.ndarray, delta: float) -> np.ndarray | None:
    """The distinct nonzero values |x_ij - x_il - delta| can take, when they are few.

    Scores with few distinct values (0/1 correctness, partial credit 0/0.5/1) give few distinct
    differences; ``(a - b) - delta`` is computed exactly as in the pairwise differences, so the
    levels match them bit for bit. None when there are more than :data:`MAX_COUNTED_LEVELS`.
    """
    values = np.unique(x[~np.isnan(x)])
    if values.size > MAX_COUNTED_LEVELS:
        return None
    levels = np.unique(np.abs(values[:, None] - values[None, :] - delta))
    levels = levels[levels > 0]
    return levels if levels.size <= MAX_COUNTED_LEVELS else None


def _signed_rank_sums(d: np.ndarray, zero_method: str, levels: np.ndarray | None):
    """Per column of differences ``d`` (NaN = missing): W+ and W- (rank sums of the positive and
    negative differences, ranks of |d| with ties averaged), the count of ranked differences,
    the zeros, and the tie term ``sum (t^3 - t)`` over the tie groups of nonzero |d|.

    With ``zero_method="wilcox"`` zeros are dropped before ranking; with ``"pratt"`` they take
    the lowest ranks and count. ``levels`` (the possible nonzero |d|, few) switches to ranking by
    counting: level k's mid-rank is ``zeros + sum_{k' < k} c_k' + (c_k + 1) / 2``.
    """
    zeros = d == 0
    n_zero = zeros.sum(axis=0).astype(float)
    positive, negative = d > 0, d < 0
    if levels is None:
        ranked = np.where(zeros, np.nan, d) if zero_method == "wilcox" else d
        ranks, tie_term = _column_ranks(np.abs(ranked))
        if zero_method == "pratt":
            tie_term = tie_term - np.where(n_zero > 0, n_zero**3 - n_zero, 0.0)
        w_plus = np.where(positive, ranks, 0.0).sum(axis=0)
        w_minus = np.where(negative, ranks, 0.0).sum(axis=0)
    else:
        magnitude = np.abs(d)
        below = n_zero.copy() if zero_method == "pratt" else np.zeros(d.shape[1])
        w_plus, w_minus, tie_term = (np.zeros(d.shape[1]) for _ in range(3))
        for level in levels:  # a handful of levels, each a pass over the block
            at = magnitude == level
            c = at.sum(axis=0).astype(float)
            c_plus = (at & positive).sum(axis=0)
            mid_rank = below + (c + 1.0) / 2.0
            w_plus += c_plus * mid_rank
            w_minus += (c - c_plus) * mid_rank
            tie_term += c**3 - c
            below += c
    count = (positive | negative).sum(axis=0) + (n_zero if zero_method == "pratt" else 0.0)
    return w_plus, w_minus, count.astype(float), n_zero, tie_term


def _wilcoxon_pvalue(w, count, n_zero, tie_term, zero_method, correction, method):
    """One-sided P(W+ >= w) by the normal approximation (tie- and Pratt-corrected), exact where
    ``method`` asks for it (``auto``: at most 50 differences, no ties, no zeros)."""
    mean = count * (count + 1) / 4.0
    var = count * (count + 1) * (2 * count + 1)
    if zero_method == "pratt":
        mean = mean - n_zero * (n_zero + 1) / 4.0
        var = var - n_zero * (n_zero + 1) * (2 * n_zero + 1)
    sd = np.sqrt(np.maximum(var - tie_term / 2.0, 0.0) / 24.0)
    nonzero_count = count - (n_zero if zero_method == "pratt" else 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (w - mean - (0.5 if correction else 0.0)) / sd
    p = special.ndtr(-z)
    p = np.where(sd > 0, p, np.where(w > mean, 0.0, 1.0))
    p = np.where(nonzero_count > 0, p, 1.0)
    exact = (nonzero_count > 0) & (method != "approx")
    if method == "auto":
        exact &= (count <= 50) & (tie_term == 0) & (n_zero == 0)
    np.fill_diagonal(exact, False)
    if exact.any():
        p[exact] = _wilcoxon_exact_sf(w[exact], count[exact])
    return p


def _wilcoxon(x, delta, zero_method, correction, method):
    """Signed-rank statistics for every ordered pair: one pass per model over the models after
    it when ``delta == 0`` (the pair (l, j) has the same ranks with the signs swapped, so
    ``W+_lj = W-_jl``), over all models otherwise."""
    n_units, n_models = x.shape
    shape = (n_models, n_models)
    n_pairs = np.zeros(shape, dtype=np.int64)
    estimate, w_plus, count, n_zero, tie_term = (np.zeros(shape) for _ in range(5))
    levels = _difference_levels(x, delta)
    symmetric = delta == 0
    for j in range(n_models):
        others = np.arange(j + 1, n_models) if symmetric else np.arange(n_models)
        n_pairs[j, j] = np.count_nonzero(~np.isnan(x[:, j]))
        if others.size == 0:
            continue
        d = x[:, [j]] - x[:, others] - delta  # NaN where either model lacks the unit
        present = ~np.isnan(d)
        n_common = present.sum(axis=0)
        with np.errstate(invalid="ignore"):
            mean_difference = np.where(present, d + delta, 0.0).sum(axis=0) / n_common
        if not n_units:
            mean_difference = np.zeros(others.size)
        plus, minus, c, zero, ties = _signed_rank_sums(d, zero_method, levels)
        n_pairs[j, others], estimate[j, others], w_plus[j, others] = n_common, mean_difference, plus
        count[j, others], n_zero[j, others], tie_term[j, others] = c, zero, ties
        if symmetric:
            n_pairs[others, j], estimate[others, j], w_plus[others, j] = (
                n_common,
                -mean_difference,
                minus,
            )
            count[others, j], n_zero[others, j], tie_term[others, j] = c, zero, ties
    pvalue = _wilcoxon_pvalue(w_plus, count, n_zero, tie_term, zero_method, correction, method)
    return estimate, w_plus, pvalue, n_pairs, None, None


# ---------------------------------------------------------------------- Yuen
def _trim_and_winsorize(a: np.ndarray, trim: float):
    """Column-wise, ignoring NaN: trimmed mean, winsorized values (NaN kept) and h = n - 2g."""
    count = (~np.isnan(a)).sum(axis=0)
    g = np.floor(trim * count).astype(int)
    s = np.sort(a, axis=0)  # NaN last
    low = np.take_along_axis(s, np.minimum(g, np.maximum(count - 1, 0))[None, :], axis=0)[0]
    high_index = np.maximum(count - g - 1, 0)
    high = np.take_along_axis(s, high_index[None, :], axis=0)[0]
    cumulative = np.vstack([np.zeros(a.shape[1]), np.nancumsum(s, axis=0)])
    h = count - 2 * g
    kept = (
        np.take_along_axis(cumulative, (count - g)[None, :], axis=0)[0]
        - np.take_along_axis(cumulative, g[None, :], axis=0)[0]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = kept / h
    winsorized = np.clip(a, low, high)
    return trimmed, winsorized, h


def _winsorized_difference_var(wj: np.ndarray, wl: np.ndarray) -> np.ndarray:
    """Sample variance (ddof=1) of wj - wl column by column, ignoring NaN rows."""
    diff = wj - wl
    count = (~np.isnan(diff)).sum(axis=0)
    mean = np.nansum(diff, axis=0) / np.maximum(count, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nansum((diff - mean) ** 2, axis=0) / (count - 1)


def _yuen(x: np.ndarray, delta: float, trim: float):
    """Yuen's trimmed-mean t for dependent groups (Wilcox's ``yuend``).

    ``se^2 = (n - 1) var_w(x_j - x_l) / (h (h - 1))`` with winsorized scores and
    h = n - 2 floor(trim n);
    statistic ``(tmean_j - tmean_l - delta) / se`` on h - 1 degrees of freedom.
    """
    n_models = x.shape[1]
    if np.isfinite(x).all():
        trimmed, wins, h = _trim_and_winsorize(x, trim)
        n_units = x.shape[0]
        cw = np.atleast_2d(np.cov(wins, rowvar=False))
        var_d = np.diag(cw)[:, None] + np.diag(cw)[None, :] - 2.0 * cw
        n = np.full((n_models, n_models), n_units, dtype=np.int64)
        h = np.full((n_models, n_models), float(h[0]))
        estimate = trimmed[:, None] - trimmed[None, :]
        scale = np.diag(cw)[:, None] + np.diag(cw)[None, :]
    else:
        n = np.zeros((n_models, n_models), dtype=np.int64)
        h = np.zeros((n_models, n_models))
        estimate = np.full((n_models, n_models), np.nan)
        var_d = np.full((n_models, n_models), np.nan)
        scale = np.full((n_models, n_models), np.nan)
        for j in range(n_models):
            common = np.isfinite(x[:, [j]]) & np.isfinite(x)
            a = np.where(common, x[:, [j]], np.nan)
            b = np.where(common, x, np.nan)
            ta, wa, hj = _trim_and_winsorize(a, trim)
            tb, wb, _ = _trim_and_winsorize(b, trim)
            n[j] = common.sum(axis=0)
            h[j] = hj
            estimate[j] = ta - tb
            var_d[j] = _winsorized_difference_var(wa, wb)
            scale[j] = np.nanvar(wa, axis=0) + np.nanvar(wb, axis=0)
    var_d = np.maximum(var_d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((n - 1) * var_d / (h * (h - 1)))
    zero = var_d <= 1e-12 * scale
    stat = studentize(estimate, delta, se, zero)
    df = h - 1.0
    testable = h >= 2
    pvalue = np.where(testable, special.stdtr(np.maximum(df, 1.0), -stat), 1.0)
    # a zero winsorized variance cannot be studentized: no certification from it
    pvalue = np.where(zero, np.maximum(pvalue, 1.0), pvalue)
    return (
        estimate,
        np.where(testable, stat, np.nan),
        pvalue,
        n,
        np.where(testable, se, np.nan),
        df,
    )


# ---------------------------------------------------------------------- sign test
def _sign(x: np.ndarray):
    """Exact one-sided McNemar / sign test: P(Bin(b + c, 1/2) >= b), b = #(x_j=1, x_l=0)."""
    finite = np.isfinite(x)
    ones = np.where(finite, x, 0.0)
    zeros = finite & (x == 0)
    wins = ones.T @ zeros.astype(float)  # wins[j, l] = #units with x_j = 1 and x_l = 0
    n = (finite.astype(float).T @ finite.astype(float)).round().astype(np.int64)
    wins = wins.round().astype(np.int64)
    discordant = wins + wins.T
    pvalue = special.bdtrc(np.maximum(wins - 1, 0), np.maximum(discordant, 1), 0.5)
    pvalue = np.where(wins > 0, pvalue, 1.0)  # P(Bin >= 0) = 1
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = (wins - wins.T) / n
    return estimate, wins.astype(float), pvalue, n, None, None


# ---------------------------------------------------------------------- resampling
_CHUNK_CELLS = 20_000_000  # resamples x pairs held in memory at once


def _warn_resolution(reps: int, n_models: int) -> None:
    smallest = 1.0 / (reps + 1)
    family = n_models * (n_models - 1)
    if smallest * family > 0.05:
        warnings.warn(
            f"with reps={reps} the smallest attainable p-value is {smallest:.2g}, so Holm or "
            f"Bonferroni over all {family} ordered pairs can certify nothing at an alpha below "
            f"{smallest * family:.2g}; use reps >= {int(np.ceil(family / 0.05))} for alpha = 0.05",
            RankciWarning,
            stacklevel=4,
        )


def _resampled_exceedances(
    x: np.ndarray, delta: float, reps: int, weights_for_chunk, offset: float, centred: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shared machinery of the bootstrap and permutation tests.

    ``weights_for_chunk(b)`` returns a (b, n_units) matrix of resampling weights w. For every pair
    the resampled statistic is ``T*_b = sum_i w_bi (d_i - offset) / sum_i |w_bi| - c`` over the
    units the pair shares, with ``c = mean(d)`` when ``centred`` and 0 otherwise; it is compared
    with the observed ``mean(d) - delta``. Returns (mean(d), n, #{b: T*_b >= observed}); a resample
    in which a pair shares no unit counts as exceeding (conservative).
    """
    n_models = x.shape[1]
    finite = np.isfinite(x)
    n, mean, _, _ = _paired_moments(x)
    observed = mean - delta
    centre = mean if centred else np.zeros_like(mean)
    exceed = np.zeros((n_models, n_models))
    chunk = max(1, min(reps, _CHUNK_CELLS // max(n_models * n_models, 1)))
    x0 = np.where(finite, x, 0.0)
    done = 0
    bar = Progress(reps, "resampling", min_interval=0.5)
    while done < reps:
        b = min(chunk, reps - done)
        w = weights_for_chunk(b)
        if finite.all():
            size = np.abs(w).sum(axis=1)[:, None, None]
            means = w @ x0
            total = w.sum(axis=1)[:, None, None]
            stat = (means[:, :, None] - means[:, None, :] - offset * total) / size - centre
            exceed += (stat >= observed).sum(axis=0)
        else:
            for j in range(n_models):
                common = (finite[:, [j]] & finite).astype(float)
                d = (x0[:, [j]] - x0 - offset) * common
                with np.errstate(invalid="ignore", divide="ignore"):
                    stat = (w @ d) / (np.abs(w) @ common) - centre[j]
                exceed[j] += np.where(np.isfinite(stat), stat >= observed[j], True).sum(axis=0)
        done += b
        bar.update(b)
    bar.close()
    return mean, n, exceed


def _bootstrap(x: np.ndarray, delta: float, reps: int, generator: np.random.Generator):
    """Centred paired bootstrap: p = (1 + #{mean*(d) - mean(d) >= mean(d) - delta}) / (reps + 1).

    Units are resampled jointly for all models (pairing kept); the bootstrap law of
    ``mean*(d) - mean(d)`` stands in for that of ``mean(d) - theta_d`` (Efron and Tibshirani 1993,
    Sec. 16.4).
    """
    _warn_resolution(reps, x.shape[1])
    n_units = x.shape[0]
    mean, n, exceed = _resampled_exceedances(
        x,
        delta,
        reps,
        lambda b: resample_counts(generator, b, n_units),
        offset=0.0,
        centred=True,
    )
    return _resampling_result(mean, n, exceed, reps)


def _permutation(x: np.ndarray, delta: float, reps: int, generator: np.random.Generator):
    """Sign-flip test of mean(d - delta): each unit's two scores are swapped with probability 1/2.

    Exact for delta = 0 when the two models' scores are exchangeable within units under the null;
    for delta > 0 it assumes ``d - delta`` is symmetric at the null boundary.
    """
    _warn_resolution(reps, x.shape[1])
    n_units = x.shape[0]
    mean, n, exceed = _resampled_exceedances(
        x,
        delta,
        reps,
        lambda b: generator.choice(np.array([-1.0, 1.0]), size=(b, n_units)),
        offset=delta,
        centred=False,
    )
    return _resampling_result(mean, n, exceed, reps)


def _resampling_result(mean, n, exceed, reps):
    pvalue = (1.0 + exceed) / (reps + 1.0)
    pvalue = np.where(n >= 2, pvalue, 1.0)
    return mean, mean.copy(), pvalue, n, None, None
