"""The bootstrap-t for trimmed means of every ordered pair (seed 000's trimmed-mean alternative).

Yuen's dependent-groups statistic, with its null law taken from the paired bootstrap instead of
Student's t: the units are resampled jointly for all models (the pairing kept), and every
resample is studentised by its own winsorised standard error.

References
----------
Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
New York (Ch. 12 and Sec. 16.4).
Wilcox, R. R. (2022). Introduction to Robust Estimation and Hypothesis Testing, 5th ed.,
Sec. 5.9. Academic Press, London.
"""

from __future__ import annotations

import numpy as np

from rankci._base import as_generator
from rankci._progress import Progress
from rankci.data import UnitScores
from rankci.evidence.moments import TestArrays, score_width, studentize, variance_is_zero
from rankci.evidence.resampling import DEFAULT_REPS, warn_resolution
from rankci.evidence.yuen import trim_and_winsorize, winsorized_difference_var, yuen_test

__all__ = ["bootstrap_t_test"]

_CHUNK_CELLS = 4_000_000  # resamples x units x models held at once


def bootstrap_t_test(
    units: UnitScores,
    delta: float,
    *,
    trim: float = 0.2,
    reps: int = DEFAULT_REPS,
    rng: int | np.random.Generator | None = None,
) -> TestArrays:
    r"""Bootstrap-t tests of trimmed means (:func:`rankci.pairwise_tests`, ``"bootstrap-t"``).

    For the ordered pair (j, l), with :math:`\bar x_{t,j}` the ``trim``-trimmed mean of model
    j over the n units the pair shares, :math:`h = n - 2\lfloor \text{trim}\, n \rfloor` and the
    winsorised scores :math:`w`, Yuen's statistic is

    .. math::

        T_{jl} = \frac{\bar x_{t,j} - \bar x_{t,l} - \delta}{\widehat{se}_{jl}}, \qquad
        \widehat{se}_{jl}^2 = \frac{(n - 1)\, \widehat{\mathrm{var}}(w_j - w_l)}{h (h - 1)}.

    Resample b draws n units with replacement, the same units for every model
    (``generator.integers(0, n_units, size=(chunk, n_units))``, chunk after chunk), and gives

    .. math::

        T^*_{jl,b} = \frac{\bar x^*_{t,j} - \bar x^*_{t,l} - (\bar x_{t,j} - \bar x_{t,l})}
        {\widehat{se}^*_{jl}},

    the same statistic centred at the observed trimmed difference; the one-sided p-value of
    :math:`H_{jl}: \theta_{t,j} - \theta_{t,l} \le \delta` is

    .. math::

        p_{jl} = \frac{1 + \#\{b : T^*_{jl,b} \ge T_{jl}\}}{\text{reps} + 1}.

    With missing cells (``missing="pairwise"``) a pair uses, in each resample, the drawn units
    it shares; a resample in which it keeps fewer than two trimmed units counts as exceeding
    (conservative). As for Yuen's test, a zero winsorised variance of the observed differences
    (:func:`rankci.evidence.moments.variance_is_zero`) is never evidence (p = 1), and a resample
    with zero winsorised variance gives :math:`T^* = \pm\infty` (or 0 when the trimmed means
    agree).

    Parameters
    ----------
    units : UnitScores
        The units x models matrix.
    delta : float
        The margin of the null hypotheses.
    trim : float
        Proportion trimmed from each tail, in [0, 0.5) (0: the bootstrap-t of the mean).
    reps : int
        Resamples; the smallest p-value is ``1 / (reps + 1)``.
    rng : int, Generator or None
        The random draws.

    Returns
    -------
    TestArrays
        The trimmed-mean differences, Yuen's statistics and standard errors, the bootstrap
        p-values, n, and df None (the bootstrap replaces the t reference law).

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
    Wilcox, R. R. (2022). Introduction to Robust Estimation and Hypothesis Testing, 5th ed.,
    Sec. 5.9. Academic Press, London.

    Examples
    --------
    >>> import numpy as np
    >>> from rankci import Scores
    >>> x = np.random.default_rng(0).standard_t(3, size=(40, 2)) + [0.8, 0.0]
    >>> units = Scores.from_matrix(x, bounds=None).units()
    >>> result = bootstrap_t_test(units, 0.0, trim=0.2, reps=199, rng=0)
    >>> bool(result.pvalue[0, 1] < 0.05), bool(result.pvalue[1, 0] > 0.5)
    (True, True)
    """
    trim = float(trim)
    reps = int(reps)
    observed = yuen_test(units, delta, trim=trim)
    x = units.values
    warn_resolution(reps, x.shape[1], stacklevel=4)
    generator = as_generator(rng)
    exceed = _exceedances(x, observed.estimate, observed.statistic, trim, reps, generator)
    pvalue = (1.0 + exceed) / (reps + 1.0)
    zero = variance_is_zero(observed.se**2, score_width(x))
    testable = np.isfinite(observed.statistic) & ~zero & (observed.n >= 2)
    pvalue = np.where(testable, pvalue, 1.0)
    return TestArrays(
        observed.estimate,
        observed.statistic,
        pvalue,
        observed.n,
        observed.se,
        None,
        1.0 / (reps + 1),
    )


