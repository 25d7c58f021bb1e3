"""Per-model score intervals: normal, clustered (Miller), bootstrap (percentile, BCa, cluster),
and the binomial intervals of 0/1 scores (Wilson, Clopper-Pearson).

A model's leaderboard score is its mean over units (items by default); its interval says where the
mean over the population of such items lies. Methods (``x_ij`` = unit i's score for model j,
``n_j`` = units scored for j, ``e_ij = x_ij - mean_j``, ``z = Phi^-1(1 - alpha/2)``):

=================  ===========================================================================
method             interval for model j
=================  ===========================================================================
normal             ``mean_j +- z se_j``, ``se_j^2 = sum_i e_ij^2 / (n_j (n_j - 1))`` (CLT)
cluster            ``mean_j +- z se_j``, ``se_j^2 = (1/n_j^2) sum_c (sum_{i in c} e_ij)^2``
                   (Miller 2024, Eq. 4; cluster-robust HC0). ``small_sample=True`` (or
                   ``"cadjust"``) multiplies it by ``G/(G - 1)`` (G clusters) and takes the
                   quantile of Student's t with G - 1 df instead of z (Cameron and Miller 2015,
                   Sec. VI); ``small_sample="cr2"`` uses ``S_c^2 / (1 - n_c/n)`` in the sum
                   (Bell and McCaffrey 2002) and Satterthwaite df (Imbens and Kolesar 2016)
bootstrap          percentile interval of the means of ``reps`` resamples of the units
                   (default; 1,000 resamples, as in the source)
bca                bias-corrected and accelerated interval from the same resamples
cluster-bootstrap  percentile interval from resampling whole clusters
cluster-wild       the restricted wild cluster bootstrap-t (Rademacher weights, or Webb's with
                   ``wild_weights="webb"``; CR1-studentised): ``{mu : p(mu) > alpha}``, the
                   inversion of its symmetric test of ``theta_j = mu``, every one of the 2^G
                   sign vectors while ``2^G <= reps``, else ``reps`` random draws
                   (:func:`rankci.evidence.wild_cluster.wild_cluster_means`)
wilson             0/1 scores only: the Wilson score interval of ``k_j`` successes in ``n_j``
                   (:func:`rankci.analyses.binomial.wilson_interval`)
clopper-pearson    0/1 scores only: the Clopper-Pearson ("exact") interval
                   (:func:`rankci.analyses.binomial.clopper_pearson_interval`); coverage
                   >= 1 - alpha at every p and n
auto               (default) ``clopper-pearson`` when every unit score is 0 or 1, ``bootstrap``
                   otherwise; the method used is ``ScoreIntervals.method``
=================  ===========================================================================

An interval of zero width (normal, bootstrap or BCa when a model's scores are all equal, 0/n
or n/n correct for 0/1 scores) claims a certainty the data do not support: such a model is
named in ``ScoreIntervals.degenerate`` with the reason, and a :class:`RankciWarning` says so.
The binomial intervals never have zero width (validation/binary_intervals.py: Clopper-Pearson
covers >= 0.95 at every n = 10..100 and every p, the normal and bootstrap intervals fall to 0
at the boundary).

Every interval is marginal (each model on its own at level ``1 - alpha``). Beside them,
:class:`ScoreIntervals` carries two verdicts on pairs: the source's "statistically
indistinguishable" flag (the two intervals overlap; conservative for one pair at a time, but not a
simultaneous statement: non-overlap can separate pairs that the paired verdict does not certify,
see docs/scores.md) and the paired verdict: one-sided paired tests of every ordered pair with
Holm's procedure at ``alpha`` (paired t from :func:`rankci.pairwise_tests`; for the cluster
methods, ``cluster-wild`` included, Miller's clustered paired z,
``var(mean_j - mean_l) = S_jj + S_ll - 2 S_jl`` from the cluster-robust covariance), whose
separated pairs hold simultaneously with probability >= 1 - alpha.

References
----------
Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
evaluations. arXiv:2411.00640.
Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
Journal of Human Resources 50(2), 317-372.
Cameron, A. C., Gelbach, J. B. and Miller, D. L. (2008). Bootstrap-based improvements for
inference with clustered errors. Review of Economics and Statistics 90(3), 414-427.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from rankci._base import (
    RankciWarning,
    as_generator,
    check_alpha,
    check_choice,
    check_positive_int,
    jsonable,
    seeded_generator,
)
from rankci.analyses.binomial import BINOMIAL_METHODS, binomial_interval
from rankci.analyses.verdicts import paired_verdict
from rankci.data import MISSING, UNITS, Scores, UnitScores
from rankci.evidence import bootstrap as boot
from rankci.evidence.covariance import (
    FEW_CLUSTERS,
    MeansCovariance,
    centred,
    grouped_residuals,
    means_covariance,
    resolve_small_sample,
    small_sample_mode,
    unit_clusters,
)
from rankci.evidence.moments import score_width, variance_is_zero
from rankci.evidence.pairwise import Pairwise
from rankci.evidence.wild_cluster import (
    WEIGHTS,
    cluster_totals,
    effective_clusters,
    wild_cluster_means,
)
from rankci.io import as_scores

#: the methods computed from the spread of the scores (any bounded scores)
SPREAD_METHODS = ("normal", "cluster", "bootstrap", "bca", "cluster-bootstrap")
#: the wild cluster bootstrap-t interval (score intervals and subscores; not the composites)
WILD_METHOD = "cluster-wild"
#: every method of :func:`score_intervals` ("auto" first: the default)
METHODS = ("auto", *SPREAD_METHODS, WILD_METHOD, *BINOMIAL_METHODS)
CLUSTER_METHODS = ("cluster", "cluster-bootstrap", WILD_METHOD)
#: what the study (validation/few_clusters_real.py) used for the wild bootstrap's intervals: CR1
#: studentisation, test inversion with 30 bisection steps per bound (2^-30 of the bracket)
WILD_SE = "CR1"
WILD_STEPS = 30
#: below this many clusters cluster-robust inference to new clusters was not reliable on real
#: cluster populations (validation/few_clusters_real.py: every bounded interval under-covered on
#: ChemBench's topics below G = 30, and held within 2 SE of 0.95 from G = 30)
RELIABLE_CLUSTERS = 30
#: at or below this many clusters no finite cluster-robust interval is given: the wild cluster
#: bootstrap's p-value cannot go below 2/2^G >= 0.0625 (validation/few_clusters_real.py: its
#: intervals were the whole line at G <= 5, and CR2 covered 0.80-0.93 there)
REFUSED_CLUSTERS = 5
#: the guarantee's sentence on each list of cluster-wild's options, when it is not empty
WILD_NOTES = {
    "refused_models": "No interval (NaN) for {n} model(s) with items in {refused} or fewer "
    "clusters (refused_models).",
    "unbounded": "{n} interval(s) are unbounded on a side where the wild bootstrap cannot "
    "reject (listed in unbounded, with the reason).",
    "dropped_clusters": "{n} model(s) have no items in some clusters; each model's interval "
    "uses its own clusters (dropped_clusters).",
}
#: what method="auto" stands for, recorded in ``options["method_rule"]``
AUTO_RULE = "auto: clopper-pearson when every score is 0 or 1, bootstrap otherwise"

__all__ = [
    "AUTO_RULE",
    "METHODS",
    "MeansCovariance",
    "ScoreIntervals",
    "means_covariance",
    "resolve_method",
    "score_intervals",
]


def resolve_method(method: str, binary: bool) -> str:
    """The method ``method`` stands for: ``"auto"`` is ``"clopper-pearson"`` on 0/1 scores
    (valid at the boundary, validation/binary_intervals.py) and ``"bootstrap"`` otherwise.

    Examples
    --------
    >>> resolve_method("auto", True), resolve_method("auto", False), resolve_method("bca", True)
    ('clopper-pearson', 'bootstrap', 'bca')
    """
    check_choice("method", method, METHODS)
    if method != "auto":
        return method
    return "clopper-pearson" if binary else "bootstrap"


def check_binary(values: np.ndarray, method: str, unit: str | None = None) -> None:
    """Refuse scores other than 0 and 1 for a binomial ``method``, saying what to use instead."""
    finite = values[np.isfinite(values)]
    other = finite[(finite != 0) & (finite != 1)]
    if other.size == 0:
        return
    units = f"{unit} " if unit else ""
    hint = (
        f"; {unit} units are means of their items: unit='item' keeps them 0/1"
        if unit in ("cluster", "prompt")
        else ""
    )
    raise ValueError(
        f"method={method!r} is an interval for 0/1 scores (k of n correct), but {other.size} "
        f"{units}scores are not 0 or 1 (e.g. {float(other[0]):g}): use method='normal' or "
        f"'bootstrap' for these scores{hint}"
    )


# ---------------------------------------------------------------------- interval arithmetic
def interval_arrays(
    values: np.ndarray,
    method: str,
    alpha: float,
    *,
    reps: int = 1000,
    generator: np.random.Generator | None = None,
    cluster: np.ndarray | None = None,
    small_sample: bool | str = False,
    unit: str | None = None,
    wild_weights: str = "rademacher",
    names: tuple[str, ...] | None = None,
) -> dict:
    """score, se, lower, upper, n and degenerate of every column of a units x columns matrix.

    The engine behind :func:`score_intervals`, :func:`subscores` and the composite scores:
    ``cluster`` holds each row's cluster code for the cluster methods; ``unit`` names the units
    in messages. ``degenerate`` holds, per column, the reason its interval has zero width
    ("" when it has not; :func:`degenerate_reasons`). ``cluster-wild`` also returns ``wild``,
    what its result records (:func:`wild_arrays`); ``names`` (the columns' models) name the
    models in its messages.
    """
    mean, residuals, n = centred(values)
    z = special.ndtri(1.0 - alpha / 2.0)
    if method in BINOMIAL_METHODS:
        check_binary(values, method, unit)
        se = _mean_se(residuals, n)  # reported as for normal; the interval is not mean +- z se
        k = np.where(np.isfinite(values), values, 0.0).sum(axis=0)
        lower, upper = binomial_interval(np.where(n > 0, k, 0.0), np.maximum(n, 1), method, alpha)
    elif method == "normal":
        se = _mean_se(residuals, n)
        lower, upper = mean - z * se, mean + z * se
    elif method == "cluster":
        grouped = grouped_residuals(values, cluster, small_sample)
        se = np.sqrt(grouped.variance())
        finite_df = np.isfinite(grouped.df)
        crit = np.where(
            finite_df, special.stdtrit(np.where(finite_df, grouped.df, 1.0), 1.0 - alpha / 2.0), z
        )
        lower, upper = mean - crit * se, mean + crit * se
    elif method == WILD_METHOD:
        se, lower, upper, wild = wild_arrays(
            values, cluster, alpha, reps, as_generator(generator), wild_weights, names
        )
    else:
        generator = as_generator(generator)
        if method == "cluster-bootstrap":
            codes, compact = np.unique(cluster, return_inverse=True)
            _check_cluster_bootstrap(len(codes))
            draws = boot.cluster_bootstrap_means(values, compact, len(codes), reps, generator)
        else:
            draws = boot.bootstrap_means(values, reps, generator)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.nanstd(draws, axis=0, ddof=1) if reps > 1 else np.full(mean.shape, np.nan)
        if method == "bca":
            accel = boot.jackknife_acceleration(values)
            lower, upper = boot.bca_bounds(draws, mean, accel, alpha)
        else:
            lower, upper = boot.percentile_bounds(draws, alpha)
    few = n < 2
    if method in CLUSTER_METHODS:
        # a zero spread across few clusters is no certainty (issue 16): no interval from it;
        # zero is decided by the one absolute rule (moments.variance_is_zero), on the variance
        # of the mean or on the interval's half-width
        width = score_width(values)
        half = (np.asarray(upper) - np.asarray(lower)) / 2.0
        with np.errstate(invalid="ignore"):
            flat = ~few & (
                variance_is_zero(np.asarray(se, dtype=float) ** 2, width)
                | variance_is_zero(half**2, width)
            )
        if flat.any():
            warnings.warn(
                f"{int(flat.sum())} model(s) have the same mean in every cluster sampled, so the "
                f"{method} interval would have zero width; with {int(np.unique(cluster).size)} "
                "clusters that is no evidence of certainty, and no interval is given for them "
                "(NaN). More clusters are needed, or item units without clustering",
                RankciWarning,
                stacklevel=3,
            )
            few = few | flat
        n_clusters = int(np.unique(cluster).size)
        if n_clusters <= REFUSED_CLUSTERS:
            warnings.warn(few_clusters_refusal(n_clusters, method), RankciWarning, stacklevel=3)
            few = few | (n >= 2)
    # one 0/1 score is a binomial trial: its interval exists (and is wide)
    no_interval = (n < 1) if method in BINOMIAL_METHODS else few
    lower = np.where(no_interval, np.nan, lower)
    upper = np.where(no_interval, np.nan, upper)
    out = {
        "score": mean,
        "se": np.where(few, np.nan, se),
        "lower": lower,
        "upper": upper,
        "n": n.astype(np.int64),
        "degenerate": degenerate_reasons(values, lower, upper, method),
    }
    if method == WILD_METHOD:
        out["wild"] = wild
    return out


def wild_arrays(
    values: np.ndarray,
    cluster: np.ndarray,
    alpha: float,
    reps: int,
    generator: np.random.Generator,
    weights: str = "rademacher",
    names: tuple[str, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """se, lower, upper of the ``cluster-wild`` interval of every column, and what it records.

    The restricted wild cluster bootstrap-t of each column's mean over its units
    (:func:`rankci.evidence.wild_cluster.wild_cluster_means`, as validated in
    validation/few_clusters_real.py): CR1-studentised, the symmetric test of ``theta_j = mu``
    inverted (``{mu : p(mu) > alpha}``), one weight matrix for every column and every ``mu``:
    all ``2^G`` Rademacher sign vectors (``6^G`` Webb vectors) when there are at most ``reps``,
    else ``reps`` random draws from ``generator``. ``se`` is the CR1 standard error.

    Missing cells: each column's cluster sums and sizes are over its own units; a cluster in
    which a column has no unit is dropped for that column (its weight multiplies a zero residual
    sum), so each interval is the WCR of that model's own clusters. The dropped clusters are
    counted per model in ``dropped_clusters``; a model left with :data:`REFUSED_CLUSTERS` or
    fewer clusters of its own gets no interval (NaN), as every cluster method with that few
    clusters, and is named in ``refused_models``. A side that never rejects (the p-value
    cannot go below ``alpha``) is infinite, named with the reason in ``unbounded``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> codes = np.repeat(np.arange(8), 6)
    >>> x = (rng.random((48, 2)) < [0.7, 0.4]).astype(float)
    >>> se, lower, upper, wild = wild_arrays(x, codes, 0.05, 1000, rng)
    >>> wild["draws"], wild["enumerated"], bool((lower < x.mean(axis=0)).all())
    (256, True, True)
    """
    sums, sizes = cluster_totals(values, cluster, per_model=True)
    n_clusters, m = sizes.shape
    complete = bool((sizes == sizes[:, :1]).all())
    res = wild_cluster_means(
        sums,
        sizes[:, 0] if complete and (sizes[:, 0] > 0).all() else sizes,
        alpha=alpha,
        weights=weights,
        reps=reps,
        se=WILD_SE,
        rng=generator,
        steps=WILD_STEPS,
    )
    names = names if names is not None else tuple(f"column {j}" for j in range(m))
    own = res.model_clusters
    lower, upper = res.lower.copy(), res.upper.copy()
    refused = (own <= REFUSED_CLUSTERS) & (n_clusters > REFUSED_CLUSTERS)
    lower[refused] = upper[refused] = np.nan
    # the smallest symmetric p-value: the constant weight vectors of a model's own clusters
    # (2 of 2^G_j Rademacher, 6 of 6^G_j Webb) always reach |t|; over random draws 1/(B + 1)
    points = 2.0 if weights == "rademacher" else 6.0
    smallest = points ** (1.0 - own) if res.enumerated else np.full(m, 1.0 / (res.reps + 1))
    unbounded = {}
    for j in np.flatnonzero(~refused & ~res.refused & ~res.bounded):
        floor = smallest[j]
        sides = "one side" if np.isfinite(lower[j]) or np.isfinite(upper[j]) else "either side"
        unbounded[names[j]] = (
            f"the wild bootstrap's p-value never fell to alpha = {alpha:g} on {sides}"
            f" (its smallest possible value with {int(own[j])} clusters and "
            f"{res.reps} draws is about {floor:.3g}): the interval is unbounded there, the data "
            "cannot rule out any value on that side. More clusters or a larger alpha are needed"
        )
    wild = {
        "wild_weights": weights,
        "studentization": WILD_SE,
        "interval": "inversion of the symmetric wild cluster bootstrap-t test",
        "draws": int(res.reps),
        "enumerated": bool(res.enumerated),
    }
    dropped = n_clusters - own
    if dropped.any():
        wild["dropped_clusters"] = {names[j]: int(dropped[j]) for j in np.flatnonzero(dropped)}
    if refused.any():
        wild["refused_models"] = {
            names[j]: f"items in only {int(own[j])} of the {n_clusters} clusters: with "
            f"{REFUSED_CLUSTERS} or fewer the wild bootstrap's p-value cannot go below "
            f"2/2^G = {2.0 / 2 ** int(own[j]):.3g}, so no interval is given (NaN); use "
            "missing='complete' (the items every model has) or item units"
            for j in np.flatnonzero(refused)
        }
    if unbounded:
        wild["unbounded"] = unbounded
    return res.se, lower, upper, wild


def _mean_se(residuals: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``sqrt(sum_i e_ij^2 / (n_j (n_j - 1)))``: the standard error of each column's mean."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt((residuals**2).sum(axis=0) / (n * (n - 1.0)))


def degenerate_reasons(
    values: np.ndarray, lower: np.ndarray, upper: np.ndarray, method: str
) -> np.ndarray:
    """Per column, why its interval has zero width ("" when it has width or is not given).

    Zero width is ``upper - lower <= 1e-12 * max(1, max |score|)`` (the rounding of a mean of
    equal scores, not a spread). It happens to the normal, bootstrap and BCa intervals when a
    column's scores are all equal (0/n or n/n correct for 0/1 scores), and to a bootstrap with
    too few resamples; the reason says which, and what to use instead.

    Examples
    --------
    >>> x = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 1.0]])
    >>> degenerate_reasons(x, np.array([0.0, 0.1]), np.array([0.0, 0.9]), "normal").tolist()[1]
    ''
    >>> reason = degenerate_reasons(x, np.zeros(2), np.array([0.0, 0.9]), "normal")[0]
    >>> reason.split(": ")[0], reason.endswith("use method='clopper-pearson'")
    ('all 3 scores are 0', True)
    """
    finite = np.isfinite(values)
    scale = max(1.0, float(np.nanmax(np.abs(values), initial=0.0, where=finite)))
    with np.errstate(invalid="ignore"):
        flat = np.isfinite(lower) & np.isfinite(upper) & (upper - lower <= 1e-12 * scale)
    reasons = np.full(values.shape[1], "", dtype=object)
    claim = "a zero-width interval claims certainty the data do not support"
    for j in np.flatnonzero(flat):
        column = values[finite[:, j], j]
        if column.size and np.all(column == column[0]):
            value = float(column[0])
            advice = (
                "use method='clopper-pearson'" if value in (0.0, 1.0) else "more units are needed"
            )
            reasons[j] = f"all {column.size} scores are {value:g}: {claim}; {advice}"
        else:
            reasons[j] = (
                f"the {method} interval has zero width although the {column.size} scores vary: "
                f"{claim}; use more resamples (reps) or method='normal'"
            )
    return reasons


def _check_cluster_bootstrap(n_clusters: int) -> None:
    """Refuse one cluster (every resample is the same: zero width), warn below FEW_CLUSTERS."""
    if n_clusters < 2:
        raise ValueError(
            "the cluster bootstrap needs at least 2 clusters: with one, every resample is that "
            "cluster and the interval has zero width. Use item units without clustering "
            "(inference to new questions of this cluster), or add clusters"
        )
    if n_clusters < FEW_CLUSTERS:
        warnings.warn(
            f"the cluster bootstrap with only {n_clusters} clusters tends to under-cover (0.82 "
            "with 5 near-equal clusters); method='cluster' with its default small-sample "
            "correction (CR2) is safer",
            RankciWarning,
            stacklevel=4,
        )


# ---------------------------------------------------------------------- the result
@dataclass(frozen=True, repr=False, eq=False)
class ScoreIntervals:
    """Each model's score with a confidence interval, and two verdicts on every pair.

    Attributes
    ----------
    models : tuple of str
    score, se, lower, upper : ndarray (M,)
        Mean score, standard error (bootstrap SD for the resampling methods) and interval.
    n : ndarray (M,) of int
        Units behind each model's score.
    method : str
        The method used: one of :data:`METHODS` other than ``"auto"`` (which becomes
        ``"clopper-pearson"`` or ``"bootstrap"``, with ``options["method_rule"]``).
    alpha : float
        Each interval has nominal coverage ``1 - alpha`` (marginal, one model at a time).
    unit, missing : str
    n_units : int
    options : dict
        reps, seed, small_sample, n_clusters, ... (JSON-safe).
    excluded : dict
    guarantee : str
        What the intervals and the paired verdict promise, in plain words.
    verdict : Pairwise or None
        The paired evidence behind :attr:`separated` (None when not computed).
    separated : ndarray (M, M) of bool or None
        ``separated[j, l]``: "j is better than l" is certified by Holm at level alpha over all
        ordered pairs (transitively closed).
    verdict_procedure : dict
        How the paired verdict was made (``test``, ``multiplicity``, ``description``, ...).
    degenerate : dict
        Model -> why its interval has zero width (empty when none has): such an interval
        claims a certainty the data do not support.
    """

    models: tuple[str, ...]
    score: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n: np.ndarray
    method: str
    alpha: float
    unit: str
    missing: str
    n_units: int
    options: dict = field(default_factory=dict)
    excluded: dict = field(default_factory=dict)
    guarantee: str = ""
    verdict: Pairwise | None = None
    separated: np.ndarray | None = None
    verdict_procedure: dict = field(default_factory=dict)
    degenerate: dict = field(default_factory=dict)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def order(self) -> np.ndarray:
        """Model indices, best score first (ties by name)."""
        return np.lexsort((np.asarray(self.models), -np.nan_to_num(self.score, nan=-np.inf)))

    @property
    def overlap(self) -> np.ndarray:
        """M x M: the two intervals overlap (the source's "statistically indistinguishable")."""
        lo, hi = self.lower, self.upper
        with np.errstate(invalid="ignore"):
            both = (lo[:, None] <= hi[None, :]) & (lo[None, :] <= hi[:, None])
        undefined = ~np.isfinite(lo)[:, None] | ~np.isfinite(lo)[None, :]
        out = both | undefined
        np.fill_diagonal(out, False)
        return out

    def _positions(self) -> np.ndarray:
        position = np.empty(self.n_models, dtype=int)
        position[self.order()] = np.arange(self.n_models)
        return position

    def _listed(self, mask: np.ndarray) -> list[tuple[str, str]]:
        """The (row, column) pairs of ``mask``, sorted by the rows' then the columns' places."""
        position = self._positions()
        rows, cols = np.nonzero(mask)
        keys = np.lexsort((position[cols], position[rows]))
        names = self.models
        return [(names[a], names[b]) for a, b in zip(rows[keys], cols[keys], strict=True)]

    def _pairs(self, mask: np.ndarray) -> list[tuple[str, str]]:
        """Unordered pairs of a symmetric ``mask``, the higher-scoring model first."""
        position = self._positions()
        return self._listed(mask & (position[:, None] < position[None, :]))

    def indistinguishable(self) -> list[tuple[str, str]]:
        """Pairs whose intervals overlap, higher score first (the source's per-pair flag)."""
        return self._pairs(self.overlap)

    def separated_pairs(self) -> list[tuple[str, str]]:
        """Pairs ("better", "worse") certified by the paired verdict (Holm, simultaneous)."""
        return [] if self.separated is None else self._listed(self.separated)

    def paired_indistinguishable(self) -> list[tuple[str, str]]:
        """Pairs the paired verdict leaves unordered, higher score first."""
        if self.separated is None:
            return []
        return self._pairs(~(self.separated | self.separated.T))

    def to_frame(self) -> pd.DataFrame:
        """One row per model, best first: model, score, se, lower, upper, n."""
        idx = self.order()
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[idx],
                "score": self.score[idx],
                "se": self.se[idx],
                "lower": self.lower[idx],
                "upper": self.upper[idx],
                "n": self.n[idx],
            }
        )

    def pairs_frame(self) -> pd.DataFrame:
        """One row per pair (higher score first): difference, overlap flag, paired verdict.

        ``paired_pvalue`` is the unadjusted one-sided p-value for "first better than second";
        ``paired_verdict`` is the Holm decision over all ordered pairs (after closure).
        """
        everything = np.ones((self.n_models, self.n_models), dtype=bool)
        pairs = self._pairs(everything)
        index = {m: k for k, m in enumerate(self.models)}
        a = np.array([index[p] for p, _ in pairs], dtype=int)
        b = np.array([index[q] for _, q in pairs], dtype=int)
        frame = pd.DataFrame(
            {
                "first": [p for p, _ in pairs],
                "second": [q for _, q in pairs],
                "difference": self.score[a] - self.score[b],
                "overlap": self.overlap[a, b],
            }
        )
        if self.separated is not None:
            frame["paired_pvalue"] = self.verdict.pvalue[a, b]
            frame["paired_verdict"] = np.where(
                self.separated[a, b],
                "first better",
                np.where(self.separated[b, a], "second better", "indistinguishable"),
            )
        return frame

    def _degenerate_in_order(self) -> dict:
        """:attr:`degenerate`, best score first."""
        return {
            self.models[j]: self.degenerate[self.models[j]]
            for j in self.order()
            if self.models[j] in self.degenerate
        }

    def _relation(self, mask: np.ndarray, symmetric: bool, pairs: bool):
        """A relation between models for the JSON: the compact runs of docs/json.md (indices
        into ``models``, best first; a symmetric relation gives each unordered pair once, at the
        higher-scoring model), or with ``pairs`` the list of name pairs."""
        if pairs:
            listed = self._pairs(mask) if symmetric else self._listed(mask)
            return [list(p) for p in listed]
        from rankci.ranking import relation_runs

        below = relation_runs(mask, self.order(), upper=symmetric)
        n_pairs = sum(last - first + 1 for runs in below for first, last in runs)
        return {"form": "runs", "n_pairs": int(n_pairs), "below": below}

    def to_dict(self, pairs: bool = False) -> dict:
        """JSON-safe; the schema of ``rankci scores --format json``.

        ``indistinguishable`` (overlapping intervals) and the paired verdict's ``separated`` and
        ``indistinguishable`` are in the compact form of ``rankci rank``'s dominance
        (``{"form": "runs", "n_pairs": ..., "below": [...]}``, indices into ``models``;
        docs/json.md); with ``pairs=True`` they are lists of ``[first, second]`` name pairs.
        """
        rows = [
            {key: jsonable(value) for key, value in record.items()}
            for record in self.to_frame().to_dict(orient="records")
        ]
        out = {
            "method": self.method,
            "alpha": self.alpha,
            "unit": self.unit,
            "missing": self.missing,
            "n_units": int(self.n_units),
            "options": jsonable(self.options),
            "models": rows,
            "indistinguishable": self._relation(self.overlap, True, pairs),
            "degenerate": self._degenerate_in_order(),
        }
        if self.separated is not None:
            out["paired"] = {
                **jsonable(self.verdict_procedure),
                "separated": self._relation(self.separated, False, pairs),
                "indistinguishable": self._relation(
                    ~(self.separated | self.separated.T), True, pairs
                ),
            }
        out["excluded"] = jsonable(self.excluded)
        out["guarantee"] = self.guarantee
        return out

    def __repr__(self) -> str:
        head = (
            f"ScoreIntervals({self.n_models} models, method={self.method!r}, "
            f"alpha={self.alpha:g}, n_units={self.n_units})"
        )
        text = head + "\n" + self.to_frame().head(10).to_string(index=False)
        if self.degenerate:
            text += "\ndegenerate (zero-width): " + ", ".join(self._degenerate_in_order())
        return text

    def _repr_html_(self) -> str:
        """Jupyter: the table and the guarantee in one sentence."""
        import html

        head = (
            f"Score intervals: {self.n_models} models, method {self.method}, "
            f"alpha = {self.alpha:g}, {self.n_units} units"
        )
        table = self.to_frame().to_html(
            index=False, border=0, float_format=lambda v: f"{v:.4f}", na_rep="-"
        )
        return (
            f"<div><p><b>{html.escape(head)}</b></p>{table}"
            f"<p><small>{html.escape(self.guarantee)}</small></p></div>"
        )


