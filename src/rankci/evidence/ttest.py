"""The paired t and z tests, computed in blocks of rows, with the exact floor for few units.

``t = (mean(d) - delta) / (sd(d) / sqrt(n))`` for ``d = x_j - x_l`` over the n units of the pair,
against Student's t on n - 1 df (``t``) or the standard normal (``z``); with scores in [0, 1]
and at most ``exact_bound_n`` units, the p-value is never below Hoeffding's exact bound
(:func:`rankci.evidence.moments.bounded_pvalue`).

References
----------
Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.
Hoeffding, W. (1963). Probability inequalities for sums of bounded random variables. Journal of
the American Statistical Association 58(301), 13-30.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import special

from rankci.data import UnitScores
from rankci.evidence.moments import (
    MIN_CERTIFYING_UNITS,
    TestArrays,
    bounded_pvalue,
    is_bounded,
    largest_n,
    paired_moments,
    range_is_bounded,
    range_width,
    scan_range,
    studentize,
    variance_is_zero,
)

__all__ = [
    "GRAM_ELEMENTS",
    "GRAM_ROWS",
    "ROW_BLOCK",
    "THREADS",
    "centred_gram",
    "exact_floor",
    "gram_rows",
    "t_or_z",
    "t_or_z_complete",
    "t_smallest_pvalue",
    "t_test",
    "t_upper_tail",
    "z_test",
]


def t_test(units: UnitScores, delta: float, *, exact_bound_n: int = 0) -> TestArrays:
    """The paired t test of every ordered pair (:func:`rankci.pairwise_tests` with ``test="t"``).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.array([[1, 0], [1, 0], [1, 1], [0, 0], [1, 0], [1, 0]])
    >>> round(float(t_test(Scores.from_matrix(x).units(), 0.0, exact_bound_n=0).pvalue[0, 1]), 6)
    0.012516
    """
    return _test(units, delta, False, exact_bound_n)


def z_test(units: UnitScores, delta: float, *, exact_bound_n: int = 0) -> TestArrays:
    """The paired t statistic against the standard normal (``test="z"``)."""
    return _test(units, delta, True, exact_bound_n)


def _test(units: UnitScores, delta: float, normal: bool, exact_bound_n: int) -> TestArrays:
    x = units.values
    scanned = scan_range(x)  # one pass: completeness, bounds and width of the scores
    estimate, statistic, pvalue, n, se, df = t_or_z(
        x, delta, normal, exact_bound_n, scanned=scanned
    )
    smallest = t_smallest_pvalue(largest_n(n), exact_bound_n, delta, range_is_bounded(*scanned[1:]))
    return TestArrays(estimate, statistic, pvalue, n, se, df, smallest)


def t_smallest_pvalue(n_max: int, exact_bound_n: int, delta: float, bounded: bool) -> float:
    """The smallest p-value of the t (or z) test with at most ``n_max`` units per pair."""
    if n_max < 2:
        return 1.0
    if n_max < MIN_CERTIFYING_UNITS:  # two units: at best the exact bound, else nothing
        return ((1.0 + delta) / 2.0) ** n_max if bounded and abs(delta) < 1 else 1.0
    if bounded and n_max <= exact_bound_n and abs(delta) < 1:
        return ((1.0 + delta) / 2.0) ** n_max  # the exact bound at dbar = 1
    return 0.0


def t_or_z(
    x: np.ndarray,
    delta: float,
    normal: bool,
    exact_bound_n: int = 0,
    *,
    scanned: tuple[bool, float | None, float | None] | None = None,
):
    """The paired t (or z) arrays of every ordered pair; ``scanned`` is ``scan_range(x)``."""
    complete, lo, hi = scan_range(x) if scanned is None else scanned
    if complete:
        return t_or_z_complete(x, delta, normal, exact_bound_n, scanned=(complete, lo, hi))
    n, mean, var, _ = paired_moments(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        zero = variance_is_zero(var / n, range_width(lo, hi))
        se = np.sqrt(var / n)
    stat = studentize(mean, delta, se, zero)
    df = (n - 1).astype(float)
    if normal:
        pvalue = special.ndtr(-stat)
        df_out = None
    else:
        pvalue = t_upper_tail(stat, np.maximum(df, 1.0))
        df_out = df
    pvalue = exact_floor(x, pvalue, mean, delta, n, zero, exact_bound_n)
    pvalue = np.where(n >= 2, pvalue, 1.0)
    stat = np.where(n >= 2, stat, np.nan)
    return mean, stat, pvalue, n, np.where(n >= 2, se, np.nan), df_out


#: Threads for the t tail probabilities of a large board (scipy releases the GIL).
THREADS = min(4, os.cpu_count() or 1)

#: Rows of the M x M arrays computed at a time by :func:`t_or_z_complete` (a block of 256 rows
#: of 10,000 models is 20 MB per temporary, instead of 800 MB for the whole matrix).
ROW_BLOCK = 256


#: Rows (units) per block of the Gram product ``centred.T @ centred``: the blocks' products are
#: added in order, so the out-of-core path (:mod:`rankci.outofcore`), which sees the units a
#: block at a time, gives the same covariance bit for bit. Boards with at most this many units
#: take one product.
GRAM_ROWS = 1 << 16

#: Elements (units x models) of one Gram block at most: the out-of-core path holds one block,
#: and 65,536 units of 10,000 models would be 5 GB. 2^26 doubles (512 MiB) keep
#: :data:`GRAM_ROWS` rows up to 1,024 models; above, a block has ``2^26 // M`` rows
#: (6,710 at 10,000 models).
GRAM_ELEMENTS = 1 << 26


def gram_rows(m: int) -> int:
    """Units per block of the Gram product for ``m`` models (:func:`centred_gram`).

    ``min(GRAM_ROWS, GRAM_ELEMENTS // m)``, at least 1; the in-memory and the out-of-core paths
    both cut the units at these rows, so their covariances are the same bit for bit.

    Examples
    --------
    >>> gram_rows(100), gram_rows(10_000)
    (65536, 6710)
    """
    return max(1, min(GRAM_ROWS, GRAM_ELEMENTS // max(m, 1)))


def centred_gram(centred: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``centred.T @ centred`` as the sum, in order, of the products of blocks of
    :func:`gram_rows` rows (added to ``out`` when given).

    Examples
    --------
    >>> c = np.array([[1.0, -1.0], [-1.0, 1.0]])
    >>> centred_gram(c).tolist()
    [[2.0, -2.0], [-2.0, 2.0]]
    """
    m = centred.shape[1]
    gram = np.zeros((m, m)) if out is None else out
    rows = gram_rows(m)
    for r0 in range(0, max(centred.shape[0], 1), rows):
        block = centred[r0 : r0 + rows]
        if out is None and r0 == 0:
            gram = block.T @ block
        else:
            gram += block.T @ block
    return gram


def t_or_z_complete(
    x: np.ndarray,
    delta: float,
    normal: bool,
    exact_bound_n: int = 0,
    *,
    scanned: tuple[bool, float | None, float | None] | None = None,
):
    """:func:`t_or_z` without missing cells, computed in blocks of rows.

    The same operations as the general path, element by element, so the same numbers; but each
    temporary is one block of rows, so memory holds the covariance and the outputs (estimate,
    statistic, p-value, se) and not a dozen M x M temporaries, and the one-sided t
    p-values are computed once per unordered pair (:func:`t_upper_tail`). ``n`` and ``df``
    (one value for every pair) are read-only broadcast views, with no memory of their own.
    """
    n_units = x.shape[0]
    mu = x.mean(axis=0)
    centred = x - mu
    cov = centred_gram(centred) / max(n_units - 1, 1)
    del centred
    _, lo, hi = scan_range(x) if scanned is None else scanned
    bounded, width = range_is_bounded(lo, hi), range_width(lo, hi)
    out = t_or_z_from_moments(n_units, mu, cov, bounded, width, delta, normal, exact_bound_n)
    mean, stat, pvalue, n, se, df_out = out
    if n_units < MIN_CERTIFYING_UNITS:  # two units: at best the exact bound (or nothing)
        no_zero = np.zeros(pvalue.shape, dtype=bool)
        np.copyto(pvalue, exact_floor(x, pvalue, mean, delta, n_units, no_zero, 0))
    if n_units < 2:
        pvalue[:] = 1.0
        stat[:] = np.nan
    return mean, stat, pvalue, n, se, df_out


def t_or_z_from_moments(
    n_units: int,
    mu: np.ndarray,
    cov: np.ndarray,
    bounded: bool,
    width: float,
    delta: float,
    normal: bool,
    exact_bound_n: int = 0,
):
    """:func:`t_or_z_complete` from the sufficient statistics of complete units.

    ``n_units``, the column means ``mu``, the covariance ``cov`` (the centred Gram over
    ``n_units - 1``), whether every score is in [0, 1] and :func:`score_width`; the path of
    :func:`t_or_z_complete` and of :mod:`rankci.outofcore`. Needs at least
    :data:`MIN_CERTIFYING_UNITS` units for the p-values of boards of two units (the caller
    applies the exact floor there). ``cov`` is consumed (deleted from this frame).
    """
    m = mu.shape[0]
    var_j = np.diag(cov).copy()
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
        zero = variance_is_zero(var / n_units, width)
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
        q = _upper_block_tail(a, d, r1 - r0, scalar_df)
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


def _upper_block_tail(a: np.ndarray, d, size: int, scalar_df: bool) -> np.ndarray:
    """``special.stdtr(d, a)`` for a block of rows ``a`` whose first ``size`` columns are the
    square block on the diagonal: there ``stdtr`` is called on the upper triangle only and the
    strict lower triangle is mirrored where the pair's entries are equal (computed directly
    where they are not), so the same numbers with about half the calls on the diagonal."""
    q = np.empty(a.shape)
    if a.shape[1] > size:
        right = d if scalar_df else d[:, size:]
        q[:, size:] = special.stdtr(right, a[:, size:])
    square = a[:, :size]
    upper = np.triu_indices(size)
    block = np.empty((size, size))
    block[upper] = special.stdtr(d if scalar_df else d[:, :size][upper], square[upper])
    lower = np.tril_indices(size, -1)
    mirrored = block.T[lower]
    same = square[lower] == square.T[lower]
    if not scalar_df:
        same &= d[:, :size][lower] == d[:, :size].T[lower]
    if not same.all():
        differ = ~same
        dl = d if scalar_df else d[:, :size][lower][differ]
        mirrored[differ] = special.stdtr(dl, square[lower][differ])
    block[lower] = mirrored
    q[:, :size] = block
    return q


def exact_floor(x, pvalue, mean, delta, n, zero, exact_bound_n):
    """Where the test's p-value is replaced or floored by the exact bound of :func:`bounded_pvalue`.

    * A zero variance of the differences is never evidence. A pair whose differences are all
      equal has ``sd = 0``, so ``t = +-inf`` and ``p = 0``: two items won twice would be
      "certain". There the studentized statistic is undefined, and the p-value is instead the
      exact bound (valid for any law of the differences on [-1, 1], at every n): two wins out of
      two give p = 1/4, never 0. Scores outside [0, 1] (``bounds=None``) have no exact bound: a
      zero variance then gives p = 1.
    * Whether a variance is zero is decided by :func:`rankci.evidence.moments.variance_is_zero`
      on the variance of the mean difference, ``var / n``, against the scores' width (one
      absolute rule on every path).
    * Two units never certify anything: a pair with fewer than
      :data:`rankci.evidence.moments.MIN_CERTIFYING_UNITS` (3) units gets at best the exact bound
      (at least 1/4), whatever ``exact_bound_n``, or p = 1 for unbounded scores (its t has one
      degree of freedom); the certifiers do not certify such a pair at all
      (:func:`rankci.certify.holm.certify_holm`).
    * Few units: a pair with at most ``exact_bound_n`` units gets ``max(p, bound)`` (scores in
      [0, 1] and ``|delta| < 1`` only, where the bound is defined).

    Elsewhere the test is used as it is. :func:`t_or_z_complete` applies the same rule to its
    blocks of rows.
    """
    few = np.asarray(n) < MIN_CERTIFYING_UNITS  # two units never certify anything
    floored = zero | few
    if exact_bound_n and abs(delta) < 1:
        floored = floored | (n <= exact_bound_n)
    if not np.any(floored):
        return pvalue
    if is_bounded(x):
        return np.where(floored, np.maximum(pvalue, bounded_pvalue(mean, delta, n)), pvalue)
    return np.where(zero | few, 1.0, pvalue)
