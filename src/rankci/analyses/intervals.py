"""Per-model score intervals: normal, clustered (Miller), bootstrap (percentile, BCa, cluster).

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
=================  ===========================================================================

Every interval is marginal (each model on its own at level ``1 - alpha``). Beside them,
:class:`ScoreIntervals` carries two verdicts on pairs: the source's "statistically
indistinguishable" flag (the two intervals overlap; a conservative heuristic, see docs/scores.md)
and the paired verdict: one-sided paired tests of every ordered pair with Holm's procedure at
``alpha`` (paired t from :func:`rankci.pairwise_tests`; for the cluster methods, Miller's
clustered paired z, ``var(mean_j - mean_l) = S_jj + S_ll - 2 S_jl`` from the cluster-robust
covariance), whose separated pairs hold simultaneously with probability >= 1 - alpha.

References
----------
Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
evaluations. arXiv:2411.00640.
Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
Cameron, A. C. and Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
Journal of Human Resources 50(2), 317-372.
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
from rankci.io import as_scores

METHODS = ("normal", "cluster", "bootstrap", "bca", "cluster-bootstrap")
CLUSTER_METHODS = ("cluster", "cluster-bootstrap")

__all__ = [
    "METHODS",
    "MeansCovariance",
    "ScoreIntervals",
    "means_covariance",
    "score_intervals",
]


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
) -> dict:
    """score, se, lower, upper and n of every column of a units x columns matrix.

    The engine behind :func:`score_intervals`, :func:`subscores` and the composite scores:
    ``cluster`` holds each row's cluster code for the cluster methods.
    """
    mean, residuals, n = centred(values)
    z = special.ndtri(1.0 - alpha / 2.0)
    if method == "normal":
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.sqrt((residuals**2).sum(axis=0) / (n * (n - 1.0)))
        lower, upper = mean - z * se, mean + z * se
    elif method == "cluster":
        grouped = grouped_residuals(values, cluster, small_sample)
        se = np.sqrt(grouped.variance())
        finite_df = np.isfinite(grouped.df)
        crit = np.where(
            finite_df, special.stdtrit(np.where(finite_df, grouped.df, 1.0), 1.0 - alpha / 2.0), z
        )
        lower, upper = mean - crit * se, mean + crit * se
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
    return {
        "score": mean,
        "se": np.where(few, np.nan, se),
        "lower": np.where(few, np.nan, lower),
        "upper": np.where(few, np.nan, upper),
        "n": n.astype(np.int64),
    }


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
            f"correction (CR2 below {FEW_CLUSTERS} clusters) is safer",
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
        One of :data:`METHODS`.
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
        """Pairs whose intervals overlap, higher score first (the source's flag; conservative)."""
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

    def to_dict(self) -> dict:
        """JSON-safe; the schema of ``rankci scores --format json``."""
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
            "indistinguishable": [list(p) for p in self.indistinguishable()],
        }
        if self.separated is not None:
            out["paired"] = {
                **jsonable(self.verdict_procedure),
                "separated": [list(p) for p in self.separated_pairs()],
                "indistinguishable": [list(p) for p in self.paired_indistinguishable()],
            }
        out["excluded"] = jsonable(self.excluded)
        out["guarantee"] = self.guarantee
        return out

    def __repr__(self) -> str:
        head = (
            f"ScoreIntervals({self.n_models} models, method={self.method!r}, "
            f"alpha={self.alpha:g}, n_units={self.n_units})"
        )
        return head + "\n" + self.to_frame().head(10).to_string(index=False)

    def _repr_html_(self) -> str:
        """Jupyter: the table and the guarantee in one sentence."""
        import html

        head = (f"Score intervals: {self.n_models} models, method {self.method}, "
                f"alpha = {self.alpha:g}, {self.n_units} units")
        table = self.to_frame().to_html(index=False, border=0, float_format=lambda v: f"{v:.4f}",
                                        na_rep="-")
        return (f"<div><p><b>{html.escape(head)}</b></p>{table}"
                f"<p><small>{html.escape(self.guarantee)}</small></p></div>")


# ---------------------------------------------------------------------- the public function
def _guarantee(method: str, alpha: float, unit: str, verdict: dict | None, options: dict) -> str:
    how = {
        "normal": "normal approximation with independent units",
        "cluster": "normal approximation with a cluster-robust standard error (clusters "
        "independent, units within a cluster may be correlated)",
        "bootstrap": "bootstrap percentile interval, units resampled independently",
        "bca": "bootstrap BCa interval, units resampled independently",
        "cluster-bootstrap": "percentile interval from resampling whole clusters",
    }[method]
    scope = (
        "new questions from new clusters"
        if method in CLUSTER_METHODS
        else (f"new {unit}s like these" if unit != "observation" else "the observed evaluation set")
    )
    text = (
        f"Each interval covers its model's mean score over {scope} with probability about "
        f"{1 - alpha:.0%} ({how}); the intervals are marginal, one model at a time. Overlapping "
        "intervals ('indistinguishable') are a conservative screen, not a test."
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
            f" With {options['n_clusters']} clusters (fewer than {FEW_CLUSTERS}) the interval "
            "uses the CR2 small-sample correction with Satterthwaite degrees of freedom."
        )
    if method == "cluster-bootstrap" and few:
        text += (
            f" With only {options['n_clusters']} clusters the percentile cluster bootstrap "
            "tends to under-cover; method='cluster' with small_sample='cr2' is safer."
        )
    if verdict is not None:
        text += (
            f" Paired verdict: with probability at least {1 - alpha:.0%}, every separated pair "
            f"is truly ordered simultaneously (Holm over one-sided {verdict['description']} tests "
            "of all ordered pairs)."
        )
    return text