# ---------------------------------------------------------------------- the public function
def _guarantee(
    method: str,
    alpha: float,
    unit: str,
    verdict: dict | None,
    options: dict,
    n_degenerate: int = 0,
) -> str:
    how = {
        WILD_METHOD: "restricted wild cluster bootstrap-t, "
        f"{options.get('wild_weights', 'rademacher').capitalize()} weights, CR1-studentised, "
        + (
            f"all {options.get('draws')} weight vectors"
            if options.get("enumerated")
            else f"{options.get('draws')} random weight vectors"
        )
        + ", inverted test; clusters independent",
        "normal": "normal approximation with independent units",
        "cluster": "normal approximation with a cluster-robust standard error (clusters "
        "independent, units within a cluster may be correlated)",
        "bootstrap": "bootstrap percentile interval, units resampled independently",
        "bca": "bootstrap BCa interval, units resampled independently",
        "cluster-bootstrap": "percentile interval from resampling whole clusters",
        "wilson": "Wilson score interval of k of n 0/1 scores, units independent",
        "clopper-pearson": "Clopper-Pearson exact binomial interval of k of n 0/1 scores, "
        "units independent",
    }[method]
    level = "at least" if method == "clopper-pearson" else "about"
    scope = (
        "new questions from new clusters"
        if method in CLUSTER_METHODS
        else (f"new {unit}s like these" if unit != "observation" else "the observed evaluation set")
    )
    text = (
        f"Each interval covers its model's mean score over {scope} with probability {level} "
        f"{1 - alpha:.0%} ({how}); the intervals are marginal, one model at a time. Overlapping "
        "intervals ('indistinguishable') are a screen of one pair at a time, not a simultaneous "
        "test: non-overlap can separate pairs that the paired verdict does not certify."
    )
    few = options.get("n_clusters", 10**9) < FEW_CLUSTERS
    if method == "cluster" and few and options.get("small_sample") == "none":
        text += (
            f" With only {options['n_clusters']} clusters the clustered standard error is biased "
            "down; small_sample='cr2' (or True: G/(G-1) with t on G - 1 df) is recommended."
        )
    chosen = options.get("small_sample_rule") and options.get("small_sample") != "none"
    if method == "cluster" and chosen:
        text += (
            f" With {options['n_clusters']} clusters the interval uses the CR2 small-sample "
            "correction with Satterthwaite degrees of freedom."
        )
    if method == "cluster-bootstrap" and few:
        text += (
            f" With only {options['n_clusters']} clusters the percentile cluster bootstrap "
            "tends to under-cover; method='cluster' with small_sample='cr2' is safer."
        )
    for key, note in WILD_NOTES.items():
        if method == WILD_METHOD and options.get(key):
            text += " " + note.format(n=len(options[key]), refused=REFUSED_CLUSTERS)
    if options.get("few_clusters_refusal"):
        text += f" Refused: {options['few_clusters_refusal']}."
    if options.get("few_clusters_warning"):
        text += f" Warning: {options['few_clusters_warning']}."
    if options.get("method_rule"):
        text += f" The method is {method} ({options['method_rule']}): " + (
            "every score is 0 or 1."
            if method in BINOMIAL_METHODS
            else "the scores are not all 0 or 1."
        )
    if n_degenerate:
        text += (
            f" {n_degenerate} interval(s) have zero width (listed in degenerate): they claim a "
            "certainty the data do not support and do not hold this coverage."
        )
    if verdict is not None:
        text += (
            f" Paired verdict: with probability at least {1 - alpha:.0%}, every separated pair "
            f"is truly ordered simultaneously (Holm over one-sided {verdict['description']} tests "
            "of all ordered pairs)."
        )
        if method == WILD_METHOD:
            text += (
                " The verdict is the clustered paired t, not the bootstrap: a bootstrap p-value "
                "cannot go below 1/(B + 1), and Holm over M(M - 1) ordered pairs needs B >= "
                "M(M - 1)/alpha draws."
            )
    return text


