"""Models that join later: the open-entry monitor (``MonitorSpec(entry="open")``).

A board with ``entry="open"`` accepts new models at any time (:meth:`OpenMonitor.add_model`).
The family of ordered pairs is then countable, so the level ``alpha`` is spread over it by weights
fixed when a model joins (a weighted e-Bonferroni procedure: the weighted average of e-values of
Vovk and Wang 2021 read pair by pair, as in :mod:`rankci.sequential.combine`).

The weight rule ("harmonic"). The ``M0`` models given at creation are entrants ``1..M0`` (in
their given order; ``M0 >= 2``), the m-th model added later is entrant ``M0 + m``. Entrant ``m``
opens the ordered pairs with entrants ``1..m-1``. Their levels:

* both models present at creation: ``alpha_jl = alpha / M0^2`` (the ``M0 (M0 - 1)`` initial pairs
  share ``alpha (1 - 1/M0)``);
* entrant ``m > M0`` has weight ``w_m = 1 / ((m - 1) m)`` (``sum_{m > M0} w_m = 1 / M0``), split
  evenly over the ``2 (m - 1)`` ordered pairs it opens: ``alpha_jl = alpha / (2 m (m - 1)^2)``.

So ``sum alpha_jl = alpha (1 - 1/M0) + alpha / M0 = alpha`` over every pair that could ever exist,
and a pair (j, l) is certified once its e-process reaches ``1 / alpha_jl``. A pair's e-process
starts at the later model's first scored item on the board's shared order (its entry): it never
reads an item from before. The proof that every statement holds at every look with probability
at least ``1 - alpha`` over all entrants at once is in docs/monitor.md ("Models that join later").

Implementation: the pairs a model opens are one :class:`~rankci.sequential.wealth.PairWealth`
started at its entry (over the entrant and the models before it), whose pairs among the older
models are frozen at once (never updated, never read), so each item costs one vectorised update
of ``2 (m - 1)`` pairs per entrant, ``M (M - 1)`` pairs in all, as on a closed board.

References
----------
Vovk, V. and Wang, R. (2021). E-values: calibration, combination and applications. Annals of
Statistics 49(3), 1736-1754.
Ville, J. (1939). Etude critique de la notion de collectif. Gauthier-Villars, Paris.
Rank confidence sequences: anytime-valid leaderboards. Manuscript, 2026 (the source of
:mod:`rankci.sequential`; docs/references.md), Section 4 (e-Bonferroni) and its limitation
"models are fixed in advance".

Examples
--------
>>> import numpy as np
>>> mon = OpenMonitor(["a", "b"], sampling="iid", entry="open")
>>> rng = np.random.default_rng(0)
>>> mon.update_block(rng.random((2000, 2)) < [0.8, 0.3])
2000
>>> mon.add_model("c")
>>> mon.update_block(rng.random((3000, 3)) < [0.8, 0.3, 0.1])
3000
>>> mon.ranking().dominance_pairs()
[('a', 'b'), ('a', 'c'), ('b', 'c')]
>>> [(e["model"], e["t"]) for e in mon.entrants]
[('a', 0), ('b', 0), ('c', 2000)]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from numbers import Integral
from typing import Any

import numpy as np

from rankci._base import LazyModule, is_series
from rankci.ranking import (
    DominanceCycleError,
    Ranking,
    ranking_from_dominance,
    transitive_closure,
)
from rankci.sequential.intake import block_matrix, row_from_mapping, usable_rows
from rankci.sequential.monitor import Monitor
from rankci.sequential.persistence import (
    OPEN_FORMAT,
    changes_meta,
    load_changes,
    loaded,
    read_state,
    spec_of,
    write_state,
)
from rankci.sequential.retirement import models_to_retire
from rankci.sequential.spec import MonitorSpec
from rankci.sequential.statements import alpha_event_message
from rankci.sequential.wealth import PairWealth

pd = LazyModule("pandas")  # imported on first use: a service that builds no frame never pays it

__all__ = ["ENTRY_RULE", "OpenMonitor", "entrant_log_thresholds", "pair_level"]

#: The weight rule of open boards, as recorded in their rankings' details.
ENTRY_RULE = (
    "harmonic: initial pairs alpha/M0^2; the pairs of entrant m > M0 alpha/(2 m (m-1)^2) "
    "(weight 1/((m-1) m) split over its 2(m-1) ordered pairs); all levels sum to alpha"
)


def pair_level(alpha, n_initial: int, entrant: int):
    """The level ``alpha_jl`` of every ordered pair opened by entrant ``entrant`` (1-based).

    Parameters
    ----------
    alpha : float or fractions.Fraction
        The board's level (a Fraction gives the exact value).
    n_initial : int
        ``M0 >= 2``, the number of models at creation (entrants ``1..M0``).
    entrant : int
        ``m >= 2``: the later model of the pair is the m-th entrant.

    Returns
    -------
    float or Fraction
        ``alpha / M0^2`` for ``m <= M0``; ``alpha / (2 m (m - 1)^2)`` for ``m > M0``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> pair_level(Fraction(1, 20), 3, 3), pair_level(Fraction(1, 20), 3, 4)
    (Fraction(1, 180), Fraction(1, 1440))
    """
    if isinstance(n_initial, bool) or not isinstance(n_initial, Integral) or n_initial < 2:
        raise ValueError(f"n_initial must be an integer >= 2, got {n_initial!r}")
    if isinstance(entrant, bool) or not isinstance(entrant, Integral) or entrant < 2:
        raise ValueError(f"entrant must be an integer >= 2, got {entrant!r}")
    m = int(entrant)
    if m <= n_initial:
        return alpha / (n_initial * n_initial)
    return alpha / (2 * m * (m - 1) * (m - 1))


def entrant_log_thresholds(levels: np.ndarray) -> np.ndarray:
    """M x M ``log(1/alpha_jl)`` (NaN diagonal) from each model's entrant level.

    ``levels[k]`` is the level :func:`pair_level` of the pairs model ``k`` opened when it joined
    (models in entry order); pair (j, l) has the level of its later model, ``levels[max(j, l)]``.
    Shared by :class:`OpenMonitor` and the open arena (:class:`rankci.votes.ArenaMonitor`).

    Examples
    --------
    >>> np.round(np.exp(-entrant_log_thresholds(np.array([0.0125, 0.0125, 0.00208]))), 5)
    array([[    nan, 0.0125 , 0.00208],
           [0.0125 ,     nan, 0.00208],
           [0.00208, 0.00208,     nan]])
    """
    idx = np.arange(len(levels))
    later = np.maximum(idx[:, None], idx[None, :])
    out = -np.log(np.asarray(levels, dtype=float)[later])
    np.fill_diagonal(out, np.nan)
    return out


class OpenMonitor(Monitor):
    """An anytime-valid monitor whose models may join later (``MonitorSpec(entry="open")``).

    Made as ``OpenMonitor(models, spec)`` with ``spec.entry == "open"`` (``Monitor`` refuses that
    setting and names this class). It takes the settings of
    :class:`~rankci.sequential.Monitor` with the restrictions of ``entry="open"`` (sampling
    ``iid``, the e-Bonferroni certifier, no freezing); retirement rules work as there.
    :meth:`add_model` adds a model; :attr:`entrants` says when each joined and its pairs' level.

    The certified set at a look: every ordered pair (j, l) with ``E^{jl} >= 1/alpha_jl``
    (:func:`pair_level` of the later entrant), added to those of earlier looks and closed
    transitively; ranks are counted over the current models by
    :func:`rankci.ranking.ranking_from_dominance`.

    Examples
    --------
    >>> mon = OpenMonitor(["a", "b", "c"], sampling="iid", entry="open")
    >>> isinstance(mon, Monitor), mon.certifier
    (True, 'bonferroni')
    """

    def __init__(
        self, models: Sequence[str], spec: MonitorSpec | None = None, **settings: Any
    ) -> None:
        if isinstance(models, str) or not isinstance(models, Sequence):
            raise ValueError("models must be a sequence of model names")
        names = [str(m) for m in models]
        if len(set(names)) != len(names):
            raise ValueError("model names must be distinct")
        if len(names) < 2:
            raise ValueError("an open board needs at least 2 models at creation")
        self.spec = spec = MonitorSpec.given(spec, settings, "Monitor")
        if spec.entry != "open":
            raise ValueError(
                "OpenMonitor needs entry='open' (MonitorSpec(entry='open', sampling='iid'))"
            )
        spec.check_models(len(names))
        self.alpha = spec.alpha
        self.certifier_requested = spec.certifier
        self.certifier = "bonferroni"
        self.retire_rule = spec.retire
        self.k = spec.k
        self.width = spec.width
        self.look_every = spec.look_every_items()  # "P%" of the items, or a count
        self.freeze_requested = spec.freeze
        self.freeze = False
        self.n_initial = len(names)
        self.models: tuple[str, ...] = ()
        self._index: dict[str, int] = {}
        self._groups: list[dict] = []
        self._active = np.zeros(0, dtype=bool)
        self._sum = np.zeros(0)
        self._count = np.zeros(0, dtype=np.int64)
        self._level = np.zeros(0)  # per model: the level of the pairs it opened
        self._dominance = np.zeros((0, 0), dtype=bool)
        self._missing_by_model = np.zeros(0, dtype=np.int64)
        self._t = 0
        self.evaluations = 0
        self.looks: list[dict] = []
        self.retired: dict[str, dict] = {}
        #: One record per model, in entry order: name, entrant number, item count and look
        #: count at entry, and the level and threshold of the pairs it opened.
        self.entrants: list[dict] = []
        self._excluded_items = 0
        self._ranking: Ranking | None = None
        self._ranking_looks: int | None = None  # read by Monitor.ranking (unused here)
        self.alpha_event: dict | None = None
        self._init_changes()
        self._add_group(names)

    # ------------------------------------------------------------------ facts
    @property
    def t(self) -> int:
        return self._t

    @property
    def active(self) -> np.ndarray:
        return self._active.copy()

    @property
    def sampling(self) -> str:
        return "iid"

    @property
    def bet(self) -> str:
        return self.spec.bet

    @property
    def n_items(self) -> None:
        return None

    @property
    def n_frozen_pairs(self) -> int:
        return 0

    @property
    def finished(self) -> bool:
        """Fewer than two active models (a model that joins may reopen the evaluation)."""
        return int(self._active.sum()) < 2

    def cost_fraction(self) -> float:
        """Evaluations used over the evaluations of every model present at every item it could
        have been scored on (from its entry)."""
        total = sum(self._t - e["t"] for e in self.entrants)
        return self.evaluations / total if total else 0.0

    def log_wealth(self) -> np.ndarray:
        """M x M log-wealths (NaN diagonal); each pair's e-process from its later model's entry.

        Each group's wealth is read only at the pairs it owns (those with one of its new models:
        2 (M_g - 1) for an entrant, not its M_g^2), with the bits of its whole matrix
        (:meth:`PairWealth.log_wealth_at`), so a look costs O(M^2) in all, not O(M^3).
        """
        m = self.n_models
        out = np.full(m * m, np.nan)
        for group in self._groups:
            if group["wealth"] is None:
                continue
            rows, cols = group["pairs"]
            out[rows * m + cols] = group["wealth"].log_wealth_at(rows * len(group["cols"]) + cols)
        return out.reshape(m, m)

    def log_thresholds(self) -> np.ndarray:
        """M x M ``log(1/alpha_jl)`` (NaN diagonal): the level of the later entrant's pairs."""
        return entrant_log_thresholds(self._level)

    def __repr__(self) -> str:
        return (
            f"OpenMonitor({self.n_models} models, t={self.t}, entry='open', "
            f"active={int(self._active.sum())}, certified pairs={int(self._dominance.sum())})"
        )

    # ------------------------------------------------------------------ entry
    def add_model(self, name: str) -> None:
        """Add a model: its pairs' e-processes start at the next item the board consumes.

        The pairs it opens with every current model (retired ones included: those pairs get no
        evidence) get the level :func:`pair_level` of its entrant number, fixed now.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a model name is a non-empty string, got {name!r}")
        if name in self._index:
            raise ValueError(f"model {name!r} is on the board already")
        self._add_group([name])

    def _add_group(self, names: list[str]) -> None:
        before = self.n_models
        total = before + len(names)
        self.models = self.models + tuple(names)
        self._index = {name: j for j, name in enumerate(self.models)}
        grow = len(names)
        self._active = np.concatenate([self._active, np.ones(grow, dtype=bool)])
        self._sum = np.concatenate([self._sum, np.zeros(grow)])
        self._count = np.concatenate([self._count, np.zeros(grow, dtype=np.int64)])
        self._missing_by_model = np.concatenate([self._missing_by_model, np.zeros(grow, np.int64)])
        dominance = np.zeros((total, total), dtype=bool)
        dominance[:before, :before] = self._dominance
        self._dominance = dominance
        spec = self.spec
        wealth = PairWealth(
            total, sampling="iid", bet=spec.bet, lam=spec.lam, grid=spec.grid, eps=spec.eps
        )
        retired_before = np.flatnonzero(~self._active[:before])
        if retired_before.size:
            wealth.retire(retired_before)
        if before:  # an entrant: only its own pairs are read, so only they are updated
            others = np.ones((total, total), dtype=bool)
            others[before:, :] = others[:, before:] = False
            wealth.freeze_pairs(others)
        self._groups.append(
            {
                "start": self._t,
                "wealth": wealth,
                "cols": np.arange(total),
                "new": np.arange(before, total),
                "new_local": np.arange(before, total),
                "pairs": owned_pairs(before, total),
            }
        )
        levels = []
        for j, name in enumerate(names, start=before + 1):  # j: entrant number, 1-based
            level = pair_level(self.alpha, self.n_initial, max(j, 2))
            levels.append(level)
            self.entrants.append(
                {
                    "model": name,
                    "entrant": j,
                    "t": int(self._t),
                    "look": len(self.looks),
                    "level": float(level),
                    "threshold": 1.0 / float(level),
                }
            )
        self._level = np.concatenate([self._level, np.array(levels, dtype=float)])
        self._ranking = None

    def entrants_frame(self) -> pd.DataFrame:
        """One row per model, in entry order: its entrant number, the item count (``joined_at``)
        and look count (``joined_look``) at which it joined, its items so far, the level of the
        pairs it opened and their threshold ``1/alpha_jl`` (``print`` it for the text form).

        Examples
        --------
        >>> mon = OpenMonitor(["a", "b"], sampling="iid", entry="open", alpha=0.05)
        >>> mon.add_model("c")
        >>> print(mon.entrants_frame().to_string(index=False))
        model  entrant  joined_at  joined_look  items    level  threshold
            a        1          0            0      0 0.012500       80.0
            b        2          0            0      0 0.012500       80.0
            c        3          0            0      0 0.002083      480.0
        """
        rows = [
            {
                "model": e["model"],
                "entrant": e["entrant"],
                "joined_at": e["t"],
                "joined_look": e["look"],
                "items": int(self._count[j]),
                "level": round(e["level"], 6),
                "threshold": round(e["threshold"], 6),
            }
            for j, e in enumerate(self.entrants)
        ]
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ feeding
    def update(self, item: Mapping[str, float] | Sequence[float] | np.ndarray) -> None:
        """Consume one item: a mapping model -> score, or one score per current model."""
        if is_series(item):
            row = row_from_mapping(item.to_dict(), self._index)
        elif isinstance(item, Mapping):
            row = row_from_mapping(item, self._index)
        else:
            row = np.asarray(item, dtype=float)
        if row.shape != (self.n_models,):
            raise ValueError(
                f"an item needs {self.n_models} scores in model order, got shape {row.shape}"
            )
        self.update_block(row[None, :])

    def update_block(self, block) -> int:
        """Consume several items ((B, M) in model order, a DataFrame or mappings); looks fall at
        the multiples of ``look_every``. Returns the number of rows used."""
        x = block_matrix(block, self._index)
        if x.shape[0] and self.finished:
            raise ValueError(self._finished_message())
        start = 0
        while start < x.shape[0] and not self.finished:
            stop = x.shape[0]
            if self.look_every is not None:
                stop = min(stop, start + self.look_every - self._t % self.look_every)
            chunk = self._usable(x[start:stop])
            if chunk.shape[0]:
                self._consume(chunk)
            start = stop
            if self._look_due():
                self._look()
        return start

    def _consume(self, chunk: np.ndarray, count: bool = True) -> None:
        active = self._active
        for group in self._groups:
            wealth = group["wealth"]
            if isinstance(wealth, _Stopped):
                continue
            if wealth.n_active < 2 or not wealth.active[group["new_local"]].any():
                group["wealth"] = _Stopped(wealth)  # no pair of this group is updated any more
                continue
            wealth.update(chunk[:, group["cols"]])
        self._sum[active] = np.cumsum(
            np.concatenate([self._sum[None, active], chunk[:, active]]), axis=0
        )[-1]
        self._count[active] += chunk.shape[0]
        self._t += chunk.shape[0]
        self.evaluations += chunk.shape[0] * int(active.sum())

    def _flush(self) -> None:  # nothing is buffered
        return None

    def _usable(self, x: np.ndarray) -> np.ndarray:
        kept, missing = usable_rows(x, self._active, self.models, self._t)
        if kept.shape[0] < x.shape[0]:
            self._excluded_items += x.shape[0] - kept.shape[0]
            self._missing_by_model[self._active] += missing
        return kept

    def _look_due(self) -> bool:
        if self._t == 0 or (self.looks and self.looks[-1]["t"] == self._t):
            return False
        return self.look_every is not None and self._t % self.look_every == 0

    # ------------------------------------------------------------------ looks
    def retire(self, model: str | int, reason: str = "manual") -> None:
        """Stop evaluating a model: every pair with it keeps its wealth for good."""
        self._retire([self._model_index(model)], str(reason))

    def _retire(self, indices, reason: str) -> None:
        for j in indices:
            j = int(j)
            if self._active[j]:
                self._active[j] = False
                for group in self._groups:
                    if group["wealth"] is not None and j < len(group["cols"]):
                        group["wealth"].retire([j])
                self.retired[self.models[j]] = {"t": self._t, "reason": reason}
        self._ranking = None

    def _look(self) -> None:
        self._ranking = None
        lw = self.log_wealth()
        with np.errstate(invalid="ignore"):
            certified = lw >= self.log_thresholds()
        np.fill_diagonal(certified, False)
        newly: list[str] = []
        if self.alpha_event is None:
            candidate = self._dominance | certified
            try:
                closed = transitive_closure(candidate, self.models)
            except DominanceCycleError as error:
                self._record_alpha_event(error)
            else:
                self._dominance = closed
                if self.retire_rule != "none":
                    leave = models_to_retire(
                        self.retire_rule,
                        self._build_ranking(),
                        self._dominance,
                        self._active,
                        self.k,
                        self.width,
                    )
                    before = set(self.retired)
                    self._retire(np.flatnonzero(leave), self.retire_rule)
                    newly = [n for n in self.models if n in self.retired and n not in before]
        if self.alpha_event is not None:
            self._dominance = np.zeros_like(self._dominance)
        m = self.n_models
        counts = self._dominance.sum(axis=0), self._dominance.sum(axis=1)
        record = {
            "t": self._t,
            "n_models": m,
            "n_certified": int(np.count_nonzero(self._dominance)),
            "evaluations": int(self.evaluations),
            "n_active": int(self._active.sum()),
            "lower": (1 + counts[0]).tolist(),
            "upper": (m - counts[1]).tolist(),
        }
        if newly:
            record["retired"] = newly
        if self.alpha_event is not None:
            record["alpha_event"] = True
        self.looks.append(record)

    def _record_alpha_event(self, error: DominanceCycleError) -> None:
        import warnings

        from rankci._base import RankciWarning

        self.alpha_event = {
            "t": int(self._t),
            "look": len(self.looks) + 1,
            "reason": "the certified pairs contain a cycle",
            "cycle": list(error.models),
        }
        warnings.warn(
            alpha_event_message(self.alpha, self._t, self.alpha_event["reason"], error.models),
            RankciWarning,
            stacklevel=3,
        )

    def _scores(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._count > 0, self._sum / np.maximum(self._count, 1), np.nan)

    def _build_ranking(self, dominance=None, n_looks=None) -> Ranking:
        details = {
            "t": int(self._t),
            "n_looks": len(self.looks),
            "evaluations": int(self.evaluations),
            "cost_fraction": self.cost_fraction(),
            "active": [m for m, on in zip(self.models, self._active) if on],
            "retired": {name: dict(info) for name, info in self.retired.items()},
            "entry": "open",
            "entry_rule": ENTRY_RULE,
            "entrants": [dict(e) for e in self.entrants],
            "items_by_model": {n: int(c) for n, c in zip(self.models, self._count)},
            **self.change_details(),
        }
        if self.k is not None:
            details["k"] = self.k
        if self.alpha_event is not None:
            details["alpha_event"] = dict(self.alpha_event)
        return ranking_from_dominance(
            self.models,
            self._scores(),
            self._dominance,
            alpha=self.alpha,
            coverage="anytime",
            procedure={
                "evidence": "betting e-processes",
                "unit": "item",
                "sampling": "iid",
                "bet": self.bet,
                "certifier": "bonferroni",
                "entry": "open",
            },
            n_units=int(self._t),
            excluded=self.excluded,
            guarantee=open_guarantee(self.alpha, self.alpha_event) + self.change_guarantee(),
            details=details,
            spec=self.spec,
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the whole state to one ``.npz`` file (atomically; format
        :data:`~rankci.sequential.persistence.OPEN_FORMAT`): the spec, the entrants in entry
        order, each entry's e-processes, the certified pairs, looks, retirements, withdrawals,
        voids and named items. :meth:`restore` followed by the same items and additions gives
        exactly what an uninterrupted monitor gives, bit for bit.

        Examples
        --------
        >>> import os, tempfile
        >>> mon = OpenMonitor(["a", "b"], sampling="iid", entry="open", look_every=50)
        >>> rng = np.random.default_rng(0)
        >>> mon.update_block(rng.random((100, 2)) < [0.8, 0.3])
        100
        >>> mon.add_model("c")
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     mon.save(os.path.join(folder, "open.npz"))
        ...     again = OpenMonitor.restore(os.path.join(folder, "open.npz"))
        >>> again.models, [e["t"] for e in again.entrants], again.looks == mon.looks
        (('a', 'b', 'c'), [0, 0, 100], True)
        """
        groups, arrays = [], {}
        for i, group in enumerate(self._groups):
            wealth = group["wealth"]
            stopped = isinstance(wealth, _Stopped)
            groups.append({"start": int(group["start"]), "stopped": stopped})
            if stopped:
                arrays[f"group{i}.log_wealth"] = wealth.log_wealth()
            else:
                arrays.update({f"group{i}.{k}": v for k, v in wealth.state()["arrays"].items()})
        config = {
            "format": OPEN_FORMAT,
            "models": list(self.models),
            "n_initial": int(self.n_initial),
            "spec": self.spec.to_dict(),
        }
        meta = {
            "config": config,
            "t": int(self._t),
            "evaluations": int(self.evaluations),
            "looks": self.looks,
            "retired": self.retired,
            "entrants": self.entrants,
            "groups": groups,
            "excluded_items": int(self._excluded_items),
            "alpha_event": self.alpha_event,
            **changes_meta(self),
        }
        arrays.update(
            {
                "active": self._active,
                "sum": self._sum,
                "count": self._count,
                "level": self._level,
                "dominance": self._dominance,
                "missing_by_model": self._missing_by_model,
            }
        )
        write_state(path, meta, arrays)

    @classmethod
    def restore(cls, path: str | os.PathLike) -> OpenMonitor:
        """An open-entry monitor in exactly the state written by :meth:`save`.

        Raises
        ------
        ValueError
            Naming the file: not a saved open-entry monitor (a closed one is restored by
            ``Monitor.restore``, an arena by ``ArenaMonitor.restore``), of a format this version
            does not read, or damaged (:func:`~rankci.sequential.persistence.read_state`).
        """
        name = os.fspath(path)
        _, meta, arrays = read_state(name, OPEN_FORMAT)
        try:
            return cls._restored(name, meta, arrays)
        except (KeyError, TypeError, IndexError) as error:
            raise ValueError(
                f"{name!r}: the saved open-entry monitor is incomplete ({error!r}): damaged"
            ) from None

    @classmethod
    def _restored(cls, name: str, meta: dict, arrays: dict) -> OpenMonitor:
        config = meta["config"]
        spec = spec_of(name, config["spec"])
        models, n_initial = [str(m) for m in config["models"]], int(config["n_initial"])
        if spec.entry != "open" or not 2 <= n_initial <= len(models):
            raise ValueError(f"{name!r}: the saved open-entry settings are not consistent")
        monitor = cls(models[:n_initial], spec)
        for model in models[n_initial:]:
            monitor._add_group([model])  # the groups' shapes; their states are loaded below
        if len(meta["groups"]) != len(monitor._groups):
            raise ValueError(f"{name!r}: the saved entries do not match its models: damaged")
        for i, (group, saved) in enumerate(zip(monitor._groups, meta["groups"])):
            group["start"] = int(saved["start"])
            prefix = f"group{i}."
            if saved["stopped"]:
                like = np.zeros((len(group["cols"]),) * 2)
                lw = loaded(name, arrays[prefix + "log_wealth"], like, "log-wealths")
                group["wealth"] = _Stopped.from_log_wealth(lw)
                continue
            state = {
                "config": group["wealth"].state()["config"],
                "arrays": {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)},
            }
            group["wealth"] = PairWealth.from_state(state)
        for attr, what in (
            ("active", "active models"),
            ("sum", "score sums"),
            ("count", "item counts"),
            ("level", "levels"),
            ("dominance", "certified pairs"),
            ("missing_by_model", "missing counts"),
        ):
            like = getattr(monitor, "_" + attr)
            setattr(monitor, "_" + attr, loaded(name, arrays[attr], like, what))
        monitor._t = int(meta["t"])
        monitor.evaluations = int(meta["evaluations"])
        monitor.looks = list(meta["looks"])
        monitor.retired = dict(meta["retired"])
        monitor.entrants = [dict(e) for e in meta["entrants"]]
        monitor._excluded_items = int(meta["excluded_items"])
        monitor.alpha_event = meta["alpha_event"]
        load_changes(monitor, meta)
        monitor._ranking = None
        return monitor


