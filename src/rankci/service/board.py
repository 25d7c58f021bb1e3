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

Posts waiting for the board at the same moment are committed in one transaction (group commit,
:meth:`Board.commit_waiting`, driven by :class:`rankci.service.commits.GroupWriter`); each post
is still all or nothing, and answered only once its transaction is committed.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rankci.ranking import Ranking
from rankci.service.commits import Pending
from rankci.service.snapshot import ScoreTracker, leaderboard_snapshot
from rankci.service.spec import BoardSpec
from rankci.service.storage import Storage, StorageUnavailable

__all__ = ["Board", "Conflict", "Posted", "Rejected"]

log = logging.getLogger("rankci.service")
MAX_REPORTED = 10


class Rejected(ValueError):
    """A malformed post; nothing was stored. ``problems`` lists what is wrong (first ten)."""

    def __init__(self, message: str, problems: list | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class Conflict(Rejected):
    """A (model, item) that already has a different score; nothing was stored."""


@dataclass(frozen=True)
class Posted:
    """What a post did: new scores stored, exact repeats ignored; the progress after it."""

    accepted: int
    duplicates: int
    progress: dict


class Board:
    """One leaderboard: its spec, the received scores, and the monitor's state."""

    def __init__(self, spec: BoardSpec, num: int, storage: Storage) -> None:
        self.spec = spec
        self.num = num
        self.storage = storage
        self.lock = threading.RLock()
        self._waiting: list[Pending] = []  # posts waiting for the next group commit
        self._waiting_lock = threading.Lock()
        self.last_group = 1  # posts in the last group commit
        n, m = spec.n_items, spec.n_models
        self.order = spec.order
        self.position = np.empty(n, dtype=np.int64)
        self.position[self.order] = np.arange(n)
        self.model_index = {name: j for j, name in enumerate(spec.models)}
        self.item_index = {item: i for i, item in enumerate(spec.items)}
        self.x = np.full((n, m), np.nan)  # rows in evaluation order
        self.received = 0
        self.monitor = spec.make_monitor()
        self.ranking: Ranking = self.monitor.ranking()  # t = 0: no look
        self.ranking_look = 0  # the number of the look that produced self.ranking
        self.error: str | None = None
        self.events: list[dict] = []
        self._snapshot: tuple | None = None
        self._snapshot_lock = threading.Lock()
        self.render_lock = threading.Lock()  # the web page's sections (see page.py)
        self._tracker = ScoreTracker(spec)
        self.page_cache: dict = {}
        self.stale = False  # a write's outcome is unknown: rebuild from the database first
        self.page_viewed_at = -1e9  # when the web page last asked for this board
        self.on_look = None  # called with the board after each new look (the page renderer)
        self._publish()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, spec: BoardSpec, num: int, storage: Storage) -> Board:
        """Rebuild the board from its committed scores and events (exactly)."""
        board = cls(spec, num, storage)
        model, item, score = storage.load_scores(num)
        board.x[board.position[item], model] = score
        board.received = int(score.size)
        for _seq, t, kind, detail in storage.load_events(num):
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
        return self.error is not None or mon.finished or mon.t >= self.spec.n_items

    @property
    def state(self) -> str:
        if self.error is not None:
            return "error"
        return "finished" if self.done else "open"

    def progress(self) -> dict:
        """Where the evaluation stands now (live, not only at the last look)."""
        spec, mon = self.spec, self.monitor
        n, m = spec.n_items, spec.n_models
        active = [] if self.done else mon.needs()
        remaining = 0 if self.done else (n - mon.t) * int(mon.active.sum())
        total = n * m
        return {
            "state": self.state,
            "error": self.error,
            "t": int(mon.t),
            "n_items": n,
            "n_models": m,
            "scores_received": int(self.received),
            "evaluations": int(mon.evaluations),
            "evaluations_total": total,
            "evaluations_remaining": remaining,
            "evaluations_saved": int(total - mon.evaluations - remaining),
            "cost_fraction": mon.evaluations / total,
            "n_looks": len(mon.looks),
            "next_look_at": self._next_look(),
            "active": active,
            "retired": {name: dict(info) for name, info in mon.retired.items()},
        }

    def _next_look(self) -> int | None:
        mon = self.monitor
        if self.done:
            return None
        every = self.spec.look_every
        return int(min((mon.t // every + 1) * every, self.spec.n_items))

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

    def submit(self, entries: Sequence[tuple[str, str, float]], notify=None) -> Pending:
        """Validate a post and queue it for the next group commit (:meth:`commit_waiting`).

        Raises :class:`Rejected` at once for a malformed post. ``notify()`` is called, from the
        committing thread, once the post's outcome is known (:meth:`Pending.outcome`).
        """
        model, item, score = self._validate(entries)
        pending = Pending(model, item, score, notify)
        with self._waiting_lock:
            self._waiting.append(pending)
        return pending

    def waiting(self) -> int:
        """How many posts wait for the next group commit."""
        return len(self._waiting)

    def commit_waiting(self) -> int:
        """Commit every post waiting now in one transaction, then answer each; returns how many
        posts were answered.

        The posts are checked in the order they arrived, each against the scores stored before
        it and the earlier posts of the group (a conflict rejects that post alone). A failed
        transaction fails every post of the group, and changes nothing in memory.
        """
        with self.lock:
            with self._waiting_lock:
                group, self._waiting = self._waiting, []
            if not group:
                return 0
            self.last_group = len(group)
            try:
                self._commit_group(group)
            finally:
                for pending in group:
                    if pending.result is None and pending.error is None:  # pragma: no cover
                        pending.error = RuntimeError("the post could not be committed")
                    pending.finish()
            return len(group)

    def _commit_group(self, group: list[Pending]) -> None:
        claimed: dict[int, float] = {}  # cells new in this group: key -> score
        accepted = []
        for pending in group:
            try:
                new, pos = self._new_cells(pending, claimed)
            except Rejected as error:
                pending.error = error
                continue
            accepted.append((pending, new, pos))
        if any(new.any() for _, new, _ in accepted):
            model = np.concatenate([p.model[new] for p, new, _ in accepted])
            item = np.concatenate([p.item[new] for p, new, _ in accepted])
            score = np.concatenate([p.score[new] for p, new, _ in accepted])
            try:
                # committed before anything changes in memory (and before any answer)
                self._store(self.storage.insert_scores, self.num, model, item, score)
            except Exception as error:
                for pending, _, _ in accepted:
                    pending.error = error
                return
            self.x[self.position[item], model] = score
            self.received += int(score.size)
            self._advance()
            self._publish()
        progress = self._published[4]
        for pending, new, _ in accepted:
            n_new = int(new.sum())
            pending.result = Posted(n_new, int(len(new) - n_new), progress)

    def _new_cells(self, pending: Pending, claimed: dict) -> tuple[np.ndarray, np.ndarray]:
        """Which of a post's scores are new; :class:`Conflict` if one contradicts a stored score,
        a score of an earlier post in the group, or another score of the same post."""
        model, item, score = pending.model, pending.item, pending.score
        pos = self.position[item]
        current = self.x[pos, model]
        key = pos * self.spec.n_models + model
        if claimed:
            for k, cell in enumerate(key.tolist()):
                earlier = claimed.get(cell)
                if earlier is not None:
                    current[k] = earlier
        known = np.isfinite(current)
        conflict = known & (current != score)
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        inside = score != score[first][inverse]  # the same cell twice in one post
        if conflict.any() or inside.any():
            problems = []
            for n in np.flatnonzero(conflict | inside)[:MAX_REPORTED]:
                before = current[n] if conflict[n] else score[first[inverse[n]]]
                problems.append(
                    {
                        "index": int(n),
                        "model": self.spec.models[model[n]],
                        "item": self.spec.items[item[n]],
                        "score": float(score[n]),
                        "existing_score": float(before),
                    }
                )
            count = int((conflict | inside).sum())
            raise Conflict(
                f"{count} score(s) conflict with a different score for the same (model, item);"
                " scores cannot be changed, nothing was stored",
                problems,
            )
        new = np.zeros(len(score), dtype=bool)
        new[first] = True
        new &= ~known
        claimed.update(zip(key[new].tolist(), score[new].tolist()))
        return new, pos

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

    def _validate(self, entries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(entries)
        if n == 0:
            raise Rejected("no scores in the post")
        model = np.empty(n, dtype=np.int64)
        item = np.empty(n, dtype=np.int64)
        score = np.empty(n, dtype=float)
        problems = []
        models, items = self.model_index, self.item_index
        for k, (name, item_id, value) in enumerate(entries):
            j = models.get(name, -1)
            i = items.get(item_id, -1)
            model[k], item[k] = j, i
            if j < 0:
                problems.append({"index": k, "model": name, "problem": "unknown model"})
            if i < 0:
                problems.append({"index": k, "item": item_id, "problem": "unknown item"})
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                problems.append({"index": k, "score": str(value), "problem": "not a number"})
                score[k] = np.nan
            else:
                try:
                    score[k] = value
                except OverflowError:  # an integer too large for a float
                    score[k] = np.inf
        bad = ~((score >= 0.0) & (score <= 1.0))
        for k in np.flatnonzero(bad):
            if not any(p["index"] == k and p["problem"] == "not a number" for p in problems):
                value = float(score[k]) if np.isfinite(score[k]) else str(entries[k][2])[:40]
                problems.append({"index": int(k), "score": value, "problem": "outside [0, 1]"})
        if problems:
            problems.sort(key=lambda p: p["index"])
            first = problems[0]
            what = first.get("model", first.get("item", first.get("score")))
            raise Rejected(
                f"{len(problems)} problem(s) in the post, nothing was stored; the first: entry "
                f"{first['index']}: {first['problem']} {what!r}"
                + ("" if first["problem"] != "outside [0, 1]" else " (rescale scores to [0, 1])"),
                problems[:MAX_REPORTED],
            )
        return model, item, score

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

    def _apply_event(self, kind: str, detail: dict, t: int) -> None:
        if kind != "retire":  # pragma: no cover - no other kind is written
            raise ValueError(f"unknown event {kind!r}")
        if self.monitor.t != t:
            raise RuntimeError(f"event at t={t} replayed at t={self.monitor.t}")
        self.events.append({"t": t, "kind": kind, **detail})
        if not self.done and self.monitor.active[self.model_index[detail["model"]]]:
            self.monitor.retire(detail["model"])

    # ------------------------------------------------------------------ the monitor
    def _advance(self, limit: int | None = None) -> None:
        """Consume every row that is complete for the active models, in order."""
        mon, spec = self.monitor, self.spec
        n, every = spec.n_items, spec.look_every
        cap = n if limit is None else min(limit, n)
        while not self.done and mon.t < cap:
            t = mon.t
            stop = min(cap, (t // every + 1) * every)
            block = self.x[t:stop]
            complete = np.isfinite(block[:, mon.active]).all(axis=1)
            usable = len(complete) if complete.all() else int(np.argmin(complete))
            if usable == 0:
                break
            looks = len(mon.looks)
            try:
                mon.update_block(block[:usable])
                if mon.t == n and (not mon.looks or mon.looks[-1]["t"] != n):
                    mon.look()  # the last item is a look (model S), as in the replay contract
            except Exception as error:  # a contradiction (probability <= alpha) stops the board
                self.error = f"{type(error).__name__}: {error}"
                log.error("board %s: %s", spec.id, self.error)
                break
            if len(mon.looks) != looks:
                self.ranking = mon.ranking()  # the look just taken (no new look)
                self.ranking_look = len(mon.looks)

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
            columns = np.flatnonzero(active)
            out: list[dict] = []
            start = mon.t
            n = self.spec.n_items
            if horizon == "look" and not self.done:
                n = self._next_look()
            while columns.size and start < n and len(out) < limit:
                stop = min(n, start + max(64, limit // max(columns.size, 1) + 1))
                rows, cols = np.nonzero(np.isnan(self.x[start:stop][:, columns]))
                for r, c in zip(rows[: limit - len(out)], cols[: limit - len(out)]):
                    p = start + int(r)
                    out.append(
                        {
                            "model": self.spec.models[columns[c]],
                            "item": self.spec.items[self.order[p]],
                            "position": p,
                        }
                    )
                start = stop
            return {
                "t": int(mon.t),
                "state": self.state,
                "active": [self.spec.models[j] for j in np.flatnonzero(mon.active)],
                "next_look_at": self._next_look(),
                "evaluations": out,
            }

    def _publish(self) -> None:
        """Make the state after a change visible to readers (who never wait for a write).

        A new look's leaderboard is computed here, by the writer, so that reads only copy bytes.
        """
        before = getattr(self, "_published", None)
        self._published = (
            (len(self.monitor.looks), self.error, len(self.events)),
            self.ranking,
            self.ranking_look,
            {name: dict(info) for name, info in self.monitor.retired.items()},
            self.progress(),
        )
        self._current_snapshot()
        if self.on_look is not None and (before is None or before[0] != self._published[0]):
            self.on_look(self)

    def _current_snapshot(self) -> tuple[dict, bytes, dict]:
        """(snapshot, its JSON, live progress); the snapshot is computed once per look."""
        published = self._published
        cached = self._snapshot
        if cached is None or cached[0] != published[0]:
            with self._snapshot_lock:
                published = self._published  # the newest: the tracker only moves forward
                version, ranking, number, retired, _ = published
                cached = self._snapshot
                if cached is None or cached[0] != version:
                    # rows before the look are final for the models that consumed them, so
                    # they are read without the board's lock
                    body = leaderboard_snapshot(
                        self.spec, ranking, number, self.x, retired, self._tracker
                    )
                    text = json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
                    cached = (version, body, text, ranking)
                    self._snapshot = cached
        return cached[1], cached[2], published[4]

    def snapshot_current(self) -> bool:
        """Whether the last look's leaderboard is computed already (a read then only copies)."""
        cached = self._snapshot
        return cached is not None and cached[0] == self._published[0]

    def look_state(self) -> tuple[dict, Ranking, list[dict]]:
        """The leaderboard, the ranking and the looks of one and the same look (for the page)."""
        _, _, progress = self._current_snapshot()
        cached = self._snapshot  # one tuple: its leaderboard and ranking belong together
        body, ranking = cached[1], cached[3]
        with self.lock:  # the looks are only ever appended to
            looks = [dict(record) for record in self.monitor.looks[: body["look"]["number"]]]
        return {**body, "progress": progress}, ranking, looks

    def leaderboard(self) -> dict:
        """The leaderboard at the last look, with the live progress."""
        body, _, progress = self._current_snapshot()
        return {**body, "progress": progress}

    def leaderboard_json(self) -> bytes:
        """:meth:`leaderboard` as JSON (the look's part serialised once per look)."""
        _, text, progress = self._current_snapshot()
        tail = json.dumps(progress, allow_nan=False, separators=(",", ":")).encode()
        return text[:-1] + b',"progress":' + tail + b"}"

    def history(self) -> dict:
        with self.lock:
            looks = [dict(record) for record in self.monitor.looks]
            events = [dict(e) for e in self.events]
        return {"models": list(self.spec.models), "looks": looks, "events": events}

    def export(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, model indices, scores) of every received score, in evaluation order."""
        with self.lock:
            pos, model = np.nonzero(np.isfinite(self.x))
            return pos, model, self.x[pos, model]

    def monitor_state(self) -> bytes:
        """The monitor's state as the ``.npz`` of :meth:`rankci.sequential.Monitor.save`."""
        with self.lock, tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "monitor.npz")
            self.monitor.save(path)
            with open(path, "rb") as handle:
                return handle.read()
