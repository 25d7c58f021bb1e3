"""Yuen's dependent-groups trimmed-mean t test of every ordered pair (Wilcox's ``yuend``).

References
----------
Yuen, K. K. (1974). The two-sample trimmed t for unequal population variances. Biometrika
61(1), 165-170.
Wilcox, R. R. (2022). Introduction to Robust Estimation and Hypothesis Testing, 5th ed.,
Sec. 5.9. Academic Press, London.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from rankci.data import UnitScores
from rankci.evidence.moments import (
    TestArrays,
    largest_n,
    score_width,
    studentize,
    variance_is_zero,
)

__all__ = ["trim_and_winsorize", "winsorized_difference_var", "yuen_test"]


def yuen_test(units: UnitScores, delta: float, *, trim: float = 0.2) -> TestArrays:
    """Yuen's trimmed t for every ordered pair (:func:`rankci.pairwise_tests`, ``"yuen"``).

    ``trim`` is the proportion trimmed from each tail (0 gives the paired t).

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.random.default_rng(0).normal(size=(40, 2)) + [0.8, 0.0]
    >>> units = Scores.from_matrix(x, bounds=None).units()
    >>> bool(yuen_test(units, 0.0, trim=0.2).pvalue[0, 1] < 0.05)
    True
    """
    estimate, statistic, pvalue, n, se, df = _yuen(units.values, delta, float(trim))
    smallest = 1.0 if largest_n(n) < 2 else 0.0
    return TestArrays(estimate, statistic, pvalue, n, se, df, smallest)


def trim_and_winsorize(a: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Along axis -2 (the units), ignoring NaN: trimmed means, winsorized values, h = n - 2g.

    ``a`` has shape (..., n_units, K). With ``count`` the finite values of a column and
    ``g = floor(trim count)``, the trimmed mean averages the sorted values ``g + 1 .. count - g``,
    the winsorized values are ``a`` clipped to the sorted values ``g + 1`` and ``count - g``
    (NaN stays NaN), and ``h = count - 2 g``. Returns the trimmed means (..., K), the winsorized
    values (the shape of ``a``) and h (..., K).

    Examples
    --------
    >>> import numpy as np
    >>> tm, w, h = trim_and_winsorize(np.array([[1.0], [2.0], [3.0], [4.0], [100.0]]), 0.2)
    >>> float(tm[0]), w[:, 0].tolist(), int(h[0])
    (3.0, [2.0, 2.0, 3.0, 4.0, 4.0], 3)
    """
    count = (~np.isnan(a)).sum(axis=-2)
    g = np.floor(trim * count).astype(int)
    s = np.sort(a, axis=-2)  # NaN last

    def at(values: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.take_along_axis(values, np.expand_dims(index, -2), axis=-2)[..., 0, :]

    low = at(s, np.minimum(g, np.maximum(count - 1, 0)))
    high = at(s, np.maximum(count - g - 1, 0))
    start = np.zeros(s.shape[:-2] + (1,) + s.shape[-1:])
    cumulative = np.concatenate([start, np.nancumsum(s, axis=-2)], axis=-2)
    h = count - 2 * g
    kept = at(cumulative, count - g) - at(cumulative, g)
    with np.errstate(invalid="ignore", divide="ignore"):
        trimmed = kept / h
    winsorized = np.clip(a, np.expand_dims(low, -2), np.expand_dims(high, -2))
    return trimmed, winsorized, h


def winsorized_difference_var(wj: np.ndarray, wl: np.ndarray) -> np.ndarray:
    """Sample variance (ddof=1) of ``wj - wl`` along axis -2, ignoring NaN rows.

    Examples
    --------
    >>> import numpy as np
    >>> float(winsorized_difference_var(np.array([[1.0], [3.0], [np.nan]]), np.zeros((3, 1)))[0])
    2.0
    """
    diff = wj - wl
    count = (~np.isnan(diff)).sum(axis=-2)
    mean = np.nansum(diff, axis=-2) / np.maximum(count, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nansum((diff - np.expand_dims(mean, -2)) ** 2, axis=-2) / (count - 1)


def _yuen(x: np.ndarray, delta: float, trim: float):
    """Yuen's trimmed-mean t for dependent groups (Wilcox's ``yuend``).

    ``se^2 = (n - 1) var_w(x_j - x_l) / (h (h - 1))`` with winsorized scores and
    h = n - 2 floor(trim n);
    statistic ``(tmean_j - tmean_l - delta) / se`` on h - 1 degrees of freedom.
    """
    n_models = x.shape[1]
    if np.isfinite(x).all():
        trimmed, wins, h = trim_and_winsorize(x, trim)
        n_units = x.shape[0]
        cw = np.atleast_2d(np.cov(wins, rowvar=False))
        var_d = np.diag(cw)[:, None] + np.diag(cw)[None, :] - 2.0 * cw
        n = np.full((n_models, n_models), n_units, dtype=np.int64)
        h = np.full((n_models, n_models), float(h[0]))
        estimate = trimmed[:, None] - trimmed[None, :]
    else:
        n = np.zeros((n_models, n_models), dtype=np.int64)
        h = np.zeros((n_models, n_models))
        estimate = np.full((n_models, n_models), np.nan)
        var_d = np.full((n_models, n_models), np.nan)
        for j in range(n_models):
            common = np.isfinite(x[:, [j]]) & np.isfinite(x)
            a = np.where(common, x[:, [j]], np.nan)
            b = np.where(common, x, np.nan)
            ta, wa, hj = trim_and_winsorize(a, trim)
            tb, wb, _ = trim_and_winsorize(b, trim)
            n[j] = common.sum(axis=0)
            h[j] = hj
            estimate[j] = ta - tb
            var_d[j] = winsorized_difference_var(wa, wb)
    var_d = np.maximum(var_d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((n - 1) * var_d / (h * (h - 1)))
    zero = variance_is_zero(se**2, score_width(x))  # the one absolute rule of every path
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