def score_intervals(
    data: Scores | pd.DataFrame | str | os.PathLike,
    method: str = "auto",
    *,
    alpha: float = 0.05,
    reps: int = 1000,
    rng: int | np.random.Generator | None = None,
    small_sample: bool | str = "auto",
    unit: str = "item",
    missing: str = "complete",
    verdict: bool = True,
    wild_weights: str = "rademacher",
) -> ScoreIntervals:
    """Each model's score with a confidence interval, plus overlap flags and the paired verdict.

    Parameters
    ----------
    data : Scores, DataFrame or path
    method : {"auto", "bootstrap", "bca", "normal", "cluster", "cluster-bootstrap", \
"cluster-wild", "wilson", "clopper-pearson"}
        See the module docstring. ``"cluster-wild"``: the restricted wild cluster bootstrap-t
        (intervals by test inversion), which covered better than ``"cluster"`` (CR2) on real
        cluster populations below 30 clusters, without reaching 95 % there either
        (docs/scores.md). ``"auto"`` (default): ``"clopper-pearson"`` when every unit
        score is 0 or 1 (the only one of these whose coverage stays >= 1 - alpha at 0/n and n/n,
        validation/binary_intervals.py), ``"bootstrap"`` (the percentile bootstrap) otherwise.
        ``"wilson"`` and ``"clopper-pearson"`` refuse scores other than 0 and 1; as binomial
        intervals of independent units they have no clustered form.
    alpha : float, default 0.05
        Each interval has nominal coverage ``1 - alpha``; the paired verdict controls the
        family-wise error over all ordered pairs at ``alpha``.
    reps : int, default 1000
        Resamples for the bootstrap methods; for ``"cluster-wild"`` B, the random weight vectors
        drawn when the ``2^G`` sign vectors (``6^G`` Webb vectors) are more than ``reps`` (else
        all of them are enumerated, with no Monte-Carlo error: ``options["enumerated"]``,
        ``options["draws"]``).
    rng : int, Generator or None
        Seed for the bootstrap methods (and the wild bootstrap's random draws); with None a fresh
        seed is drawn and recorded in ``options["seed"]``.
    small_sample : {"auto", False, True, "cadjust", "cr2"}, default "auto"
        Method ``"cluster"``: ``"auto"`` takes ``"cr2"`` at every number of clusters
        (recorded in ``options``, and said in the guarantee); ``True``/``"cadjust"`` multiplies
        the clustered variance by G/(G-1) and uses Student's t with G - 1 df; ``"cr2"`` uses the
        Bell-McCaffrey bias-reduced variance with Satterthwaite df (best with clusters of
        unequal sizes); ``False`` the plain HC0 form (under-covers with few clusters). The
        clustered paired verdict of both cluster methods uses the same correction. One cluster
        is refused by both cluster methods.
    unit : {"item", "observation", "cluster", "prompt"}
        Units of analysis; the cluster methods need item or observation units, the binomial
        methods 0/1 unit scores (item or observation units of 0/1 data).
    missing : {"complete", "pairwise"}, default "complete"
        ``"complete"``: only units scored by every model (the default everywhere in rankci, as
        in :func:`rankci.rank`, so every interval is about the same items as the ranking).
        ``"pairwise"``: each model's score uses every unit it has, each pair of the paired
        verdict the units both have. The units left out are counted in ``excluded``.
    verdict : bool, default True
        Also run the paired verdict (paired tests + Holm).
    wild_weights : {"rademacher", "webb"}, default "rademacher"
        Method ``"cluster-wild"``: the wild bootstrap's weights, Rademacher (+-1, as validated)
        or Webb's six points (more distinct vectors with few clusters; it covered less on real
        cluster populations, validation/few_clusters_real.py).

    Returns
    -------
    ScoreIntervals
        Its ``degenerate`` names every model whose interval has zero width, with the reason
        (a :class:`RankciWarning` too).

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640.
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26(4), 404-413.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
    New York.
    Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372.

    Examples
    --------
    >>> import rankci
    >>> scores = rankci.datasets.load_mmlu_pro()
    >>> result = score_intervals(scores, "normal")
    >>> result.to_frame().columns.tolist()
    ['model', 'score', 'se', 'lower', 'upper', 'n']
    >>> import numpy as np
    >>> x = np.column_stack([np.zeros(25), np.r_[np.ones(12), np.zeros(13)]])
    >>> two = rankci.Scores.from_matrix(x, models=["none", "half"])
    >>> auto = score_intervals(two, verdict=False)
    >>> auto.method, auto.options["method_rule"].split(":")[0], auto.degenerate
    ('clopper-pearson', 'auto', {})
    >>> auto.to_frame().round(4).values.tolist()[1][3:5]      # 0/25: [0, 1 - 0.025^(1/25)]
    [0.0, 0.1372]
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     normal = score_intervals(two, "normal", verdict=False)
    >>> print(normal.degenerate["none"].split(":")[0])
    all 25 scores are 0
    """
    scores = as_scores(data)
    check_choice("method", method, METHODS)
    alpha = check_alpha(alpha)
    check_choice("unit", unit, UNITS)
    check_choice("missing", missing, MISSING)
    reps = check_positive_int(reps, "reps", minimum=2)
    small_sample = small_sample_mode(small_sample)
    check_choice("wild_weights", wild_weights, WEIGHTS)
    if wild_weights != "rademacher" and method != WILD_METHOD:
        raise ValueError(
            f"wild_weights={wild_weights!r} is an option of method='cluster-wild' only, not of "
            f"method={method!r}"
        )
    seed, generator = seeded_generator(rng)
    units = scores.units(unit, missing)
    rule = AUTO_RULE if method == "auto" else None
    method = resolve_method(method, units.binary)
    clustered = method in CLUSTER_METHODS
    cluster = unit_clusters(scores, units) if clustered else None
    arrays = interval_arrays(
        units.values,
        method,
        alpha,
        reps=reps,
        generator=generator,
        cluster=cluster,
        small_sample=small_sample,
        unit=unit,
        wild_weights=wild_weights,
        names=units.models,
    )
    options = _options(method, reps, seed, small_sample, cluster)
    options.update(arrays.pop("wild", {}))
    if rule:
        options["method_rule"] = rule
    if options.get("few_clusters_warning"):
        warnings.warn(options["few_clusters_warning"], RankciWarning, stacklevel=2)
    for key, what in (("refused_models", "no interval"), ("unbounded", "an unbounded interval")):
        if options.get(key):
            first, reason = next(iter(options[key].items()))
            warnings.warn(
                f"{len(options[key])} model(s) get {what} from the wild cluster bootstrap "
                f"({', '.join(list(options[key])[:5])}); {first}: {reason}",
                RankciWarning,
                stacklevel=2,
            )
    return build_intervals(units, arrays, method, alpha, options, verdict, cluster, small_sample)


