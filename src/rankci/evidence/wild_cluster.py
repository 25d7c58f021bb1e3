"""The restricted wild cluster bootstrap-t (WCR) for means and paired differences, few clusters.

Model: every model's score on item i of cluster g is ``y_ig = theta + u_ig`` (a regression on a
constant, estimand the item mean ``theta``), the clusters independent, the items inside one
cluster arbitrarily dependent. Everything depends on the data only through the cluster sums
``S_g`` of each model's scores and the cluster sizes ``N_g`` (``N = sum_g N_g``; complete
units: every model scored the same items), so the functions take those (:func:`cluster_totals`
computes them from item scores and cluster codes).

Estimate, residual sums and cluster-robust standard error::

    theta_hat = sum_g S_g / N,   e_g = S_g - N_g theta_hat,
    se^2 = c sum_g k_g e_g^2 / N^2
    CR1: c = G/(G - 1), k_g = 1            (statsmodels' ``cov_type="cluster"``: with one
                                            regressor its (N - 1)/(N - K) factor is 1)
    CR2: c = 1,         k_g = 1/(1 - N_g/N)   (Bell and McCaffrey 2002, for a constant)

The WCR bootstrap of the null ``theta = mu`` (Cameron, Gelbach and Miller 2008; MacKinnon and
Webb 2017, 2018) draws ``y*_ig = mu + w_g (y_ig - mu)``: one weight per cluster, on the
*restricted* residuals, which impose the null. With ``s_g = S_g - N_g mu`` (restricted sums)
the bootstrap estimate and its residual sums are::

    theta*_b - mu = sum_g w_bg s_g / N,     e*_bg = w_bg s_g - N_g (theta*_b - mu),
    t*_b = (theta*_b - mu) / se*_b,         se*_b^2 = c sum_g k_g e*_bg^2 / N^2

and the statistic ``t = (theta_hat - mu) / se`` is compared with the ``t*_b``: symmetric
two-sided p-value ``#{b : |t*_b| >= |t|} / B``, one-sided ``#{b : t*_b >= t} / B`` (ties, to a
relative 1e-9, count as reached) when every weight vector is enumerated (the all-ones vector,
which reproduces ``t``, is then among them); with B random draws the observed statistic counts as
one more draw, ``(1 + #{...}) / (B + 1)``, so that a p-value is never 0 (Davison and Hinkley
1997, Sec. 4.2.1): the smallest attainable p-value is ``1 / (B + 1)``, or ``1 / 2^G`` for
enumerated Rademacher draws, which bounds what a multiple-testing procedure can certify (Holm
over M(M - 1) ordered pairs needs a p-value of ``alpha / (M (M - 1))``). All draws at once are
products of the B x G weight matrix with G-vectors (G x M or G x pairs matrices): no loop over
draws, models, pairs or items.

Weights: Rademacher (+-1 with probability 1/2) or Webb's six-point distribution (+-sqrt(1/2),
+-1, +-sqrt(3/2), each 1/6; Webb 2023), which has more distinct draws when G is small. When the
number of distinct weight vectors (``2^G`` or ``6^G``) is at most ``reps``, every vector is
enumerated once (``enumerated=True``): the p-value is then exact for the bootstrap law, with no
Monte-Carlo error.

Confidence intervals are the set of ``mu`` whose symmetric test does not reject at ``alpha``
(test inversion with the same weights for every ``mu``; Roodman et al. 2019, Sec. 3.5). As
``mu`` moves, ``t*_b`` is ``N (a_b + d b_b) / sqrt(c (P_b + 2 d Q_b + d^2 R_b))`` with ``d =
theta_hat - mu`` and five numbers per draw, so each step of the bisection costs B x M.

Limits that are facts, not defects:

* The two constant Rademacher vectors (all +1, all -1) reproduce ``|t|`` for every ``mu``, so
  the symmetric p-value is never below ``2 / 2^G`` when all vectors are enumerated: with
  G <= 5 clusters and ``alpha = 0.05`` the Rademacher interval is the whole line (``lower =
  -inf``, ``upper = inf``; ``bounded`` says so) and no pair is ever separated. That is the
  bootstrap saying it cannot, not a bug (MacKinnon and Webb 2018, Sec. 3). Webb's weights
  (six constant vectors of ``6^G``) can reject from G = 3.
* With Rademacher weights and all sign vectors enumerated, the WCR test of ``theta = mu`` *is*
  the sign-flip randomisation test of the restricted cluster residual vectors
  ``y_g - mu``: ``y*`` is the data with whole clusters' residuals sign-flipped about ``mu``, and
  ``t*`` is the same statistic on the flipped data. It is exact when the joint law of the
  restricted sums ``s_g`` is invariant under sign changes (Canay, Romano and Shaikh 2017 for the
  approximate version). For a single mean that symmetry is an assumption about the cluster
  population, and a sign flip makes sense only *centred at the null* ``mu`` (flipping raw scores
  tests ``theta = 0``). For a paired difference under the sharp null "the two models are
  exchangeable inside every cluster", ``D_g`` is exactly symmetric about 0, and the flip test is
  exact; for the weak null ``theta_j = theta_l`` it is only approximate. ``statistic="sum"``
  gives the unstudentised version (``t = theta_hat - mu``, ``t* = theta* - mu``: the
  Fisher-Pitman sign-flip test of the sums).

Degenerate data: when every cluster has the same mean (residual sums zero up to rounding: the
variance ``sum_g e_g^2 / N^2`` is zero by the one absolute rule of every path,
:func:`rankci.evidence.moments.variance_is_zero`, with R the width of the cluster means) nothing
about new clusters can be said; the interval is refused (NaN) and a pair gets p-value 1.

References
----------
Bell, R. M. and McCaffrey, D. F. (2002). Bias reduction in standard errors for linear regression
with multi-stage samples. Survey Methodology 28(2), 169-181.
Cameron, A. C., Gelbach, J. B. and Miller, D. L. (2008). Bootstrap-based improvements for
inference with clustered errors. Review of Economics and Statistics 90(3), 414-427.
Canay, I. A., Romano, J. P. and Shaikh, A. M. (2017). Randomization tests under an approximate
symmetry assumption. Econometrica 85(3), 1013-1030.
Carter, A. V., Schnepel, K. T. and Steigerwald, D. G. (2017). Asymptotic behavior of a t-test
robust to cluster heterogeneity. Review of Economics and Statistics 99(4), 698-709.
MacKinnon, J. G. and Webb, M. D. (2017). Wild bootstrap inference for wildly different cluster
sizes. Journal of Applied Econometrics 32(2), 233-254.
MacKinnon, J. G. and Webb, M. D. (2018). The wild bootstrap for few (treated) clusters. The
Econometrics Journal 21(2), 114-135.
Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application. Cambridge
University Press.
Roodman, D., Nielsen, M. O., MacKinnon, J. G. and Webb, M. D. (2019). Fast and wild: bootstrap
inference in Stata using boottest. The Stata Journal 19(1), 4-60.
Webb, M. D. (2023). Reworking wild bootstrap-based inference for clustered errors. Canadian
Journal of Economics 56(3), 839-858.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import special

from rankci._base import as_generator, check_alpha, check_choice, check_positive_int
from rankci.evidence.moments import score_width, variance_is_zero

__all__ = [
    "SE_TYPES",
    "STATISTICS",
    "WEIGHTS",
    "WildClusterMeans",
    "WildClusterPairs",
    "cluster_totals",
    "effective_clusters",
    "wild_cluster_means",
    "wild_cluster_pairs",
    "wild_weights",
]

WEIGHTS = ("rademacher", "webb")
SE_TYPES = ("CR1", "CR2")
STATISTICS = ("t", "sum")
WEBB_POINTS = np.array(
    [-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)]
)
TIE = 1e-9  # relative tolerance: a bootstrap statistic this close to the observed one reaches it
CHUNK_CELLS = 2**22  # B x G x models cells per chunk of the per-draw products (32 MiB each)


def effective_clusters(sizes=None, *, cluster=None, rho: float = 1.0):
    """The effective number of clusters G* of Carter, Schnepel and Steigerwald (2017), for a mean.

    For a regression on X with clusters g, CSS define (their Sec. 3, as the R package effClust
    and Stata's ``summclust`` compute it) ::

        gamma_g = a' (X'X)^-1 X_g' Omega_g X_g (X'X)^-1 a,
        Gamma   = (1/G) sum_g (gamma_g - gamma_bar)^2 / gamma_bar^2,
        G*      = G / (1 + Gamma),

    with the working within-cluster covariance ``Omega_g = (1 - rho) I + rho J`` (equicorrelated,
    unit variance). For the mean (X a column of ones, ``a = 1``) ``X_g' Omega_g X_g = (1 - rho)
    N_g + rho N_g^2``, and the constant ``(X'X)^-1 = 1/N`` cancels in Gamma, so ::

        gamma_g = N_g (1 + rho (N_g - 1)),
        G*(rho) = (sum_g gamma_g)^2 / sum_g gamma_g^2      (= G / (1 + CV^2 of the gamma_g)).

    ``rho = 1`` (default) is CSS's worst case, which depends only on the cluster sizes:
    ``G*(1) = (sum_g N_g^2)^2 / sum_g N_g^4``. ``rho = 0`` (independent items) gives
    ``G*(0) = (sum_g N_g)^2 / sum_g N_g^2``, the Kish effective number of equal-sized clusters;
    that is *not* the worst case (G*(1) <= G*(0) <= G, equal only for equal sizes). Both are
    diagnostics of the design: they do not look at the scores.

    Parameters
    ----------
    sizes : array_like, optional
        Cluster sizes ``N_g`` (the last axis: a 2-D array gives one G* per row).
    cluster : array_like, optional
        Instead of ``sizes``: each item's cluster label.
    rho : float, default 1.0
        Working within-cluster correlation, in [0, 1].

    Returns
    -------
    float or numpy.ndarray

    References
    ----------
    Carter, A. V., Schnepel, K. T. and Steigerwald, D. G. (2017). Asymptotic behavior of a t-test
    robust to cluster heterogeneity. Review of Economics and Statistics 99(4), 698-709.

    Examples
    --------
    ChemBench's nine topics (one holds 36 % of the 2,788 items):

    >>> sizes = [152, 1001, 149, 92, 84, 430, 165, 40, 675]
    >>> round(float(effective_clusters(sizes)), 2)
    2.4
    >>> round(float(effective_clusters(sizes, rho=0)), 2)
    4.49
    >>> float(effective_clusters(cluster=["a", "a", "b", "b"]))
    2.0
    """
    if (sizes is None) == (cluster is None):
        raise ValueError("effective_clusters needs exactly one of sizes= and cluster=")
    if isinstance(rho, bool) or not 0.0 <= float(rho) <= 1.0:
        raise ValueError(f"rho must be a number in [0, 1], got {rho!r}")
    if cluster is not None:
        _, n = np.unique(np.asarray(cluster), return_counts=True)
    else:
        n = np.asarray(sizes, dtype=float)
        if n.ndim == 0 or n.shape[-1] == 0 or (n < 0).any() or (n.sum(axis=-1) <= 0).any():
            raise ValueError(
                "sizes must be cluster sizes >= 0 (a size of 0 counts as no cluster), not all 0"
            )
    n = n.astype(float)
    gamma = n * (1.0 + float(rho) * (n - 1.0))
    out = gamma.sum(axis=-1) ** 2 / (gamma**2).sum(axis=-1)
    return float(out) if np.ndim(out) == 0 else out


def cluster_totals(values, cluster, *, per_model: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cluster sums of each model's scores and the cluster sizes (clusters in sorted label order).

    Parameters
    ----------
    values : array_like (items,) or (items, models)
        Scores: no NaN (complete units), or NaN for a missing cell with ``per_model=True``.
    cluster : array_like (items,)
        Each item's cluster label.
    per_model : bool, default False
        Skip missing cells: each model's sums and sizes over its own items (``sizes`` is then
        G x models, 0 where a model has no item of a cluster).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``sums`` (G x models) and ``sizes`` (G, or G x models with ``per_model=True``).

    Examples
    --------
    >>> sums, sizes = cluster_totals([[1, 0], [1, 1], [0, 0]], ["b", "a", "b"])
    >>> sums.tolist(), sizes.tolist()
    ([[1.0, 1.0], [1.0, 0.0]], [1, 2])
    >>> nan = float("nan")
    >>> sums, sizes = cluster_totals([[1, nan], [1, 1], [0, 0]], ["b", "a", "b"], per_model=True)
    >>> sums.tolist(), sizes.tolist()
    ([[1.0, 1.0], [1.0, 0.0]], [[1, 1], [2, 1]])
    """
    x = np.asarray(values, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    present = ~np.isnan(x)
    if not np.isfinite(x[present]).all() or (not per_model and not present.all()):
        raise ValueError("values must be finite: the wild cluster bootstrap needs complete units")
    _, codes = np.unique(np.asarray(cluster), return_inverse=True)
    codes = codes.ravel()
    if codes.size != x.shape[0]:
        raise ValueError(f"cluster has {codes.size} labels for {x.shape[0]} items")
    n_groups = int(codes.max()) + 1
    sums = np.zeros((n_groups, x.shape[1]))
    np.add.at(sums, codes, np.where(present, x, 0.0))
    if not per_model:
        return sums, np.bincount(codes, minlength=n_groups)
    sizes = np.zeros((n_groups, x.shape[1]), dtype=np.int64)
    np.add.at(sizes, codes, present.astype(np.int64))
    return sums, sizes


def wild_weights(n_clusters: int, reps: int = 999, weights: str = "rademacher", rng=None):
    """The B x G matrix of wild bootstrap weights, all distinct vectors when they are few.

    Parameters
    ----------
    n_clusters : int
        G.
    reps : int, default 999
        B when drawing at random. When ``2^G`` (Rademacher) or ``6^G`` (Webb) is at most ``reps``,
        every distinct vector is listed once instead (B = ``2^G`` or ``6^G``).
    weights : {"rademacher", "webb"}
    rng : None, int or Generator

    Returns
    -------
    (numpy.ndarray, bool)
        The weights and whether they are the full enumeration.

    Examples
    --------
    >>> w, enumerated = wild_weights(3, reps=999)
    >>> w.shape, enumerated, sorted(set(w.sum(axis=1).tolist()))
    ((8, 3), True, [-3.0, -1.0, 1.0, 3.0])
    >>> wild_weights(3, reps=100, weights="webb", rng=0)[0].shape
    (100, 3)
    """
    g = check_positive_int(n_clusters, "n_clusters")
    b = check_positive_int(reps, "reps")
    kind = check_choice("weights", weights, WEIGHTS)
    points = np.array([-1.0, 1.0]) if kind == "rademacher" else WEBB_POINTS
    if len(points) ** g <= b:
        grid = np.array(list(itertools.product(points, repeat=g)))
        return grid, True
    draws = as_generator(rng).integers(len(points), size=(b, g))
    return points[draws], False


def _scale(sizes: np.ndarray, se_type: str) -> tuple[float | np.ndarray, np.ndarray]:
    """``(c, k_g)`` of the CR1 or CR2 variance ``c sum_g k_g e_g^2 / N^2``.

    ``sizes`` is G or G x M (per-model sizes, 0 where a model has no items in a cluster: that
    cluster is not counted in the model's G and its k_g is 1, multiplying a zero residual sum).
    """
    if sizes.ndim == 1:
        g, total = sizes.size, sizes.sum()
        if se_type == "CR1":
            return g / (g - 1.0), np.ones(g)
        keep = 1.0 - sizes / total
        return 1.0, 1.0 / keep
    g = (sizes > 0).sum(axis=0).astype(float)
    if se_type == "CR1":
        with np.errstate(divide="ignore", invalid="ignore"):
            return g / (g - 1.0), np.ones(sizes.shape)
    keep = 1.0 - sizes / sizes.sum(axis=0)
    return 1.0, np.where(sizes > 0, 1.0 / np.where(keep > 0, keep, 1.0), 1.0)


def _prepare(sums, sizes, se, weights, statistic, alpha=None):
    s = np.asarray(sums, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    n = np.asarray(sizes, dtype=float)
    if n.ndim == 2 and n.shape[1] == 1:
        n = n[:, 0]
    if n.ndim == 2:  # per-model sizes (missing cells)
        if n.shape != s.shape:
            raise ValueError(f"sizes has shape {n.shape}, sums {s.shape}: they must agree")
        if (n < 0).any() or not np.isfinite(s).all() or (s[n == 0] != 0).any():
            raise ValueError(
                "sizes must be >= 0 (0: the model has no items in that cluster, with a sum of "
                "0) and sums finite"
            )
    else:
        n = n.ravel()
        if s.ndim != 2 or s.shape[0] != n.size:
            raise ValueError(f"sums has {s.shape[0]} rows for {n.size} cluster sizes")
        if (n <= 0).any() or not np.isfinite(s).all():
            raise ValueError("sizes must be positive and sums finite")
    if n.shape[0] < 2:
        raise ValueError(
            "the wild cluster bootstrap needs at least 2 clusters: one cluster says nothing "
            "about new clusters"
        )
    check_choice("se", se, SE_TYPES)
    check_choice("weights", weights, WEIGHTS)
    check_choice("statistic", statistic, STATISTICS)
    if alpha is not None:
        check_alpha(alpha)
    return s, n


@dataclass(frozen=True)
class WildClusterMeans:
    """Wild cluster bootstrap-t intervals (and optional tests) of each model's mean.

    ``estimate``, ``se`` (CR1 or CR2), ``lower``/``upper`` (``1 - alpha`` by inverting the
    symmetric WCR test; +-inf where no finite bound exists, NaN where refused), ``bounded``
    (both bounds finite), ``refused`` (zero residual sums), and, when a ``null`` was given, the
    ``statistic`` and symmetric two-sided ``pvalue`` of ``theta = null``. ``reps`` is the number
    of weight vectors used, ``enumerated`` whether they were all of them. ``n_clusters`` is G,
    ``model_clusters`` each model's clusters (G, or fewer with per-model sizes: the clusters in
    which the model has items) and ``effective_clusters`` G* (one per model with per-model
    sizes).
    """

    estimate: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    bounded: np.ndarray
    refused: np.ndarray
    statistic: np.ndarray | None
    pvalue: np.ndarray | None
    null: float | None
    alpha: float
    weights: str
    se_type: str
    statistic_type: str
    reps: int
    enumerated: bool
    n_clusters: int
    model_clusters: np.ndarray
    effective_clusters: float | np.ndarray


@dataclass(frozen=True)
class WildClusterPairs:
    """One-sided WCR tests of every ordered pair: ``pvalue[j, l]`` for "j better than l".

    ``estimate[j, l] = theta_j - theta_l``; ``statistic[j, l]`` its studentised (or, with
    ``statistic="sum"``, raw) value; ``se`` the CR1/CR2 standard error of the difference;
    ``refused[j, l]`` where the difference is the same in every cluster (p-value 1). NaN on the
    diagonal.
    """

    estimate: np.ndarray
    statistic: np.ndarray
    se: np.ndarray
    pvalue: np.ndarray
    refused: np.ndarray
    weights: str
    se_type: str
    statistic_type: str
    reps: int
    enumerated: bool
    n_clusters: int
    effective_clusters: float


class _Draws:
    """The five per-draw numbers of t*(d) for a fixed weight matrix, for every column.

    The B x G x M products are formed for chunks of columns of at most :data:`CHUNK_CELLS`
    cells, so memory stays flat as models and clusters grow (each column's numbers do not
    depend on the chunking).
    """

    def __init__(self, w, resid, n, c, k, studentise, enumerated):
        total = n.sum(axis=0)  # N, or N_j per model when the sizes are G x M
        self.enumerated = enumerated
        self.total, self.c, self.studentise = total, c, studentise
        n_draws, n_groups = w.shape
        m = resid.shape[1]
        self.a = np.empty((n_draws, m))
        if n.ndim == 1:
            self.b = ((w @ n) / total)[:, None]  # B x 1
        else:  # per-model sizes: N_gj = 0 drops cluster g for model j
            self.b = (w @ n) / total  # B x M
        if studentise:
            self.P, self.Q = np.empty((n_draws, m)), np.empty((n_draws, m))
            self.R = np.empty((n_draws, 1 if n.ndim == 1 else m))
        width = max(1, CHUNK_CELLS // max(1, n_draws * n_groups))
        for start in range(0, m, width):
            self._chunk(slice(start, start + width), w, resid, n, k, total, studentise)

    def _chunk(self, cols, w, resid, n, k, total, studentise):
        tot = total if np.ndim(total) == 0 else total[cols]
        p_ = w[:, :, None] * resid[None, :, cols]  # B x G x m: w_g e_g
        a = p_.sum(axis=1) / tot  # B x m
        self.a[:, cols] = a
        if not studentise:
            return
        if n.ndim == 1:
            p_ -= n[None, :, None] * a[:, None, :]
            q_ = (n[None, :] * (w - self.b))[:, :, None]  # B x G x 1
            kp = k[None, :, None] * p_
            if cols.start == 0:
                self.R[:] = (k[None, :, None] * q_ * q_).sum(axis=1)  # B x 1
        else:
            nc, kc = n[:, cols], k[:, cols]
            p_ -= nc[None, :, :] * a[:, None, :]
            q_ = nc[None, :, :] * (w[:, :, None] - self.b[:, None, cols])  # B x G x m
            kp = kc[None, :, :] * p_
            self.R[:, cols] = (kc[None, :, :] * q_ * q_).sum(axis=1)
        self.P[:, cols] = (kp * p_).sum(axis=1)
        self.Q[:, cols] = (kp * q_).sum(axis=1)

    def tstar(self, d):
        num = self.a + d[None, :] * self.b
        if not self.studentise:
            return num
        var = self.P + 2.0 * d[None, :] * self.Q + d[None, :] ** 2 * self.R
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.total * num / np.sqrt(self.c * np.maximum(var, 0.0))


def _symmetric_pvalue(draws: _Draws, d: np.ndarray, se: np.ndarray) -> np.ndarray:
    t = np.abs(d) / se if draws.studentise else np.abs(d)
    with np.errstate(invalid="ignore"):
        reached = np.abs(draws.tstar(d)) >= t[None, :] * (1.0 - TIE)
    return _share(reached, draws.enumerated)


def _share(reached: np.ndarray, enumerated: bool) -> np.ndarray:
    """``#reached / B`` over an enumeration, ``(1 + #reached) / (B + 1)`` over random draws."""
    if enumerated:
        return reached.mean(axis=0)
    return (1.0 + reached.sum(axis=0)) / (reached.shape[0] + 1.0)


def _bound(draws, se, alpha, sign, start, doublings, steps=60):
    """Distance d > 0 (times ``sign``) where the p-value first drops to <= alpha (bisection)."""
    m = se.size
    hi = start.copy()
    open_ = np.ones(m, bool)
    for _ in range(doublings):
        p = _symmetric_pvalue(draws, sign * hi, se)
        open_ = p > alpha
        if not open_.any():
            break
        hi = np.where(open_, 2.0 * hi, hi)
    else:
        p = _symmetric_pvalue(draws, sign * hi, se)
        open_ = p > alpha
    lo = np.zeros(m)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        reject = _symmetric_pvalue(draws, sign * mid, se) <= alpha
        hi = np.where(reject, mid, hi)
        lo = np.where(reject, lo, mid)
    return np.where(open_, np.inf, hi)


def wild_cluster_means(
    sums,
    sizes,
    *,
    alpha: float = 0.05,
    null: float | None = None,
    weights: str = "rademacher",
    reps: int = 999,
    se: str = "CR1",
    statistic: str = "t",
    rng=None,
    max_doublings: int = 40,
    steps: int = 60,
) -> WildClusterMeans:
    """WCR confidence intervals for each model's mean over items in G clusters (test inversion).

    The interval is ``{mu : p(mu) > alpha}`` with ``p(mu)`` the symmetric WCR p-value of
    ``theta = mu`` (module docstring), its bounds found by bisection on each side of the
    estimate, starting from twice the CR1 t interval and doubling the bracket up to
    ``max_doublings`` times; a side that never rejects is infinite. The same weight matrix serves
    every ``mu`` and every model.

    Parameters
    ----------
    sums : array_like (G,) or (G, M)
        Cluster sums of the scores (:func:`cluster_totals`).
    sizes : array_like (G,) or (G, M)
        Cluster sizes (items per cluster), the same for every model, or per model (missing
        cells: ``sizes[g, j]`` the items model j has in cluster g, 0 when it has none there,
        with ``sums[g, j] = 0``). A cluster without items for a model is dropped for that model:
        its residual sum is 0, so its weight moves nothing; the model's G is its own clusters
        (``model_clusters``; CR1's ``G_j/(G_j - 1)``, CR2's ``1 - N_gj/N_j``), and the
        2^G enumerated sign vectors give each model every sign vector of its own clusters
        ``2^(G - G_j)`` times, so its p-value is the one of its own clusters alone. A model with
        fewer than 2 clusters is refused (NaN).
    alpha : float, default 0.05
    null : float, optional
        Also test ``theta = null`` (symmetric two-sided p-value).
    weights : {"rademacher", "webb"}, default "rademacher"
    reps : int, default 999
        Bootstrap draws, or fewer when all distinct weight vectors fit (then enumerated).
    se : {"CR1", "CR2"}, default "CR1"
        Studentisation. CR1's G/(G - 1) is a constant and cancels between ``t`` and ``t*``; CR2's
        per-cluster factors do not.
    statistic : {"t", "sum"}, default "t"
        ``"sum"``: unstudentised (with Rademacher weights, the sign-flip randomisation test).
    rng : None, int or Generator
    max_doublings : int, default 40
    steps : int, default 60
        Bisection steps per bound: the bound is located to ``2^-steps`` of its bracket (the
        p-value is a step function, so this is the position of its jump to within that).

    Returns
    -------
    WildClusterMeans

    Examples
    --------
    Eight clusters of unequal size, two models; all ``2^8 = 256`` sign vectors are enumerated:

    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> sizes = np.array([5, 8, 12, 20, 6, 9, 30, 10])
    >>> sums = rng.binomial(sizes[:, None], [0.7, 0.5]).astype(float)
    >>> res = wild_cluster_means(sums, sizes, null=0.5)
    >>> res.enumerated, res.reps, res.bounded.tolist()
    (True, 256, [True, True])
    >>> bool((res.lower < res.estimate).all() and (res.estimate < res.upper).all())
    True
    >>> res.pvalue.round(4).tolist()  # 2/256: the two constant sign vectors always reach |t|
    [0.0078, 0.8125]

    With 5 clusters Rademacher weights cannot reach 0.05 (p >= 2/32), so the interval is the
    whole line; Webb's weights give a finite one:

    >>> wild_cluster_means(sums[:5], sizes[:5]).bounded.tolist()
    [False, False]
    >>> wild_cluster_means(sums[:5], sizes[:5], weights="webb", rng=0).bounded.tolist()
    [True, True]
    """
    s, n = _prepare(sums, sizes, se, weights, statistic, alpha)
    check_positive_int(max_doublings, "max_doublings")
    check_positive_int(steps, "steps")
    g, m = s.shape
    own = np.full(m, g) if n.ndim == 1 else (n > 0).sum(axis=0)  # each model's clusters
    n2 = n[:, None] if n.ndim == 1 else n  # G x 1 or G x M
    total = n2.sum(axis=0)
    c, k = _scale(n, se)
    k2 = k[:, None] if n.ndim == 1 else k
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = s.sum(axis=0) / total
        resid = s - n2 * estimate[None, :]
        cell_means = s / n2
    resid = np.where(n2 > 0, resid, 0.0)
    refused = (own < 2) | variance_is_zero(
        (resid**2).sum(axis=0) / total**2, score_width(cell_means)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(c * (k2 * resid**2).sum(axis=0)) / total
    w, enumerated = wild_weights(g, reps, weights, rng)
    draws = _Draws(w, resid, n, c, k, statistic == "t", enumerated)
    safe = np.where(refused, 1.0, std)
    df = np.maximum(own - 1.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cr1 = np.sqrt(own / df * (resid**2).sum(axis=0)) / total
    start = 2.0 * special.stdtrit(df, 1.0 - alpha / 2.0) * np.where(refused, 1.0, cr1)
    # d > 0: mu below the estimate (the lower bound); d < 0: above it
    below = _bound(draws, safe, alpha, 1.0, start, max_doublings, steps)
    above = _bound(draws, safe, alpha, -1.0, start, max_doublings, steps)
    lower = np.where(refused, np.nan, estimate - below)
    upper = np.where(refused, np.nan, estimate + above)
    stat = pvalue = None
    if null is not None:
        d = estimate - float(null)
        stat = np.where(refused, np.nan, d / safe if statistic == "t" else d)
        pvalue = np.where(refused, np.nan, _symmetric_pvalue(draws, d, safe))
    return WildClusterMeans(
        estimate=estimate,
        se=np.where(own < 2, np.nan, std),
        lower=lower,
        upper=upper,
        bounded=np.isfinite(lower) & np.isfinite(upper),
        refused=refused,
        statistic=stat,
        pvalue=pvalue,
        null=None if null is None else float(null),
        alpha=float(alpha),
        weights=weights,
        se_type=se,
        statistic_type=statistic,
        reps=int(w.shape[0]),
        enumerated=bool(enumerated),
        n_clusters=int(g),
        model_clusters=own.astype(np.int64),
        effective_clusters=effective_clusters(n.T),
    )


def wild_cluster_pairs(
    sums,
    sizes,
    *,
    weights: str = "rademacher",
    reps: int = 999,
    se: str = "CR1",
    statistic: str = "t",
    rng=None,
) -> WildClusterPairs:
    """One-sided WCR tests of "j better than l" for every ordered pair, all pairs at once.

    For the unordered pairs ``j < l`` the cluster sums of the differences form the G x P matrix
    ``D = S[:, j] - S[:, l]``; the null ``theta_j = theta_l`` makes ``D`` itself the restricted
    residual sums, and the B draws are ``W D`` (B x P) with the residual-sum variance ::

        sum_g k_g (w_bg D_g - N_g m_b)^2
            = (W^2) (k D^2) - 2 m_b (W) (k N D) + m_b^2 sum_g k_g N_g^2,     m_b = (W D)_b / N,

    three matrix products. ``pvalue[j, l] = #{t*_b >= t} / B`` and ``pvalue[l, j] = #{t*_b <=
    t} / B`` with the same draws (ties within a relative 1e-9 count as reached; over random draws
    ``(1 + #) / (B + 1)``).

    Parameters
    ----------
    sums : array_like (G, M)
        Cluster sums of each model's scores (complete units).
    sizes : array_like (G,)
    weights, reps, se, statistic, rng
        As in :func:`wild_cluster_means`.

    Returns
    -------
    WildClusterPairs

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(3)
    >>> sizes = np.array([5, 8, 12, 20, 6, 9, 30, 10])
    >>> sums = rng.binomial(sizes[:, None], [0.8, 0.5, 0.5]).astype(float)
    >>> res = wild_cluster_pairs(sums, sizes)
    >>> res.enumerated, res.reps
    (True, 256)
    >>> bool(res.pvalue[0, 1] < 0.05), bool(res.pvalue[1, 0] > 0.5)
    (True, True)
    """
    s, n = _prepare(sums, sizes, se, weights, statistic)
    if n.ndim == 2:
        raise ValueError(
            "wild_cluster_pairs needs complete units: one size per cluster (sizes of shape (G,))"
        )
    g, m = s.shape
    total = n.sum()
    c, k = _scale(n, se)
    j, l = np.triu_indices(m, 1)
    d = s[:, j] - s[:, l]  # G x P
    diff = d.sum(axis=0) / total
    resid = d - n[:, None] * diff[None, :]
    refused = variance_is_zero((resid**2).sum(axis=0) / total**2, score_width(s / n[:, None]))
    std = np.sqrt(c * (k[:, None] * resid**2).sum(axis=0)) / total
    safe = np.where(refused, 1.0, std)
    t = diff / safe if statistic == "t" else diff
    w, enumerated = wild_weights(g, reps, weights, rng)
    mean_b = (w @ d) / total  # B x P
    if statistic == "t":
        var = (w**2) @ (k[:, None] * d**2) - 2.0 * mean_b * (w @ ((k * n)[:, None] * d))
        var += mean_b**2 * (k * n**2).sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            tstar = total * mean_b / np.sqrt(c * np.maximum(var, 0.0))
    else:
        tstar = mean_b
    slack = TIE * np.abs(t)
    with np.errstate(invalid="ignore"):
        upper = _share(tstar >= (t - slack)[None, :], enumerated)
        lower = _share(tstar <= (t + slack)[None, :], enumerated)
    out = {name: np.full((m, m), np.nan) for name in ("estimate", "statistic", "se", "pvalue")}
    for name, value, mirrored in (
        ("estimate", diff, -diff),
        ("statistic", t, -t),
        ("se", std, std),
        ("pvalue", np.where(refused, 1.0, upper), np.where(refused, 1.0, lower)),
    ):
        out[name][j, l], out[name][l, j] = value, mirrored
    flagged = np.zeros((m, m), bool)
    flagged[j, l] = flagged[l, j] = refused
    return WildClusterPairs(
        **out,
        refused=flagged,
        weights=weights,
        se_type=se,
        statistic_type=statistic,
        reps=int(w.shape[0]),
        enumerated=bool(enumerated),
        n_clusters=int(g),
        effective_clusters=effective_clusters(n),
    )
