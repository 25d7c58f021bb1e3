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

from rankci.ranking import Ranking
from rankci.sequential.meancs import MeanCS
from rankci.service.spec import BoardSpec

__all__ = ["ScoreTracker", "leaderboard_snapshot", "score_guarantee"]


def _num(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def score_guarantee(spec: BoardSpec) -> str:
    """What the score intervals guarantee, in plain words.

    Parameters
    ----------
    spec : BoardSpec
        The board (its ``alpha``, ``sampling`` and ``n_items`` enter the text).

    Returns
    -------
    str

    References
    ----------
    Waudby-Smith, I. and Ramdas, A. (2020). Confidence sequences for sampling without replacement.
    NeurIPS 33.
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
    Journal of the Royal Statistical Society Series B 86(1), 1-27.

    Examples
    --------
    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> score_guarantee(spec).split(" with probability")[0]
    'Each score interval contains its mean score over all 20 items of the benchmark'
    """
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


class ScoreTracker:
    """Running score intervals of a board, overall and per cluster, advanced look by look.

    The accumulators (:class:`~rankci.sequential.meancs.MeanCS`) give bit-for-bit the intervals
    of all the consumed rows at once, so the snapshot of a look does not depend on which looks
    were read before it.
    """

    def __init__(self, spec: BoardSpec) -> None:
        self.spec = spec
        m = spec.n_models
        finite = spec.sampling == "finite"
        self.t = 0
        self.overall = MeanCS(
            m, alpha=spec.alpha, sampling=spec.sampling, n_items=spec.n_items if finite else None
        )
        self.clusters: list[tuple[str, int, MeanCS]] = []
        if spec.clusters is not None:
            names, codes = np.unique(np.asarray(spec.clusters, dtype=str), return_inverse=True)
            sizes = np.bincount(codes, minlength=len(names))
            self._codes = codes[spec.order]  # cluster of each position
            for name, size in zip(names, sizes):
                running = MeanCS(
                    m,
                    alpha=spec.alpha,
                    sampling=spec.sampling,
                    n_items=int(size) if finite else None,
                )
                self.clusters.append((str(name), int(size), running))
        self._m0 = m
        self.late: list[tuple[int, MeanCS]] = []  # models that joined later: (entry row, CS)

    def advance(
        self, x: np.ndarray, t_look: int, stops: np.ndarray, entrants: list | None = None
    ) -> None:
        """Consume rows ``self.t .. t_look - 1`` of ``x``; model j uses the rows before
        ``stops[j]`` (its retirement; a large number while active). ``entrants`` (an open
        board's ``ranking.details["entrants"]``): a model that joined later uses the rows from
        its entry on, in an interval of its own (no per-cluster interval)."""
        for entry in (entrants or [])[self._m0 + len(self.late) :]:
            self.late.append((int(entry["t"]), MeanCS(1, alpha=self.spec.alpha, sampling="iid")))
        if t_look <= self.t:
            return
        m0 = self._m0
        block = x[self.t : t_look, :m0]
        for j, (start, running) in enumerate(self.late, start=m0):
            first = max(self.t, start)
            if first < t_look:
                use = np.clip(stops[j : j + 1] - first, 0, t_look - first)
                running.update(x[first:t_look, j : j + 1], use)
        stops = stops[:m0]
        self.overall.update(block, np.clip(stops - self.t, 0, t_look - self.t))
        for c, (_, _, running) in enumerate(self.clusters):
            rows = self.t + np.flatnonzero(self._codes[self.t : t_look] == c)
            if rows.size:
                running.update(x[rows][:, :m0], np.searchsorted(rows, stops, side="left"))
        self.t = t_look

    def counts_and_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Items used, lower and upper bounds per model (the models that joined later last)."""
        lower, upper = self.overall.interval()
        counts = [self.overall.count]
        lows, ups = [lower], [upper]
        for _start, running in self.late:
            low, up = running.interval()
            counts.append(running.count)
            lows.append(low)
            ups.append(up)
        return np.concatenate(counts), np.concatenate(lows), np.concatenate(ups)


def _stops(spec: BoardSpec, retired: dict) -> np.ndarray:
    never = np.iinfo(np.int64).max // 2
    return np.asarray([int(retired.get(m, {}).get("t", never)) for m in spec.models])


def leaderboard_snapshot(
    spec: BoardSpec,
    ranking: Ranking,
    look: int,
    x: np.ndarray,
    retired: dict,
    tracker: ScoreTracker | None = None,
) -> dict:
    """The leaderboard JSON at look number ``look`` (1-based; 0 before the first look).

    Parameters
    ----------
    spec : BoardSpec
        The board.
    ranking : Ranking
        The ranking that look produced.
    look : int
        The look's number.
    x : numpy.ndarray
        The board's rows in evaluation order, consumed up to the look (``ranking.n_units`` rows).
    retired : dict
        Retired models (name -> details).
    tracker : ScoreTracker, optional
        Carries the score intervals from earlier looks.

    Returns
    -------
    dict
        ``models`` (best first: score, score interval, rank interval, tier, status), ``look``,
        ``certified_pairs``, the guarantees and the settings (see docs/service.md).

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md).
    Waudby-Smith, I. and Ramdas, A. (2020). Confidence sequences for sampling without replacement.
    NeurIPS 33.
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by betting.
    Journal of the Royal Statistical Society Series B 86(1), 1-27.

    Examples
    --------
    After 10 of 20 items (without replacement) the mean over all 20 items lies, whatever the other
    10 scores are, in ``[s / 20, (s + 10) / 20]`` for a sum ``s`` of 0/1 scores; at so few items the
    confidence sequence is that interval:

    >>> from rankci.service.spec import make_spec
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b", "c"],
    ...                  items=[f"q{i}" for i in range(20)], order_seed=0, look_every=10)
    >>> import numpy as np
    >>> scores = (np.random.default_rng(0).random((20, 3)) < [0.9, 0.5, 0.1]).astype(float)
    >>> x = scores[spec.order]
    >>> monitor = spec.make_monitor()
    >>> monitor.update_block(x[:10])
    10
    >>> snap = leaderboard_snapshot(spec, monitor.ranking(), 1, x, {})
    >>> [(m["model"], m["score"], m["score_lower"], m["score_upper"]) for m in snap["models"]]
    [('a', 0.8, 0.4, 0.9), ('b', 0.5, 0.25, 0.75), ('c', 0.3, 0.15, 0.65)]
    >>> s = x[:10].sum(axis=0)
    >>> (s / 10).tolist(), (s / 20).tolist(), ((s + 10) / 20).tolist()
    ([0.8, 0.5, 0.3], [0.4, 0.25, 0.15], [0.9, 0.75, 0.65])
    """
    t_look = int(ranking.n_units)
    tracker = tracker or ScoreTracker(spec)
    entrants = ranking.details.get("entrants")
    tracker.advance(x, t_look, _stops(spec, retired), entrants)
    if entrants is None:
        counts = tracker.overall.count
        lower, upper = tracker.overall.interval()
    else:  # an open board: models may have joined later
        counts, lower, upper = tracker.counts_and_intervals()
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
        if entrants is not None:  # when the model joined, and its pairs' threshold
            row["joined_at"] = int(entrants[j]["t"])
            row["joined_look"] = int(entrants[j]["look"])
            row["threshold"] = float(entrants[j]["threshold"])
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
    if tracker.clusters:
        out["subscores"] = _subscores(spec, tracker)
    return out


def _subscores(spec: BoardSpec, tracker: ScoreTracker) -> list[dict]:
    """Per cluster: each model's mean on the cluster's consumed items and its interval."""
    out = []
    for name, size, running in tracker.clusters:
        lower, upper = running.interval()
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = running.total / running.count
        out.append(
            {
                "cluster": name,
                "n_items": size,
                "models": [
                    {
                        "model": spec.models[j],
                        "score": _num(mean[j]),
                        "score_lower": _num(lower[j]),
                        "score_upper": _num(upper[j]),
                        "n_items": int(running.count[j]),
                    }
                    for j in range(len(running.count))  # models that joined later: none
                ],
            }
        )
    return out