def resampling_options(reps: int, seed: int | None) -> dict:
    """``{"reps": ..., "seed": ...}`` for a result's options.

    The seed is the one used (None for a Generator).
    """
    return {"reps": int(reps), "seed": seed}


def _options(method, reps, seed, small_sample, cluster) -> dict:
    options: dict = {}
    if method in ("bootstrap", "bca", "cluster-bootstrap", WILD_METHOD):
        options.update(resampling_options(reps, seed))
    if method in CLUSTER_METHODS:
        options["n_clusters"] = int(np.unique(cluster).size)
        options["small_sample"] = resolve_small_sample(small_sample)
        if small_sample_mode(small_sample) == "auto":
            options["small_sample_rule"] = "auto: cr2 at every number of clusters"
        warning = few_clusters_warning(cluster, method)
        if warning:
            options["few_clusters_warning"] = warning
        if options["n_clusters"] <= REFUSED_CLUSTERS:
            options["few_clusters_refusal"] = few_clusters_refusal(options["n_clusters"], method)
    return options


def few_clusters_refusal(n_clusters: int, method: str) -> str:
    """Why no finite ``method`` interval is given with ``n_clusters`` <= :data:`REFUSED_CLUSTERS`.

    Examples
    --------
    >>> few_clusters_refusal(4, "cluster").split(":")[0]
    'no cluster interval is given (NaN) with 4 clusters'
    """
    return (
        f"no {method} interval is given (NaN) with {n_clusters} clusters: with "
        f"{REFUSED_CLUSTERS} or fewer, the wild cluster bootstrap's p-value cannot go below "
        f"2/2^G = {2.0 / 2**n_clusters:.3g}, so the data cannot reject any value of the mean "
        "(the whole line), and on real cluster populations (validation/few_clusters_real.py) "
        "the CR2 interval covered only 0.80-0.93 at G = 3-5. Use item units for these clusters "
        "(inference to new items of these same clusters), or collect more clusters"
    )


