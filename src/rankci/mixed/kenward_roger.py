"""Kenward-Roger's adjusted covariance and F approximation, as pbkrtest computes them.

The covariance of the observations is linear in the variance components,
``Sigma = sum_r s_r G_r`` (``G_r = Z_r Z_r'`` for each random term, ``G = I`` for the residual).
With ``Phi = (X' Sigma^-1 X)^-1`` (the covariance of beta-hat at the REML estimates),

* ``P_r = -X' Sigma^-1 G_r Sigma^-1 X``,
  ``Q_rs = X' Sigma^-1 G_r Sigma^-1 G_s Sigma^-1 X``;
* ``W = 2 I_E^-1`` with ``(I_E)_rs = tr(Sigma^-1 G_r Sigma^-1 G_s) - 2 tr(Phi Q_rs)
  + tr(Phi P_r Phi P_s)`` (twice the expected REML information);
* the adjusted covariance ``Phi_A = Phi + 2 Phi U Phi``,
  ``U = sum_rs W_rs (Q_rs - P_r Phi P_s)`` (Kenward and Roger 1997, eq. 2-5, without the
  second-derivative term, which vanishes for a covariance linear in its parameters).

For ``H0: L beta = 0`` (q rows) with ``Theta = L'(L Phi L')^-1 L``,
``A_1 = sum_rs W_rs tr(Theta Phi P_r Phi) tr(Theta Phi P_s Phi)`` and
``A_2 = sum_rs W_rs tr(Theta Phi P_r Phi Theta Phi P_s Phi)``, the statistic
``F = lambda (L beta)'(L Phi_A L')^-1 (L beta) / q`` is referred to ``F(q, m)``, with ``m`` and the
scale ``lambda`` matched to the first two moments (Kenward and Roger 1997, Sec. 4; the formulas of
pbkrtest's ``KRmodcomp``, Halekoh and Hojsgaard 2014). For one contrast ``l``, ``A_1 = A_2``,
``lambda = 1`` and ``m = 2 v^2 / (g'Wg)`` with ``v = l'Phi l`` and ``g_r = l'Phi P_r Phi l``:
Satterthwaite's form with the expected information in place of the observed one.

References
----------
Kenward, M. G. and Roger, J. H. (1997). Small sample inference for fixed effects from restricted
maximum likelihood. Biometrics 53(3), 983-997.
Halekoh, U. and Hojsgaard, S. (2014). A Kenward-Roger approximation and parametric bootstrap
methods for tests in linear mixed models - the R package pbkrtest. Journal of Statistical
Software 59(9), 1-32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["KenwardRoger", "kenward_roger", "kr_contrast_df", "kr_ftest"]

#: the blocks of Sigma are formed densely, padded to the largest: blocks x size^2 at most this
MAX_PADDED = 5_000_000


@dataclass(frozen=True, eq=False)
class KenwardRoger:
    """The pieces of Kenward-Roger's adjustment: ``phi``, ``phi_a``, ``p`` (r x K x K), ``w``."""

    phi: np.ndarray
    phi_a: np.ndarray
    p: np.ndarray
    w: np.ndarray