def score_intervals(
    data: Scores | pd.DataFrame | str | os.PathLike,
    method: str = "bootstrap",
    *,
    alpha: float = 0.05,
    reps: int = 1000,
    rng: int | np.random.Generator | None = None,
    small_sample: bool | str = "auto",
    unit: str = "item",
    missing: str = "complete",
    verdict: bool = True,
) -> ScoreIntervals:
    """Each model's score with a confidence interval, plus overlap flags and the paired verdict.

    Parameters
    ----------
    data : Scores, DataFrame or path
    method : {"bootstrap", "bca", "normal", "cluster", "cluster-bootstrap"}
        See the module docstring; ``"bootstrap"`` is the percentile bootstrap (default).
    alpha : float, default 0.05
        Each interval has nominal coverage ``1 - alpha``; the paired verdict controls the
        family-wise error over all ordered pairs at ``alpha``.
    reps : int, default 1000
        Resamples for the bootstrap methods.
    rng : int, Generator or None
        Seed for the bootstrap methods; with None a fresh seed is drawn and recorded in
        ``options["seed"]``.
    small_sample : {"auto", False, True, "cadjust", "cr2"}, default "auto"
        Method ``"cluster"``: ``"auto"`` takes ``"cr2"`` below 50 clusters and none above
        (recorded in ``options``, and said in the guarantee); ``True``/``"cadjust"`` multiplies
        the clustered variance by G/(G-1) and uses Student's t with G - 1 df; ``"cr2"`` uses the
        Bell-McCaffrey bias-reduced variance with Satterthwaite df (best with clusters of
        unequal sizes); ``False`` the plain HC0 form (under-covers with few clusters). The
        clustered paired verdict of both cluster methods uses the same correction. One cluster
        is refused by both cluster methods.
    unit : {"item", "observation", "cluster", "prompt"}
        Units of analysis; the cluster methods need item or observation units.
    missing : {"complete", "pairwise"}, default "complete"
        ``"complete"``: only units scored by every model (the default everywhere in rankci, as
        in :func:`rankci.rank`, so every interval is about the same items as the ranking).
        ``"pairwise"``: each model's score uses every unit it has, each pair of the paired
        verdict the units both have. The units left out are counted in ``excluded``.
    verdict : bool, default True
        Also run the paired verdict (paired tests + Holm).

    Returns
    -------
    ScoreIntervals

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640.
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
    """
    scores = as_scores(data)
    check_choice("method", method, METHODS)
    alpha = check_alpha(alpha)
    check_choice("unit", unit, UNITS)
    check_choice("missing", missing, MISSING)
    reps = check_positive_int(reps, "reps", minimum=2)
    small_sample = small_sample_mode(small_sample)
    seed, generator = seeded_generator(rng)
    units = scores.units(unit, missing)
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
    )
    options = _options(method, reps, seed, small_sample, cluster)
    return build_intervals(units, arrays, method, alpha, options, verdict, cluster, small_sample)


def resampling_options(reps: int, seed: int | None) -> dict:
    """``{"reps": ..., "seed": ...}`` for a result's options: the seed used (None for a Generator).
    """
    return {"reps": int(reps), "seed": seed}


def _options(method, reps, seed, small_sample, cluster) -> dict:
    options: dict = {}
    if method in ("bootstrap", "bca", "cluster-bootstrap"):
        options.update(resampling_options(reps, seed))
    if method in CLUSTER_METHODS:
        options["n_clusters"] = int(np.unique(cluster).size)
        options["small_sample"] = resolve_small_sample(small_sample, options["n_clusters"])
        if small_sample_mode(small_sample) == "auto":
            options["small_sample_rule"] = f"auto: cr2 below {FEW_CLUSTERS} clusters"
    return options


def build_intervals(
    units: UnitScores,
    arrays: dict,
    method: str,
    alpha: float,
    options: dict,
    verdict: bool,
    cluster: np.ndarray | None,
    small_sample: bool | str,
) -> ScoreIntervals:
    """Wrap interval arrays (and optionally the paired verdict) into a :class:`ScoreIntervals`."""
    pairwise, separated, summary = None, None, {}
    if verdict:
        pairwise, separated, summary = paired_verdict(units, alpha, cluster, small_sample)
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
        guarantee=_guarantee(method, alpha, units.unit, summary if verdict else None, options),
        verdict=pairwise,
        separated=separated,
        verdict_procedure=summary,
    )
