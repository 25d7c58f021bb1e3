"""From scores to a Ranking in one call: units -> pairwise tests -> multiplicity -> counting.

:func:`rank` is the main entry point; :func:`rank_by_cluster` gives per-cluster rank intervals, and
``rank(..., filter_uninformative=True)`` drops clusters on which the models cannot be told apart
(Section 4 and Appendix B.4 of the source), spending part of alpha on that choice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from rankci._base import check_alpha, check_choice, check_positive_int, jsonable
from rankci.certify.holm import METHODS
from rankci.certify.maxt import rank_scores_maxt
from rankci.data import UNITS, InsufficientDataError, Scores
from rankci.evidence.pairwise import pairwise_tests
from rankci.io import as_scores
from rankci.ranking import COVERAGES, Ranking, marginal_ranking, simultaneous_ranking

__all__ = ["rank", "rank_by_cluster", "ClusterRankings", "informative_clusters"]

CLUSTER_UNITS = ("item", "prompt", "observation")
MULTIPLICITIES = (*METHODS, "max-t")




def _rank_scores(
    scores: Scores,
    *,
    unit: str,
    test: str,
    coverage: str,
    alpha: float,
    delta: float,
    missing: str,
    multiplicity: str,
    rng,
    test_options: dict,
) -> Ranking:
    check_choice("multiplicity", multiplicity, MULTIPLICITIES)
    if multiplicity == "max-t":
        return rank_scores_maxt(
            scores,
            unit=unit,
            test=test,
            coverage=coverage,
            alpha=alpha,
            delta=delta,
            missing=missing,
            rng=rng,
            **test_options,
        )
    units = scores.units(unit, missing)
    pairwise = pairwise_tests(units, test, delta=delta, rng=rng, **test_options)
    build = simultaneous_ranking if coverage == "simultaneous" else marginal_ranking
    return build(pairwise, alpha, multiplicity)


def rank(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    unit: str = "item",
    test: str = "t",
    coverage: str = "simultaneous",
    alpha: float = 0.05,
    delta: float = 0.0,
    missing: str = "complete",
    multiplicity: str = "holm",
    rng: int | np.random.Generator | None = None,
    filter_uninformative: bool = False,
    alpha_split: tuple[float, float] = (0.3, 0.7),
    top: int = 3,
    **test_options,
) -> Ranking:
    """Rank intervals for a leaderboard from paired tests and Holm's procedure.

    Parameters
    ----------
    data : Scores, DataFrame or path
        Per-item scores (see :func:`rankci.read_scores`).
    unit : {"item", "observation", "cluster", "prompt"}
        The unit of analysis: what the inference extends to (new questions, the observed set,
        new subjects, new prompt variants).
    test : {"t", "wilcoxon", "yuen", "z", "sign", "bootstrap", "permutation"}
        The paired test (:func:`rankci.pairwise_tests`).
    coverage : {"simultaneous", "marginal"}
        ``simultaneous`` (Algorithm 2): every statement holds at once with probability
        >= 1 - alpha. ``marginal`` (Algorithm 1): each model's interval separately.
    alpha : float, default 0.05
    delta : float, default 0
        Indifference margin: only differences larger than delta are certified.
    missing : {"complete", "pairwise"}
        Missing (model, item) cells: keep items scored by every model, or compare each pair on the
        items both have.
    multiplicity : {"holm", "bonferroni", "max-t"}
        ``holm`` (default) and ``bonferroni`` are valid under any dependence. ``max-t`` is the
        Romano-Wolf step-down on the studentized mean differences with the critical values
        from their estimated joint law (:func:`rankci.certify.maxt.maxt_ranking`): tighter intervals,
        asymptotic level; only with ``test="t"``. Its options go in ``**test_options``:
        ``resampling`` ("gaussian" or "bootstrap"), ``draws`` (1000), ``covariance``
        ("independent" or "cluster": cluster-robust over the cluster column), ``stepdown``
        (True) and ``small_sample`` (True). See docs/maxt.md.
    rng : int, Generator or None
        Seed for the bootstrap and permutation tests and for the max-t draws.
    filter_uninformative : bool, default False
        First rank the models within every cluster at ``alpha_split[0] * alpha`` and drop the
        clusters where at least M - 1 of the M models have a rank interval reaching rank ``top``;
        then rank on the remaining clusters at ``alpha_split[1] * alpha``.
    alpha_split : (float, float), default (0.3, 0.7)
    top : int, default 3
    **test_options
        Passed to :func:`rankci.pairwise_tests` (``trim``, ``reps``, ``zero_method``, ...), or
        the max-t options above.

    Returns
    -------
    Ranking

    Examples
    --------
    >>> import rankci
    >>> scores = rankci.datasets.load_mmlu_pro()
    >>> ranking = rankci.rank(scores)
    >>> ranking.to_frame().iloc[0][["model", "rank_lower", "rank_upper"]].tolist()
    ['gemini-3.1-pro [merged dir]', 1, 1]
    """
    scores = as_scores(data)
    check_choice("unit", unit, UNITS)
    check_choice("coverage", coverage, COVERAGES)
    alpha = check_alpha(alpha)
    settings = dict(
        unit=unit,
        test=test,
        coverage=coverage,
        delta=delta,
        missing=missing,
        multiplicity=multiplicity,
        rng=rng,
        test_options=test_options,
    )
    if not filter_uninformative:
        return _rank_scores(scores, alpha=alpha, **settings)

    alpha_filter, alpha_rank = _split(alpha, alpha_split)
    cluster_unit = "item" if unit == "cluster" else unit
    keep, dropped = informative_clusters(
        scores,
        alpha=alpha_filter,
        top=top,
        **{**settings, "unit": cluster_unit},
    )
    if not keep:
        raise ValueError(
            f"every cluster was found non-informative (at least M - 1 models reach rank {top}); "
            "nothing is left to rank"
        )
    ranking = _rank_scores(scores.subset(clusters=keep), alpha=alpha_rank, **settings)
    details = {
        **ranking.details,
        "filter": {
            "alpha_filter": alpha_filter,
            "alpha_rank": alpha_rank,
            "cluster_unit": cluster_unit,
            "top": top,
            "kept": keep,
            "dropped": dropped,
        },
    }
    excluded = {
        **ranking.excluded,
        "clusters_dropped": len(dropped),
        "clusters_dropped_reason": f"non-informative: at least M - 1 models reach rank {top}",
    }
    guarantee = (
        ranking.guarantee
        + f" Clusters were first screened at alpha = {alpha_filter:g} ({len(dropped)} dropped as "
        f"non-informative) and the ranking uses alpha = {alpha_rank:g} on the rest."
    )
    return replace(ranking, details=details, excluded=excluded, guarantee=guarantee)


def _split(alpha: float, alpha_split) -> tuple[float, float]:
    try:
        first, second = (float(a) for a in alpha_split)
    except (TypeError, ValueError):
        raise ValueError(f"alpha_split must be two fractions, got {alpha_split!r}") from None
    if first <= 0 or second <= 0 or first + second > 1 + 1e-12:
        raise ValueError(
            f"alpha_split must be two positive fractions summing to <= 1, got {alpha_split!r}"
        )
    return first * alpha, second * alpha


@dataclass(frozen=True, repr=False, eq=False)
class ClusterRankings:
    """Rank intervals computed separately within each cluster.

    Attributes
    ----------
    rankings : dict of str to Ranking
        One Ranking per cluster (each at level ``alpha``: the guarantee holds per cluster).
    skipped : dict of str to str
        Clusters that could not be ranked, with the reason.
    """

    rankings: dict
    skipped: dict
    alpha: float

    def to_frame(self, k: int | None = None) -> pd.DataFrame:
        """Long table: cluster, then the columns of :meth:`Ranking.to_frame`."""
        frames = [
            ranking.to_frame(k).assign(cluster=name) for name, ranking in self.rankings.items()
        ]
        if not frames:
            return pd.DataFrame()
        frame = pd.concat(frames, ignore_index=True)
        return frame[["cluster", *[c for c in frame.columns if c != "cluster"]]]

    def to_dict(self, k: int | None = None) -> dict:
        return {
            "alpha": self.alpha,
            "clusters": {name: r.to_dict(k) for name, r in self.rankings.items()},
            "skipped": jsonable(self.skipped),
        }

    def __repr__(self) -> str:
        return (
            f"ClusterRankings({len(self.rankings)} clusters ranked, {len(self.skipped)} skipped, "
            f"alpha={self.alpha:g})"
        )


def rank_by_cluster(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    unit: str = "item",
    test: str = "t",
    coverage: str = "simultaneous",
    alpha: float = 0.05,
    delta: float = 0.0,
    missing: str = "complete",
    multiplicity: str = "holm",
    rng: int | np.random.Generator | None = None,
    **test_options,
) -> ClusterRankings:
    """Rank intervals within each cluster (subject), with item or prompt units.

    Each cluster's ranking is valid at level alpha on its own. A model with no score in a cluster
    is left out of that cluster's ranking and listed in its ``excluded["models_without_scores"]``;
    a cluster that cannot be ranked at all (fewer than two models with scores, no item scored by
    every model) is listed in ``skipped`` with the reason.
    """
    scores = as_scores(data)
    if scores.clusters is None:
        raise ValueError(
            "per-cluster rank intervals need a cluster column (subject, category, task)"
        )
    check_choice("unit", unit, CLUSTER_UNITS)
    check_choice("coverage", coverage, COVERAGES)
    alpha = check_alpha(alpha)
    rankings: dict[str, Ranking] = {}
    skipped: dict[str, str] = {}
    for cluster in scores.clusters:
        subset = scores.subset(clusters=[cluster])
        present = subset.scored_models()
        absent = [m for m in subset.models if m not in present]
        if len(present) < 2:
            skipped[cluster] = f"fewer than two models have scores here ({', '.join(present)})"
            continue
        if absent:
            subset = subset.subset(models=present)
        try:
            ranking = _rank_scores(
                subset,
                unit=unit,
                test=test,
                coverage=coverage,
                alpha=alpha,
                delta=delta,
                missing=missing,
                multiplicity=multiplicity,
                rng=rng,
                test_options=test_options,
            )
        except InsufficientDataError as error:
            skipped[cluster] = str(error)
            continue
        if absent:
            excluded = {**ranking.excluded, "models_without_scores": absent}
            ranking = replace(ranking, excluded=excluded)
        rankings[cluster] = ranking
    return ClusterRankings(rankings=rankings, skipped=skipped, alpha=alpha)


def informative_clusters(
    scores: Scores,
    *,
    alpha: float,
    top: int = 3,
    min_models: int | None = None,
    **settings,
) -> tuple[list[str], dict[str, str]]:
    """Split clusters into informative ones and non-informative ones (with the reason).

    A cluster is non-informative when at least ``min_models`` (default M - 1) of the M models have a
    per-cluster rank interval reaching rank ``top`` (``L_j <= top``): nearly every model could be
    among the best, so the cluster says little about the differences between models.
    """
    top = check_positive_int(top, "top")
    settings.pop("alpha", None)
    test_options = settings.pop("test_options", {})
    by_cluster = rank_by_cluster(scores, alpha=alpha, **settings, **test_options)
    keep: list[str] = []
    dropped: dict[str, str] = {}
    for cluster, reason in by_cluster.skipped.items():
        dropped[cluster] = f"could not be ranked: {reason}"
    for cluster, ranking in by_cluster.rankings.items():
        m = ranking.n_models
        needed = m - 1 if min_models is None else min_models
        reaching = int((ranking.lower <= top).sum())
        if reaching >= needed:
            dropped[cluster] = f"{reaching} of {m} models have a rank interval reaching rank {top}"
        else:
            keep.append(cluster)
    return keep, dropped
