"""REML for ``score ~ model + (1|cluster) + (1|cluster:item) [+ (1|prompt)]``: the linear algebra.

The model is ``y = X beta + Z_q b_q + Z_c b_c + Z_p b_p + e`` with one fixed mean per model
(``X`` is the model indicator), independent random intercepts ``b_q ~ N(0, s_q^2)`` per question
(nested in its cluster), ``b_c ~ N(0, tau^2)`` per cluster, ``b_p ~ N(0, s_p^2)`` per prompt
variant, and ``e ~ N(0, sigma^2)``. Following lme4 (Bates et al. 2015) it is written with relative
standard deviations ``theta = (s_q, tau, s_p) / sigma`` and fitted by the penalised least squares
(PLS) problem

    r^2(theta) = min_{u, beta} ||y - X beta - Z Lambda u||^2 + ||u||^2,   Lambda = diag(theta),

whose normal equations ``A [u; beta] = b`` have the matrix
``A = [[Lambda Z'Z Lambda + I, Lambda Z'X], [X'Z Lambda, X'X]]``. The profiled REML criterion is

    d(theta) = log|L_theta|^2 + log|R_X|^2 + (N - p) (1 + log(2 pi r^2 / (N - p))),

``L_theta L_theta' = Lambda Z'Z Lambda + I`` and ``R_X'R_X`` the Schur complement of the random
effects in ``A`` (= X'V^-1 X sigma^2).

**Structure used.** Questions are nested in clusters, so the question block of ``A`` is diagonal
(``theta_q^2 n_i + 1``); eliminating it leaves a diagonal cluster block (a question touches only
its own cluster), and eliminating that leaves a dense block of size P + K (prompts and models).
Each step is a Schur complement with a diagonal pivot block, so the covariance's block-diagonal
structure by cluster is used to the full: nothing of size N x N, or even items x items, is ever
formed. The pivots depend on a question only through its number of rows ``n_i``, so the cross
products are pre-summed once by (cluster, n_i) and by n_i: after a single pass over the rows, one
evaluation of ``d(theta)`` costs ``O(#(cluster, n) groups * (P + K) + #n * (P + K)^2 + (P + K)^3)``,
independent of the number of rows and questions.

References
----------
Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models using
lme4. Journal of Statistical Software 67(1), Sec. 3.
Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
linear mixed effects models. Journal of Statistical Software 82(13) (Satterthwaite's df).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse

from rankci.mixed.numeric import central_gradient, minimise, numeric_hessian, numeric_jacobian

__all__ = ["Design", "RemlFit", "build_design", "fit_reml"]

_GROUPED_BYTES = 256 * 2**20  # pre-summed Gram matrices per distinct n_i up to this size


@dataclass(frozen=True, eq=False)
class Design:
    """Sufficient statistics of the data for the nested random-intercept model.

    ``W = [Z_p, X]`` (prompt indicators, then model indicators) has ``r = P + K`` columns; row i of
    ``Q = Z_q'W`` counts question i's rows by prompt and by model. The cluster-level random effects
    of cluster c (its intercept, and with ``model_by_cluster`` one effect per model) have design
    rows ``z = T w`` for a row with W-row w, so every cluster-level cross product is ``T`` times a
    W cross product: ``T`` is B x r with B = 1 (intercept) or 1 + K (intercept and model x cluster).
    """

    n_obs: int
    n_fixed: int
    n_prompts: int
    n_clusters: int
    terms: tuple[str, ...]  # random terms in theta order: item, [cluster, model:cluster], [prompt]
    n_values: np.ndarray  # distinct rows-per-question counts
    n_count: np.ndarray  # questions with each count
    gram: np.ndarray | None  # (n_values, r, r): sum of Q_i'Q_i over questions with that count
    q_matrix: np.ndarray | None  # (questions, r) when gram is None
    q_index: np.ndarray | None  # index into n_values per question (with q_matrix)
    hq: np.ndarray  # (n_values, r): sum of Q_i qy_i
    sq: np.ndarray  # (n_values,): sum of qy_i^2
    group_cluster: np.ndarray  # (groups,) cluster of each (cluster, n) group
    group_n: np.ndarray  # (groups,) index into n_values
    group_zq: np.ndarray  # (groups, B, r): sum of z_i Q_i' (z_i = T Q_i)
    group_zz: np.ndarray  # (groups, B, B): sum of z_i z_i'
    group_zy: np.ndarray  # (groups, B): sum of z_i qy_i
    cluster_tw: np.ndarray  # (G, B, r): T W_c'W_c
    cluster_tt: np.ndarray  # (G, B, B): T W_c'W_c T'
    cluster_ty: np.ndarray  # (G, B): T W_c'y_c
    ww: np.ndarray  # (r, r) W'W
    wy: np.ndarray  # (r,) W'y
    yy: float

    @property
    def r(self) -> int:
        return self.n_prompts + self.n_fixed


def build_design(
    y: np.ndarray,
    model: np.ndarray,
    item: np.ndarray,
    item_cluster: np.ndarray | None,
    prompt: np.ndarray | None,
    n_models: int,
    n_prompts: int = 0,
    model_by_cluster: bool = False,
) -> Design:
    """One pass over the rows: the cross products every evaluation of the criterion needs.

    ``model``, ``item`` and ``prompt`` are integer codes per row (items 0..n_items-1, all present);
    ``item_cluster`` gives each item's cluster code (None: no cluster terms). ``model_by_cluster``
    adds the random model x cluster interaction ``(1|model:cluster)``.

    Parameters
    ----------
    y : numpy.ndarray
        Score of each row.
    model : numpy.ndarray
        Model code (0 .. n_models - 1) of each row.
    item : numpy.ndarray
        Item (question) code of each row.
    item_cluster : numpy.ndarray or None
        Cluster code of each item; None fits no cluster term.
    prompt : numpy.ndarray or None
        Prompt-variant code of each row; None fits no prompt term.
    n_models : int
        Number of models K (fixed effects).
    n_prompts : int, default 0
        Number of prompt variants P (with ``prompt``).
    model_by_cluster : bool, default False
        Add ``(1|model:cluster)``.

    Returns
    -------
    Design
        The sufficient statistics, with ``terms`` naming the random terms in theta order.

    References
    ----------
    Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models
    using
    lme4. Journal of Statistical Software 67(1), Sec. 3.

    Examples
    --------
    >>> import numpy as np
    >>> table = np.array([[0.9, 0.7], [0.4, 0.5], [0.8, 0.4], [0.2, 0.1], [0.6, 0.5]])
    >>> y = table.ravel()
    >>> model, item = np.tile(np.arange(2), 5), np.repeat(np.arange(5), 2)
    >>> design = build_design(y, model, item, None, None, n_models=2)
    >>> design.n_obs, design.terms, design.n_values.tolist(), design.n_count.tolist()
    (10, ('item',), [2.0], [5.0])
    """
    y = np.asarray(y, dtype=float)
    n_obs = y.size
    n_items = int(item.max()) + 1
    k = n_models
    p = n_prompts if prompt is not None else 0
    r = p + k
    model = model.astype(np.int64)
    # W columns hit by each row: the model column, and the prompt column when there is one.
    cols = [p + model]
    if p:
        cols.append(prompt.astype(np.int64))
    item = item.astype(np.int64)

    q_matrix = np.zeros(n_items * r)
    ww = np.zeros(r * r)
    wy = np.zeros(r)
    for a in cols:
        q_matrix += np.bincount(item * r + a, minlength=n_items * r)
        wy += np.bincount(a, weights=y, minlength=r)
        for b in cols:
            ww += np.bincount(a * r + b, minlength=r * r)
    q_matrix = q_matrix.reshape(n_items, r)
    ww = ww.reshape(r, r)
    qy = np.bincount(item, weights=y, minlength=n_items)
    n_i = np.bincount(item, minlength=n_items)

    n_values, n_index, n_count = np.unique(n_i, return_inverse=True, return_counts=True)
    nv = n_values.size
    hq = np.zeros((nv, r))
    np.add.at(hq, n_index, q_matrix * qy[:, None])
    sq = np.bincount(n_index, weights=qy**2, minlength=nv)
    if nv * r * r * 8 <= _GROUPED_BYTES:
        gram = np.empty((nv, r, r))
        for v in range(nv):  # a loop over distinct counts, not over questions
            block = q_matrix[n_index == v]
            gram[v] = block.T @ block
        q_store, q_index = None, None
    else:
        gram, q_store, q_index = None, q_matrix, n_index

    cluster_terms: tuple[str, ...] = ()
    if item_cluster is not None:
        cluster_terms = ("cluster",) + (("model:cluster",) if model_by_cluster else ())
        stats_ = _cluster_statistics(
            y,
            model,
            item,
            cols,
            item_cluster.astype(np.int64),
            q_matrix,
            qy,
            n_index,
            nv,
            k,
            p,
            bool(model_by_cluster),
        )
    else:
        stats_ = _no_clusters(r)
    terms = ("item",) + cluster_terms + (("prompt",) if p else ())
    return Design(
        n_obs=n_obs,
        n_fixed=k,
        n_prompts=p,
        terms=terms,
        n_values=n_values.astype(float),
        n_count=n_count.astype(float),
        gram=gram,
        q_matrix=q_store,
        q_index=q_index,
        hq=hq,
        sq=sq,
        ww=ww,
        wy=wy,
        yy=float(y @ y),
        **stats_,
    )


def _no_clusters(r: int) -> dict:
    empty = np.zeros(0, dtype=np.int64)
    return dict(
        n_clusters=0,
        group_cluster=empty,
        group_n=empty,
        group_zq=np.zeros((0, 1, r)),
        group_zz=np.zeros((0, 1, 1)),
        group_zy=np.zeros((0, 1)),
        cluster_tw=np.zeros((0, 1, r)),
        cluster_tt=np.zeros((0, 1, 1)),
        cluster_ty=np.zeros((0, 1)),
    )


def _cluster_statistics(
    y, model, item, cols, cluster_of_item, q_matrix, qy, n_index, nv, k, p, interaction
) -> dict:
    """Cross products of the cluster-level effects, by cluster and by (cluster, n_i) group."""
    n_items, r = q_matrix.shape
    n_clusters = int(cluster_of_item.max()) + 1
    b = 1 + (k if interaction else 0)
    t_map = np.zeros((b, r))
    t_map[0, p:] = 1.0  # cluster intercept: every row
    if interaction:
        t_map[1:, p:] = np.eye(k)  # model x cluster: the row's model
    keys, group_of_item = np.unique(cluster_of_item * nv + n_index, return_inverse=True)
    n_groups = keys.size
    if not interaction:  # z_i = n_i: vectorised group sums
        indicator = sparse.csr_matrix(
            (np.ones(n_items), (group_of_item, np.arange(n_items))), shape=(n_groups, n_items)
        )
        z = q_matrix[:, p:].sum(axis=1)
        group_zq = np.asarray(indicator @ (q_matrix * z[:, None]))[:, None, :]
        group_zz = np.bincount(group_of_item, weights=z**2, minlength=n_groups)[:, None, None]
        group_zy = np.bincount(group_of_item, weights=z * qy, minlength=n_groups)[:, None]
    else:  # a loop over (cluster, n_i) groups, each a small matrix product
        order = np.argsort(group_of_item, kind="stable")
        bounds = np.searchsorted(group_of_item[order], np.arange(n_groups + 1))
        group_zq = np.empty((n_groups, b, r))
        group_zz = np.empty((n_groups, b, b))
        group_zy = np.empty((n_groups, b))
        for g in range(n_groups):
            members = order[bounds[g] : bounds[g + 1]]
            q_g = q_matrix[members]
            z_g = q_g @ t_map.T
            group_zq[g] = z_g.T @ q_g
            group_zz[g] = z_g.T @ z_g
            group_zy[g] = z_g.T @ qy[members]
    row_cluster = cluster_of_item[item]
    cluster_w = np.zeros(n_clusters * r)
    for a in cols:
        cluster_w += np.bincount(row_cluster * r + a, minlength=n_clusters * r)
    tw = [cluster_w.reshape(n_clusters, 1, r)]
    ty = [np.bincount(row_cluster, weights=y, minlength=n_clusters)[:, None]]
    if interaction:
        cell = row_cluster * k + model
        by_model = np.zeros(n_clusters * k * r)
        for a in cols:
            by_model += np.bincount(cell * r + a, minlength=n_clusters * k * r)
        tw.append(by_model.reshape(n_clusters, k, r))
        ty.append(np.bincount(cell, weights=y, minlength=n_clusters * k).reshape(n_clusters, k))
    cluster_tw = np.concatenate(tw, axis=1)
    return dict(
        n_clusters=n_clusters,
        group_cluster=keys // nv,
        group_n=keys % nv,
        group_zq=group_zq,
        group_zz=group_zz,
        group_zy=group_zy,
        cluster_tw=cluster_tw,
        cluster_tt=cluster_tw @ t_map.T,
        cluster_ty=np.concatenate(ty, axis=1),
    )


@dataclass(frozen=True, eq=False)
class _Solve:
    logdet_theta: float  # log|L_theta|^2
    logdet_x: float  # log|R_X|^2
    r2: float  # penalised residual sum of squares
    beta: np.ndarray
    cov_unscaled: np.ndarray | None  # (R_X'R_X)^-1 = Cov(beta) / sigma^2


def _solve(design: Design, theta: np.ndarray, cov: bool = False) -> _Solve:
    """The PLS solution at ``theta`` by three Schur complements (questions, clusters, the rest)."""
    d = design
    th = dict(zip(d.terms, np.asarray(theta, dtype=float), strict=True))
    tq2 = th["item"] ** 2
    tp = th.get("prompt", 1.0)
    p = d.n_prompts

    # 1. questions: pivot d_i = tq2 n_i + 1, through the per-count weights w(n) = 1 / d(n)
    w = 1.0 / (tq2 * d.n_values + 1.0)
    logdet = float(np.sum(d.n_count * np.log1p(tq2 * d.n_values)))
    if d.gram is not None:
        qq = np.tensordot(w, d.gram, axes=1)
    else:
        qw = d.q_matrix * w[d.q_index][:, None]
        qq = d.q_matrix.T @ qw
    h_mat = d.ww - tq2 * qq  # still unscaled by S = diag(tp, ..., 1, ...)
    h_vec = d.wy - tq2 * (w @ d.hq)
    quad = tq2 * float(w @ d.sq)

    # 2. clusters: per cluster c, the B x B pivot A_c = Lam T M_c T' Lam + I with
    #    M_c = W_c'W_c - tq2 sum_{i in c} w_i Q_i Q_i' (questions already eliminated)
    if d.n_clusters:
        scale_b = np.full(d.cluster_tt.shape[1], th["cluster"])
        scale_b[1:] = th.get("model:cluster", 0.0)
        gw = (tq2 * w[d.group_n])[:, None, None]
        tm = d.cluster_tw - _segment(d.group_cluster, gw * d.group_zq, d.n_clusters)
        tmt = d.cluster_tt - _segment(d.group_cluster, gw * d.group_zz, d.n_clusters)
        tf = d.cluster_ty - _segment(d.group_cluster, gw[:, :, 0] * d.group_zy, d.n_clusters)
        pivot = tmt * scale_b[None, :, None] * scale_b[None, None, :]
        pivot += np.eye(scale_b.size)[None]
        chol = np.linalg.cholesky(pivot)
        logdet += 2.0 * float(np.log(np.einsum("cbb->cb", chol)).sum())
        # K_c = Lam A_c^-1 Lam, applied to [T M_c | T h_c]
        rhs = np.concatenate([tm, tf[:, :, None]], axis=2) * scale_b[None, :, None]
        solved = np.linalg.solve(pivot, rhs) * scale_b[None, :, None]
        both = np.concatenate([tm, tf[:, :, None]], axis=2)
        update = np.einsum("cbr,cbs->rs", both, solved)
        h_mat = h_mat - update[:-1, :-1]
        h_vec = h_vec - update[:-1, -1]
        quad += float(update[-1, -1])

    # 3. prompts and fixed effects: M = S H S + E
    scale = np.ones(d.r)
    scale[:p] = tp
    m_mat = h_mat * scale[:, None] * scale[None, :]
    m_mat[np.arange(p), np.arange(p)] += 1.0
    rhs = h_vec * scale
    chol = linalg.cholesky(m_mat, lower=True, check_finite=False)
    diag = np.log(np.diag(chol))
    logdet += 2.0 * float(diag[:p].sum())
    logdet_x = 2.0 * float(diag[p:].sum())
    z = linalg.cho_solve((chol, True), rhs, check_finite=False)
    quad += float(rhs @ z)
    r2 = d.yy - quad
    unscaled = None
    if cov:  # (R_X'R_X)^-1 is the fixed-effects block of M^-1: invert the trailing Cholesky block
        tail_inv = np.linalg.inv(chol[p:, p:])  # (LAPACK trsm stalls on a loaded machine)
        unscaled = tail_inv.T @ tail_inv
    return _Solve(logdet, logdet_x, max(r2, 0.0), z[p:], unscaled)


def _segment(segment: np.ndarray, values: np.ndarray, n_segments: int) -> np.ndarray:
    """Sums of ``values`` (first axis) within segments; ``segment`` is sorted and every segment
    occurs (groups come from ``np.unique`` of cluster-major keys, and no cluster is empty)."""
    starts = np.searchsorted(segment, np.arange(n_segments))
    return np.add.reduceat(values, starts, axis=0)


def reml_criterion(design: Design, theta: np.ndarray) -> float:
    """Profiled REML criterion ``-2 log L_R`` at ``theta`` (lme4's ``REMLcrit``)."""
    s = _solve(design, theta)
    dof = design.n_obs - design.n_fixed
    return s.logdet_theta + s.logdet_x + dof * (1.0 + np.log(2.0 * np.pi * s.r2 / dof))


def _deviance_varpar(design: Design, varpar: np.ndarray) -> float:
    """REML deviance as a function of (theta, sigma), not profiled over sigma (lmerTest's
    ``devfun_vp``): the function whose Hessian gives the covariance of the variance parameters."""
    theta, sigma = varpar[:-1], varpar[-1]
    s = _solve(design, theta)
    s2 = sigma**2
    dof = design.n_obs - design.n_fixed
    return s.logdet_theta + s.logdet_x + s.r2 / s2 + dof * np.log(2.0 * np.pi * s2)


@dataclass(frozen=True, eq=False)
class RemlFit:
    """A fitted model: variance parameters, fixed effects and what Satterthwaite's df need."""

    terms: tuple[str, ...]
    theta: np.ndarray
    sigma: float
    beta: np.ndarray
    cov_beta: np.ndarray  # Cov(beta-hat) = sigma^2 (R_X'R_X)^-1
    reml_criterion: float
    vcov_varpar: np.ndarray  # 2 H^-1, H = Hessian of the deviance in (theta, sigma)
    jacobian: np.ndarray  # (n_varpar, K, K): d Cov(beta-hat) / d varpar
    n_evaluations: int
    converged: bool
    message: str
    gradient: np.ndarray
    boundary: tuple[str, ...]

    @property
    def variances(self) -> dict[str, float]:
        pairs = zip(self.terms, self.theta, strict=True)
        out = {term: float((t * self.sigma) ** 2) for term, t in pairs}
        out["residual"] = float(self.sigma**2)
        return out


def fit_reml(
    design: Design, theta0: np.ndarray | None = None, theta: np.ndarray | None = None
) -> RemlFit:
    """Minimise the profiled REML criterion over theta >= 0, then the Satterthwaite ingredients.

    The criterion is minimised over ``rho = theta^2`` (relative variances), where it is smooth up
    to and at the boundary ``rho = 0`` (in theta its gradient vanishes there by symmetry), by a
    projected Newton method with finite-difference derivatives
    (:func:`rankci.mixed.numeric.minimise`). Passing ``theta`` skips the optimisation and evaluates
    everything at that point (used to compare with another program's estimates at exactly its
    optimum).

    Parameters
    ----------
    design : Design
        From :func:`build_design`.
    theta0 : numpy.ndarray, optional
        Starting relative standard deviations (default 1 for every term).
    theta : numpy.ndarray, optional
        Evaluate at this theta instead of optimising.

    Returns
    -------
    RemlFit
        Variance parameters, fixed effects with their covariance, and the Hessian-based covariance
        of the variance parameters and Jacobian that Satterthwaite's df need.

    References
    ----------
    Bates, D., Maechler, M., Bolker, B. and Walker, S. (2015). Fitting linear mixed-effects models
    using
    lme4. Journal of Statistical Software 67(1), Sec. 3.
    Kuznetsova, A., Brockhoff, P. B. and Christensen, R. H. B. (2017). lmerTest package: tests in
    linear mixed effects models. Journal of Statistical Software 82(13).

    Examples
    --------
    In a balanced models x items table REML equals the ANOVA estimates: ``sigma^2 = MSE`` of the
    additive two-way layout and ``s_item^2 = (MS_item - MSE) / K``:

    >>> import numpy as np
    >>> table = np.array([[0.9, 0.7], [0.4, 0.5], [0.8, 0.4], [0.2, 0.1], [0.6, 0.5]])
    >>> y = table.ravel()
    >>> model, item = np.tile(np.arange(2), 5), np.repeat(np.arange(5), 2)
    >>> fit = fit_reml(build_design(y, model, item, None, None, n_models=2))
    >>> {k: round(v, 6) for k, v in fit.variances.items()}, fit.beta.round(6).tolist()
    ({'item': 0.0485, 'residual': 0.0165}, [0.58, 0.44])
    >>> grand = table.mean()
    >>> ss_item = 2 * ((table.mean(axis=1) - grand) ** 2).sum()
    >>> ss_model = 5 * ((table.mean(axis=0) - grand) ** 2).sum()
    >>> mse = (((table - grand) ** 2).sum() - ss_item - ss_model) / 4
    >>> round(float(mse), 6), round(float(ss_item / 4 - mse) / 2, 6)
    (0.0165, 0.0485)
    """
    m = len(design.terms)
    count = {"n": 0}

    def crit(theta: np.ndarray) -> float:
        count["n"] += 1
        return reml_criterion(design, np.abs(theta))

    if theta is not None:
        theta = np.abs(np.asarray(theta, dtype=float))
        return _finish(design, theta, crit(theta), crit, True, "theta given", count)
    start = np.full(m, 1.0) if theta0 is None else np.asarray(theta0, dtype=float) ** 2
    rho, value, converged, message = minimise(lambda r: crit(np.sqrt(r)), start)
    return _finish(design, np.sqrt(rho), value, crit, converged, message, count)


def _finish(design, theta, value, crit, converged, message, count) -> RemlFit:
    s = _solve(design, theta, cov=True)
    dof = design.n_obs - design.n_fixed
    sigma = float(np.sqrt(s.r2 / dof))
    varpar = np.append(theta, sigma)
    hess = numeric_hessian(lambda v: _deviance_varpar(design, v), varpar)
    # 2 H^-1 over the positive eigenvalues of H (as lmerTest; a boundary fit can make H singular)
    values, vectors = np.linalg.eigh(hess)
    keep = values > 1e-8 * max(values.max(), 1e-300)
    vcov_varpar = 2.0 * (vectors[:, keep] / values[keep]) @ vectors[:, keep].T

    def cov_of(v: np.ndarray) -> np.ndarray:
        return v[-1] ** 2 * _solve(design, v[:-1], cov=True).cov_unscaled

    jac_theta = numeric_jacobian(lambda t: cov_of(np.append(t, sigma)), theta)
    jac_sigma = 2.0 * sigma * s.cov_unscaled
    jacobian = np.concatenate([jac_theta, jac_sigma[None]], axis=0)
    gradient = central_gradient(crit, theta)
    boundary = tuple(t for t, v in zip(design.terms, theta, strict=True) if v <= 1e-6)
    return RemlFit(
        terms=design.terms,
        theta=theta,
        sigma=sigma,
        beta=s.beta,
        cov_beta=sigma**2 * s.cov_unscaled,
        reml_criterion=float(value),
        vcov_varpar=vcov_varpar,
        jacobian=jacobian,
        n_evaluations=count["n"],
        converged=converged,
        message=message,
        gradient=gradient,
        boundary=boundary,
    )
