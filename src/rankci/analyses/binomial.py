"""Confidence intervals for a proportion: Wilson and Clopper-Pearson, vectorised.

For a model with ``k`` of ``n`` 0/1 scores correct (``p_hat = k / n``) and
``z = Phi^-1(1 - alpha/2)``:

===============  ==============================================================================
method           interval
===============  ==============================================================================
wilson           ``(p_hat + z^2/(2n) -+ z sqrt(p_hat (1 - p_hat)/n + z^2/(4 n^2))) / (1 + z^2/n)``:
                 the p with ``|p_hat - p| <= z sqrt(p (1 - p) / n)`` (the score test inverted;
                 Wilson 1927). Never of zero width; coverage close to 1 - alpha on average, but
                 below it at some p (see ``validation/binary_intervals.py``).
clopper-pearson  ``[B(alpha/2; k, n - k + 1), B(1 - alpha/2; k + 1, n - k)]``, B the Beta
                 quantile, with lower 0 at k = 0 and upper 1 at k = n: the p at which neither
                 one-sided exact binomial test rejects at alpha/2 (Clopper and Pearson 1934).
                 Coverage >= 1 - alpha at every p and n by construction; never of zero width.
===============  ==============================================================================

The Beta quantiles are ``scipy.special.betaincinv`` (the inverse regularized incomplete beta
function ``I_x(a, b)``), using ``P(Bin(n, p) >= k) = I_p(k, n - k + 1)``.

References
----------
Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
Journal of the American Statistical Association 22(158), 209-212.
Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated
in the case of the binomial. Biometrika 26(4), 404-413.
Brown, L. D., Cai, T. T. and DasGupta, A. (2001). Interval estimation for a binomial
proportion. Statistical Science 16(2), 101-133.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from rankci._base import check_alpha, check_choice

__all__ = ["BINOMIAL_METHODS", "binomial_interval", "clopper_pearson_interval",
           "wilson_interval"]  # fmt: skip

#: the interval methods of :func:`binomial_interval`
BINOMIAL_METHODS = ("wilson", "clopper-pearson")


def _counts(k, n) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    k, n = np.broadcast_arrays(k, n)
    if not (np.isfinite(k).all() and np.isfinite(n).all()):
        raise ValueError("k and n must be finite counts")
    if np.any(k != np.round(k)) or np.any(n != np.round(n)):
        raise ValueError("k and n must be whole numbers (successes and trials)")
    if np.any(n < 1):
        raise ValueError("n (trials) must be >= 1")
    if np.any((k < 0) | (k > n)):
        raise ValueError("k (successes) must satisfy 0 <= k <= n")
    return k, n


def wilson_interval(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion, for arrays of counts.

    Parameters
    ----------
    k : array_like of int
        Successes (0 <= k <= n).
    n : array_like of int
        Trials (>= 1), broadcast with ``k``.
    alpha : float, default 0.05
        Two-sided miscoverage.

    Returns
    -------
    lower, upper : ndarray
        ``centre -+ half``, with ``centre = (k + z^2/2) / (n + z^2)`` and
        ``half = z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4)``; lower is 0 at k = 0 and upper
        is 1 at k = n (exactly, not up to rounding).

    Examples
    --------
    >>> lo, hi = wilson_interval([0, 12, 25], 25)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.3..., 0.8668], [0.1332, 0.6..., 1.0])
    >>> from statsmodels.stats.proportion import proportion_confint
    >>> [round(float(b), 4) for b in proportion_confint(0, 25, method="wilson")]
    [0.0, 0.1332]
    """
    alpha = check_alpha(alpha)
    k, n = _counts(k, n)
    z = special.ndtri(1.0 - alpha / 2.0)
    z2 = z * z
    centre = (k + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * np.sqrt(k * (n - k) / n + z2 / 4.0)
    lower = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    upper = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return lower, upper


def clopper_pearson_interval(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson ("exact") interval of a proportion, for arrays of counts.

    Parameters
    ----------
    k : array_like of int
        Successes (0 <= k <= n).
    n : array_like of int
        Trials (>= 1), broadcast with ``k``.
    alpha : float, default 0.05
        Two-sided miscoverage (alpha/2 in each tail).

    Returns
    -------
    lower, upper : ndarray
        ``lower = I^-1_{alpha/2}(k, n - k + 1)`` (0 at k = 0) and
        ``upper = I^-1_{1 - alpha/2}(k + 1, n - k)`` (1 at k = n).

    Examples
    --------
    >>> lo, hi = clopper_pearson_interval([0, 12, 25], 25)
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.0, 0.278, 0.8628], [0.1372, 0.6869, 1.0])
    >>> from scipy import stats
    >>> round(float(stats.beta.ppf(0.975, 1, 25)), 4)   # the k = 0 upper bound
    0.1372
    >>> 1 - (1 - 0.1372) ** 25 >= 0.975 - 1e-4          # P(k >= 1) at that p is 1 - alpha/2
    True
    """
    alpha = check_alpha(alpha)
    k, n = _counts(k, n)
    some = k > 0
    not_all = k < n
    lower = np.where(
        some, special.betaincinv(np.where(some, k, 1.0), n - k + 1.0, alpha / 2.0), 0.0
    )
    upper = np.where(
        not_all,
        special.betaincinv(k + 1.0, np.where(not_all, n - k, 1.0), 1.0 - alpha / 2.0),
        1.0,
    )
    return lower, upper


def binomial_interval(
    k, n, method: str = "clopper-pearson", alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """The ``method`` interval of a proportion (``"wilson"`` or ``"clopper-pearson"``).

    Examples
    --------
    >>> lo, hi = binomial_interval(0, 25, "wilson")
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.1332)
    """
    check_choice("method", method, BINOMIAL_METHODS)
    if method == "wilson":
        return wilson_interval(k, n, alpha)
    return clopper_pearson_interval(k, n, alpha)
