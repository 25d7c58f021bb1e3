"""A board's live state: the scores received, and the monitor fed in the board's item order.

State machine
-------------
Scores arrive for any (model, item) in any order. They are kept in an items x models matrix whose
rows follow the board's shared item order. The monitor consumes the rows strictly in that order:
row t is consumed once every model still active has a score on it, and rows are fed in chunks
that never cross a look point (every ``look_every`` items, and the last item), so that a look and
its retirements happen before the next row is checked. Reads never trigger a look. A manual
retirement is an event stored with the item count at which it happened.

Hence the monitor's state is a function of the committed scores and events alone - not of the
order or the batching in which scores arrived, nor of when anyone looked - and :meth:`Board.load`
rebuilds it exactly by feeding the committed scores again (the wealths are bit-for-bit
independent of block sizes; see :mod:`rankci.sequential.wealth`). A board is

* ``open`` while items remain and at least two models are active,
* ``finished`` when the monitor can consume nothing more (all items, or fewer than two active
  models),
* ``error`` if the certified statements ever contradict each other (probability at most alpha);
  scores are still accepted and stored, and the error is reported.

Posts waiting at the same moment, on this board and others, are committed in one transaction
(group commit, :func:`rankci.service.commits.commit_boards`, driven by
:class:`rankci.service.commits.GroupWriter`); each post is still all or nothing, and answered
only once its transaction is committed. What a post may contain is checked by
:mod:`rankci.service.validation`, where the evaluation stands is computed by
:mod:`rankci.service.progress`, and what readers see is kept by :mod:`rankci.service.published`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import threading
from collections import ChainMap
from collections.abc import Sequence
from functools import partial

import numpy as np

from rankci.ranking import Ranking
from rankci.service.commits import CommitGroup, Pending, Posted, commit_boards
from rankci.service.history import board_history, utc_now
from rankci.service.progress import needed, next_look, progress
from rankci.service.published import Published
from rankci.service.spec import MAX_CELLS, BoardSpec, checked_name
from rankci.service.storage import Storage, StorageUnavailable
from rankci.service.validation import (
    Conflict,
    Rejected,
    TooLarge,
    group_new_cells,
    quota_error,
    validate_entries,
)

__all__ = ["Board", "Conflict", "Posted", "Rejected", "TooLarge", "saved_bytes"]

log = logging.getLogger("rankci.service")
#: The code a post's item not on the board yet gets until its commit places it (``NEW_ITEM + k``
#: for the k-th such item of the post; item_entry "open").
NEW_ITEM = 1 << 40


def saved_bytes(monitor) -> bytes:
    """The bytes of ``monitor.save(path)`` (a ``.npz``), through a temporary file."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "monitor.npz")
        monitor.save(path)
        with open(path, "rb") as handle:
            return handle.read()