class _Stopped:
    """A group's wealth once none of its pairs is updated any more (read only)."""

    def __init__(self, wealth: PairWealth) -> None:
        self._lw = wealth.log_wealth()
        self.n_active = 0
        self.active = np.zeros(wealth.n_models, dtype=bool)

    @classmethod
    def from_log_wealth(cls, log_wealth: np.ndarray) -> _Stopped:
        """A stopped group from its saved log-wealths (NaN diagonal)."""
        out = cls.__new__(cls)
        out._lw = log_wealth
        out.n_active = 0
        out.active = np.zeros(log_wealth.shape[0], dtype=bool)
        return out

    def log_wealth(self) -> np.ndarray:
        return self._lw

    def log_wealth_at(self, flat: np.ndarray) -> np.ndarray:
        return self._lw.ravel().take(flat)

    def retire(self, models) -> None:
        return None

    def update(self, block) -> None:  # pragma: no cover - never called
        raise RuntimeError("a stopped group is not updated")


def owned_pairs(before: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """The ordered pairs (rows, cols) of a group that adds models ``before..total-1`` to the
    ``before`` already there: every off-diagonal pair with at least one of the new models.

    Examples
    --------
    >>> rows, cols = owned_pairs(2, 3)
    >>> list(zip(rows.tolist(), cols.tolist()))
    [(0, 2), (1, 2), (2, 0), (2, 1)]
    """
    rows, cols = np.divmod(np.arange(total * total), total)
    mask = ((rows >= before) | (cols >= before)) & (rows != cols)
    return rows[mask], cols[mask]


def open_guarantee(alpha: float, alpha_event: dict | None = None) -> str:
    """The guarantee of an open board in one paragraph."""
    scope = (
        "sampling model S: items are i.i.d., and abilities are expected scores; each pair's "
        "evidence starts at its later model's entry"
    )
    if alpha_event is not None:
        return (
            f"The <= {alpha:g} event happened at item {alpha_event['t']} "
            f"({alpha_event['reason']}): from that look on no statement is reported. The "
            "statements reported before it were made under the guarantee: with probability at "
            f"least {1 - alpha:.0%} this event does not happen at all (anytime-valid; {scope})."
        )
    return (
        f"With probability at least {1 - alpha:.0%}, every certified dominance, rank interval, "
        "top-k statement and tier reported at any look is true, at all looks simultaneously, "
        "over every model that has joined or will join the board, and whatever rule decides "
        f"when to look, stop, retire or add models from the data seen so far (anytime-valid; "
        f"{scope})."
    )


def level_sum(alpha: Fraction, n_initial: int, n_entrants: int) -> Fraction:
    """Exact sum of the levels of every ordered pair among the first ``n_entrants`` entrants.

    Examples
    --------
    >>> level_sum(Fraction(1, 20), 4, 4)
    Fraction(3, 80)
    """
    total = Fraction(0)
    for m in range(2, n_entrants + 1):
        total += 2 * (m - 1) * pair_level(alpha, n_initial, m)
    return total
