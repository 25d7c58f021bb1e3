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

from rankci._base import Deferred
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
    "TailPValues",
    "centred_gram",
    "constant",
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
    scanned = units.range_scan()  # one pass: completeness, bounds and width of the scores
    score = units.model_scores() if scanned[0] and x.size else None  # the plain means
    estimate, statistic, pvalue, n, se, df = t_or_z(
        x, delta, normal, exact_bound_n, scanned=scanned, lazy=True, mu=score
    )
    n_max = int(x.shape[0]) if score is not None else largest_n(n)  # complete: every pair
    smallest = t_smallest_pvalue(n_max, exact_bound_n, delta, range_is_bounded(*scanned[1:]))
    return TestArrays(estimate, statistic, pvalue, n, se, df, smallest, score=score)


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
    lazy: bool = False,
    mu: np.ndarray | None = None,
):
    """The paired t (or z) arrays of every ordered pair; ``scanned`` is ``scan_range(x)``.

    ``lazy`` and ``mu`` as in :func:`t_or_z_complete` (used without missing cells only).
    """
    complete, lo, hi = scan_range(x) if scanned is None else scanned
    if complete:
        return t_or_z_complete(
            x, delta, normal, exact_bound_n, scanned=(complete, lo, hi), lazy=lazy, mu=mu
        )
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
    rows = gram_rows(m)
    if out is None and centred.shape[0] <= rows:  # one block: one product
        return centred.T @ centred if centred.shape[0] else np.zeros((m, m))
    gram = np.zeros((m, m)) if out is None else out
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
    lazy: bool = False,
    mu: np.ndarray | None = None,
):
    """:func:`t_or_z` without missing cells, computed in blocks of rows.

    The same operations as the general path, element by element, so the same numbers; but each
    temporary is one block of rows, so memory holds the covariance and the outputs (estimate,
    statistic, p-value, se) and not a dozen M x M temporaries, and the one-sided t
    p-values are computed once per unordered pair (:func:`t_upper_tail`). ``n`` and ``df``
    (one value for every pair) are read-only broadcast views, with no memory of their own.
    With ``lazy``, the p-values are a :class:`TailPValues` where they can be (see
    :func:`t_or_z_from_moments`). ``mu`` is ``x.mean(axis=0)`` when the caller has it (the
    same numbers: a sum divided by the number of units).
    """
    n_units = x.shape[0]
    mu = x.mean(axis=0) if mu is None else mu
    centred = x - mu
    cov = centred_gram(centred)
    del centred
    cov /= max(n_units - 1, 1)  # in place: the Gram is this call's own (M^2 less memory)
    _, lo, hi = scan_range(x) if scanned is None else scanned
    bounded, width = range_is_bounded(lo, hi), range_width(lo, hi)
    out = t_or_z_from_moments(
        n_units, mu, cov, bounded, width, delta, normal, exact_bound_n, lazy=lazy
    )
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
    *,
    lazy: bool = False,
):
    """:func:`t_or_z_complete` from the sufficient statistics of complete units.

    ``n_units``, the column means ``mu``, the covariance ``cov`` (the centred Gram over
    ``n_units - 1``), whether every score is in [0, 1] and :func:`score_width`; the path of
    :func:`t_or_z_complete` and of :mod:`rankci.outofcore`. Needs at least
    :data:`MIN_CERTIFYING_UNITS` units for the p-values of boards of two units (the caller
    applies the exact floor there). ``cov`` is consumed: deleted from this frame and, on
    boards of more than :data:`ROW_BLOCK` models, overwritten by the standard errors.

    With ``lazy``, the p-values come back as a :class:`TailPValues` (computed where they are
    read, the same numbers) unless the opt-in exact floor covers the board or there are fewer
    than :data:`MIN_CERTIFYING_UNITS` units (then the eager array, as without it).
    """
    m = mu.shape[0]
    var_j = cov.diagonal().copy()
    enough = n_units >= 2
    single = m <= ROW_BLOCK  # one block: its arrays are the outputs
    df = float(n_units - 1)
    floored = bounded and n_units <= exact_bound_n and abs(delta) < 1
    lazy = lazy and not floored and n_units >= MIN_CERTIFYING_UNITS
    # a large lazy board does not store the M x M mean differences: they are mu_j - mu_l,
    # computed again on their first read (MeanDifferences), the same numbers
    defer_mean = lazy and not single
    if not single:  # the outputs, written block by block in place (no block temporaries);
        # the standard errors overwrite the covariance, row block by row block: a block reads
        # only its own rows of it (and var_j, copied above), so M^2 less memory to fault in
        stat, se = np.empty((m, m)), cov
        mean = np.empty((ROW_BLOCK, m)) if defer_mean else np.empty((m, m))
        var_buffer, twice = np.empty((ROW_BLOCK, m)), np.empty((ROW_BLOCK, m))
    zero_rows = []
    for r0 in range(0, m, ROW_BLOCK):
        rows = slice(r0, min(r0 + ROW_BLOCK, m))
        if single:
            var = np.add.outer(var_j[rows], var_j)  # (var_j + var_l - 2 cov_jl, at least 0)
            var -= 2.0 * cov[rows]
            block_mean = np.subtract.outer(mu[rows], mu)
        else:  # the same operations, into the outputs and two reused buffers
            k = rows.stop - r0
            var, two_cov = var_buffer[:k], twice[:k]
            np.add(var_j[rows, None], var_j[None, :], out=var)
            np.multiply(cov[rows], 2.0, out=two_cov)
            var -= two_cov
            block_mean = np.subtract(
                mu[rows, None], mu[None, :], out=mean[:k] if defer_mean else mean[rows]
            )
        np.maximum(var, 0.0, out=var)
        var /= n_units  # the variance of the mean difference
        zero = variance_is_zero(var, width)
        block_se = var if single else se[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            np.sqrt(var, out=block_se)
        block_stat = studentize(
            block_mean, delta, block_se, zero, out=None if single else stat[rows]
        )
        if not enough:
            block_se[...] = np.nan
        if single:
            mean, stat, se = block_mean, block_stat, block_se
        if zero.any():
            zero_rows.append((rows, zero, block_mean[zero]))
    del cov
    if lazy:
        pvalue = TailPValues.from_blocks(
            stat, None if normal else max(df, 1.0), zero_rows, delta, n_units, bounded
        )
        df_out = None if normal else constant(df, m)
        if defer_mean:
            mean = MeanDifferences(mu)
        return mean, stat, pvalue, constant(np.int64(n_units), m), se, df_out
    pvalue = np.empty((m, m))
    if normal:
        for r0 in range(0, m, ROW_BLOCK):
            rows = slice(r0, min(r0 + ROW_BLOCK, m))
            pvalue[rows] = special.ndtr(-stat[rows])
        df_out = None
    else:
        t_upper_tail(stat, max(df, 1.0), out=pvalue)
        df_out = np.broadcast_to(df, (m, m))  # one value: a read-only view, no M x M array
    for (
        rows,
        zero,
        means,
    ) in zero_rows:  # the rule for a zero variance, on the few pairs it concerns
        block = pvalue[rows]
        if bounded:
            floor = bounded_pvalue(means, delta, np.full(int(zero.sum()), n_units))
            block[zero] = np.maximum(block[zero], floor)
        else:
            block[zero] = 1.0
    if floored:  # few units: the exact floor
        np.maximum(pvalue, bounded_pvalue(mean, delta, n_units), out=pvalue)
    n = np.broadcast_to(np.int64(n_units), (m, m))  # as df: every pair has every unit
    return mean, stat, pvalue, n, se, df_out


def constant(value: float | np.integer, m: int) -> np.ndarray:
    """An M x M read-only view of one value, with no memory of its own (as
    ``np.broadcast_to(value, (m, m))``, made faster): ``n`` and ``df`` of complete units.

    Examples
    --------
    >>> constant(np.int64(5), 2).tolist(), constant(5.0, 2).flags.writeable
    ([[5, 5], [5, 5]], False)
    """
    one = np.array(value)
    out = np.ndarray((m, m), dtype=one.dtype, buffer=one, strides=(0, 0))
    out.flags.writeable = False
    return out


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


class MeanDifferences(Deferred):
    """The M x M mean differences ``mu_j - mu_l`` of complete units, computed on their first read.

    ``np.subtract.outer(mu, mu)``: the same numbers as the arrays :func:`t_or_z_from_moments`
    computes block by block, which a large lazy board does not keep (at 10,000 models the array
    is 800 MB that ``rankci.rank`` never reads). NaN on the diagonal after
    :meth:`fill_diagonal_nan`, as :func:`rankci.evidence.pairwise.pairwise_tests` leaves it.

    Examples
    --------
    >>> differences = MeanDifferences(np.array([0.5, 0.25]))
    >>> differences.fill_diagonal_nan()
    >>> differences.compute().tolist()
    [[nan, 0.25], [-0.25, nan]]
    """

    def __init__(self, mu: np.ndarray) -> None:
        super().__init__()
        self.mu = mu
        self.nan_diagonal = False

    @property
    def shape(self) -> tuple[int, int]:
        return (self.mu.shape[0], self.mu.shape[0])

    def fill_diagonal_nan(self) -> None:
        """NaN on the diagonal of the computed array, as ``np.fill_diagonal(mean, np.nan)``."""
        self.nan_diagonal = True

    def compute(self) -> np.ndarray:
        out = np.subtract.outer(self.mu, self.mu)
        if self.nan_diagonal:
            out.flat[:: out.shape[1] + 1] = np.nan
        return out


class TailPValues(Deferred):
    """The one-sided p-values of the paired t (or z) test, computed where they are read.

    The eager path (:func:`t_or_z_from_moments`) computes ``P(T_df >= t)`` (the z test:
    ``P(Z >= z)``) for all M x M statistics, the largest part of the cost of a ranking on a
    large board. Holm's procedure needs far less: how many p-values are finite, which are at
    most a few thresholds, and the values between ``alpha / K`` and ``alpha``. A p-value is a
    decreasing function of its statistic, so those questions are answered from the statistics,
    with the tail computed only for the pairs whose statistic is near a threshold (or between
    the two): :meth:`finite`, :meth:`at_most`, :meth:`values`. :meth:`compute` is the whole
    array, by the eager code. Every p-value read either way is the eager path's, bit for bit:
    the tail is computed element by element with the same calls (``scipy.special.stdtr(df,
    -|t|)``, ``1 -`` it where ``t < 0``, as :func:`t_upper_tail`; ``ndtr(-z)`` for the z test),
    and the pairs of a zero variance (``fixed``) get the values the eager path gives them,
    computed the same way when the statistics are made.

    As the value of :attr:`rankci.evidence.pairwise.Pairwise.pvalue` (a
    :class:`~rankci._base.DeferredField`) it is turned into that array on the first read, so a
    reader of ``pairwise.pvalue`` always gets a plain array; :func:`rankci.certify.holm.reject`
    reads it without (:func:`rankci._base.peek`).

    Parameters
    ----------
    stat : ndarray (M, M)
        The statistics (shared with the result's ``statistic``, not copied).
    df : float or None
        Degrees of freedom of the t; None for the z test (standard normal).
    fixed_index, fixed_value : ndarray
        Flat indices (ascending) of the pairs of a zero variance, and their p-values (or
        None with ``fixed_rule``: the means of those pairs, delta and whether the scores are
        in [0, 1], from which the eager rule computes them when first needed).
    units : int
        The units of every pair.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special
    >>> t = np.array([[0.0, 2.5], [-2.5, 0.0]])
    >>> tail = TailPValues(t, 9.0, np.array([0, 3]), np.array([1.0, 1.0]), 10)
    >>> tail.at_most(0.05).tolist()  # only the statistics near the threshold are computed
    [[False, True], [False, False]]
    >>> q = special.stdtr(9, -2.5)  # P(T_9 >= 2.5)
    >>> bool(tail.values(tail.at_most(0.05))[0] == q)
    True
    >>> bool(np.array_equal(tail.compute(), [[1.0, q], [1 - q, 1.0]]))
    True
    """

    #: the relative width, in statistic units, of the band around a threshold where the tail
    #: is computed; widened until the tail at its edges is clearly on either side (below)
    BAND = 1e-6
    #: how clearly: the tail at the band's edges differs from the threshold by this factor
    CLEAR = 1e-7

    def __init__(
        self,
        stat: np.ndarray,
        df: float | None,
        fixed_index: np.ndarray,
        fixed_value: np.ndarray | None,
        units: int,
        *,
        fixed_rule: tuple[np.ndarray, float, bool] | None = None,
    ) -> None:
        super().__init__()
        self.stat = stat
        self.df = df
        self.units = int(units)
        self.fixed_index = np.asarray(fixed_index, dtype=np.intp)
        self._fixed_value = None if fixed_value is None else np.asarray(fixed_value, dtype=float)
        self._fixed_rule = fixed_rule
        self._count = None
        self._centres: dict[float, float] = {}  # threshold -> its statistic (_centre)
        self._inert = False
        self.nan_diagonal = False

    @classmethod
    def from_blocks(cls, stat, df, zero_rows, delta, n_units, bounded) -> TailPValues:
        """The lazy p-values of :func:`t_or_z_from_moments`: the pairs of a zero variance (its
        ``zero_rows``: blocks of rows, their masks and the mean differences there) get the
        eager rule's values, computed
        when first needed (the diagonal's never: it is NaN in every result)."""
        m = stat.shape[1]
        index, means = [], []
        for rows, zero, block_means in zero_rows:
            r, c = zero.nonzero()
            index.append((r + rows.start) * m + c)
            means.append(block_means)
        if not index:
            index, means = [np.zeros(0, dtype=np.intp)], [np.zeros(0)]
        if len(index) > 1:
            index, means = [np.concatenate(index)], [np.concatenate(means)]
        rule = (means[0], float(delta), bool(bounded))
        return cls(stat, df, index[0], None, n_units, fixed_rule=rule)

    @property
    def fixed_value(self) -> np.ndarray:
        """The p-values of the fixed pairs: the eager rule for a zero variance (``max(tail,
        exact bound)`` for scores in [0, 1], else 1), NaN on the diagonal once filled."""
        if self._fixed_value is None:
            means, delta, bounded = self._fixed_rule
            values = np.full(self.fixed_index.size, np.nan)
            keep = slice(None)
            if self.nan_diagonal:  # NaN there whatever the rule
                keep = self.fixed_index % (self.stat.shape[1] + 1) != 0
                if not keep.any():  # only the diagonal (the usual case)
                    self._fixed_value = values
                    return values
            tail = _tail(self.stat.ravel()[self.fixed_index[keep]], self.df)
            if bounded:
                floor = bounded_pvalue(means[keep], delta, np.full(tail.size, self.units))
                values[keep] = np.maximum(tail, floor)
            else:
                values[keep] = 1.0
            self._fixed_value = values
        return self._fixed_value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.stat.shape

    def fill_diagonal_nan(self) -> None:
        """NaN on the diagonal, as ``np.fill_diagonal(pvalue, np.nan)`` on the eager array.

        The diagonal is made of fixed pairs (a model against itself has a zero variance), so
        this only sets their values."""
        m = self.stat.shape[1]
        if np.count_nonzero(self.fixed_index % (m + 1) == 0) != m:  # not all fixed yet
            values = self.fixed_value
            merged = np.union1d(self.fixed_index, np.arange(m) * (m + 1))
            full = np.full(merged.size, np.nan)
            full[np.searchsorted(merged, self.fixed_index)] = values
            self.fixed_index, self._fixed_value = merged, full
        self.nan_diagonal = True
        self._count = None
        if self._fixed_value is not None:
            self._fixed_value = self._fixed_value.copy()
            self._fixed_value[self.fixed_index % (m + 1) == 0] = np.nan
        # only the diagonal is fixed, and its statistics are NaN too (as pairwise_tests leaves
        # them): every answer there is already "NaN" without setting the fixed values
        self._inert = self.fixed_index.size == m and bool(
            np.isnan(self.stat.ravel()[self.fixed_index]).all()
        )

    def compute(self) -> np.ndarray:
        """The whole M x M array, by the eager path's code (the same numbers)."""
        stat = self.stat
        if self.df is None:
            out = np.empty(stat.shape)
            for r0 in range(0, stat.shape[0], ROW_BLOCK):
                rows = slice(r0, min(r0 + ROW_BLOCK, stat.shape[0]))
                out[rows] = special.ndtr(-stat[rows])
        else:
            out = t_upper_tail(stat, self.df)
        out.ravel()[self.fixed_index] = self.fixed_value
        return out

    def finite(self) -> np.ndarray:
        """``np.isfinite(p)``: the tail is finite wherever the statistic is a number."""
        out = ~np.isnan(self.stat)
        out.ravel()[self.fixed_index] = np.isfinite(self.fixed_value)
        return out

    def count_finite(self) -> int:
        """``np.isfinite(p).sum()``: the size of Holm's family."""
        if self._count is None:
            self._count = self._count_finite()
        return self._count

    def _count_finite(self) -> int:
        if self._inert:  # NaN where fixed: the numbers are the statistics that are numbers
            return self.stat.size - int(np.count_nonzero(np.isnan(self.stat)))
        fixed = self.fixed_value
        numbers = self.stat.size - int(np.count_nonzero(np.isnan(self.stat)))
        at_fixed = self.stat.ravel()[self.fixed_index]
        numbers -= self.fixed_index.size - int(np.count_nonzero(np.isnan(at_fixed)))
        return numbers + int(np.count_nonzero(np.isfinite(fixed)))

    def values(self, where: np.ndarray) -> np.ndarray:
        """``p[mask]`` (row-major order) for a boolean M x M ``where``, or ``p.ravel()[where]``
        for flat indices, the tail computed at those pairs only."""
        where = np.asarray(where)
        return self._at(np.flatnonzero(where) if where.dtype == bool else where.astype(np.intp))

    def at_most(self, threshold: float, decide=None) -> np.ndarray:
        """``p <= threshold``, with the tail computed only for statistics near the threshold.

        ``decide(values)`` replaces ``values <= threshold`` for those (and the fixed pairs):
        a rule that agrees with it except within a relative 1e-9 of the threshold (Bonferroni's
        ``p * K <= alpha`` for the threshold ``alpha / K``).
        """
        if decide is None:

            def decide(values):
                return values <= threshold

        band = self._band(threshold)
        if band is None:  # a threshold the band cannot be placed at: from the whole array
            with np.errstate(invalid="ignore"):
                return decide(self.compute())
        lo, hi = band
        stat = self.stat
        out = stat > hi
        near = ((stat >= lo) ^ out).ravel().nonzero()[0]  # lo <= stat <= hi
        if near.size:  # (the fixed pairs among them are set below)
            out.ravel()[near] = decide(_tail(stat.ravel()[near], self.df))
        if self.fixed_index.size and not self._inert:
            out.ravel()[self.fixed_index] = decide(self.fixed_value)
        return out

    def count_at_most_bound(self, threshold: float) -> int:
        """At least ``np.count_nonzero(p <= threshold)`` (more where statistics are just below
        its statistic), without computing any tail: the statistics at least 0.99 times the
        threshold's, and the fixed pairs at most the threshold."""
        if not 0.0 < threshold < 0.25:
            return self.stat.size
        centre = self._centre(threshold)
        if not np.isfinite(centre) or centre <= 0:
            return self.stat.size
        above = int(np.count_nonzero(self.stat >= 0.99 * centre))
        if self._inert:
            return above
        return above + int(np.count_nonzero(self.fixed_value <= threshold))

    def _centre(self, threshold: float) -> float:
        """The statistic whose tail is ``threshold`` (computed once per threshold: Holm asks
        about alpha / K twice)."""
        centre = self._centres.get(threshold)
        if centre is None:
            if self.df is None:
                centre = -float(special.ndtri(threshold))
            else:
                centre = -float(special.stdtrit(self.df, threshold))
            self._centres[threshold] = centre
        return centre

    def _band(self, threshold: float) -> tuple[float, float] | None:
        """``(lo, hi)``: every statistic below lo has a tail clearly above the threshold, every
        one above hi clearly below it (the tail is decreasing). None for a threshold outside
        (0, 1/4) or one whose statistic is not finite."""
        if not 0.0 < threshold < 0.25:
            return None
        centre = self._centre(threshold)
        if not np.isfinite(centre) or centre <= 0:
            return None
        width = self.BAND * max(centre, 1.0)
        while width < centre / 2:
            lo, hi = centre - width, centre + width
            if self.df is None:
                at_lo, at_hi = special.ndtr(-lo), special.ndtr(-hi)
            else:
                at_lo, at_hi = special.stdtr(self.df, -lo), special.stdtr(self.df, -hi)
            if at_lo > threshold * (1 + self.CLEAR) and at_hi < threshold * (1 - self.CLEAR):
                return lo, hi
            width *= 16
        return None

    def _at(self, index: np.ndarray) -> np.ndarray:
        """The p-values at flat indices ``index``."""
        out = _tail(self.stat.ravel()[index], self.df)
        if self.fixed_index.size and index.size:
            where = np.searchsorted(self.fixed_index, index)
            where = np.minimum(where, self.fixed_index.size - 1)
            hit = self.fixed_index[where] == index
            out[hit] = self.fixed_value[where[hit]]
        return out


def _tail(stat: np.ndarray, df: float | None) -> np.ndarray:
    """The eager path's p-value of each statistic, element by element: ``ndtr(-z)`` (df None),
    else ``q = stdtr(df, -|t|)`` and ``1 - q`` where ``t < 0`` (as :func:`t_upper_tail`)."""
    if df is None:
        return special.ndtr(-stat)
    q = special.stdtr(df, -np.abs(stat))
    negative = stat < 0
    q[negative] = 1.0 - q[negative]
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
