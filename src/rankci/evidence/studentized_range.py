"""The studentized range distribution, vectorised, and Tukey-adjusted p-values.

* :func:`tukey_pvalues` -- studentized-range adjusted p-values (Tukey HSD, Nemenyi, and as an
  approximation the mixed model's contrasts);
* :func:`studentized_range_sf`, :func:`studentized_range_isf` -- the studentized range
  distribution for many arguments at once; :func:`studentized_range_critical` its quantile.

``scipy.stats.studentized_range`` integrates every argument separately with adaptive quadrature
(about 55 us per value with infinite df, 7-30 ms with finite df), so 19,900 pairs of 200 models
took minutes. Here the range of k standard normals is tabulated once per k (its survival function
on a grid of 3,001 points, by a trapezoid rule that is exact to about 1e-14 for these Gaussian
integrands, and quintic splines of its logarithm and, where it falls from 1, of the log cdf);
the finite-df distribution is then a fixed Gauss-Legendre rule over the chi scale, evaluated for
all arguments at once. It agrees with scipy to 1e-10 absolute on the test grid (scipy's own
tolerance is 1e-11 on the cdf) and with direct integration to 1e-9 relative in the tail
(tests/analyses/test_posthoc.py).
``backend="auto"`` keeps scipy's per-value computation for at most :data:`EXACT_PAIRS` values,
so that results for up to 45 models are the same floats as before.

References
----------
Tukey, J. W. (1953). The problem of multiple comparisons. Unpublished manuscript, Princeton.
Lund, R. E. and Lund, J. R. (1983). Algorithm AS 190: probabilities and upper quantiles for the
studentized range. Journal of the Royal Statistical Society C 32(2), 204-210.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import interpolate, optimize, special, stats

from rankci._base import check_choice
from rankci._progress import Progress

__all__ = [
    "EXACT_PAIRS",
    "STUDENTIZED_RANGE_BACKENDS",
    "studentized_range_critical",
    "studentized_range_isf",
    "studentized_range_sf",
    "tukey_pvalues",
    "use_scipy",
]

#: how the studentized range is evaluated (the ``backend`` of :func:`tukey_pvalues`): "auto"
#: (scipy for at most EXACT_PAIRS values, else vectorised), "scipy"
#: (``scipy.stats.studentized_range``, one adaptive integral per value) or "vectorised"
#: (:func:`studentized_range_sf`)
STUDENTIZED_RANGE_BACKENDS = ("auto", "scipy", "vectorised")
#: "auto" uses scipy's per-value integration up to this many values (45 models give 990 pairs)
EXACT_PAIRS = 1000

_DF_ASYMPTOTIC = 1e5  # scipy switches to the infinite-df integral at this df; so does this code
_X_STEP, _X_MAX = 0.01, 30.0  # grid of the range of normals; sf(30) < 1e-90 for any k < 1e6
_Z_STEP, _Z_LO = 0.05, -9.0  # trapezoid rule over the normal variable
_CDF_FLOOR = 1e-16  # below the x where P(range <= x) <= this, the range sf is taken as 1
_TAIL = 45.0  # the chi-scale density is integrated where it is within e^-45 of its mode
_GL_NODES = np.polynomial.legendre.leggauss(10)
_PANEL_WIDTH, _PANEL_SCALE = 0.05, 0.7  # panels no wider than 0.05 in log s, or 0.7 / sqrt(df)
_CHUNK_CELLS = 2**20  # pairs x nodes evaluated at once (8 MiB per float64 temporary)


def _quintic(x: np.ndarray, y: np.ndarray) -> interpolate.PPoly:
    """Interpolating spline of degree 5 (error O(h^6)), as piecewise polynomials (fast to
    evaluate)."""
    return interpolate.PPoly.from_spline(interpolate.make_interp_spline(x, y, k=5))


class _RangeTable:
    """``log P(R_k > x)`` by quintic splines: of ``log P(R_k > x)`` in x where the survival is at
    most 1/2 or x < 0.25, and of ``log P(R_k <= x)`` in log x between (so each tail keeps its
    relative accuracy; one spline of the survival alone was 1e-10 off on the shoulder where it
    falls from 1, for k = 400)."""

    def __init__(self, x: np.ndarray, sf: np.ndarray, cdf: np.ndarray) -> None:
        self.upper = _quintic(x, np.log(np.maximum(sf, 1e-300)))
        # in log x: near 0, P(R_k <= x) ~ c x^(k-1) is a straight line there
        self.lower = _quintic(np.log(x[1:]), np.log(np.maximum(cdf[1:], 1e-300)))
        self.x_half = float(x[np.searchsorted(sf <= 0.5, True)]) if (sf <= 0.5).any() else _X_MAX
        below = np.flatnonzero(cdf <= _CDF_FLOOR)
        #: below this x, P(R_k <= x) <= 1e-16: the survival is taken as 1
        self.x_one = float(x[below[-1]]) if below.size and below[-1] > 0 else 0.0

    def log_sf(self, x: np.ndarray) -> np.ndarray:
        """``log P(R_k > x)`` for 0 <= x <= _X_MAX (any shape)."""
        flat = x.ravel()
        out = np.empty(flat.size)
        # the cdf spline on the shoulder only: below x = 0.25 the survival spline is smooth
        # (1 - x / sqrt(pi) for k = 2) and for large k the cdf there is far below 1e-16
        low = (flat < self.x_half) & (flat >= 0.25)
        out[~low] = self.upper(flat[~low])
        lower = np.exp(np.minimum(self.lower(np.log(flat[low])), 0.0))
        out[low] = np.log1p(-lower)
        return out.reshape(x.shape)


@functools.lru_cache(maxsize=16)
def _range_table(k: int) -> _RangeTable:
    """The survival function of the range R_k of k standard normals, tabulated (cached per k).

    ``P(R_k > x) = k int phi(z) [Phi(z)^(k-1) - (Phi(z) - Phi(z - x))^(k-1)] dz``, computed as
    ``Phi(z)^(k-1) (-expm1((k-1) log(1 - Phi(z-x)/Phi(z))))`` so that the far tail keeps its
    relative accuracy; the trapezoid rule on [-9, x_max/2 + 9] (step 0.05) is exact to rounding for
    these smooth Gaussian-tailed integrands, and the result is normalised by the rule's total mass.
    """
    x = np.arange(0.0, _X_MAX + _X_STEP / 2, _X_STEP)
    z = np.arange(_Z_LO, _X_MAX / 2 + 9.0 + _Z_STEP / 2, _Z_STEP)
    m = k - 1.0
    log_a = special.log_ndtr(z)
    base = np.exp(np.log(k) - 0.5 * z * z - 0.5 * np.log(2.0 * np.pi) + m * log_a)
    mass = base.sum()
    sf, cdf = np.empty(x.size), np.empty(x.size)
    with np.errstate(divide="ignore", under="ignore"):
        for start in range(0, x.size, 256):
            xs = x[start : start + 256, None]
            b = special.ndtr(z - xs)
            d = np.where(
                z < 0,
                special.ndtr(z) - b,
                special.ndtr(xs - z) - special.ndtr(-z),
            )  # Phi(z) - Phi(z - x), without cancellation on either side
            ratio = b / np.exp(log_a)
            log_ratio = np.where(ratio < 0.5, np.log1p(-np.minimum(ratio, 0.5)), np.log(d) - log_a)
            sf[start : start + 256] = (base * -np.expm1(m * log_ratio)).sum(axis=1) / mass
            cdf[start : start + 256] = (base * np.exp(m * log_ratio)).sum(axis=1) / mass
    sf[0], cdf[0] = 1.0, 0.0
    return _RangeTable(x, sf, cdf)


def _sf_infinite(q: np.ndarray, k: int) -> np.ndarray:
    out = np.exp(_range_table(k).log_sf(np.minimum(q, _X_MAX)))
    out[q >= _X_MAX] = 0.0
    return out


def _chi_support(df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The u = log s interval where the log density of s = sqrt(chi2_df / df), ``df (u -
    e^(2u) / 2) + const``, is within _TAIL of its maximum at u = 0 (bisection; it is concave)."""

    def gap(u):
        return df * (u - 0.5 * np.expm1(2.0 * u)) + _TAIL

    lo_a, lo_b = -_TAIL / df - 1.0, np.zeros_like(df)
    hi_a, hi_b = np.zeros_like(df), np.sqrt(_TAIL / df) + 0.01
    for _ in range(55):
        mid = 0.5 * (lo_a + lo_b)
        out = gap(mid) < 0
        lo_a, lo_b = np.where(out, mid, lo_a), np.where(out, lo_b, mid)
        mid = 0.5 * (hi_a + hi_b)
        out = gap(mid) < 0
        hi_a, hi_b = np.where(out, hi_a, mid), np.where(out, mid, hi_b)
    return lo_a, hi_b