def few_clusters_warning(cluster: np.ndarray, method: str = "cluster") -> str:
    """The warning on cluster-robust inference with fewer than :data:`RELIABLE_CLUSTERS` clusters.

    It names G, the largest cluster's share of the items and the effective number of clusters
    ``G* = (sum N_g^2)^2 / sum N_g^4`` (:func:`rankci.evidence.wild_cluster.effective_clusters`,
    rho = 1), what the study measured and what to do; "" from 30 clusters. For ``cluster`` and
    ``cluster-bootstrap`` it names ``cluster-wild`` as the better-covering choice, with what it
    covered; for ``cluster-wild`` what it covered.

    Examples
    --------
    >>> text = few_clusters_warning(np.repeat([0, 1, 2], [6, 2, 2]))
    >>> text.split(":")[0]
    '3 clusters, the largest 60 % of the items (effective number of clusters G* = 1.5)'
    >>> few_clusters_warning(np.arange(30))
    ''
    """
    _, sizes = np.unique(np.asarray(cluster), return_counts=True)
    n_clusters = int(sizes.size)
    if n_clusters >= RELIABLE_CLUSTERS:
        return ""
    share = sizes.max() / sizes.sum()
    g_star = effective_clusters(sizes)
    return (
        f"{n_clusters} clusters, the largest {100 * share:.0f} % of the items (effective number of "
        f"clusters G* = {g_star:.1f}): with fewer than {RELIABLE_CLUSTERS} clusters, on real "
        "cluster populations (5-20 of ChemBench's topics or MMLU-Pro's categories drawn at "
        "random; validation/few_clusters_real.py) 95 % cluster-robust intervals covered "
        "0.841-0.921 (ChemBench) and 0.909-0.945 (MMLU-Pro), and the clustered paired verdict "
        "erred in up to 20 % of draws; inference to new clusters is not reliable. Use item "
        "units for these clusters (inference to new items of these same clusters), or collect "
        f"at least {RELIABLE_CLUSTERS} clusters. " + WILD_COVERAGE[method == WILD_METHOD]
    )


