"""Orchestration: from scores to a Ranking in one call, following one method specification.

The flow (docs/design.md): scores -> units (:meth:`Scores.units`) -> pairwise evidence
(:mod:`rankci.evidence`) -> certified dominances (:mod:`rankci.certify`) -> Ranking
(:mod:`rankci.ranking`). :func:`rank` is the main entry point; :func:`rank_by_cluster` gives
per-cluster rank intervals, and ``rank(..., filter_uninformative=True)`` drops clusters on which the
models cannot be told apart (Section 4 and Appendix B.4 of Al Mohamad et al.), spending part of
alpha on that choice. Every step reads the one validated :class:`~rankci.method.MethodSpec`.

References
----------
Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
ranks with application to ranking institutions. Biometrics 78(1), 238-247.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rankci._base import LazyModule, check_positive_int, jsonable
from rankci.certify.certification import Certification
from rankci.data import InsufficientDataError, Scores
from rankci.evidence.resampling import DEFAULT_REPS, default_reps
from rankci.io import as_scores
from rankci.method import MethodSpec
from rankci.ranking import Ranking
from rankci.registry import MULTIPLICITY_REGISTRY

pd = LazyModule("pandas")  # imported on first use: the rank path never needs it

__all__ = [
    "DEFAULT_REPS",
    "ClusterRankings",
    "apply_trials",
    "certify",
    "default_reps",
    "informative_clusters",
    "rank",
    "rank_by_cluster",
    "resolve_spec",
]

CLUSTER_UNITS = ("item", "prompt", "observation")

#: The defaults of the method keywords of rank() and rank_by_cluster(): those of MethodSpec.
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MethodSpec)}


def certify(
    scores: Scores, spec: MethodSpec, rng: int | np.random.Generator | None = None
) -> Certification:
    """Units, pairwise evidence and certification, as ``spec`` says (no counting yet).

    Dispatches on ``spec.multiplicity`` through :data:`rankci.registry.MULTIPLICITY_REGISTRY`:
    Holm and Bonferroni run the paired test ``spec.test``
    (:func:`rankci.certify.holm.certify_tests`), max-t its step-down
    (:func:`rankci.certify.maxt.certify_spec`).

    Parameters
    ----------
    scores : Scores
    spec : MethodSpec
    rng : int, Generator or None
        The random draws; default ``spec.seed``.

    Returns
    -------
    Certification

    Examples
    --------
    >>> import rankci
    >>> from rankci.method import MethodSpec
    >>> c = certify(rankci.datasets.load_chembench(), MethodSpec())
    >>> c.coverage, c.n_units
    ('simultaneous', 2788)
    """
    rng = spec.seed if rng is None else rng
    return MULTIPLICITY_REGISTRY[spec.multiplicity].load()(scores, spec, rng)


def resolve_spec(
    spec: MethodSpec | None,
    rng: object,
    keywords: dict[str, Any],
    options: dict[str, Any],
    caller: str,
    accepted: str | None = None,
) -> tuple[MethodSpec, object]:
    """The validated specification of a call, and the random source to use with it.

    Every entry point that ranks or decides (:func:`rank`, :func:`rank_by_cluster`,
    ``rank_benchmarks``, ``check_claims``, ``tau_best``, ``mixed_ranking``, ``plan``) takes
    either ``spec=`` or the method's keywords; this is the one rule for both:

    * with ``spec``, a method keyword other than its default (or any option) is an error: the
      method is given once;
    * without, the keywords become the spec (:meth:`MethodSpec.from_keywords`; ``accepted``
      lists the caller's keywords in the message for an unknown one).

    The seed of ``rng`` (an int) is recorded where the method draws random numbers, a fresh one
    when ``rng`` is None; a Generator is used as it is and recorded as no seed.

    Examples
    --------
    >>> spec, rng = resolve_spec(None, 3, {"test": "permutation"}, {"reps": 99}, "rank")
    >>> spec.seed, spec.test_options["reps"], rng
    (3, 99, 3)
    >>> resolve_spec(spec, None, {"alpha": 0.1}, {}, "rank")
    Traceback (most recent call last):
    ...
    ValueError: rank() got spec= and also alpha=; pass the method through one of them ...
    """
    if spec is not None:
        if not isinstance(spec, MethodSpec):
            raise ValueError(f"spec must be a rankci.method.MethodSpec, got {type(spec).__name__}")
        changed = [k for k, v in keywords.items() if v != _DEFAULTS.get(k, v)] + sorted(options)
        if changed:
            raise ValueError(
                f"{caller}() got spec= and also {changed[0]}=; pass the method through one of "
                "them (spec.replace(...) changes a field)"
            )
        if rng is not None:
            spec = _with_rng(spec, rng)
    else:
        spec = _spec_of(keywords, options, caller, accepted)
        spec = _with_rng(spec, rng)
    return spec, (rng if isinstance(rng, np.random.Generator) else spec.seed)


#: The specifications made from keywords, by the keywords (and their types): a MethodSpec is
#: frozen and validated once, so a call with the same keywords reuses it.
_SPECS: dict = {}


def _spec_of(keywords: dict, options: dict, caller: str, accepted: str | None) -> MethodSpec:
    """``MethodSpec.from_keywords`` of these keywords, made once per distinct set of them."""
    given = {**keywords, **options}
    try:
        # type and repr too: 1 and True, 0.0 and -0.0 are equal keys but not the same spec
        # (the keywords come in the signature's order; options in another order: another key)
        key = (caller, accepted, *((k, type(v), v, repr(v)) for k, v in given.items()))
        spec = _SPECS.get(key)
    except TypeError:  # an unhashable value: no reuse
        key = spec = None
    if spec is None:
        spec = MethodSpec.from_keywords(**keywords, caller=caller, accepted=accepted, **options)
        if key is not None:
            if len(_SPECS) >= 256:
                _SPECS.clear()
            _SPECS[key] = spec
    return spec


def apply_trials(spec: MethodSpec, scores: Scores, caller: str) -> tuple[MethodSpec, Scores]:
    """The spec and scores of a call, agreeing on the per-item rule over repeated trials.

    * scores without a trial column and ``spec.trials`` None: both as given;
    * scores with one and ``spec.trials`` None: the spec records the scores' rule;
    * ``spec.trials`` a rule other than the scores': the trial rows are re-scored by it
      (:meth:`rankci.Scores.per_item`), so ``spec=ranking.spec`` re-runs the same rule;
    * ``spec.trials`` set on scores with no trial column: an error naming the caller.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "item": [0, 0, 1, 1] * 2,
    ...                       "trial": [0, 1] * 4, "score": [1, 0, 1, 1, 0, 0, 1, 0]})
    >>> spec, scores = apply_trials(MethodSpec(trials="pass@2"),
    ...                             Scores.from_frame(frame, trial="trial"), "rank")
    >>> spec.trials, scores.notes["repeated_trials"]["per_item"]
    ('pass@2', 'pass@2')
    """
    table = getattr(scores, "trials", None)
    if spec.trials is None:
        return (spec, scores) if table is None else (spec.replace(trials=table.rule), scores)
    if table is None:
        raise ValueError(
            f"{caller}(): the spec's trials={spec.trials!r} is a per-item rule over repeated "
            "trials, but these scores have no trial column; read them with a trial column "
            "(trial=, --trial-col) or use a spec with trials=None"
        )
    if spec.trials != table.rule:
        scores = scores.per_item(spec.trials)
    return spec, scores


def _with_rng(spec: MethodSpec, rng: object) -> MethodSpec:
    """Record the seed of ``rng`` (an int), or a fresh one where the method draws numbers.

    A method that draws nothing records no seed, whatever ``rng`` is; a Generator is used as it
    is and recorded as no seed.
    """
    if isinstance(rng, bool) or (
        rng is not None and not isinstance(rng, (int, np.integer, np.random.Generator))
    ):
        raise ValueError(
            f"rng must be None, an int seed or a numpy.random.Generator, got {type(rng).__name__}"
        )
    if isinstance(rng, np.random.Generator) or not spec.draws_random:
        # no seed to record: the spec as it is when it has none (no second validation)
        return spec if spec.seed is None else spec.replace(seed=None)
    return spec.seeded() if rng is None else spec.replace(seed=int(rng))


def _rank_with(scores: Scores, spec: MethodSpec, rng: object) -> Ranking:
    return _flag_early_stopping(certify(scores, spec, rng).ranking(spec), scores)


def _flag_early_stopping(ranking: Ranking, scores: Scores) -> Ranking:
    """The ranking of scores read from logs written under early stopping says so (issue 15);
    that of per-item scores made from repeated trials says by which rule (rankci.trials)."""
    trials = scores.notes.get("repeated_trials")
    if trials:
        from rankci.trials import per_item_sentence

        ranking = replace(
            ranking,
            details={**ranking.details, "repeated_trials": jsonable(trials)},
            guarantee=ranking.guarantee + " " + per_item_sentence(trials),
        )
    stopped = scores.notes.get("early_stopped")
    if not stopped:
        return ranking
    guarantee = (
        ranking.guarantee + " These data were stopped adaptively (logs written under early "
        "stopping: " + ", ".join(stopped) + "), so this fixed-sample guarantee does not hold for "
        "them. For statements that stay valid under stopping, use the anytime-valid path: the "
        "stopping manager's own record (results.early_stopping.metadata in the logs), or run the "
        "evaluation through the anytime-valid monitor (rankci monitor, RankEarlyStopping)."
    )
    return replace(ranking, early_stopped=jsonable(stopped), guarantee=guarantee)


def rank(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    unit: str = "item",
    test: str = "auto",
    coverage: str = "simultaneous",
    alpha: float = 0.05,
    delta: float = 0.0,
    missing: str = "complete",
    multiplicity: str = "holm",
    rng: int | np.random.Generator | None = None,
    filter_uninformative: bool = False,
    alpha_split: tuple[float, float] = (0.3, 0.7),
    top: int = 3,
    spec: MethodSpec | None = None,
    **options: Any,
) -> Ranking:
    """Rank intervals for a leaderboard from paired tests and Holm's procedure.

    Parameters
    ----------
    data : Scores, DataFrame or path
        Per-item scores (see :func:`rankci.read_scores`).
    unit : {"item", "observation", "cluster", "prompt"}
        The unit of analysis: what the inference extends to (new questions, the observed set,
        new subjects, new prompt variants).
    test : str
        The paired test (:func:`rankci.pairwise_tests`): "auto", "t", "wilcoxon", "yuen", "z",
        "sign", "bootstrap", "permutation" or "bootstrap-t"; the default ``auto`` is, per pair, the
        exact McNemar (sign) test on 0/1 units (delta = 0) and the plain paired t elsewhere.
    coverage : {"simultaneous", "marginal"}
        ``simultaneous`` (Algorithm 2): every statement holds at once with probability
        >= 1 - alpha. ``marginal`` (Algorithm 1): each model's interval separately.
    alpha : float, default 0.05
    delta : float, default 0
        Indifference margin: only differences larger than delta are certified.
    missing : {"complete", "pairwise"}
        Missing (model, item) cells: keep items scored by every model (the default everywhere in
        rankci), or compare each pair on the items both have.
    multiplicity : {"holm", "bonferroni", "max-t"}
        ``holm`` (default) and ``bonferroni`` are valid under any dependence. ``max-t`` is the
        Romano-Wolf step-down on the studentized mean differences with the critical values
        from their estimated joint law (:func:`rankci.certify.maxt.certify_maxt`): tighter
        intervals, asymptotic level; with ``test="auto"``, ``"t"`` or ``"z"`` (the t
        statistics). Its options go in ``**options``:
        ``resampling`` ("gaussian" or "bootstrap"), ``draws`` (1000), ``covariance``
        ("independent" or "cluster": cluster-robust over the cluster column), ``stepdown``
        (True) and ``small_sample`` (True). See docs/maxt.md.
    rng : int, Generator or None
        Seed for the bootstrap and permutation tests and for the max-t draws. With None, a
        fresh seed is drawn and recorded in ``ranking.spec.seed``.
    filter_uninformative : bool, default False
        First rank the models within every cluster at ``alpha_split[0] * alpha`` and drop the
        clusters where at least M - 1 of the M models have a rank interval reaching rank ``top``;
        then rank on the remaining clusters at ``alpha_split[1] * alpha``.
    alpha_split : (float, float), default (0.3, 0.7)
    top : int, default 3
    spec : MethodSpec, optional
        The whole method at once, for example ``other_ranking.spec``; then pass no other method
        keyword.
    **options
        Options of the test (``exact_bound_n``, ``trim``, ``reps``, ``zero_method``,
        ``correction``, ``distribution``) or of max-t (above); an option that neither takes is an
        error, and so is a value outside its allowed range (:mod:`rankci.registry`, the table in
        docs/guide.md).

    Returns
    -------
    Ranking
        ``ranking.spec`` is the validated :class:`~rankci.method.MethodSpec`, seed included.

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
    of Statistics 6(2), 65-70.

    Examples
    --------
    >>> import rankci
    >>> scores = rankci.datasets.load_mmlu_pro()
    >>> ranking = rankci.rank(scores)
    >>> best = ranking.to_frame().iloc[0]
    >>> best["model"], int(best["rank_lower"]), int(best["rank_upper"])
    ('gemini-3.1-pro [merged dir]', 1, 1)
    >>> rankci.rank(scores, spec=ranking.spec).upper.tolist() == ranking.upper.tolist()
    True
    """
    scores = as_scores(data)
    keywords = dict(
        unit=unit,
        test=test,
        coverage=coverage,
        alpha=alpha,
        delta=delta,
        missing=missing,
        multiplicity=multiplicity,
    )
    spec, rng = resolve_spec(spec, rng, keywords, options, "rank")
    spec, scores = apply_trials(spec, scores, "rank")
    if filter_uninformative:
        spec = spec.replace(cluster_filter={"alpha_split": alpha_split, "top": top})
    if spec.cluster_filter is None:
        return _rank_with(scores, spec, rng)
    return _rank_filtered(scores, spec, rng)


def _rank_filtered(scores: Scores, spec: MethodSpec, rng: object) -> Ranking:
    first, second = spec.cluster_filter["alpha_split"]
    top = spec.cluster_filter["top"]
    alpha_filter, alpha_rank = first * spec.alpha, second * spec.alpha
    cluster_unit = "item" if spec.unit == "cluster" else spec.unit
    keep, dropped = informative_clusters(
        scores,
        spec=spec.replace(unit=cluster_unit, alpha=alpha_filter, cluster_filter=None),
        top=top,
        rng=rng,
    )
    if not keep:
        raise ValueError(
            f"every cluster was found non-informative (at least M - 1 models reach rank {top}); "
            "nothing is left to rank"
        )
    final = spec.replace(alpha=alpha_rank, cluster_filter=None)
    ranking = certify(scores.subset(clusters=keep), final, rng).ranking(spec)
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
    # the statement's level is the whole procedure's (screen and ranking together, by the union
    # bound: alpha_filter + alpha_rank = alpha), not the ranking's own 1 - alpha_rank
    own = f"probability at least {1 - alpha_rank:.0%}"
    whole = f"probability at least {1 - spec.alpha:.0%}"
    guarantee = (
        ranking.guarantee.replace(own, whole, 1)
        + f" The level is that of the whole procedure: clusters were first screened at alpha = "
        f"{alpha_filter:g} ({len(dropped)} dropped as non-informative) and the ranking uses "
        f"alpha = {alpha_rank:g} on the rest ({alpha_filter:g} + {alpha_rank:g} = {spec.alpha:g})."
    )
    ranking = replace(ranking, details=details, excluded=excluded, guarantee=guarantee)
    return _flag_early_stopping(ranking, scores)


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
    spec: MethodSpec | None = None

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
        out = {
            "alpha": self.alpha,
            "clusters": {name: r.to_dict(k) for name, r in self.rankings.items()},
            "skipped": jsonable(self.skipped),
        }
        if self.spec is not None:
            out["spec"] = self.spec.to_dict()
        return out

    def __repr__(self) -> str:
        return (
            f"ClusterRankings({len(self.rankings)} clusters ranked, {len(self.skipped)} skipped, "
            f"alpha={self.alpha:g})"
        )


def rank_by_cluster(
    data: Scores | pd.DataFrame | str | os.PathLike,
    *,
    unit: str = "item",
    test: str = "auto",
    coverage: str = "simultaneous",
    alpha: float = 0.05,
    delta: float = 0.0,
    missing: str = "complete",
    multiplicity: str = "holm",
    rng: int | np.random.Generator | None = None,
    spec: MethodSpec | None = None,
    **options: Any,
) -> ClusterRankings:
    """Rank intervals within each cluster (subject), with item or prompt units.

    Each cluster's ranking is valid at level alpha on its own. A model with no score in a cluster
    is left out of that cluster's ranking and listed in its ``excluded["models_without_scores"]``;
    a cluster that cannot be ranked at all (fewer than two models with scores, no item scored by
    every model) is listed in ``skipped`` with the reason.

    Parameters
    ----------
    data : Scores, DataFrame or path
        Scores with a cluster column.
    unit, test, coverage, alpha, delta, missing, multiplicity, rng, spec, **options
        As in :func:`rank`; ``unit`` is one of "item", "prompt" or "observation" (a cluster
        cannot be its own unit).

    Returns
    -------
    ClusterRankings

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247 (Section 4).

    Examples
    --------
    >>> import rankci
    >>> by = rankci.rank_by_cluster(rankci.datasets.load_chembench())
    >>> len(by.rankings) + len(by.skipped)
    9
    """
    scores = as_scores(data)
    if scores.clusters is None:
        raise ValueError(
            "per-cluster rank intervals need a cluster column (subject, category, task)"
        )
    keywords = dict(
        unit=unit,
        test=test,
        coverage=coverage,
        alpha=alpha,
        delta=delta,
        missing=missing,
        multiplicity=multiplicity,
    )
    spec, rng = resolve_spec(spec, rng, keywords, options, "rank_by_cluster")
    spec, scores = apply_trials(spec, scores, "rank_by_cluster")
    if spec.unit not in CLUSTER_UNITS:
        listed = ", ".join(repr(u) for u in CLUSTER_UNITS)
        if spec.unit == "cluster":
            raise ValueError(
                "rank_by_cluster ranks within each cluster, where one cluster cannot be the "
                f"unit: choose unit= one of {listed} (the units inside each cluster), or rank "
                "over all clusters with the clusters as units by rank(unit='cluster')"
            )
        raise ValueError(f"unknown unit {spec.unit!r}; choose one of {listed}")
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
            ranking = _in_cluster(cluster, lambda subset=subset: _rank_with(subset, spec, rng))
        except InsufficientDataError as error:
            skipped[cluster] = str(error)
            continue
        if absent:
            excluded = {**ranking.excluded, "models_without_scores": absent}
            ranking = replace(ranking, excluded=excluded)
        rankings[cluster] = ranking
    return ClusterRankings(rankings=rankings, skipped=skipped, alpha=spec.alpha, spec=spec)


def _in_cluster(cluster: str, compute: Any) -> Any:
    """``compute()`` with every warning it gives re-issued naming the cluster it is about
    (``cluster 'algebra': nothing is certified ...``), in its category."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compute()
    for record in caught:
        warnings.warn(f"cluster {cluster!r}: {record.message}", record.category, stacklevel=3)
    return result