class Board:
    """One leaderboard: its spec, the received scores, and the monitor's state."""

    def __init__(self, spec: BoardSpec, num: int, storage: Storage) -> None:
        self.spec = spec
        self.num = num
        self.storage = storage
        self.lock = threading.RLock()
        self._waiting: list[Pending] = []  # posts waiting for the next group commit
        self._waiting_lock = threading.Lock()
        n, m = spec.n_items, spec.n_models
        self.order = spec.order
        self.position = np.empty(n, dtype=np.int64)
        self.position[self.order] = np.arange(n)
        self.model_index = {name: j for j, name in enumerate(spec.models)}
        self.item_index = {item: i for i, item in enumerate(spec.items)}
        # item_entry "open": an item first scored later takes the next position of the shared
        # order (its index, also its position); x, position and order keep spare rows
        self.growing = spec.item_entry == "open"
        self.n_created = n  # the items given at creation
        self.item_events: list[dict] = []  # the items added, one record per commit
        self.x = np.full((n, m), np.nan)  # rows in evaluation order
        self.received = 0
        self.next_arrival = 0  # the arrival number of the next accepted score (storage.py)
        # the server's quota of models x items (rankci serve --max-board-cells), checked when
        # the board grows; None: only MAX_CELLS (the library's boards)
        self.quota: int | None = None
        self.monitor = spec.make_monitor()
        self.ranking: Ranking = self.monitor.ranking()  # t = 0: no look
        self.ranking_look = 0  # the number of the look that produced self.ranking
        self.error: str | None = None
        self.events: list[dict] = []
        # voided items (sampling='iid' boards): their rows are skipped, never consumed. The row
        # cursor ``row`` passes both consumed and skipped rows; ``monitor.t`` counts consumed ones
        self.row = 0
        self.voided: dict[str, dict] = {}
        self.voided_rows: set[int] = set()
        # the look (1-based) at which each "row model better than column model" was first
        # certified, 0 if never: recorded as looks happen, so a rebuild reproduces it
        self.first_certified = np.zeros((m, m), dtype=np.int64)
        self.render_lock = threading.Lock()  # the web page's sections (see page.py)
        self.page_cache: dict = {}
        self.stale = False  # a write's outcome is unknown: rebuild from the database first
        self.page_viewed_at = -1e9  # when the web page last asked for this board
        self.on_look = None  # called with the board after each new look (the page renderer)
        self.published = Published(self)
        self._publish()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, spec: BoardSpec, num: int, storage: Storage) -> Board:
        """Rebuild the board from its committed scores and events (exactly)."""
        board = cls(spec, num, storage)
        model, item, score = storage.load_scores(num)
        board.next_arrival = storage.next_arrival(num)
        events = list(storage.load_events(num))
        for _seq, t, kind, detail in events:  # items added later: placed before their scores
            if kind == "items":
                added = json.loads(detail)
                if added["first"] != board.spec.n_items:
                    raise RuntimeError(
                        f"items event at item {added['first']} replayed at {board.spec.n_items}"
                    )
                board._register_items(added["items"], t)
        joined = sum(kind == "join" for _seq, _t, kind, _d in events)
        if joined:  # models added later: their columns exist before their scores are placed
            board.x = np.hstack([board.x, np.full((board.x.shape[0], joined), np.nan)])
        board.x[board.position[item], model] = score
        board.received = int(score.size)
        for _seq, t, kind, detail in events:
            if kind == "items":
                continue
            board._advance(limit=t)
            board._apply_event(kind, json.loads(detail), t)
        board._advance()
        board._publish()
        return board

    # ------------------------------------------------------------------ facts
    @property
    def done(self) -> bool:
        """Nothing more can be consumed: every item, fewer than two active models, or an error."""
        mon = self.monitor
        if self.growing:  # more items may come: done only when the monitor is
            return self.error is not None or mon.finished
        return self.error is not None or mon.finished or self.row >= self.spec.n_items

    @property
    def state(self) -> str:
        if self.error is not None:
            return "error"
        return "finished" if self.done else "open"

    def progress(self) -> dict:
        """Where the evaluation stands now (live, not only at the last look)."""
        return progress(self)

    # ------------------------------------------------------------------ writing
    def post(self, entries: Sequence[tuple[str, str, float]]) -> Posted:
        """Store new scores (committed before this returns) and feed the monitor.

        ``entries`` are (model, item, score). Unknown models or items, scores that are not
        numbers in [0, 1] (:class:`Rejected`), and a (model, item) that already has a different
        score (:class:`Conflict`) reject the whole post; nothing is stored. Repeating a score
        exactly is harmless: it is counted as a duplicate and not stored twice.

        Posts that wait for the board at the same moment are committed together, in one
        transaction (group commit, :meth:`commit_waiting`); each is still all or nothing, and
        none is answered before the transaction holding its scores is committed.
        """
        pending = self.submit(entries)
        if not pending.done:
            self.commit_waiting()
        return pending.outcome()

    def submit(
        self, entries: Sequence[tuple[str, str, float]], notify=None, loop=None, future=None
    ) -> Pending:
        """Validate a post and queue it for the next group commit (:meth:`commit_waiting`).

        Raises :class:`Rejected` at once for a malformed post. Once the post's outcome is known
        (:meth:`Pending.outcome`), ``notify()`` is called from the committing thread, or
        ``future`` is resolved on the asyncio ``loop``.
        """
        index, new_names = self._item_codes(entries) if self.growing else (self.item_index, ())
        model, item, score = validate_entries(entries, self.model_index, index)
        pending = Pending(model, item, score, notify, loop, future)
        pending.new_names = new_names
        with self._waiting_lock:
            self._waiting.append(pending)
        return pending

    def waiting(self) -> int:
        """How many posts wait for the next group commit."""
        return len(self._waiting)

    def commit_waiting(self) -> int:
        """Commit every post waiting now in one transaction, then answer each; returns how many
        posts were answered (:func:`~rankci.service.commits.commit_boards` of this board alone).

        The posts are checked in the order they arrived, each against the scores stored before
        it and the earlier posts of the group (a conflict rejects that post alone). A failed
        transaction fails every post of the group, and changes nothing in memory.
        """
        return commit_boards([self])

    def commit(self, group: CommitGroup) -> list[Pending]:
        """Take every post waiting now into ``group``, the transaction being assembled for this
        board's storage; returns the posts taken, for the caller to answer
        (:func:`~rankci.service.commits.finish`) once ``group`` is written.

        The caller holds :attr:`lock` from this call until ``group`` is written
        (:func:`~rankci.service.commits.commit_boards` does). The posts are checked in the order
        they arrived, each against the scores stored before it and the earlier posts of the
        group: a rejected post gets its error now; if no post has a new score, they are answered
        now, without a write; otherwise their new scores go into ``group`` and are applied to the
        board (fed to the monitor, published) only once ``group`` has committed them. A board
        being rebuilt after a database fault refuses them all (503).
        """
        with self._waiting_lock:
            posts, self._waiting = self._waiting, []
        if not posts:
            return posts
        t = int(self.monitor.t)
        accepted, rows, added = self._stage(posts)
        if rows is None:  # nothing new: answered without a write
            self._apply(accepted, None)
        elif self.stale:
            error = StorageUnavailable("the board is being reloaded after a database fault")
            for pending, _ in accepted:
                pending.error = error
        else:
            events = ()
            if added:  # the new items, committed with their scores
                detail = json.dumps({"items": added, "first": self.spec.n_items})
                events = ((t, "items", detail),)
            first = self.next_arrival  # the arrival order: the posts', then their entries'
            rows = (*rows, np.arange(first, first + rows[2].size, dtype=np.int64))
            group.add(self.num, rows, partial(self._committed, accepted, rows, added, t), events)
        return posts

    def _committed(
        self, accepted: list, rows: tuple, added: list, t: int, error: BaseException | None
    ) -> None:
        """``group.write()``'s answer to :meth:`commit`: apply the rows, or fail the posts."""
        if error is None:
            if added:
                self._register_items(added, t)
            self.next_arrival += int(rows[2].size)
            self._apply(accepted, rows[:3])
            return
        if isinstance(error, StorageUnavailable) and error.ambiguous:
            self.stale = True  # rebuilt from the database before anything else is written
        for pending, _ in accepted:
            pending.error = error

    def _stage(self, group: list[Pending]) -> tuple[list, tuple | None, list]:
        """Check a group against the stored scores: ``(accepted, rows, added)``, with
        ``accepted`` the (post, mask of its new scores) of the posts not rejected (the others get
        their error), ``rows`` the (model, item, score) arrays to store, or None if nothing is
        new, and ``added`` the names of the items the rows bring (item_entry "open"), in the
        order they first appear in the accepted posts: the order they join the shared order."""
        added: list = []
        if self.growing:
            group, added = self._place_new_items(group)
            if not group:  # every post was refused (the board would be too large)
                return [], None, []
        names = (self.spec.models, (*self.spec.items, *added))
        accepted = []
        for pending, new in zip(group, group_new_cells(self.x, self.position, group, names)):
            if isinstance(new, Rejected):
                pending.error = new
            else:
                accepted.append((pending, new))
        if added:
            added = self._keep_new_items(accepted, added)
        if not any(new.any() for _, new in accepted):
            return accepted, None, []
        if len(accepted) == 1:
            pending, new = accepted[0]
            return accepted, (pending.model[new], pending.item[new], pending.score[new]), added
        rows = tuple(
            np.concatenate([getattr(p, name)[new] for p, new in accepted])
            for name in ("model", "item", "score")
        )
        return accepted, rows, added

    # ------------------------------------------------------------------ items that grow
    def _item_codes(self, entries) -> tuple[ChainMap, tuple[str, ...]]:
        """The item index of a post on a board with item_entry "open": the board's items, and
        each item not on it yet coded ``NEW_ITEM + k`` (its name checked as an item id is at
        creation: a bad one rejects the post)."""
        known, local = self.item_index, {}
        for _model, item_id, _score in entries:
            if isinstance(item_id, str) and item_id not in known and item_id not in local:
                try:
                    checked_name(item_id, "item id")
                except ValueError as error:
                    shown = item_id[:200].encode("utf-8", "backslashreplace").decode("utf-8")
                    raise Rejected(
                        f"{error}; nothing was stored", [{"item": shown, "problem": str(error)}]
                    ) from None
                local[item_id] = NEW_ITEM + len(local)
        return ChainMap(local, known), tuple(local)

    def _place_new_items(self, group: list[Pending]) -> tuple[list[Pending], list[str]]:
        """Give the new items of a group's posts their tentative indices (the next rows, in the
        order the posts arrived), rejecting the posts that would take the board over the
        server's quota (:attr:`quota`, 413) or :data:`~rankci.service.spec.MAX_CELLS`; nothing
        is registered before the commit."""
        n0, m = self.spec.n_items, len(self.model_index)
        candidates: dict[str, int] = {}
        kept = []
        for pending in group:
            if not pending.new_names:
                kept.append(pending)
                continue
            fresh = [name for name in pending.new_names if name not in self.item_index]
            brought = len({*fresh} - candidates.keys())
            n = n0 + len(candidates)
            what = f"{brought:,} new item(s) such as {fresh[0]!r} ({m} models x {n:,} items now)"
            pending.error = self._growth_error(what, n * m, (n + brought) * m)
            if pending.error is not None:
                continue
            codes = np.empty(len(pending.new_names), dtype=np.int64)
            for k, name in enumerate(pending.new_names):
                i = self.item_index.get(name)
                codes[k] = candidates.setdefault(name, n0 + len(candidates)) if i is None else i
            item = pending.item.copy()
            mask = item >= NEW_ITEM
            item[mask] = codes[item[mask] - NEW_ITEM]
            pending.item, pending.new_names = item, ()
            kept.append(pending)
        if candidates:
            self._reserve_rows(n0 + len(candidates))
        return kept, list(candidates)

    def _growth_error(self, what: str, cells: int, after: int) -> Rejected | None:
        """Why ``what``, taking the board from ``cells`` to ``after`` models x items, is refused:
        over the server's quota (:class:`TooLarge`, 413, naming ``--max-board-cells``), or over
        :data:`~rankci.service.spec.MAX_CELLS`, what one board may hold in memory (409); else
        None."""
        error = quota_error(what, cells, after, self.quota)
        if error is None and after > MAX_CELLS:
            error = Conflict(f"{what} would take the board over {MAX_CELLS:,} scores per board")
        return error

    def _keep_new_items(self, accepted: list, added: list[str]) -> list[str]:
        """The new items the accepted posts bring, in the order they first appear in them
        (items only a rejected post named are dropped, and the others renumbered)."""
        n0 = self.spec.n_items
        final: dict[int, int] = {}
        for pending, new in accepted:
            for i in pending.item[new].tolist():
                if i >= n0 and i not in final:
                    final[i] = n0 + len(final)
        if any(i != j for i, j in final.items()) or len(final) != len(added):
            remap = np.arange(n0 + len(added), dtype=np.int64)
            for i, j in final.items():
                remap[i] = j
            for pending, _ in accepted:
                pending.item = remap[pending.item]
        return [added[i - n0] for i in final]

    def _reserve_rows(self, total: int) -> None:
        """Room for ``total`` items: spare rows of NaN (doubling, so that a growing board copies
        its matrix O(log n) times); an added item's position is its index."""
        have = self.x.shape[0]
        if total <= have:
            return
        cap = max(total, 2 * have, 64)
        self.x = np.vstack([self.x, np.full((cap - have, self.x.shape[1]), np.nan)])
        spare = np.arange(have, cap, dtype=np.int64)
        self.position = np.concatenate([self.position, spare])
        self.order = np.concatenate([self.order, spare])

    def _register_items(self, names: list[str], t: int) -> None:
        """The items ``names`` join the board at the end of the shared order (committed)."""
        n0 = self.spec.n_items
        self._reserve_rows(n0 + len(names))
        for k, name in enumerate(names):
            self.item_index[name] = n0 + k
        items = (*self.spec.items, *names)
        self.spec = dataclasses.replace(self.spec, items=items, _order=self.order[: len(items)])
        self.item_events.append({"t": t, "items": list(names), "first": n0})

    def _apply(self, accepted: list, rows: tuple | None) -> None:
        """After ``rows`` were committed: feed them to the monitor, publish, and answer the
        ``accepted`` posts (see :meth:`_stage`)."""
        if rows is not None:
            model, item, score = rows
            self.x[self.position[item], model] = score
            self.received += int(score.size)
            self._advance()
            self._publish()
        published = self.published
        live, text = published.progress, published.progress_json
        for pending, new in accepted:
            n_new = int(new.sum())
            pending.result = Posted(n_new, int(len(new) - n_new), live, text)

    def _store(self, write, *args) -> None:
        """One storage write; a COMMIT of unknown outcome marks the board stale, so that it is
        rebuilt from what the database holds before anything else is written."""
        if self.stale:
            raise StorageUnavailable("the board is being reloaded after a database fault")
        try:
            write(*args)
        except StorageUnavailable as error:
            if error.ambiguous:
                self.stale = True
            raise

    def retire(self, model: str) -> dict:
        """Stop evaluating a model from now on (stored as an event; its pairs are frozen)."""
        with self.lock:
            if model not in self.model_index:
                raise Rejected(f"unknown model {model!r}")
            if self.state != "open":
                raise Conflict(f"the board is {self.state}; nothing can be retired")
            if not self.monitor.active[self.model_index[model]]:
                raise Conflict(f"model {model!r} is retired already")
            t = int(self.monitor.t)
            detail = {"model": model}
            self._store(self.storage.add_event, self.num, t, "retire", json.dumps(detail))
            self._apply_event("retire", detail, t)
            self._advance()
            self._publish()
            return {"model": model, "t": t}

    def withdraw(self, model: str) -> dict:
        """Withdraw a model at its owner's request (stored as an event at the current item count).

        It receives no evidence from now on (its pairs are frozen, as at a retirement); its
        certified statements stay, reported with the look at which it left
        (:data:`rankci.sequential.WITHDRAW_GUARANTEE`). Scores posted for it later are stored
        and never used. Unknown or withdrawn already: a clear 4xx."""
        with self.lock:
            if model not in self.model_index:
                raise Rejected(f"unknown model {model!r}")
            if self.error is not None:
                raise Conflict(f"the board is {self.state}; no model can be withdrawn")
            if model in self.monitor.withdrawn:
                look = self.monitor.withdrawn[model]["look"]
                raise Conflict(f"model {model!r} was withdrawn already (at look {look})")
            t = int(self.monitor.t)
            detail = {"model": model}
            self._store(self.storage.add_event, self.num, t, "withdraw", json.dumps(detail))
            self._apply_event("withdraw", detail, t)
            self._advance()
            self._publish()
            return {**self.monitor.withdrawn[model]}

    def add_model(self, model: str) -> dict:
        """Add a model to a board made with ``entry="open"`` (stored as an event at the current
        item count; its comparisons start at the next item the monitor consumes)."""
        with self.lock:
            if self.spec.monitor.entry != "open":
                raise Conflict(
                    f"cannot add model {model!r}: the board was created with entry 'closed' "
                    '(its models are fixed); create it with "entry": "open"'
                )
            if model in self.model_index:
                raise Conflict(f"model {model!r} is on the board already")
            full = not self.growing and self.monitor.t >= self.spec.n_items
            if self.error is not None or full:
                raise Conflict(f"the board is {self.state}; no model can be added")
            n, m = self.spec.n_items, len(self.model_index)
            what = f"adding model {model!r} ({m} models x {n:,} items now)"
            error = self._growth_error(what, n * m, n * (m + 1))
            if error is not None:
                raise error
            t = int(self.monitor.t)
            detail = {"model": model, "look": len(self.monitor.looks), "at": utc_now()}
            self._store(self.storage.add_event, self.num, t, "join", json.dumps(detail))
            self._apply_event("join", detail, t)
            self._advance()
            self._publish()
            return {"model": model, "t": t, **self.monitor.entrants[-1]}

    def void(self, item: str) -> dict:
        """Void an item found broken (stored as an event at the current item count): its row of
        the shared order is skipped, never consumed, so scores posted for it are stored and never
        used. Evidence already accumulated is never removed, so an item the monitor has consumed
        already is refused (:data:`rankci.sequential.VOID_GUARANTEE`): past looks are unchanged,
        and later looks are valid for a voiding rule that does not depend on the data.

        Refused: an item not on the board (422); one voided already, one consumed already, a board
        that is finished or in error, or a board with ``sampling="finite"``, whose ranked means
        are those of the fixed benchmark (409)."""
        with self.lock:
            if item not in self.item_index:
                raise Rejected(f"unknown item {item!r}: it is not on the board")
            if item in self.voided:
                look = self.voided[item]["look"]
                raise Conflict(f"item {item!r} was voided already (at look {look})")
            if self.spec.monitor.sampling == "finite":
                raise Conflict(
                    f"cannot void item {item!r}: the board has sampling='finite', whose "
                    "statements are about the fixed benchmark of all its items; voiding changes "
                    "that benchmark (create the board with sampling 'iid')"
                )
            if self.done:
                raise Conflict(f"the board is {self.state}; no item can be voided")
            row = int(self.position[self.item_index[item]])
            if row < self.row:
                raise Conflict(
                    f"cannot void item {item!r}: the monitor consumed it already (position "
                    f"{row} of the shared order); evidence is never removed, since an "
                    "e-process cannot un-bet"
                )
            t = int(self.monitor.t)
            detail = {"item": item, "look": len(self.monitor.looks), "row": self.row}
            self._store(self.storage.add_event, self.num, t, "void", json.dumps(detail))
            self._apply_event("void", detail, t)
            self._advance()
            self._publish()
            return {"item": item, "t": t, **self.voided[item]}

    def _apply_event(self, kind: str, detail: dict, t: int) -> None:
        if kind not in ("retire", "join", "withdraw", "void"):  # pragma: no cover - no other
            raise ValueError(f"unknown event {kind!r}")
        if self.monitor.t != t:
            raise RuntimeError(f"event at t={t} replayed at t={self.monitor.t}")
        self.events.append({"t": t, "kind": kind, **detail})
        if kind == "void":
            if detail["row"] != self.row:
                raise RuntimeError(f"void at row {detail['row']} replayed at row {self.row}")
            item = detail["item"]
            position = int(self.position[self.item_index[item]])
            self.voided[item] = {"look": detail["look"], "row": detail["row"], "position": position}
            self.voided_rows.add(position)
            return
        if kind == "withdraw":
            # reported at once in the progress; in the ranking's details from the next look
            self.monitor.withdraw_model(detail["model"])
            return
        if kind == "join":
            name = detail["model"]
            self.monitor.add_model(name)
            self.model_index[name] = len(self.model_index)
            self.spec = dataclasses.replace(self.spec, models=(*self.spec.models, name))
            if self.x.shape[1] < len(self.model_index):  # live (a load widened x first)
                self.x = np.hstack([self.x, np.full((self.x.shape[0], 1), np.nan)])
            return
        if not self.done and self.monitor.active[self.model_index[detail["model"]]]:
            self.monitor.retire(detail["model"])

    # ------------------------------------------------------------------ the monitor
    def _skip_voided(self) -> None:
        """Move the row cursor past voided rows (always at once, so that it is a function of
        the consumed count and the voids so far: a rebuild passes the same rows)."""
        while self.row in self.voided_rows:
            self.row += 1

    def _advance(self, limit: int | None = None) -> None:
        """Consume every row that is complete for the active models, in order (voided rows
        skipped; ``limit`` caps the consumed count ``monitor.t``)."""
        mon, spec = self.monitor, self.spec
        n, every = spec.n_items, spec.look_every
        cap = n if limit is None else min(limit, n)
        while True:
            self._skip_voided()
            at_look = bool(mon.looks) and mon.looks[-1]["t"] == mon.t
            growing = self.growing  # more items may come: no look at the last one
            if not growing and self.row >= n and self.error is None and mon.t and not at_look:
                self._last_look()  # the rows left were voided: the last consumed item is a look
            if self.done or mon.t >= cap:
                break
            t, row = mon.t, self.row
            stop = min(n, row + (min(cap, (t // every + 1) * every) - t))
            if self.voided_rows:
                later = [r for r in self.voided_rows if row < r < stop]
                stop = min(later, default=stop)
            block = self.x[row:stop, : mon.n_models]
            complete = np.isfinite(block[:, mon.active]).all(axis=1)
            usable = len(complete) if complete.all() else int(np.argmin(complete))
            if usable == 0:
                break
            looks = len(mon.looks)
            try:
                mon.update_block(block[:usable])
                self.row += usable
                self._skip_voided()
                last = not growing and self.row >= n
                if last and (not mon.looks or mon.looks[-1]["t"] != mon.t):
                    mon.look()  # the last item is a look (model S), as in the replay contract
            except Exception as error:  # a contradiction (probability <= alpha) stops the board
                self.error = f"{type(error).__name__}: {error}"
                log.error("board %s: %s", spec.id, self.error)
                break
            if len(mon.looks) != looks:
                self.ranking = mon.ranking()  # the look just taken (no new look)
                self.ranking_look = len(mon.looks)
                self._note_certified()

    def _last_look(self) -> None:
        """The look at the end of the shared order, reached by skipping voided rows."""
        try:
            self.monitor.look()
        except Exception as error:  # a contradiction (probability <= alpha) stops the board
            self.error = f"{type(error).__name__}: {error}"
            log.error("board %s: %s", self.spec.id, self.error)
            return
        self.ranking = self.monitor.ranking()
        self.ranking_look = len(self.monitor.looks)
        self._note_certified()

    def _note_certified(self) -> None:
        """Record the look at which each pair certified at the look just taken was first
        certified (chunks never cross a look point, so one look is taken at a time)."""
        dominance = self.ranking.dominance
        if dominance is None:
            return
        m = dominance.shape[0]
        first = self.first_certified
        if first.shape[0] < m:  # models joined since the last look
            grown = np.zeros((m, m), dtype=np.int64)
            grown[: first.shape[0], : first.shape[1]] = first
            self.first_certified = first = grown
        first[:m, :m][dominance & (first[:m, :m] == 0)] = self.ranking_look

    # ------------------------------------------------------------------ reading
    def needs(self, limit: int = 1000, model: str | None = None, horizon: str = "all") -> dict:
        """The next evaluations the monitor waits for, in the shared order.

        ``horizon="look"`` stops at the next look: every evaluation listed will then be used,
        whereas one listed past the next look is wasted if its model is retired at that look.
        """
        with self.lock:
            mon = self.monitor
            if model is not None and model not in self.model_index:
                raise Rejected(f"unknown model {model!r}")
            active = mon.active.copy()
            if self.done:
                active[:] = False
            if model is not None:
                keep = np.zeros_like(active)
                keep[self.model_index[model]] = active[self.model_index[model]]
                active = keep
            out = needed(self, limit, np.flatnonzero(active), horizon)
            return {
                "t": int(mon.t),
                "state": self.state,
                "active": [self.spec.models[j] for j in np.flatnonzero(mon.active)],
                "next_look_at": next_look(self),
                "evaluations": out,
            }

    def _publish(self) -> None:
        """Make the state after a change visible to readers (who never wait for a write); a new
        look's leaderboard is computed here, by the writer, so that reads only copy bytes."""
        if self.published.publish() and self.on_look is not None:
            self.on_look(self)

    def snapshot_current(self) -> bool:
        """Whether the last look's leaderboard is computed already (a read then only copies)."""
        return self.published.current()

    def look_state(self) -> tuple[dict, Ranking, list[dict]]:
        """The leaderboard, the ranking and the looks of one and the same look (for the page)."""
        body, ranking, number = self.published.look()
        with self.lock:  # the looks are only ever appended to
            looks = [dict(record) for record in self.monitor.looks[:number]]
        return body, ranking, looks

    def leaderboard(self) -> dict:
        """The leaderboard at the last look, with the live progress."""
        return self.published.leaderboard()

    def leaderboard_json(self) -> bytes:
        """:meth:`leaderboard` as JSON (the look's part serialised once per look)."""
        return self.published.leaderboard_json()

    def history(self) -> dict:
        """Every look, every event, and the board's history: when each model joined (item
        count, look count, time) and how many scores it has, and the look at which each
        certified pair and each model's current rank bounds were first reached
        (:func:`rankci.service.history.board_history`)."""
        with self.lock:
            looks = [dict(record) for record in self.monitor.looks]
            events = [dict(e) for e in self.events]
            counts = np.isfinite(self.x).sum(axis=0).tolist()
            first = self.first_certified.copy()
        return {
            "models": list(self.spec.models),
            "looks": looks,
            "events": events,
            **board_history(self.spec, events, looks, counts, first),
        }

    def export(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, model indices, scores) of every received score, in evaluation order."""
        with self.lock:
            pos, model = np.nonzero(np.isfinite(self.x))
            return pos, model, self.x[pos, model]

    def monitor_state(self) -> bytes:
        """The monitor's state as the ``.npz`` of :meth:`rankci.sequential.Monitor.save`
        (:meth:`rankci.sequential.OpenMonitor.save` on a board with ``entry: "open"``)."""
        with self.lock:
            return saved_bytes(self.monitor)