def _sf_finite(q: np.ndarray, k: int, df: np.ndarray, bar: Progress | None) -> np.ndarray:
    """``P(Q > q) = int f(s) P(R_k > q s) ds`` over s = sqrt(chi2_df / df), in u = log s.

    Where ``q s`` is below the point where ``P(R_k <= q s) <= 1e-16`` the range survival is 1
    and that part is the chi2 cdf (``gammainc``); the rest, up to where the density or the range
    survival is negligible, takes composite 10-point Gauss-Legendre panels no wider than 0.05 or
    0.7 / sqrt(df) (the density's scale, 1 / sqrt(2 df) in log s).
    """
    table = _range_table(k)
    x_one = table.x_one
    lo, hi = _chi_support(df)
    with np.errstate(divide="ignore"):
        start = np.log(x_one / q) if x_one > 0 else np.full(q.shape, -np.inf)
        stop = np.log(_X_MAX / q)
    head = special.gammainc(df / 2.0, df * (x_one / q) ** 2 / 2.0) if x_one > 0 else 0.0
    lo, hi = np.maximum(lo, start), np.minimum(hi, stop)
    length = np.maximum(hi - lo, 0.0)
    width = np.minimum(_PANEL_WIDTH, _PANEL_SCALE / np.sqrt(df))
    panels = np.ceil(length / width).astype(np.int64)
    log_c = 0.5 * df * np.log(df) - special.gammaln(0.5 * df) - (0.5 * df - 1.0) * np.log(2.0)
    body = np.zeros(q.shape)
    gx, gw = _GL_NODES
    order = np.argsort(panels, kind="stable")
    order = order[panels[order] > 0]  # no body where the range survival is 1 or negligible
    if bar is not None:
        bar.update(q.size - order.size)
    i = 0
    while i < order.size:  # chunks of pairs with similar panel counts (sorted), bounded cells
        size = max(_CHUNK_CELLS // (int(panels[order[i]]) * gx.size), 1)
        while size > 1 and int(panels[order[min(i + size, order.size) - 1]]) * gx.size * size > (
            _CHUNK_CELLS
        ):
            size = max(size // 2, 1)
        take = order[i : i + size]
        n_panels = int(panels[take[-1]])
        t = ((np.arange(n_panels)[:, None] + 0.5 * (gx + 1.0)) / n_panels).ravel()
        w = np.tile(0.5 * gw / n_panels, n_panels)
        u = lo[take, None] + length[take, None] * t
        nu = df[take, None]
        e = np.exp(u)
        log_f = nu * (u - 0.5 * e * e) + table.log_sf(np.minimum(q[take, None] * e, _X_MAX))
        log_f += log_c[take, None]
        body[take] = np.exp(log_f) @ w * length[take]
        i += take.size
        if bar is not None:
            bar.update(take.size)
    return np.clip(head + body, 0.0, 1.0)


def studentized_range_sf(
    q: np.ndarray | float, k: int, df: np.ndarray | float, *, progress: bool | None = False
) -> np.ndarray:
    """``P(Q_{k, df} > q)``, the studentized range survival function, for many q and df at once.

    ``Q = R_k / s`` with ``R_k`` the range of k standard normals and ``s^2 ~ chi2_df / df``
    independent of it:

    ``P(Q > q) = int_0^inf f_df(s) P(R_k > q s) ds``,
    ``P(R_k > x) = k int phi(z) [Phi(z)^(k-1) - (Phi(z) - Phi(z - x))^(k-1)] dz``.

    ``P(R_k > x)`` is tabulated once per k (cached) and interpolated by quintic splines of its
    logarithm (and of the log cdf where it falls from 1); the integral over s is a fixed composite
    Gauss-Legendre rule. From df = 1e5 on, the infinite-df distribution is used, as scipy does.
    Agreement with scipy's adaptive integration is 1e-10 absolute or better on the grid of
    tests/analyses/test_posthoc.py (k = 3, 40; df = 1..inf); unlike ``1 - cdf`` it keeps relative
    accuracy far into the tail (for k = 2 it equals
    ``2 P(T_df > q / sqrt 2)`` to 1e-10 relative).

    Parameters
    ----------
    q : array_like
        Values of the statistic (any shape; q <= 0 gives 1).
    k : int
        Number of means (k >= 2).
    df : array_like or float
        Degrees of freedom (> 0, inf allowed), broadcast against ``q``.
    progress : bool or None, default False
        Show a progress bar (None: when standard error is a terminal and the work is large).

    Returns
    -------
    ndarray
        The survival probabilities, shape of ``np.broadcast(q, df)``; NaN where q or df is NaN or
        df <= 0.

    References
    ----------
    Lund, R. E. and Lund, J. R. (1983). Algorithm AS 190: probabilities and upper quantiles for the
    studentized range. Journal of the Royal Statistical Society C 32(2), 204-210.
    Hochberg, Y. and Tamhane, A. C. (1987). Multiple Comparison Procedures, Appendix 3. Wiley.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> p = studentized_range_sf([3.0, 4.5], 5, 20.0)
    >>> bool(np.allclose(p, stats.studentized_range.sf([3.0, 4.5], 5, 20.0), rtol=0, atol=1e-10))
    True
    >>> # two means: Q / sqrt(2) is |t| with df degrees of freedom
    >>> two = 2 * stats.t.sf(4.0 / np.sqrt(2), 10)
    >>> round(float(studentized_range_sf(4.0, 2, 10.0)), 10), round(float(two), 10)
    (0.0179001232, 0.0179001232)
    """
    k = int(k)
    if k < 2:
        raise ValueError(f"k: the studentized range needs at least 2 means, got {k}")
    q, df = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(df, dtype=float))
    shape = q.shape
    q, df = q.ravel(), df.ravel()
    out = np.ones(q.size)
    bad = np.isnan(q) | np.isnan(df) | (df <= 0)
    out[bad] = np.nan
    pick = ~bad & (q > 0)
    infinite = pick & (df >= _DF_ASYMPTOTIC)
    finite = pick & ~infinite
    if infinite.any():
        out[infinite] = _sf_infinite(q[infinite], k)
    if finite.any():
        n = int(finite.sum())
        enabled = bool(progress) if progress is not None else (None if n >= 200_000 else False)
        with Progress(n, "studentized range", enabled=enabled) as bar:
            out[finite] = _sf_finite(q[finite], k, df[finite], bar)
    return out.reshape(shape)


def studentized_range_isf(p: float, k: int, df: float) -> float:
    """The q with ``P(Q_{k, df} > q) = p``: the upper p quantile of the studentized range.

    Brent's root of ``log P(Q > q) - log p`` on :func:`studentized_range_sf`; agrees with
    ``scipy.stats.studentized_range.isf`` to about 1e-9 relative.

    Parameters
    ----------
    p : float
        Upper-tail probability in (0, 1).
    k : int
        Number of means (k >= 2).
    df : float
        Degrees of freedom (> 0, inf allowed).

    Returns
    -------
    float

    References
    ----------
    Lund, R. E. and Lund, J. R. (1983). Algorithm AS 190. JRSS C 32(2), 204-210.

    Examples
    --------
    >>> round(studentized_range_isf(0.05, 3, float("inf")), 4)  # Tukey's table: 3.314
    3.3145
    """
    p = float(p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")

    def gap(q: float) -> float:
        return float(np.log(studentized_range_sf(q, k, df)) - np.log(p))

    hi = 4.0
    while gap(hi) > 0:
        hi *= 2.0
    return float(optimize.brentq(gap, 1e-8, hi, xtol=1e-13, rtol=1e-14))


def use_scipy(backend: str, n_values: int) -> bool:
    """Whether ``backend`` evaluates ``n_values`` values with scipy's per-value integration."""
    check_choice("backend", backend, STUDENTIZED_RANGE_BACKENDS)
    return backend == "scipy" or (backend == "auto" and n_values <= EXACT_PAIRS)


def tukey_pvalues(
    t: np.ndarray, n_means: int, df: np.ndarray | float, *, backend: str = "auto"
) -> np.ndarray:
    """Tukey-adjusted p-values ``P(Q_{k, df} >= sqrt(2) |t|)`` (studentized range, as emmeans).

    Exact only for k equally precise, independent means with a common pooled variance (balanced
    designs with i.i.d. errors); an approximation for mixed-model contrasts.

    Parameters
    ----------
    t : array_like
        t statistics of pairwise contrasts (any shape).
    n_means : int
        The number k of means compared.
    df : array_like or float
        Degrees of freedom of each t (broadcast against ``t``).
    backend : {"auto", "scipy", "vectorised"}, default "auto"
        ``"scipy"``: ``scipy.stats.studentized_range.sf`` value by value (the old path);
        ``"vectorised"``: :func:`studentized_range_sf` (the same to 1e-10, thousands of times
        faster); ``"auto"``: scipy for at most :data:`EXACT_PAIRS` positive statistics.

    Returns
    -------
    ndarray
        Adjusted p-values, the shape of ``t`` (NaN when fewer than 2 means).

    References
    ----------
    Tukey, J. W. (1953). The problem of multiple comparisons. Unpublished manuscript, Princeton.
    Lenth, R. V. (2016). Least-squares means: the R package lsmeans. Journal of Statistical
    Software 69(1), 1-33.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> p = tukey_pvalues(np.array([3.0]), 4, 20.0)
    >>> round(float(p[0]), 6), round(float(stats.studentized_range.sf(np.sqrt(2) * 3, 4, 20)), 6)
    (0.032932, 0.032932)
    >>> fast = tukey_pvalues(np.array([3.0]), 4, 20.0, backend="vectorised")
    >>> bool(abs(fast[0] - p[0]) < 1e-10)
    True
    """
    check_choice("backend", backend, STUDENTIZED_RANGE_BACKENDS)
    t = np.asarray(t, dtype=float)
    df = np.broadcast_to(np.asarray(df, dtype=float), t.shape)
    if n_means < 2 or t.size == 0:
        return np.full(t.shape, np.nan)
    out = np.ones(t.shape)
    q = np.sqrt(2.0) * np.abs(t)
    pick = q > 0
    n = int(pick.sum())
    if n == 0:
        return out
    if use_scipy(backend, n):
        finite = int(np.sum(df[pick] < _DF_ASYMPTOTIC))
        values = np.empty(n)
        qs, dfs = q[pick], df[pick]
        step = 20
        with Progress(
            n, "studentized range (scipy)", enabled=None if finite > 100 else False
        ) as bar:
            for i in range(0, n, step):
                values[i : i + step] = stats.studentized_range.sf(
                    qs[i : i + step], n_means, dfs[i : i + step]
                )
                bar.update(min(step, n - i))
        out[pick] = values
    else:
        out[pick] = studentized_range_sf(q[pick], n_means, df[pick], progress=None)
    return np.clip(out, 0.0, 1.0)


def studentized_range_critical(
    alpha: float, k: int, df: float, backend: str, n_pairs: int
) -> float:
    """``q_{1-alpha; k, df}``: scipy's ppf on the scipy path, :func:`studentized_range_isf` else."""
    if use_scipy(backend, n_pairs):
        return float(stats.studentized_range.ppf(1 - alpha, k, df))
    return studentized_range_isf(alpha, k, df)