def _blocks(block: np.ndarray, columns: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Rows grouped by block into padded arrays (blocks x size); ``valid`` marks real rows."""
    order = np.argsort(block, kind="stable")
    sorted_block = block[order]
    starts = np.flatnonzero(np.r_[True, sorted_block[1:] != sorted_block[:-1]])
    sizes = np.diff(np.r_[starts, block.size])
    position = np.arange(block.size) - np.repeat(starts, sizes)
    which = np.repeat(np.arange(starts.size), sizes)
    valid = np.zeros((starts.size, int(sizes.max())), dtype=bool)
    valid[which, position] = True
    out = []
    for col in columns:
        padded = np.full(valid.shape, -1, dtype=np.int64)
        padded[which, position] = col[order]
        out.append(padded)
    return valid, *out


def kenward_roger(
    model_code: np.ndarray,
    item_code: np.ndarray,
    cluster_of_row: np.ndarray | None,
    n_models: int,
    variances: dict[str, float],
) -> KenwardRoger:
    """Kenward-Roger's ``Phi_A`` for ``score ~ 0 + model`` with nested random intercepts.

    ``Sigma = s_c J_cluster + s_q J_item + s_mc J_model:cluster + sigma^2 I`` (the terms present
    in ``variances``: ``cluster``, ``item``, ``model:cluster``, ``residual``); the fixed effects
    are the model means (``X`` the model indicator). Sigma is block diagonal by cluster (by item
    without clusters), and every block is handled at once in padded arrays: memory grows as
    blocks x (largest block's rows)^2, refused above :data:`MAX_PADDED` entries.

    Parameters
    ----------
    model_code, item_code : numpy.ndarray
        Per row, the model and the item.
    cluster_of_row : numpy.ndarray or None
        Per row, its cluster (None: ``(1|item)`` only).
    n_models : int
        K.
    variances : dict
        REML variance components, as :attr:`rankci.mixed.reml.RemlFit.variances`.

    Returns
    -------
    KenwardRoger

    References
    ----------
    Kenward, M. G. and Roger, J. H. (1997). Small sample inference for fixed effects from
    restricted maximum likelihood. Biometrics 53(3), 983-997.
    Halekoh, U. and Hojsgaard, S. (2014). A Kenward-Roger approximation and parametric bootstrap
    methods for tests in linear mixed models - the R package pbkrtest. Journal of Statistical
    Software 59(9), 1-32.

    Examples
    --------
    One model, items without clusters: ``Phi_A = Phi = (s_q + sigma^2) / n`` (nothing to adjust
    for the mean of i.i.d. item totals when each item has one row), so ``Phi_A`` is 0.3 / 4:

    >>> import numpy as np
    >>> kr = kenward_roger(np.zeros(4, int), np.arange(4), None, 1, {"item": 0.1, "residual": 0.2})
    >>> round(float(kr.phi[0, 0]), 6)
    0.075
    """
    if "prompt" in variances:
        raise ValueError(
            "Kenward-Roger df need a covariance block diagonal by cluster; the crossed "
            "(1|prompt) term is not supported (use Satterthwaite df)"
        )
    block = cluster_of_row if cluster_of_row is not None else item_code
    valid, model, item = _blocks(np.asarray(block), [np.asarray(model_code), np.asarray(item_code)])
    if valid.size * valid.shape[1] > MAX_PADDED:
        unit = "cluster" if cluster_of_row is not None else "item"
        raise ValueError(
            f"Kenward-Roger df form each {unit}'s covariance densely: {valid.shape[0]} blocks of "
            f"up to {valid.shape[1]} rows need {valid.size * valid.shape[1]:,} entries (limit "
            f"{MAX_PADDED:,}); use Satterthwaite df for a design this large"
        )
    same = valid[:, :, None] & valid[:, None, :]
    g = []
    if "cluster" in variances and cluster_of_row is not None:
        g.append(("cluster", same.astype(float)))
    if "item" in variances:
        g.append(("item", (same & (item[:, :, None] == item[:, None, :])).astype(float)))
    if "model:cluster" in variances:
        g.append(("model:cluster", (same & (model[:, :, None] == model[:, None, :])).astype(float)))
    eye = np.eye(valid.shape[1], dtype=bool)[None]
    g.append(("residual", (eye & valid[:, :, None]).astype(float)))
    names = [name for name, _ in g]
    gs = np.stack([mat for _, mat in g])  # (r, blocks, m, m)
    s = np.array([variances[name] for name in names])
    sigma = np.einsum("r,rbij->bij", s, gs) + (eye & ~valid[:, :, None])
    sigma_inv = np.linalg.inv(sigma)
    x = np.zeros((*valid.shape, n_models))
    x[valid] = np.eye(n_models)[model[valid]]
    sx = sigma_inv @ x  # (b, m, K)
    gsx = np.einsum("rbij,bjk->rbik", gs, sx)
    phi = np.linalg.inv(np.einsum("bik,bil->kl", x, sx))
    p = -np.einsum("bik,rbil->rkl", sx, gsx)
    q = np.einsum("rbik,bij,sbjl->rskl", gsx, sigma_inv, gsx, optimize=True)
    a = np.einsum("bij,rbjk->rbik", sigma_inv, gs)
    ktrace = np.einsum("rbij,sbji->rs", a, a)
    pphi = p @ phi  # (r, K, K): P_r Phi
    info = ktrace - 2.0 * np.einsum("kl,rslk->rs", phi, q) + np.einsum("rkl,slk->rs", pphi, pphi)
    info = (info + info.T) / 2.0
    w = (
        2.0 * np.linalg.pinv(info)
        if np.min(np.abs(np.linalg.eigvalsh(info))) <= 1e-10
        else 2.0 * np.linalg.inv(info)
    )
    u = np.einsum("rs,rskl->kl", w, q) - np.einsum("rs,rkm,sml->kl", w, pphi, p, optimize=True)
    phi_a = phi + 2.0 * phi @ u @ phi
    return KenwardRoger(phi=phi, phi_a=(phi_a + phi_a.T) / 2.0, p=p, w=w)


def kr_contrast_df(kr: KenwardRoger, contrasts: np.ndarray) -> np.ndarray:
    """Kenward-Roger df of one-dimensional contrasts (rows of ``contrasts``, shape (n, K)).

    ``m = 2 v^2 / (g'Wg)``, ``v = l'Phi l``, ``g_r = l'Phi P_r Phi l`` (pbkrtest's ``Lb_ddf`` with
    q = 1, where ``A_1 = A_2`` and the scale is 1).

    Parameters
    ----------
    kr : KenwardRoger
    contrasts : numpy.ndarray
        (n, K) contrasts of the fixed effects.

    Returns
    -------
    numpy.ndarray
        (n,) denominator degrees of freedom.

    References
    ----------
    Kenward, M. G. and Roger, J. H. (1997). Small sample inference for fixed effects from
    restricted maximum likelihood. Biometrics 53(3), 983-997.

    Examples
    --------
    >>> import numpy as np
    >>> kr = KenwardRoger(np.eye(1), np.eye(1), np.array([[[-1.0]]]), np.array([[0.1]]))
    >>> kr_contrast_df(kr, np.ones((1, 1))).tolist()
    [20.0]
    """
    lphi = contrasts @ kr.phi
    v = np.einsum("nk,nk->n", lphi, contrasts)
    grad = np.einsum("nk,rkl,nl->rn", lphi, kr.p, lphi, optimize=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2.0 * v**2 / np.einsum("rn,rs,sn->n", grad, kr.w, grad, optimize=True)


def kr_ftest(kr: KenwardRoger, contrast: np.ndarray, beta: np.ndarray) -> dict:
    """Kenward-Roger's F test of ``contrast @ beta = 0`` (pbkrtest's ``KRmodcomp``).

    Parameters
    ----------
    kr : KenwardRoger
    contrast : numpy.ndarray
        (q, K), full row rank.
    beta : numpy.ndarray
        (K,) estimates.

    Returns
    -------
    dict
        ``F`` (scaled), ``F_unscaled``, ``scale``, ``df_num``, ``df_den``, ``p``.

    References
    ----------
    Kenward, M. G. and Roger, J. H. (1997). Small sample inference for fixed effects from
    restricted maximum likelihood. Biometrics 53(3), 983-997.
    Halekoh, U. and Hojsgaard, S. (2014). A Kenward-Roger approximation and parametric bootstrap
    methods for tests in linear mixed models - the R package pbkrtest. Journal of Statistical
    Software 59(9), 1-32.

    Examples
    --------
    One contrast gives scale 1 and the df of :func:`kr_contrast_df`:

    >>> import numpy as np
    >>> kr = KenwardRoger(np.eye(1), np.eye(1), np.array([[[-1.0]]]), np.array([[0.1]]))
    >>> out = kr_ftest(kr, np.ones((1, 1)), np.array([2.0]))
    >>> [round(out[key], 9) for key in ("F", "df_den", "scale")]
    [4.0, 20.0, 1.0]
    """
    phi, lmat = kr.phi, np.atleast_2d(contrast)
    q = int(np.linalg.matrix_rank(lmat))
    theta = lmat.T @ np.linalg.solve(lmat @ phi @ lmat.T, lmat)
    u = np.einsum("kl,rlm,mn->rkn", theta @ phi, kr.p, phi, optimize=True)
    tr = np.einsum("rkk->r", u)
    a1 = float(tr @ kr.w @ tr)
    a2 = float(np.einsum("rs,rkl,slk->", kr.w, u, u, optimize=True))
    b = (a1 + 6.0 * a2) / (2.0 * q)
    g = ((q + 1) * a1 - (q + 4) * a2) / ((q + 2) * a2)
    denom = 3 * q + 2 * (1 - g)
    c1, c2, c3 = g / denom, (q - g) / denom, (q + 2 - g) / denom
    v0 = 1 + c1 * b
    v0 = 0.0 if abs(v0) < 1e-10 else v0
    v1, v2 = 1 - c2 * b, 1 - c3 * b
    ratio = (1 - a2 / q) / v1 if v1 != 0 else 0.0
    rho = ratio**2 * v0 / v2 / q
    df2 = 4 + (q + 2) / (q * rho - 1)
    scale = 1.0 if abs(df2 - 4) < 1e-2 else df2 * (1 - a2 / q) / (df2 - 2)
    lb = lmat @ beta
    wald = float(lb @ np.linalg.solve(lmat @ kr.phi_a @ lmat.T, lb)) / q
    f_value = scale * wald
    return {
        "F": float(f_value),
        "F_unscaled": wald,
        "scale": float(scale),
        "df_num": q,
        "df_den": float(df2),
        "p": float(stats.f.sf(f_value, q, df2)),
    }
