"""The streaming monitor: anytime-valid rank statements while an evaluation runs.

A :class:`Monitor` is fed the scores of the models item by item (or block by block). At any moment
:meth:`Monitor.ranking` returns a :class:`rankci.Ranking` whose certified dominances, rank
intervals, top-k statuses, tiers (and, with the exact certifier, rank sets) are true simultaneously
at every look with probability at least ``1 - alpha``, whatever rule decides when to look, when to
stop and which models to retire (Theorems 4.2-4.4 and Proposition 4.5 of the source).

Every look runs the certifier on the current wealths (:mod:`.wealth`, :mod:`.certify`), adds the
certified pairs to those of earlier looks, takes the transitive closure and counts ranks through the
shared :func:`rankci.ranking.ranking_from_dominance`. A retirement rule may then stop the
evaluation of some models: their pairs' wealths are frozen, and :meth:`Monitor.needs` lists the
models that still need scores.

Retirement rules (applied at each look; ``k`` is the top-k question):

* ``topk``: retire a model once its own top-k status is known (``U <= k`` or ``L > k``);
* ``topk-safe``: once its top-k status is known and its pairs with every model whose status is
  still open are settled (certified one way or the other);
* ``resolved``: once its pairs with every active model are settled;
* ``stop-at-goal``: everyone stops once every model's top-k status is known;
* ``width``: once ``U - L <= width``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np

from rankci._base import RankciWarning, is_series
from rankci._progress import Progress
from rankci.ranking import (
    DominanceCycleError,
    Ranking,
    ranking_from_dominance,
    transitive_closure,
)
from rankci.sequential.certify import make_certifier, resolve_certifier
from rankci.sequential.changes import BoardChanges
from rankci.sequential.freezing import close_incremental, resolve_freeze
from rankci.sequential.intake import block_matrix, row_from_mapping, usable_rows
from rankci.sequential.persistence import restore_monitor, save_monitor
from rankci.sequential.retirement import RETIRE_RULES, models_to_retire
from rankci.sequential.spec import MonitorSpec
from rankci.sequential.statements import alpha_event_message, guarantee_text
from rankci.sequential.wealth import PairWealth

__all__ = ["RETIRE_RULES", "Monitor"]

_ONE_BITS = int(np.array(1.0).view(np.uint64))  # scores in [+0, 1] have bit patterns <= this
_max_bits = np.maximum.reduce


class Monitor(BoardChanges):
    """Anytime-valid leaderboard monitor (rank confidence sequences with early stopping).

    Parameters
    ----------
    models : sequence of str
        The model set, fixed in advance.
    spec : MonitorSpec, optional
        Every setting at once (:class:`~rankci.sequential.spec.MonitorSpec`, kept as
        :attr:`spec` and carried by every Ranking: ``ranking.spec``). Or give the settings as
        keywords, which build it; a keyword beside ``spec`` must agree with it.
    alpha : float, default 0.05
    sampling : {"finite", "iid"}
        ``finite`` (model F): a fixed benchmark of ``n_items`` items evaluated in one uniformly
        random order shared by all models; abilities are the means over the whole benchmark.
        ``iid`` (model S): items are i.i.d. draws; abilities are expected scores.
    n_items : int, optional
        N, required for ``sampling="finite"``.
    bet : {"mixture", "agrapa", "ons", "fixed"}
    lam, grid, eps
        See :class:`~rankci.sequential.wealth.PairWealth`.
    certifier : {"auto", "exact", "shortcut", "ilp", "bonferroni"}
        ``auto``: the exact enumeration for up to 8 models, the integer program for 9-16
        (:data:`~rankci.sequential.certify.AUTO_ILP_MAX`), the shortcut above.
    retire : {"none", "topk", "topk-safe", "resolved", "stop-at-goal", "width"}
    k : int, optional
        The top-k question (needed by the top-k rules; also reported).
    width : int, default 0
        Target of the ``width`` rule.
    look_every : int or str, optional
        Look automatically after every ``look_every``-th item, or every ``"P%"`` of
        ``n_items`` (and after item N under model F).
    freeze : {"auto", True, False}
        Stop updating the wealths of certified pairs, which the certifier then no longer reads;
        their reverses are still updated, so the <= alpha event is seen as without freezing
        (:mod:`.freezing`: valid, never beyond the exact test on the unfrozen wealths; the
        same answers as ``False`` with the exact, integer-program and e-Bonferroni certifiers,
        the shortcut's certified pairs a superset, the event no later). ``"auto"``: for more
        than 8 models. ``False`` is the exact mode, look for look the plain per-item algorithm.

    Single items given to :meth:`update` are buffered and consumed as one block when something
    reads the state (a look, retirement, saving, the wealths) or when the buffer reaches the
    wealths' next commit point (one full segment, :mod:`.updating`); the wealths do not depend on
    the block sizes, so this changes no bit.

    Examples
    --------
    >>> import numpy as np
    >>> mon = Monitor(["a", "b", "c"], sampling="iid", certifier="exact")
    >>> rng = np.random.default_rng(0)
    >>> mon.update_block(rng.random((3000, 3)) < [0.8, 0.5, 0.2])  # items used
    3000
    >>> mon.ranking().dominance_pairs()
    [('a', 'b'), ('a', 'c'), ('b', 'c')]
    >>> mon.ranking().spec == mon.spec == MonitorSpec(sampling="iid", certifier="exact")
    True
    """

    def __init__(
        self, models: Sequence[str], spec: MonitorSpec | None = None, **settings: Any
    ) -> None:
        if isinstance(models, str) or not isinstance(models, Sequence):
            raise ValueError("models must be a sequence of model names")
        self.models = tuple(str(m) for m in models)
        if len(set(self.models)) != len(self.models):
            raise ValueError("model names must be distinct")
        m = len(self.models)
        #: The settings (:class:`~rankci.sequential.spec.MonitorSpec`), as given.
        self.spec = spec = MonitorSpec.given(spec, settings, "Monitor")
        if spec.entry == "open" and type(self) is Monitor:
            raise ValueError(
                "entry='open' (models may join later) is run by OpenMonitor(models, spec) "
                "(rankci.sequential.OpenMonitor); Monitor keeps its models fixed"
            )
        self.alpha = spec.alpha
        self._wealth = PairWealth(
            m,
            sampling=spec.sampling,
            n_items=spec.n_items,
            bet=spec.bet,
            lam=spec.lam,
            grid=spec.grid,
            eps=spec.eps,
        )
        self.certifier_requested = spec.certifier
        self.certifier = resolve_certifier(spec.certifier, m)
        self._certifier = make_certifier(self.certifier, m, self.alpha)
        self.retire_rule = spec.retire
        self.k = spec.k
        spec.check_models(m)
        self.width = spec.width
        self.look_every = spec.look_every_items()  # "P%" of the items, or a count
        self.freeze_requested = spec.freeze
        self.freeze = resolve_freeze(spec.freeze, m)
        # single items not yet consumed (see update), at most one segment of the wealths
        self._pending = np.empty((self._wealth.commit_every, m))
        self._bits = self._pending.view(np.uint64)
        self._shape = (m,)
        self._finite = self._wealth.sampling == "finite"
        self._n_pending = 0
        self._check_looks = self.look_every is not None or self._wealth.sampling == "finite"
        self._index = {name: j for j, name in enumerate(self.models)}
        self._sum = np.zeros(m)
        self._dominance = np.zeros((m, m), dtype=bool)
        self._open: tuple | None = None  # (dominance, the pairs it leaves open): _open_pairs
        self.evaluations = 0
        self.looks: list[dict] = []
        self.retired: dict[str, dict] = {}
        self._excluded_items = 0
        self._missing_by_model = np.zeros(m, dtype=np.int64)
        self._ranking: Ranking | None = None
        self._ranking_looks: int | None = None
        self._warned_exclusion = False
        #: Where the <= alpha event happened (None while it has not): every weak order
        #: eliminated, or a cycle among the certified pairs. See :meth:`look`.
        self.alpha_event: dict | None = None
        self._init_changes()

    # ------------------------------------------------------------------ facts
    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def sampling(self) -> str:
        return self._wealth.sampling

    @property
    def bet(self) -> str:
        return self._wealth.bet

    @property
    def n_items(self) -> int | None:
        return self._wealth.n_items

    @property
    def t(self) -> int:
        """Items consumed so far."""
        return self._wealth.t + self._n_pending

    @property
    def active(self) -> np.ndarray:
        """Boolean mask of the models still evaluated."""
        return self._wealth.active

    @property
    def n_frozen_pairs(self) -> int:
        """Ordered pairs whose wealth is no longer updated because they are certified (``freeze``;
        their reverses are still updated)."""
        return int(self._wealth.n_frozen_pairs)

    def needs(self) -> list[str]:
        """The models that still need scores (empty once the evaluation can stop)."""
        if self.finished:
            return []
        return [name for name, on in zip(self.models, self.active) if on]

    @property
    def finished(self) -> bool:
        """No pair can change any more: fewer than two active models, or all N items consumed."""
        wealth = self._wealth
        if wealth.n_active < 2:
            return True
        return wealth.sampling == "finite" and self.t >= wealth.n_items

    @property
    def excluded(self) -> dict:
        out = {"items_excluded": int(self._excluded_items), **self.change_excluded()}
        if self._excluded_items:
            out["reason"] = "items without a score for every active model"
            out["missing_by_model"] = {
                name: int(c) for name, c in zip(self.models, self._missing_by_model) if c
            }
        return out

    def cost_fraction(self) -> float:
        """Evaluations used over ``N x M`` (model F) or ``t x M`` (model S)."""
        total = (self.n_items if self.sampling == "finite" else self.t) * self.n_models
        return self.evaluations / total if total else 0.0

    def log_wealth(self) -> np.ndarray:
        """Current pairwise log-wealths (M x M, NaN diagonal); frozen pairs keep their value at the
        look where they were frozen."""
        self._flush()
        return self._wealth.log_wealth()

    def __repr__(self) -> str:
        self._flush()
        return (
            f"Monitor({self.n_models} models, t={self.t}, sampling={self.sampling!r}, "
            f"certifier={self.certifier!r}, active={int(self.active.sum())}, "
            f"certified pairs={int(self._dominance.sum())})"
        )

    # ------------------------------------------------------------------ feeding
    def update(self, item: Mapping[str, float] | Sequence[float] | np.ndarray) -> None:
        """Consume one item: a mapping (or Series) model -> score, or M scores in model order.

        Retired models' scores may be left out (or NaN). An item without a finite score for some
        active model is excluded and counted in :attr:`excluded`. Scores must lie in [0, 1].
        """
        if type(item) is np.ndarray and item.dtype == np.float64:
            row = item
        elif is_series(item):
            row = row_from_mapping(item.to_dict(), self._index)
        elif isinstance(item, Mapping):
            row = row_from_mapping(item, self._index)
        else:
            row = np.asarray(item, dtype=float)
        if row.shape != self._shape:
            raise ValueError(
                f"an item needs {self.n_models} scores in model order, got shape {row.shape}"
            )
        wealth = self._wealth
        n = self._n_pending
        if wealth.n_active < 2 or (self._finite and wealth.t + n >= wealth.n_items):
            raise ValueError(self._finished_message())
        self._pending[n] = row
        # every score in [+0.0, 1.0]: their bit patterns are the integers up to that of 1.0, and
        # NaN and negative numbers lie above it, so one integer reduction checks the whole row
        if not wealth._all_active or _max_bits(self._bits[n]) > _ONE_BITS:
            self._flush()
            self.update_block(row[None, :])
            return
        self._n_pending = n = n + 1
        self.evaluations += wealth.n_models
        if self._check_looks:
            t = wealth.t + n
            every = self.look_every
            if (every is not None and t % every == 0) or (self._finite and t == wealth.n_items):
                self._look()
                return
        if n == wealth.commit_every - wealth.t % wealth.commit_every:
            self._flush()  # a full segment of the wealths: consumed in one pass

    def _flush(self) -> None:
        """Consume the buffered single items as one block (bit for bit the same wealths)."""
        n = self._n_pending
        if n:
            self._n_pending = 0
            self._consume(self._pending[:n], count=False)

    def update_block(self, block) -> int:
        """Consume several items: a (B, M) array in model order, a DataFrame with one column per
        model, or a sequence of mappings. Looks fall at the multiples of ``look_every``.

        Returns the number of rows used (consumed or excluded): fewer than B when the evaluation
        finishes inside the block (every model retired, or item N reached under model F).
        """
        x = block_matrix(block, self._index)
        self._flush()
        if x.shape[0] and self.finished:
            raise ValueError(self._finished_message())
        start = 0
        bar = Progress(x.shape[0], "monitor", min_interval=0.5)
        while start < x.shape[0] and not self.finished:
            stop = x.shape[0]
            if self.look_every is not None:
                stop = min(stop, start + self.look_every - self.t % self.look_every)
            if self.n_items is not None and self.sampling == "finite":
                stop = min(stop, start + self.n_items - self.t)
            chunk = self._usable(x[start:stop])
            if chunk.shape[0]:
                self._consume(chunk)
            bar.update(stop - start)
            start = stop
            if self._look_due():
                self._look()
        bar.close()
        return start

    def _consume(self, chunk: np.ndarray, count: bool = True) -> None:
        """Feed validated items (the caller never lets a chunk cross a look point)."""
        active = self.active
        self._wealth.update(chunk)
        # sequential sums (bit-for-bit those of item-by-item updates)
        self._sum[active] = np.cumsum(
            np.concatenate([self._sum[None, active], chunk[:, active]]), axis=0
        )[-1]
        if count:
            self.evaluations += chunk.shape[0] * int(active.sum())

    def _usable(self, x: np.ndarray) -> np.ndarray:
        """Drop (and count) items missing an active model's score; check the range."""
        active = self.active
        kept, missing = usable_rows(x, active, self.models, self.t)
        if kept.shape[0] < x.shape[0]:
            self._excluded_items += x.shape[0] - kept.shape[0]
            self._missing_by_model[active] += missing
            if self.sampling == "finite" and not self._warned_exclusion:
                self._warned_exclusion = True
                warnings.warn(
                    "items without a score for every active model are excluded; under "
                    "sampling='finite' the guarantee assumes n_items counts only the items "
                    "that will be consumed",
                    RankciWarning,
                    stacklevel=3,
                )
        return kept

    def _look_due(self) -> bool:
        if self.t == 0 or (self.looks and self.looks[-1]["t"] == self.t):
            return False
        if self.look_every is not None and self.t % self.look_every == 0:
            return True
        return self.sampling == "finite" and self.t == self.n_items

    def _finished_message(self) -> str:
        return (
            f"the evaluation is finished (t = {self.t}, active models: "
            f"{int(self.active.sum())}); no more items can be consumed"
        )

    def add_model(self, name: str) -> None:
        """Add a model (only an :class:`~rankci.sequential.entry.OpenMonitor`, made with
        ``entry="open"``, accepts one).

        Raises
        ------
        ValueError
            On a monitor with ``entry="closed"`` (the default), whose models are fixed at
            creation: make it with ``entry="open"``.
        """
        raise ValueError(
            f"cannot add model {name!r}: this monitor has entry='closed' (its models are fixed "
            "at creation); make it with OpenMonitor(models, MonitorSpec(entry='open')) to let "
            "models join later"
        )

    # ------------------------------------------------------------------ looks
    def retire(self, model: str | int, reason: str = "manual") -> None:
        """Stop evaluating a model (by name or index): its pairs' wealths are frozen for good.

        ``reason`` is recorded in :attr:`retired` (``"manual"`` unless the caller says why).
        """
        j = self._model_index(model)
        if self._ranking is None and self.looks:  # the last look's ranking, as it was
            self._ranking = self._build_ranking(n_looks=self._ranking_looks)
        self._retire([j], str(reason))

    def _retire(self, indices, reason: str) -> None:
        self._flush()
        for j in indices:
            if self._wealth.active[j]:
                self._wealth.retire([j])
                self.retired[self.models[j]] = {"t": self.t, "reason": reason}
        if int(self._wealth.active.sum()) == 1:
            last = int(np.flatnonzero(self._wealth.active)[0])
            self._wealth.retire([last])
            self.retired[self.models[last]] = {"t": self.t, "reason": "no model left to compare"}

    def look(self) -> Ranking:
        """Certify at the current item count, apply the retirement rule, return the Ranking.

        The <= alpha event. With probability at most alpha a look eliminates every weak order
        (the exact certifiers), or the certified pairs contain a cycle. The source's rule is then
        ``D_t = all pairs`` from that look on, a set that contradicts itself, so that no statement
        keeps any content. The monitor never raises here: it records the event in
        :attr:`alpha_event` (the look, the reason, the models on the cycle), keeps everything
        computed before, keeps consuming items, and from then on reports the only statements a
        vacuous D allows one to rely on: none (every rank interval [1, M], no dominance, every
        model in tier 1, no retirement), with the event in the ranking's ``details`` and
        guarantee.
        """
        self._look()
        return self.ranking()

    def _look(self) -> None:
        """A look without building the Ranking (built on demand by :meth:`ranking`).

        Certified pairs are kept and never examined again; the new ones are closed into the
        closed set incrementally (:func:`.freezing.close_incremental`). Under ``freeze`` the
        certifier reads the frozen view of the wealths, computed from the pairs not certified
        only (their list is carried from look to look, :meth:`_open_pairs`), and the certified
        pairs stop being updated (their reverses do not).
        """
        self._flush()
        dominance = self._dominance
        frozen = self.freeze and self.alpha_event is None
        if frozen:  # certified pairs' wealths are not read: only the others' are computed
            open_pairs, fresh = self._open_pairs()
            values = self._wealth.log_wealth_at(open_pairs)
            certified = self._certifier.look_frozen(values, open_pairs, dominance)
        else:
            certified = self._certifier.look(self._wealth.log_wealth(), known=dominance)
        newly: list[str] = []
        self._ranking = None
        self._ranking_looks = len(self.looks)  # what an eager ranking of this look recorded
        if self.alpha_event is None:
            closed = close_incremental(dominance, certified)
            if closed.diagonal().any():
                try:
                    transitive_closure(closed, self.models)
                except DominanceCycleError as error:
                    self._record_alpha_event(error)
        if self.alpha_event is not None:
            self._dominance = np.zeros_like(dominance)
        else:
            self._dominance = closed
            if self.retire_rule != "none":
                newly = self._apply_rule(self._build_ranking())
            if frozen:  # the certified orientations stop; their reverses are still updated
                settled = closed.ravel().take(open_pairs)
                if fresh:  # every certified pair (older files may hold unfrozen ones)
                    self._wealth.freeze_pairs(closed)
                else:  # the pairs certified before are frozen already: the new ones
                    self._wealth.freeze_flat(open_pairs[settled])
                self._open = (closed, open_pairs[~settled])
        m = self.n_models
        # counts of a boolean matrix: summed as bytes into a small integer type (it holds M)
        counts = self._dominance.view(np.uint8)
        kind = np.uint16 if m < 2**16 else np.int64
        record = {
            "t": self.t,
            "n_certified": int(np.count_nonzero(self._dominance)),
            "evaluations": int(self.evaluations),
            "n_active": int(self._wealth.n_active),
            "lower": (1 + counts.sum(axis=0, dtype=kind)).tolist(),
            "upper": (m - counts.sum(axis=1, dtype=kind)).tolist(),
        }
        if self.certifier == "exact":
            record["n_surviving_orders"] = self._certifier.n_surviving
        if newly:
            record["retired"] = newly
        if self.alpha_event is not None:
            record["alpha_event"] = True
        self.looks.append(record)

    def _open_pairs(self) -> tuple[np.ndarray, bool]:
        """Flat indices (increasing) of the pairs not certified (the reverses of certified pairs
        included: they are still updated and read), and whether they were computed afresh (not
        carried over from the previous look).

        The list is kept from look to look for the dominance array it was computed from (a
        look that changes the certified set replaces that array; :meth:`restore` sets a new
        one), and each look removes the pairs it certifies.
        """
        dominance = self._dominance
        cached = self._open
        if cached is not None and cached[0] is dominance:
            return cached[1], False
        uncertified = ~dominance
        np.fill_diagonal(uncertified, False)
        return np.flatnonzero(uncertified), True

    def _record_alpha_event(self, error: DominanceCycleError) -> None:
        gone = self.certifier == "exact" and self._certifier.n_surviving == 0
        self.alpha_event = {
            "t": int(self.t),
            "look": len(self.looks) + 1,
            "reason": (
                "every weak order was eliminated" if gone else "the certified pairs contain a cycle"
            ),
            "cycle": list(error.models),
        }
        warnings.warn(
            alpha_event_message(self.alpha, self.t, self.alpha_event["reason"], error.models),
            RankciWarning,
            stacklevel=3,
        )

    def ranking(self) -> Ranking:
        """The Ranking now: a look if items arrived since the last one, else the last result."""
        if self.t > 0 and (not self.looks or self.looks[-1]["t"] != self.t):
            self._look()
        if self._ranking is None:
            self._ranking = self._build_ranking(n_looks=self._ranking_looks)
        return self._ranking

    def _scores(self) -> np.ndarray:
        self._flush()
        stop = self._wealth._stop
        count = np.where(stop < 0, self.t, stop)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, self._sum / np.maximum(count, 1), np.nan)

    def _build_ranking(
        self, dominance: np.ndarray | None = None, n_looks: int | None = None
    ) -> Ranking:
        details = {
            "t": int(self.t),
            "n_looks": len(self.looks) if n_looks is None else n_looks,
            "evaluations": int(self.evaluations),
            "cost_fraction": self.cost_fraction(),
            "active": [m for m, on in zip(self.models, self.active) if on],
            "retired": {name: dict(info) for name, info in self.retired.items()},
            **self._certifier.details(),
            **self.change_details(),
        }
        if self.certifier == "exact":
            sets = self._certifier.rank_sets()
            details["rank_sets"] = {name: s for name, s in zip(self.models, sets)}
        if self.k is not None:
            details["k"] = self.k
        if self.alpha_event is not None:
            details["alpha_event"] = dict(self.alpha_event)
        return ranking_from_dominance(
            self.models,
            self._scores(),
            self._dominance if dominance is None else dominance,
            alpha=self.alpha,
            coverage="anytime",
            procedure={
                "evidence": "betting e-processes",
                "unit": "item",
                "sampling": self.sampling,
                "bet": self.bet,
                "certifier": self.certifier,
            },
            n_units=int(self.t),
            excluded=self.excluded,
            guarantee=guarantee_text(
                self.alpha, self.sampling, self.n_items, self.certifier, self.alpha_event
            )
            + self.change_guarantee(),
            details=details,
            spec=self.spec,
        )

    def _apply_rule(self, ranking: Ranking) -> list[str]:
        leave = models_to_retire(
            self.retire_rule, ranking, self._dominance, self.active, self.k, self.width
        )
        before = set(self.retired)
        self._retire(np.flatnonzero(leave), self.retire_rule)
        return [name for name in self.models if name in self.retired and name not in before]

    def _model_index(self, model: str | int) -> int:
        if isinstance(model, Integral) and not isinstance(model, bool):
            if not 0 <= int(model) < self.n_models:
                raise ValueError(f"model index {model} is not in 0..{self.n_models - 1}")
            return int(model)
        j = self._index.get(str(model))
        if j is None:
            raise ValueError(f"unknown model {model!r}")
        return j

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the full state to one file (atomically), so that :meth:`restore` followed by the
        same items gives exactly what an uninterrupted monitor gives."""
        save_monitor(self, path)

    @classmethod
    def restore(cls, path: str | os.PathLike) -> Monitor:
        """A monitor in exactly the state written by :meth:`save`."""
        return restore_monitor(cls, path)