def informative_clusters(
    scores: Scores,
    *,
    spec: MethodSpec | None = None,
    top: int = 3,
    min_models: int | None = None,
    rng: int | np.random.Generator | None = None,
    **keywords: Any,
) -> tuple[list[str], dict[str, str]]:
    """Split clusters into informative ones and non-informative ones (with the reason).

    A cluster is non-informative when at least ``min_models`` (default M - 1) of the M models have a
    per-cluster rank interval reaching rank ``top`` (``L_j <= top``): nearly every model could be
    among the best, so the cluster says little about the differences between models.

    Parameters
    ----------
    scores : Scores
    spec : MethodSpec, optional
        The method of the per-cluster rankings (its ``alpha`` is the screening level); or give
        the keywords of :func:`rank_by_cluster` instead.
    top : int, default 3
    min_models : int, optional
    rng : int, Generator or None

    Returns
    -------
    (list of str, dict of str to str)
        The informative clusters, and the others with the reason.

    References
    ----------
    Al Mohamad, D., Goeman, J. J. and van Zwet, E. W. (2022). Simultaneous confidence intervals for
    ranks with application to ranking institutions. Biometrics 78(1), 238-247 (Appendix B.4).

    Examples
    --------
    >>> import rankci
    >>> keep, dropped = informative_clusters(rankci.datasets.load_chembench(), alpha=0.015)
    >>> len(keep) + len(dropped)
    9
    """
    top = check_positive_int(top, "top")
    by_cluster = rank_by_cluster(scores, spec=spec, rng=rng, **keywords)
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
