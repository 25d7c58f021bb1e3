"""Group commit: one writer thread commits the posts waiting on each board, a group at a time.

A post is parsed and validated by the request (:meth:`rankci.service.board.Board.submit`), which
then wakes the :class:`GroupWriter` and waits. The writer takes every post waiting on the board
at that moment and commits them in one transaction (:meth:`~rankci.service.board.Board.
commit_waiting`), then answers each. While it waits for one commit to reach the disk, the next
posts gather, so the cost of a commit (an fsync) is shared by every post waiting for it, and no
post is answered before the transaction holding its scores is committed.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rankci.service.board import Board, Posted

__all__ = ["GroupWriter", "Pending"]

log = logging.getLogger("rankci.service")
GATHER = 0.001  # seconds a commit may wait for as many posts as the board's last group had


class Pending:
    """A validated post waiting for its group's commit
    (:meth:`rankci.service.board.Board.commit_waiting`)."""

    __slots__ = ("model", "item", "score", "notify", "result", "error", "done")

    def __init__(self, model, item, score, notify=None) -> None:
        self.model, self.item, self.score = model, item, score
        self.notify = notify  # called once the outcome is known
        self.result: Posted | None = None
        self.error: BaseException | None = None
        self.done = False

    def finish(self) -> None:
        self.done = True
        if self.notify is not None:
            try:
                self.notify()
            except Exception:  # pragma: no cover - e.g. the event loop has closed
                log.exception("a post's answer could not be delivered")

    def outcome(self) -> Posted:
        """The post's answer, or the error that refused it (raised)."""
        if not self.done:
            raise RuntimeError("the post has not been committed yet")
        if self.error is not None:
            raise self.error
        return self.result


class GroupWriter:
    """The thread that commits waiting posts, board by board (started on first use).

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

    def wake(self, board: Board) -> None:
        """Commit ``board``'s waiting posts soon."""
        with self._wake:
            if self._stop:
                # shutting down: commit in the caller's thread, so that no post is left waiting
                board.commit_waiting()
                return
            self._boards[id(board)] = board
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="rankci-commit", daemon=True
                )
                self._thread.start()
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
                while not self._boards and not self._stop:
                    self._wake.wait()
                if not self._boards:
                    return
                boards = list(self._boards.values())
                self._boards.clear()
            for board in boards:
                _gather(board)
                try:
                    board.commit_waiting()
                except Exception:  # pragma: no cover - every post is answered regardless
                    log.exception("committing the posts of board %s failed", board.spec.id)


def _gather(board: Board) -> None:
    """Wait up to :data:`GATHER` for the clients of the last group to post again (their answers
    have just left), so that one commit serves them all rather than alternate halves."""
    deadline = time.perf_counter() + GATHER
    while board.waiting() < board.last_group and time.perf_counter() < deadline:
        time.sleep(0.0001)
