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
    """``2 v^2 / (g'Ag)`` for any shape of ``var``; ``grad`` has the variance parameters on its
    first axis (``grad[k] = dv/dphi_k``)."""
    denom = np.einsum("p...,pq,q...->...", grad, vcov_varpar, grad)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2.0 * var**2 / denom


def type3_contrast(counts: np.ndarray) -> np.ndarray:
    """lmerTest's Type-III (here = Type-I) contrast for the model term, on the cell means.

    With treatment coding ``X = [1, D_2, ..., D_K]``, lmerTest tests the model rows of ``L'`` where
    ``X'X = L U`` is the Doolittle factorisation (``L`` unit lower triangular; entries below 1e-6
    set to 0, as lmerTest does). ``beta_trt = T mu`` maps it to the cell means used here.
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
    """Denominator df of an F built from q t-statistics with df ``nu`` (lmerTest's rule)."""
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
