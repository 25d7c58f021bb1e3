"""Replaying a finished evaluation through the monitor, reproducibly.

The contract (also that of ``rankci monitor DATA``):

1. items missing a score for any model are excluded (and counted);
2. the remaining n items are sorted by item id as strings;
3. the evaluation order is ``numpy.random.default_rng(order_seed).permutation(n)`` of that list
   (``order_seed``, 0 by default; ``--order-seed`` on the command line);
4. looks fall on every K-th item and on the last item (K from the spec's ``look_every``: an item
   count or a percentage ``"P%"`` of n, rounded up; ``"1%"`` by default).

The settings are one :class:`~rankci.sequential.spec.MonitorSpec` (``replay(scores, spec)``; or
its settings as keywords); the ranking carries it, with ``n_items`` and ``look_every`` as the
monitor ran them (``run.ranking.spec``), so ``replay(scores, run.ranking.spec, order_seed=S)`` gives
the same looks again.

Items with several prompt variants are scored by their mean over the variants (``Scores.units``
with ``unit="item"``), after the one rule for inconsistent variants
(:data:`rankci.data.PROMPT_RULE`: a variant that not every model has is dropped when the table is
read); what that rule dropped is carried in ``excluded["inconsistent_prompts"]``, as in every
fixed-sample result. Under
``sampling="finite"`` the benchmark is the n complete items, N = n.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankci._base import LazyModule, RankciWarning, jsonable
from rankci.data import Scores
from rankci.ranking import Ranking
from rankci.sequential.monitor import Monitor
from rankci.sequential.spec import REPLAY_DEFAULTS, MonitorSpec, parse_look_every
from rankci.sequential.statements import nothing_certified_at

pd = LazyModule("pandas")  # imported on first use: a replay answers without a frame

__all__ = ["MonitorRun", "evaluation_order", "parse_look_every", "replay"]


def evaluation_order(item_ids: Sequence[str], order_seed: int) -> np.ndarray:
    """The contract's item order: indices into ``item_ids`` (position p holds item ``order[p]``).

    Items are sorted by id as strings, then permuted by
    ``numpy.random.default_rng(order_seed).permutation(n)``.

    Parameters
    ----------
    item_ids : sequence of str
        Item ids (compared as strings).
    order_seed : int
        Seed of the permutation.

    Returns
    -------
    numpy.ndarray
        Indices into ``item_ids`` in evaluation order.

    References
    ----------
    NumPy documentation, ``numpy.random.Generator.permutation`` (the default bit generator is
    PCG64).
    O'Neill, M. E. (2014). PCG: A family of simple fast space-efficient statistically good
    algorithms
    for random number generation. Technical report HMC-CS-2014-0905, Harvey Mudd College.

    Examples
    --------
    Sorted, the ids are a, b, c (indices 1, 0, 2); the seed-0 permutation of 3 is (2, 0, 1):

    >>> import numpy as np
    >>> np.random.default_rng(0).permutation(3).tolist()
    [2, 0, 1]
    >>> evaluation_order(["b", "a", "c"], 0).tolist()
    [2, 1, 0]
    """
    labels = np.asarray(item_ids, dtype=str)
    ids = np.argsort(labels, kind="stable")
    return ids[np.random.default_rng(int(order_seed)).permutation(labels.size)]


@dataclass(frozen=True, repr=False, eq=False)
class MonitorRun:
    """The result of :func:`replay`: every look, the final ranking and the evaluation cost.

    Attributes
    ----------
    ranking : Ranking
        At the last look.
    looks : list of dict
        ``t`` (items consumed), ``n_certified`` (certified ordered pairs after closure),
        ``evaluations`` (model-item scores used so far), ``n_active`` and more.
    n_items : int
        Items in the replay (complete items).
    n_consumed : int
        Items consumed before the evaluation finished.
    evaluations : int
    cost_fraction : float
        ``evaluations / (n_items * M)``.
    order : tuple of str
        Item ids in evaluation order.
    excluded : dict
        ``items_excluded`` (items not scored by every model, with ``missing_by_model``) and, when
        the prompt-variant rule dropped rows as the table was read, ``inconsistent_prompts``
        (``rows``, ``observations``, ``variants``, ``rows_by_model``, ``reason``).
    config : dict
        alpha, sampling, certifier, bet, order_seed, look_every, retire, k, freeze (and
        ``resumed_from``, the item and look counts of a monitor continued by
        ``replay(..., monitor=)``).
    spec : MonitorSpec or None
        The settings the monitor ran with (``ranking.spec``).
    monitor : Monitor or None
        The monitor after the replay: ``monitor.save(path)`` keeps it, to be continued by
        ``replay(more_scores, monitor=Monitor.restore(path))``.
    """

    ranking: Ranking
    looks: list
    n_items: int
    n_consumed: int
    evaluations: int
    cost_fraction: float
    order: tuple
    excluded: dict
    config: dict = field(default_factory=dict)
    spec: MonitorSpec | None = None
    monitor: Any = field(default=None, compare=False)

    def to_frame(self) -> pd.DataFrame:
        """The final ranking, best first (with ``rank_set`` under the exact certifier)."""
        k = self.config.get("k")
        frame = self.ranking.to_frame(k)
        sets = self.ranking.details.get("rank_sets")
        if sets is not None:
            frame["rank_set"] = [sets[m] for m in frame["model"]]
        return frame

    def looks_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.looks)

    def to_dict(self) -> dict:
        """JSON-safe, following the schema of ``rankci monitor --format json``."""
        rows = []
        for record in self.to_frame().to_dict(orient="records"):
            rows.append({key: jsonable(value) for key, value in record.items()})
        out = {
            **jsonable(self.config),
            "n_models": self.ranking.n_models,
            "n_items": int(self.n_items),
            "n_consumed": int(self.n_consumed),
            "excluded": jsonable(self.excluded),
            "looks": jsonable(self.looks),
            "final": {
                "models": rows,
                "dominance": [list(pair) for pair in self.ranking.dominance_pairs()],
                "retired": jsonable(self.ranking.details.get("retired", {})),
            },
            "evaluations": int(self.evaluations),
            "cost_fraction": float(self.cost_fraction),
            "guarantee": self.ranking.guarantee,
        }
        if "nothing_certified" in self.ranking.details:
            out["final"]["nothing_certified"] = self.ranking.details["nothing_certified"]
        if "n_surviving_orders" in self.ranking.details:
            out["final"]["n_surviving_orders"] = int(self.ranking.details["n_surviving_orders"])
        if self.alpha_event is not None:
            out["alpha_event"] = jsonable(self.alpha_event)
        return out

    @property
    def alpha_event(self) -> dict | None:
        """Where the <= alpha event happened (see :meth:`Monitor.look`), or None."""
        return self.ranking.details.get("alpha_event")

    def __repr__(self) -> str:
        c = self.config
        return (
            f"MonitorRun({self.ranking.n_models} models, {self.n_items} items, "
            f"consumed {self.n_consumed}, {len(self.looks)} looks, certifier={c['certifier']!r}, "
            f"sampling={c['sampling']!r}, cost_fraction={self.cost_fraction:.3f})\n"
            + repr(self.ranking)
        )

    def _repr_html_(self) -> str:
        """Jupyter: the run in one line, then the final ranking (table, guarantee, plot)."""
        import html

        c = self.config
        head = (
            f"Monitor replay: {self.n_consumed} of {self.n_items} items consumed, "
            f"{len(self.looks)} looks, certifier {c.get('certifier')}, sampling "
            f"{c.get('sampling')}, {self.cost_fraction:.1%} of the evaluations"
        )
        return f"<div><p><b>{html.escape(head)}</b></p>{self.ranking._repr_html_()}</div>"


def replay(
    scores: Scores,
    spec: MonitorSpec | None = None,
    *,
    order_seed: int = 0,
    monitor: Monitor | None = None,
    **settings: Any,
) -> MonitorRun:
    """Replay a Scores table through a :class:`Monitor` (see the module docstring's contract).

    Parameters
    ----------
    scores : Scores
    spec : MonitorSpec, optional
        The monitor's settings (:class:`~rankci.sequential.spec.MonitorSpec`). Its ``n_items``
        is left None (it becomes n under ``sampling="finite"``), or equal to n. Without it, the
        keywords below build it, with ``look_every="1%"`` (:data:`REPLAY_DEFAULTS`).
    order_seed : int, default 0
        Seed of the item order, ``numpy.random.default_rng(order_seed).permutation(n)`` (a
        separate seed, part of the evaluation design; the board's field and ``--order-seed``).
    monitor : Monitor, optional
        Continue this monitor (one restored by ``Monitor.restore``, ``OpenMonitor.restore``)
        instead of starting a new one: the items of ``scores`` are fed after those it consumed,
        in the contract's order, with its own settings (a ``spec`` or keyword that differs from
        ``monitor.spec`` is refused). A model of ``scores`` not on the monitor joins it first
        (``add_model``; only with ``entry="open"``); a model of the monitor absent from
        ``scores`` must be retired or withdrawn. ``n_consumed`` and ``evaluations`` count this
        replay's items; ``looks`` are all the monitor's.
    **settings
        The settings of :class:`~rankci.sequential.spec.MonitorSpec` as keywords: alpha,
        sampling, bet, lam, grid, eps, certifier, look_every (items between looks, or ``"P%"`` of
        the items), retire, k, width, freeze (``False``: the exact mode, every wealth updated).
        Beside ``spec``, a keyword must agree with it.

    Returns
    -------
    MonitorRun

    References
    ----------
    Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
    :mod:`rankci.sequential`; docs/references.md),
    Sections 3-4.
    Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
    betting. Journal of the Royal Statistical Society Series B 86(1), 1-27.

    Examples
    --------
    >>> import numpy as np, rankci
    >>> x = np.random.default_rng(1).random((1000, 4)) < [0.8, 0.6, 0.55, 0.3]
    >>> run = replay(rankci.Scores.from_matrix(x), retire="topk", k=1, look_every="5%")
    >>> run.ranking.top_k(1).tolist()
    ['in', 'out', 'out', 'out']
    >>> run.n_consumed < 1000 and run.cost_fraction < 0.5
    True
    >>> again = replay(rankci.Scores.from_matrix(x), run.ranking.spec)
    >>> again.looks == run.looks
    True

    Continued on more items (a monitor kept with ``run.monitor.save``):

    >>> first = replay(rankci.Scores.from_matrix(x[:400]), sampling="iid", look_every=100)
    >>> more = replay(rankci.Scores.from_matrix(x[400:]), monitor=first.monitor)
    >>> [look["t"] for look in more.looks], more.n_consumed
    ([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], 600)
    """
    if not isinstance(scores, Scores):
        raise ValueError(f"replay expects Scores (rankci.read_scores), got {type(scores).__name__}")
    if monitor is not None:
        spec = continued_spec(monitor, spec, settings)
    else:
        spec = MonitorSpec.given(spec, settings, "replay", defaults=REPLAY_DEFAULTS)
    if isinstance(order_seed, bool) or not isinstance(order_seed, (int, np.integer)):
        raise ValueError(f"order_seed must be an integer, got {order_seed!r}")
    units = scores.units("item", missing="pairwise")
    values = units.values
    complete = np.isfinite(values).all(axis=1)
    excluded = {"items_excluded": int((~complete).sum())}
    if excluded["items_excluded"]:
        excluded["reason"] = "items not scored by every model"
        excluded["missing_by_model"] = {
            m: int(c) for m, c in zip(units.models, (~np.isfinite(values)).sum(axis=0)) if c
        }
    if "inconsistent_prompts" in units.excluded:  # PROMPT_RULE, applied when the table was read
        excluded["inconsistent_prompts"] = dict(units.excluded["inconsistent_prompts"])
    labels = np.asarray(units.labels, dtype=str)[complete]
    values = values[complete]
    n = values.shape[0]
    if n == 0:
        raise ValueError("no item is scored by every model, so there is nothing to replay")
    order = evaluation_order(labels, order_seed)
    if monitor is not None:
        start = {"t": int(monitor.t), "looks": len(monitor.looks)}
        before = monitor.evaluations
        values = continued_columns(monitor, units.models, values)
        every = monitor.look_every
    else:
        start, before = None, 0
        monitor, every = new_monitor(units.models, spec, n)
    monitor.update_block(values[order])
    ranking = monitor.ranking()  # the look at the last item (already taken under model F)
    silent = "alpha_event" not in ranking.details and not ranking.dominance.any()
    if silent and monitor.n_models > 1:
        why = nothing_certified_at(monitor.t, monitor.log_wealth(), monitor.alpha)
        ranking.details["nothing_certified"] = why
        warnings.warn(why, RankciWarning, stacklevel=2)
    used = monitor.t - (start["t"] if start else 0)
    evaluations = monitor.evaluations - before
    config = {
        "alpha": monitor.alpha,
        "sampling": monitor.sampling,
        "certifier": monitor.certifier,
        "bet": monitor.bet,
        "order_seed": int(order_seed),
        "look_every": every,
        "retire": monitor.retire_rule,
        "k": monitor.k,
    }
    config["freeze"] = bool(monitor.freeze)
    if monitor.bet == "fixed":
        config["lam"] = float(spec.lam)
    if monitor.retire_rule == "width":
        config["width"] = monitor.width
    if start is not None:
        config["resumed_from"] = start
    return MonitorRun(
        ranking=ranking,
        looks=[dict(record) for record in monitor.looks],
        n_items=n,
        n_consumed=used,
        evaluations=evaluations,
        cost_fraction=evaluations / (n * monitor.n_models),
        order=tuple(labels[order]),
        excluded=excluded,
        config=config,
        spec=monitor.spec,
        monitor=monitor,
    )


def new_monitor(models: Sequence[str], spec: MonitorSpec, n: int) -> tuple[Monitor, int | None]:
    """The monitor of a replay of ``n`` complete items, and its look interval (items)."""
    finite = spec.sampling == "finite"
    if finite and spec.n_items not in (None, n):
        raise ValueError(
            f"the spec's n_items={spec.n_items} is not the {n} items scored by every model, the "
            "benchmark of this replay: leave n_items None"
        )
    every = None if spec.look_every is None else parse_look_every(spec.look_every, n)
    if spec.entry == "open":  # the levels of models that may join (none joins in a table)
        from rankci.sequential.entry import OpenMonitor as make
    else:
        make = Monitor
    monitor = make(models, spec.replace(n_items=n if finite else spec.n_items, look_every=every))
    return monitor, every


def continued_spec(monitor: Monitor, spec: MonitorSpec | None, settings: dict) -> MonitorSpec:
    """The spec of ``replay(..., monitor=)``: the monitor's; a different one is refused."""
    if not isinstance(monitor, Monitor):
        raise ValueError(
            f"monitor must be a rankci.sequential Monitor (or OpenMonitor), got "
            f"{type(monitor).__name__}"
        )
    if spec is not None and spec != monitor.spec:
        ours, theirs = monitor.spec.to_dict(), spec.to_dict()
        differ = [k for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)]
        raise ValueError(
            "replay(spec, monitor=) continues the monitor with its own settings; the spec "
            "differs in "
            + ", ".join(f"{k} ({theirs.get(k)!r}, not {ours.get(k)!r})" for k in differ)
        )
    return MonitorSpec.given(monitor.spec, settings, "replay")


def continued_columns(monitor: Monitor, models: Sequence[str], values: np.ndarray) -> np.ndarray:
    """The items of a continued replay as (n, M) in the monitor's model order: models new to
    the monitor join it first (``entry="open"``), a retired model's column is NaN."""
    new = [m for m in models if m not in monitor.models]
    if new and monitor.spec.entry != "open":
        raise ValueError(
            f"model {new[0]!r} is not on the monitor being continued, whose models are fixed "
            "(entry='closed'): " + ", ".join(monitor.models)
        )
    absent = [m for m, on in zip(monitor.models, monitor.active) if on and m not in models]
    if absent:
        raise ValueError(
            f"the scores have no column for model {absent[0]!r}, which the monitor being "
            "continued still evaluates (retire or withdraw it first)"
        )
    for name in new:
        monitor.add_model(name)
    out = np.full((values.shape[0], monitor.n_models), np.nan)
    out[:, [monitor.models.index(m) for m in models]] = values
    return out
