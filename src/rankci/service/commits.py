"""Group commit: one writer thread commits every post waiting, on every board, in one transaction.

A post is parsed and validated by the request (:meth:`rankci.service.board.Board.submit`), which
then wakes the :class:`GroupWriter` and waits. The writer takes every post waiting at that moment,
on all the boards of a database, and commits them in one transaction (:func:`commit_boards`; each
board adds its new scores to the :class:`CommitGroup` of its storage with
:meth:`~rankci.service.board.Board.commit`): one fsync serves them all. While it waits for one
commit to reach the disk, the next posts gather, so the cost of a commit is shared by every post
waiting for it, whichever board it is for. No post is answered before the transaction holding its
scores is committed; a failed transaction fails every post in it, and changes nothing in memory.

Answers are delivered with one wake-up per event loop and commit (not one per post).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rankci.service.storage_cluster import NotOwner

if TYPE_CHECKING:
    from rankci.service.board import Board

__all__ = ["GATHER", "CommitGroup", "GroupWriter", "Pending", "Posted", "commit_boards"]

log = logging.getLogger("rankci.service")
GATHER = 0.001  # seconds a commit may wait for as many posts as the last commit had


@dataclass(frozen=True)
class Posted:
    """What a post did: new scores stored, exact repeats ignored; the progress after it
    (``progress_json``: the same as JSON bytes)."""

    accepted: int
    duplicates: int
    progress: dict
    progress_json: bytes = b""


class Pending:
    """A validated post waiting for its group's commit (:func:`commit_boards`).

    Once its outcome is known, ``notify()`` is called (from the committing thread), or, given an
    asyncio ``loop`` and ``future``, the future is resolved on that loop.
    """

    __slots__ = (
        "model", "item", "score", "notify", "loop", "future", "result", "error", "done",
        "new_names",
    )  # fmt: skip

    def __init__(self, model, item, score, notify=None, loop=None, future=None) -> None:
        self.model, self.item, self.score = model, item, score
        self.new_names: tuple = ()  # items not on the board yet (item_entry "open")
        self.notify = notify  # called once the outcome is known
        self.loop, self.future = loop, future
        self.result: Posted | None = None
        self.error: BaseException | None = None
        self.done = False

    def outcome(self) -> Posted:
        """The post's answer, or the error that refused it (raised)."""
        if not self.done:
            raise RuntimeError("the post has not been committed yet")
        if self.error is not None:
            raise self.error
        return self.result


def _settle(futures) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def finish(posts: Iterable[Pending]) -> None:
    """Mark posts answered and wake their waiters: one ``call_soon_threadsafe`` per event loop."""
    loops: dict[int, tuple] = {}
    for pending in posts:
        if pending.result is None and pending.error is None:  # pragma: no cover
            pending.error = RuntimeError("the post could not be committed")
        pending.done = True
        if pending.loop is not None:
            loops.setdefault(id(pending.loop), (pending.loop, []))[1].append(pending.future)
        if pending.notify is not None:
            try:
                pending.notify()
            except Exception:  # pragma: no cover
                log.exception("a post's answer could not be delivered")
    for loop, futures in loops.values():
        try:
            loop.call_soon_threadsafe(_settle, futures)
        except RuntimeError:  # pragma: no cover - the event loop has closed
            log.warning("%d answer(s) not delivered: the event loop has closed", len(futures))


class CommitGroup:
    """The new scores of several boards of one storage, written in one transaction.

    The contract between a board and the group commit: :meth:`rankci.service.board.Board.commit`
    adds the board's new scores with :meth:`add`, naming the function to call once their fate
    is known; :meth:`write` then commits every board's scores in one transaction (one fsync)
    and calls each function with None, or, if the transaction failed, with the error (nothing
    was stored, so nothing may change in memory).
    """

    __slots__ = ("storage", "parts", "events")

    def __init__(self, storage) -> None:
        self.storage = storage
        self.parts: list[tuple[int, tuple, object]] = []  # (board number, rows, then)
        self.events: list[tuple[int, int, str, str]] = []  # (board number, t, kind, detail)

    def add(self, num: int, rows: tuple, then, events=()) -> None:
        """Add board ``num``'s new scores ``rows`` (model, item, score and arrival arrays, the
        arrival the order in which the board accepted each; for votes also a list of their text
        fields, one None or tuple per row); ``then(error)`` is called after :meth:`write`, with
        None once they are committed. ``events`` ((t, kind, detail) of the board) are committed
        in the same transaction."""
        self.parts.append((num, rows, then))
        self.events.extend((num, *event) for event in events)

    def write(self) -> None:
        """Commit every board's scores in one transaction, then call each board's ``then``."""
        parts = self.parts
        holds = getattr(self.storage, "holds", None)
        if holds is not None:  # a cluster member: a board whose lease lapsed fails alone
            lapsed = [part for part in parts if not holds(part[0])]
            if lapsed:
                parts = [part for part in parts if holds(part[0])]
                for num, _, then in lapsed:
                    then(NotOwner(f"this server's lease of board number {num} lapsed; retry"))
        if not parts:
            return
        kept = {num for num, _, _ in parts}
        events = [event for event in self.events if event[0] in kept]
        rows = [r for _, r, _ in parts]
        nums = np.concatenate([np.full(len(r[2]), num, dtype=np.int64) for num, r, _ in parts])
        try:
            # committed before anything changes in memory (and before any answer)
            fields = None  # a votes board's text fields (rows[4]), one entry per row
            if any(len(r) > 4 for r in rows):
                fields = [f for r in rows for f in (r[4] if len(r) > 4 else [None] * len(r[2]))]
            columns = [np.concatenate([r[i] for r in rows]) for i in range(4)]
            if fields is None and not events:
                self.storage.insert_scores(nums, *columns)
            else:
                self.storage.insert_scores(nums, *columns, fields, events=events)
        except Exception as error:
            for _, _, then in parts:
                then(error)
            return
        for _, _, then in parts:
            then(None)


