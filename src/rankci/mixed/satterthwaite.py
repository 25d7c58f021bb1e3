"""Satterthwaite degrees of freedom and the Type-III F test, following lmerTest.

For a contrast ``l`` of the fixed effects with ``v = l'Cl`` (C = Cov(beta-hat)),
``df = 2 v^2 / (g'Ag)`` where ``g_k = l' (dC/dphi_k) l`` and ``A = 2 H^-1`` is the asymptotic
covariance of the variance parameters phi = (theta, sigma) (H: Hessian of the REML deviance).

References
----------
Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in linear
mixed effects models. Journal of Statistical Software 82(13), Sec. 3.
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
Biometrics Bulletin 2(6), 110-114.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["fstat_ddf", "satterthwaite_df", "type3_contrast", "type3_test"]


def satterthwaite_df(var: np.ndarray, grad: np.ndarray, vcov_varpar: np.ndarray) -> np.ndarray:
    """Satterthwaite's ``2 v^2 / (g'Ag)`` for any shape of ``var``.

    Parameters
    ----------
    var : numpy.ndarray
        Variances ``v`` of the contrasts (any shape).
    grad : numpy.ndarray
        ``dv/dphi``: the variance parameters on the first axis (``grad[k] = dv/dphi_k``), then the
        shape of ``var``.
    vcov_varpar : numpy.ndarray
        ``A``, the asymptotic covariance of the variance parameters (``2 H^-1``).

    Returns
    -------
    numpy.ndarray
        The degrees of freedom, shaped like ``var``.

    References
    ----------
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    Biometrics Bulletin 2(6), 110-114.
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).

    Examples
    --------
    With two independent samples, ``v = s_a^2/n_a + s_b^2/n_b``, ``g = (1/n_a, 1/n_b)`` and
    ``A = diag(2 s_k^4 / (n_k - 1))`` this is Welch's df, as ``scipy.stats.ttest_ind`` computes it:

    >>> import numpy as np
    >>> from scipy import stats
    >>> a = np.array([3.1, 2.4, 3.8, 2.9, 3.5])
    >>> b = np.array([4.2, 3.9, 5.1, 4.4, 3.6, 4.8])
    >>> va, vb = a.var(ddof=1), b.var(ddof=1)
    >>> A = np.diag([2 * va**2 / 4, 2 * vb**2 / 5])
    >>> df = satterthwaite_df(np.array(va / 5 + vb / 6), np.array([1 / 5, 1 / 6]), A)
    >>> round(float(df), 6)
    8.735534
    >>> round(float(stats.ttest_ind(b, a, equal_var=False).df), 6)
    8.735534
    """
    denom = np.einsum("p...,pq,q...->...", grad, vcov_varpar, grad)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2.0 * var**2 / denom


def type3_contrast(counts: np.ndarray) -> np.ndarray:
    """lmerTest's Type-III (here = Type-I) contrast for the model term, on the cell means.

    With treatment coding ``X = [1, D_2, ..., D_K]``, lmerTest tests the model rows of ``L'`` where
    ``X'X = L U`` is the Doolittle factorisation (``L`` unit lower triangular; entries below 1e-6
    set to 0, as lmerTest does). ``beta_trt = T mu`` maps it to the cell means used here.

    Parameters
    ----------
    counts : numpy.ndarray
        Rows per model (K entries).

    Returns
    -------
    numpy.ndarray
        ``(K - 1) x K`` contrast on the cell means.

    References
    ----------
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).
    Goodnight, J. H. (1980). Tests of hypotheses in fixed effects linear models. Communications in
    Statistics - Theory and Methods 9(2), 167-180.

    Examples
    --------
    For counts (2, 3, 4), ``X'X = [[9, 3, 4], [3, 3, 0], [4, 0, 4]]``; eliminating by hand gives
    ``L = [[1, 0, 0], [1/3, 1, 0], [4/9, -2/3, 1]]``, whose rows ``(0, 1, -2/3)`` and ``(0, 0, 1)``
    of
    ``L'`` become ``(-1/3, 1, -2/3)`` and ``(-1, 0, 1)`` on the cell means:

    >>> import numpy as np
    >>> (type3_contrast(np.array([2, 3, 4])).round(6) + 0.0).tolist()
    [[-0.333333, 1.0, -0.666667], [-1.0, 0.0, 1.0]]
    """
    k = counts.size
    xtx = np.diag(counts.astype(float))
    xtx[0, 0] = counts.sum()
    xtx[0, 1:] = xtx[1:, 0] = counts[1:]
    xtx[1:, 1:] = np.diag(counts[1:].astype(float))
    chol = np.linalg.cholesky(xtx)
    unit_lower = chol / np.diag(chol)[None, :]
    unit_lower[np.abs(unit_lower) < 1e-6] = 0.0
    l_trt = unit_lower.T[1:, :]
    to_trt = np.eye(k)
    to_trt[1:, 0] = -1.0
    return l_trt @ to_trt


def fstat_ddf(nu: np.ndarray, tol: float = 1e-8) -> float:
    """Denominator df of an F built from q t-statistics with df ``nu`` (lmerTest's rule).

    One statistic: its df; all equal: their common value; any ``nu <= 2``: 2; otherwise
    ``2 E / (E - q)`` with ``E = sum nu_m / (nu_m - 2)`` (matching the mean of the F).

    Parameters
    ----------
    nu : numpy.ndarray
        The q one-dimensional Satterthwaite df.
    tol : float, default 1e-8
        Differences below this count as equal.

    Returns
    -------
    float

    References
    ----------
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).

    Examples
    --------
    ``E = 10/8 + 20/18 = 85/36``, so ``2E / (E - 2) = 170/13``:

    >>> import numpy as np
    >>> round(fstat_ddf(np.array([10.0, 20.0])), 6), round(170 / 13, 6)
    (13.076923, 13.076923)
    >>> fstat_ddf(np.array([5.0, 5.0])), fstat_ddf(np.array([1.5, 20.0]))
    (5.0, 2.0)
    """
    if nu.size == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < tol):
        return float(nu.mean())
    if np.any(nu <= 2):
        return 2.0
    e = np.sum(nu / (nu - 2.0))
    return float(2.0 * e / (e - nu.size))


def type3_test(counts, mu, cov, jac, vcov_varpar, asymptotic) -> dict:
    """Type-III F test that every model mean is equal, as ``anova(fit, type="III")`` of lmerTest.

    ``F = sum_m (p_m'L mu)^2 / d_m / q`` over the eigen-decomposition ``L C L' = P D P'``; the
    denominator df combine the q one-dimensional Satterthwaite df ``nu_m`` (see
    :func:`fstat_ddf`). ``counts`` are the rows per model (they fix lmerTest's contrast ``L``).

    Parameters
    ----------
    counts : numpy.ndarray
        Rows per model.
    mu : numpy.ndarray
        Estimated model means (K).
    cov : numpy.ndarray
        Their covariance C (K x K).
    jac : numpy.ndarray
        ``dC/dphi`` (n_varpar x K x K).
    vcov_varpar : numpy.ndarray
        Asymptotic covariance of the variance parameters (``2 H^-1``).
    asymptotic : bool
        Use the chi-square limit (``df_den = inf``) instead of Satterthwaite's df.

    Returns
    -------
    dict
        ``F``, ``df_num``, ``df_den`` and ``p``.

    References
    ----------
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    Biometrics Bulletin 2(6), 110-114.

    Examples
    --------
    With two independent samples, ``v = s_a^2/n_a + s_b^2/n_b``, ``g = (1/n_a, 1/n_b)`` and
    ``A = diag(2 s_k^4 / (n_k - 1))`` this is Welch's df, as ``scipy.stats.ttest_ind`` computes it:

    >>> import numpy as np
    >>> from scipy import stats
    >>> a = np.array([3.1, 2.4, 3.8, 2.9, 3.5])
    >>> b = np.array([4.2, 3.9, 5.1, 4.4, 3.6, 4.8])
    >>> va, vb = a.var(ddof=1), b.var(ddof=1)
    >>> A = np.diag([2 * va**2 / 4, 2 * vb**2 / 5])
    >>> cov = np.diag([va / 5, vb / 6])
    >>> jac = np.array([np.diag([1 / 5, 0.0]), np.diag([0.0, 1 / 6])])
    >>> out = type3_test(np.array([5, 6]), np.array([a.mean(), b.mean()]), cov, jac, A, False)
    >>> [round(out["F"], 6), out["df_num"], round(out["df_den"], 6), round(out["p"], 6)]
    [12.90155, 1, 8.735534, 0.006112]
    >>> welch = stats.ttest_ind(b, a, equal_var=False)
    >>> [round(float(welch.statistic) ** 2, 6), round(float(welch.pvalue), 6)]
    [12.90155, 0.006112]
    """
    contrast = type3_contrast(counts)
    v_l = contrast @ cov @ contrast.T
    values, vectors = np.linalg.eigh(v_l)
    values, vectors = values[::-1], vectors[:, ::-1]
    keep = values > max(np.sqrt(np.finfo(float).eps) * values[0], 0.0)
    q = int(keep.sum())
    rotated = vectors[:, keep].T @ contrast
    f_value = float(np.sum((rotated @ mu) ** 2 / values[keep]) / q)
    if asymptotic:
        ddf = np.inf
        p = float(stats.chi2.sf(f_value * q, q))
    else:
        grad = np.einsum("ak,pkl,al->pa", rotated, jac, rotated)
        nu = 2.0 * values[keep] ** 2 / np.einsum("pa,pq,qa->a", grad, vcov_varpar, grad)
        ddf = fstat_ddf(nu)
        p = float(stats.f.sf(f_value, q, ddf))
    return {"F": f_value, "df_num": q, "df_den": float(ddf), "p": p}
