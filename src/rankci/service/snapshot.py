"""The leaderboard of a board at its last look, as JSON: one function of the look's data.

Everything here is computed from the ranking taken at the look and the scores consumed up to it,
so it is cached per look and never changes once computed.

* rank statements (certified pairs, rank intervals and sets, top-k, tiers) come from the monitor:
  anytime-valid, jointly, at level 1 - alpha;
* each model's score interval, and its per-cluster subscores, are anytime-valid confidence
  sequences for its mean (:func:`rankci.sequential.meancs.mean_confidence_sequence`) under the
  board's sampling model, each valid on its own at level 1 - alpha at every look. Within a
  cluster the shared order is a uniformly random order of that cluster's items, so model F
  applies there with N the cluster's size.
"""

from __future__ import annotations

import math

import numpy as np

from ..ranking import Ranking, _plain
from ..sequential.meancs import mean_confidence_sequence
from .spec import BoardSpec

__all__ = ["leaderboard_snapshot", "score_guarantee"]


def _num(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def score_guarantee(spec: BoardSpec) -> str:
    target = (
        f"its mean score over all {spec.n_items} items of the benchmark"
        if spec.sampling == "finite"
        else "its expected score on a new item"
    )
    return (
        f"Each score interval contains {target} with probability at least {1 - spec.alpha:.0%}, "
        "at every look at once (a confidence sequence: it may be read at any time, and it "
        "only narrows); each per-cluster interval likewise for the cluster's items. These hold "
        "for each model (and cluster) on its own."
    )


def _counts(spec: BoardSpec, t_look: int, retired: dict) -> np.ndarray:
    """Items consumed for each model at the look (a retired model stops at its retirement)."""
    stops = [min(int(retired.get(m, {}).get("t", t_look)), t_look) for m in spec.models]
    return np.asarray(stops, dtype=np.int64)


def leaderboard_snapshot(
    spec: BoardSpec, ranking: Ranking, look: int, x: np.ndarray, retired: dict
) -> dict:
    """The leaderboard JSON at look number ``look`` (1-based; 0 before the first look), which
    produced ``ranking``; ``x`` holds the rows consumed up to it."""
    t_look = x.shape[0]
    counts = _counts(spec, t_look, retired)
    n_items = spec.n_items if spec.sampling == "finite" else None
    lower, upper = mean_confidence_sequence(
        x, alpha=spec.alpha, sampling=spec.sampling, n_items=n_items, counts=counts
    )
    k = spec.k
    top = ranking.top_k(k) if k else None
    sets = ranking.details.get("rank_sets")
    rows = []
    for j in ranking.order():
        name = spec.models[j]
        info = retired.get(name)
        row = {
            "model": name,
            "score": _num(ranking.score[j]),
            "score_lower": _num(lower[j]),
            "score_upper": _num(upper[j]),
            "n_items": int(counts[j]),
            "rank": int(ranking.rank[j]),
            "rank_lower": int(ranking.lower[j]),
            "rank_upper": int(ranking.upper[j]),
            "tier": int(ranking.tier[j]),
        }
        if top is not None:
            row[f"top_{k}"] = str(top[j])
        if sets is not None:
            row["rank_set"] = [int(r) for r in sets[name]]
        row["status"] = "retired" if info else "active"
        if info:
            row["retired_at"] = int(info["t"])
            row["retired_reason"] = str(info["reason"])
        rows.append(row)
    tiers: dict[int, list[str]] = {}
    for j in ranking.order():
        tiers.setdefault(int(ranking.tier[j]), []).append(spec.models[j])
    out = {
        "board": spec.id,
        "benchmark": spec.benchmark,
        "run": spec.run,
        "look": {
            "number": int(look),
            "t": int(t_look),
            "evaluations": int(ranking.details.get("evaluations", 0)),
            "cost_fraction": float(ranking.details.get("cost_fraction", 0.0)),
        },
        "alpha": spec.alpha,
        "settings": spec.settings(),
        "models": rows,
        "certified_pairs": [list(pair) for pair in ranking.dominance_pairs()],
        "tiers": [tiers[t] for t in sorted(tiers)],
        "guarantee": ranking.guarantee,
        "score_guarantee": score_guarantee(spec),
    }
    if top is not None:
        out["top_k"] = {
            "k": int(k),
            **{s: [spec.models[j] for j in ranking.order() if top[j] == s] for s in ("in", "out")},
            "undetermined": [spec.models[j] for j in ranking.order() if top[j] == "undetermined"],
        }
    if "n_surviving_orders" in ranking.details:
        out["n_surviving_orders"] = int(ranking.details["n_surviving_orders"])
    if spec.clusters is not None:
        out["subscores"] = subscores_at_look(spec, x, counts)
    return _plain(out)


def subscores_at_look(spec: BoardSpec, x: np.ndarray, counts: np.ndarray) -> list[dict]:
    """Per cluster: each model's mean on the cluster's consumed items and its interval."""
    t_look = x.shape[0]
    names, codes = np.unique(np.asarray(spec.clusters, dtype=str), return_inverse=True)
    sizes = np.bincount(codes, minlength=len(names))
    by_position = codes[spec.order]
    seen = by_position[:t_look]
    out = []
    for c, name in enumerate(names):
        rows = np.flatnonzero(seen == c)
        part = x[rows]
        # a model's cluster count: the cluster's rows before the model's own stop
        n_c = np.searchsorted(rows, counts, side="left")
        lower, upper = mean_confidence_sequence(
            part,
            alpha=spec.alpha,
            sampling=spec.sampling,
            n_items=int(sizes[c]) if spec.sampling == "finite" else None,
            counts=n_c,
        )
        used = np.arange(part.shape[0])[:, None] < n_c[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(used, part, 0.0).sum(axis=0) / n_c
        out.append(
            {
                "cluster": str(name),
                "n_items": int(sizes[c]),
                "models": [
                    {
                        "model": spec.models[j],
                        "score": _num(mean[j]),
                        "score_lower": _num(lower[j]),
                        "score_upper": _num(upper[j]),
                        "n_items": int(n_c[j]),
                    }
                    for j in range(spec.n_models)
                ],
            }
        )
    return out