def commit_boards(boards: Iterable[Board]) -> int:
    """Commit every post waiting on ``boards`` in one transaction per database, then answer
    each; returns how many posts were answered.

    Each board's posts are checked in the order they arrived, each against the scores stored
    before it and the earlier posts of the group (a conflict rejects that post alone). The
    boards' locks are taken in the order of their numbers (so that two committers never wait
    for each other), and held until their posts are applied.

    Examples
    --------
    See :class:`GroupWriter`; ``Board.commit_waiting()`` is ``commit_boards([board])``.
    """
    boards = sorted({id(b): b for b in boards}.values(), key=lambda b: b.num)
    answered: list[Pending] = []
    with ExitStack() as held:
        for board in boards:
            held.enter_context(board.lock)
        try:
            groups: dict[int, CommitGroup] = {}
            for board in boards:
                group = groups.get(id(board.storage))
                if group is None:
                    group = groups[id(board.storage)] = CommitGroup(board.storage)
                answered.extend(board.commit(group))
            for group in groups.values():
                group.write()
        finally:
            finish(answered)
    return len(answered)


class GroupWriter:
    """The thread that commits waiting posts, all boards at once (started on first use).

    Examples
    --------
    >>> import os, tempfile
    >>> from rankci.service.auth import hash_token, new_token
    >>> from rankci.service.board import Board
    >>> from rankci.service.spec import make_spec
    >>> from rankci.service.storage import open_storage
    >>> spec = make_spec(benchmark="demo", run="r1", models=["a", "b"],
    ...                  items=["q0", "q1"], order_seed=0, look_every=1)
    >>> folder = tempfile.TemporaryDirectory()
    >>> storage = open_storage(os.path.join(folder.name, "boards.db")).open()
    >>> num = storage.create_board(spec.id, spec.to_json(), hash_token(new_token(), b"k"),
    ...                            None, spec.created_at)
    >>> board = Board(spec, num, storage)
    >>> answered = threading.Event()
    >>> pending = board.submit([("a", "q0", 1.0), ("b", "q0", 0.0)], notify=answered.set)
    >>> writer = GroupWriter()
    >>> writer.wake(board)
    >>> answered.wait(30), pending.outcome().accepted
    (True, 2)
    >>> writer.stop()
    >>> storage.close()
    >>> folder.cleanup()
    """

    def __init__(self) -> None:
        self._boards: dict[int, Board] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._idle = True  # the thread waits for work (not gathering, not committing)
        self._count = 0  # wake-ups (posts) since the thread last took the boards
        self.last_posts = 1  # posts in the last commit

    def wake(self, board: Board) -> None:
        """Commit ``board``'s waiting posts soon (call once per post submitted)."""
        with self._wake:
            if self._stop:
                # shutting down: commit in the caller's thread, so that no post is left waiting
                commit_boards([board])
                return
            self._boards[id(board)] = board
            self._count += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="rankci-commit", daemon=True
                )
                self._thread.start()
            # wake the thread only when it idles or has gathered enough: every wake-up of it
            # costs the event loop a hand-over of the interpreter lock
            if self._idle or self._count >= self.last_posts:
                self._wake.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Commit what is waiting, then end the thread."""
        with self._wake:
            self._stop = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._wake:
                self._idle = True
                while not self._boards and not self._stop:
                    self._wake.wait()
                self._idle = False
                if not self._boards:
                    return
                # gather: wait up to GATHER for as many posts as the last commit had (their
                # clients have just been answered and post again), so that one commit serves
                # them all rather than alternate halves
                deadline = time.monotonic() + GATHER
                while self._count < self.last_posts and not self._stop:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._wake.wait(left)
                boards = list(self._boards.values())
                self._boards.clear()
                self._count = 0
            try:
                n = commit_boards(boards)
                if n:
                    self.last_posts = n
            except Exception:  # pragma: no cover - every post is answered regardless
                log.exception("committing the posts of %d board(s) failed", len(boards))