def _exceedances(
    x: np.ndarray,
    estimate: np.ndarray,
    statistic: np.ndarray,
    trim: float,
    reps: int,
    generator: np.random.Generator,
) -> np.ndarray:
    """#{b : T*_b >= T} for every pair, T*_b NaN (too few units) counting as exceeding."""
    n_units, n_models = x.shape
    width = score_width(x)
    complete = np.isfinite(x).all()
    exceed = np.zeros((n_models, n_models))
    chunk = max(1, min(reps, _CHUNK_CELLS // max(n_units * n_models, 1)))
    done = 0
    bar = Progress(reps, "bootstrap-t", min_interval=0.5)
    while done < reps:
        b = min(chunk, reps - done)
        draws = generator.integers(0, n_units, size=(b, n_units))
        if complete:
            star = _complete_statistics(x[draws], trim, width, estimate)
            exceed += np.where(np.isnan(star), True, star >= statistic).sum(axis=0)
        else:
            for j in range(n_models):
                common = np.isfinite(x[:, [j]]) & np.isfinite(x)
                a = np.where(common, x[:, [j]], np.nan)[draws]
                other = np.where(common, x, np.nan)[draws]
                star = _row_statistics(a, other, trim, width, estimate[j])
                exceed[j] += np.where(np.isnan(star), True, star >= statistic[j]).sum(axis=0)
        done += b
        bar.update(b)
    bar.close()
    return exceed


def _complete_statistics(
    resampled: np.ndarray, trim: float, width: float, estimate: np.ndarray
) -> np.ndarray:
    """T* (b, M, M) of resamples (b, n, M) without missing cells (one covariance per resample)."""
    n = resampled.shape[1]
    trimmed, wins, h = trim_and_winsorize(resampled, trim)
    centred = wins - wins.mean(axis=1, keepdims=True)
    cov = np.matmul(centred.transpose(0, 2, 1), centred) / (n - 1)
    var_j = np.diagonal(cov, axis1=1, axis2=2)
    var_d = np.maximum(var_j[:, :, None] + var_j[:, None, :] - 2.0 * cov, 0.0)
    hh = h[:, :, None].astype(float)  # h is the same for every model without missing cells
    return _studentized(trimmed[:, :, None] - trimmed[:, None, :], var_d, n, hh, width, estimate)


def _row_statistics(
    a: np.ndarray, other: np.ndarray, trim: float, width: float, estimate: np.ndarray
) -> np.ndarray:
    """T* (b, M) of model j against every model, each pair on the drawn units it shares."""
    ta, wa, h = trim_and_winsorize(a, trim)
    tb, wb, _ = trim_and_winsorize(other, trim)
    n = (~np.isnan(a)).sum(axis=1)
    var_d = np.maximum(winsorized_difference_var(wa, wb), 0.0)
    return _studentized(ta - tb, var_d, n, h.astype(float), width, estimate)


def _studentized(difference, var_d, n, h, width, estimate):
    """(difference - estimate) / se*, se*^2 = (n - 1) var_d / (h (h - 1)); NaN when h < 2."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((n - 1) * var_d / (h * (h - 1)))
    zero = variance_is_zero(se**2, width)
    star = studentize(difference, estimate, se, zero)
    return np.where(h >= 2, star, np.nan)
