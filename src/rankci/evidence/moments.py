"""What every paired test shares: paired moments, the studentized statistic, the exact bound.

* :class:`TestArrays`: what a test of the registry (:data:`rankci.registry.TEST_REGISTRY`)
  returns, M x M arrays, row j, column l, for ``H_jl: theta_j - theta_l <= delta``;
* :func:`paired_moments`: n, mean, variance and scale of the differences of every pair, from one
  covariance (or masked cross-products when cells are missing);
* :func:`studentize`, :func:`bounded_pvalue` (Hoeffding's exact bound for scores in [0, 1]);
* :func:`variance_is_zero`, :func:`score_width`: the one rule, on every path, for a variance that
  is zero up to rounding (:data:`ZERO_VARIANCE_FACTOR`), and :data:`MIN_CERTIFYING_UNITS` (two
  units never certify anything).

References
----------
Hoeffding, W. (1963). Probability inequalities for sums of bounded random variables. Journal of
the American Statistical Association 58(301), 13-30.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special

from rankci._base import DeferredField
from rankci.data import scan_range

__all__ = [
    "MIN_CERTIFYING_UNITS",
    "ZERO_VARIANCE_FACTOR",
    "TestArrays",
    "bounded_pvalue",
    "finite_range",
    "is_bounded",
    "largest_n",
    "paired_moments",
    "range_is_bounded",
    "range_width",
    "scan_range",
    "score_width",
    "studentize",
    "variance_is_zero",
]

#: The constant c of the zero-variance rule ``var <= c * eps * R**2`` (:func:`variance_is_zero`).
ZERO_VARIANCE_FACTOR = 64.0

#: The fewest independent units (or clusters) from which any pair can be certified: with two, a
#: paired test has one degree of freedom and a clustered variance two cluster sums, so two units
#: never certify anything, on any path.
MIN_CERTIFYING_UNITS = 3


def score_width(x: np.ndarray) -> float:
    """R, the scale of the zero-variance rule: ``max(max - min, max |x|)`` of the finite scores.

    The range bounds the centred scores; the largest magnitude bounds the rounding of their
    centring. 1.0 when there is no finite score or all are 0 (for scores in [0, 1], R <= 1).

    Examples
    --------
    >>> score_width(np.array([[0.0, 1.0], [np.nan, 0.5]]))
    1.0
    >>> score_width(np.array([[1000.0, 1001.0]]))
    1001.0
    """
    return range_width(*finite_range(x))


def range_width(lo: float | None, hi: float | None) -> float:
    """:func:`score_width` from the finite range ``(lo, hi)`` of :func:`finite_range`.

    Examples
    --------
    >>> range_width(0.0, 1.0), range_width(None, None)
    (1.0, 1.0)
    """
    if lo is None:
        return 1.0
    width = max(hi - lo, max(abs(lo), abs(hi)))
    return width if width > 0 else 1.0


def finite_range(x: np.ndarray) -> tuple[float | None, float | None]:
    """The smallest and largest finite score, ``(None, None)`` when there is none.

    Two reductions and no copy when every score is finite (NaN and infinities show in the
    minimum or maximum); otherwise the finite scores are selected first.

    Examples
    --------
    >>> finite_range(np.array([[0.5, np.nan], [2.0, -1.0]]))
    (-1.0, 2.0)
    """
    return scan_range(x)[1:]


def variance_is_zero(var: np.ndarray, width: float) -> np.ndarray:
    """Whether the variance ``var`` of a mean (or of a difference of means) is zero up to rounding.

    ``zero = var <= c * eps * R**2``, with ``eps = 2**-52`` (double precision), ``R =``
    :func:`score_width` of the scores the variance was computed from and ``c =``
    :data:`ZERO_VARIANCE_FACTOR` = 64.

    Why this threshold: every variance here is a sum of products of centred scores, divided by
    (about) the square of the number of units: ``S_jl = sum_i c_ij c_il / (n (n - 1))`` (or the
    cluster sums of ``c``, divided by ``N**2``), with ``|c| <= R``. In floating point the mean
    of n values is off by at most ``~ n eps R`` (recursive summation), so each centred value by
    ``~ n eps R`` and each product by ``~ 2 n eps R**2``; the sum of n products carries ``~ 2 n**2
    eps R**2 + n**2 eps R**2`` and after the division by ``n (n - 1)`` each entry ``S_jl`` is off
    by at most ``~ 3 eps R**2``, whatever n. ``var(d_jl) = S_jj + S_ll - 2 S_jl`` then carries at
    most ``~ 12 eps R**2``; ``c = 64`` leaves room for the small-sample factors (G / (G - 1) <= 2,
    CR2's adjustment). Below it a computed variance cannot be told from 0. The rule is absolute:
    it does not compare the variance with the models' own variances, which vanish too when every
    unit (or cluster) gives the same means (a variance of 1e-33 against own variances of 1e-33
    passed the old relative test and gave t = 1e15). For scores in [0, 1] the threshold is
    1.4e-14, a standard error of 1.2e-7: a genuine difference of one item in 10,000 (a variance
    of the mean difference of 1e-8) is far above it.

    A zero variance is never evidence: the studentized statistic is undefined there, and each
    path says what it does instead (the exact bound, p = 1, no interval).

    Parameters
    ----------
    var : array_like
        Variances of means (for the variance ``s**2`` of n unit differences pass ``s**2 / n``).
        NaN is not zero.
    width : float
        R, :func:`score_width` of the scores.

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> bool(variance_is_zero(1e-33, 1.0)), bool(variance_is_zero(1e-8, 1.0))
    (True, False)
    """
    threshold = ZERO_VARIANCE_FACTOR * np.finfo(float).eps * float(width) ** 2
    with np.errstate(invalid="ignore"):
        return np.asarray(var, dtype=float) <= threshold


@dataclass(frozen=True, eq=False)
class TestArrays:
    """The M x M arrays one paired test gives (row j, column l: ``H_jl``).

    Attributes
    ----------
    estimate, statistic, pvalue : ndarray (M, M)
        ``pvalue`` may be given as a :class:`~rankci._base.Deferred` (the t and z tests give a
        :class:`rankci.evidence.ttest.TailPValues`): it is computed on its first read. So may
        ``estimate`` (:class:`rankci.evidence.ttest.MeanDifferences`, on large boards).
    n : ndarray (M, M) of int
        Units used for the pair.
    se, df : ndarray (M, M) or None
        Where the test has them.
    smallest_pvalue : float
        The smallest p-value the test can give on these units (see
        :attr:`rankci.evidence.pairwise.Pairwise.smallest_pvalue`).
    notes : dict
        What the test reports beside its arrays, recorded in the result's options (``auto``:
        ``test_rule``, ``sign_pairs``; a ``small_sample_warning``).
    score : ndarray (M,) or None
        Each model's mean unit score, where the test computed it on the way (the same numbers
        as :meth:`rankci.data.UnitScores.model_scores`); None otherwise.
    """

    __test__ = False  # not a pytest test class

    estimate: np.ndarray = DeferredField()
    statistic: np.ndarray
    pvalue: np.ndarray = DeferredField()
    n: np.ndarray
    se: np.ndarray | None = None
    df: np.ndarray | None = None
    smallest_pvalue: float = 0.0
    notes: dict = field(default_factory=dict)
    score: np.ndarray | None = None


def largest_n(n: np.ndarray) -> int:
    """The most units any pair has (0 for an empty board)."""
    return int(np.max(n, initial=0))


def paired_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For every pair, over the units both models have: n, mean of d, variance of d, scale.

    Complete data use one covariance matrix: ``var(d_jl) = S_jj + S_ll - 2 S_jl``. With missing
    cells, masked cross-products of the column-centred matrix give the same quantities on each
    pair's common units. ``scale`` is the sum of the two models' own variances (mean squares of
    the centred scores); a variance that is zero up to rounding is recognised by
    :func:`variance_is_zero`, not against ``scale``.
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


def studentize(
    estimate: np.ndarray,
    delta: float,
    se: np.ndarray,
    zero: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """(estimate - delta) / se, with a zero standard error giving +-inf (or 0 when equal).

    ``out`` (optional, the shape of ``estimate``) receives the result, as in a ufunc."""
    shift = estimate - delta
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.divide(shift, se, out=out)
    zero = np.asarray(zero)
    if isinstance(stat, np.ndarray) and stat.shape == zero.shape == np.shape(shift):
        if zero.any():  # the same numbers as below, set at the few zero entries only
            s = shift[zero]
            stat[zero] = np.where(s > 0, np.inf, np.where(s < 0, -np.inf, 0.0))
        return stat
    infinite = np.where(shift > 0, np.inf, np.where(shift < 0, -np.inf, 0.0))
    return np.where(zero, infinite, stat)


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


def is_bounded(x: np.ndarray) -> bool:
    """Whether every finite score lies in [0, 1] (the premise of :func:`bounded_pvalue`)."""
    return range_is_bounded(*finite_range(x))


def range_is_bounded(lo: float | None, hi: float | None) -> bool:
    """:func:`is_bounded` from the finite range ``(lo, hi)`` of :func:`finite_range`."""
    return bool(lo is not None and lo >= 0.0 and hi <= 1.0)