#: what the wild cluster bootstrap covered below 30 clusters (validation/few_clusters_real.py,
#: G = 7-20; at G <= 5 its Rademacher interval is the whole line), beside CR2 in the same draws
WILD_COVERAGE = (
    "method='cluster-wild' (the wild cluster bootstrap-t) covered better in the same draws, "
    "0.872-0.921 (ChemBench) and 0.928-0.945 (MMLU-Pro) at G = 7-20, against CR2's "
    "0.848-0.910 and 0.909-0.934",
    "This wild cluster bootstrap covered 0.872-0.921 (ChemBench) and 0.928-0.945 (MMLU-Pro) "
    "at G = 7-20, against CR2's 0.848-0.910 and 0.909-0.934 in the same draws",
)


def build_intervals(
    units: UnitScores,
    arrays: dict,
    method: str,
    alpha: float,
    options: dict,
    verdict: bool,
    cluster: np.ndarray | None,
    small_sample: bool | str,
    warn: bool = True,
) -> ScoreIntervals:
    """Wrap interval arrays (and optionally the paired verdict) into a :class:`ScoreIntervals`.

    ``warn=False`` leaves the warning on zero-width intervals to the caller (subscores gives
    one for all clusters).
    """
    pairwise, separated, summary = None, None, {}
    if verdict:
        pairwise, separated, summary = paired_verdict(units, alpha, cluster, small_sample)
    reasons = arrays.get("degenerate")
    if reasons is None:
        reasons = [""] * len(units.models)
    degenerate = {
        model: str(reason) for model, reason in zip(units.models, reasons, strict=True) if reason
    }
    if degenerate and warn:
        which = [(model, units.cluster) for model in degenerate]
        warn_degenerate(which, method, next(iter(degenerate.values())))
    return ScoreIntervals(
        models=units.models,
        score=arrays["score"],
        se=arrays["se"],
        lower=arrays["lower"],
        upper=arrays["upper"],
        n=arrays["n"],
        method=method,
        alpha=alpha,
        unit=units.unit,
        missing=units.missing,
        n_units=units.n_units,
        options=options,
        excluded=dict(units.excluded),
        guarantee=_guarantee(
            method, alpha, units.unit, summary if verdict else None, options, len(degenerate)
        ),
        verdict=pairwise,
        separated=separated,
        verdict_procedure=summary,
        degenerate=degenerate,
    )


def warn_degenerate(
    which: list[tuple[str, str | None]], method: str, reason: str, stacklevel: int = 4
) -> None:
    """One :class:`RankciWarning` for the zero-width intervals ``which`` ((model, cluster or
    None) pairs), with the first one's ``reason``."""
    names = [m if c is None else f"{m} in cluster {c!r}" for m, c in which]
    listed = ", ".join(names[:5]) + (f", ... ({len(names) - 5} more)" if len(names) > 5 else "")
    warnings.warn(
        f"{len(names)} zero-width {method} interval(s) ({listed}); the first: {reason}",
        RankciWarning,
        stacklevel=stacklevel,
    )
