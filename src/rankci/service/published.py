"""What a board's readers see: the state published after its last change, and the leaderboard
of its last look as JSON bytes.

A writer publishes (:meth:`Published.publish`) after each change, under the board's lock; a
reader takes the last published tuple without any lock. The leaderboard of a look is computed and
serialised once, by the writer that took the look and before the look is published (so no reader
waits for it), the live progress once per change, so a read only joins bytes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rankci.service.progress import progress
from rankci.service.snapshot import ScoreTracker, leaderboard_snapshot

if TYPE_CHECKING:
    from rankci.ranking import Ranking
    from rankci.service.board import Board

__all__ = ["Published", "dumps"]


def dumps(value) -> bytes:
    """Compact JSON bytes (no NaN: a score or interval is always finite here).

    Examples
    --------
    >>> dumps({"a": [1, 0.5]})
    b'{"a":[1,0.5]}'
    """
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


class Published:
    """A board's published state: one tuple (version, ranking, look number, -, progress,
    progress JSON, (leaderboard of the last look, its JSON, its ranking))

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
    >>> board.published.current()  # the leaderboard is computed once per look
    True
    >>> json.loads(board.published.leaderboard_json())["progress"]["t"]
    0
    >>> storage.close()
    >>> folder.cleanup()
    """

    def __init__(self, board: Board) -> None:
        self.board = board
        self.state: tuple | None = None
        self._tracker = ScoreTracker(board.spec)

    def publish(self) -> bool:
        """Make the board's state visible to readers; True if it is a new look (or the first,
        or a new error or event). The leaderboard of a new look is computed before the state
        is published, so that a reader never waits for it (the tracker only moves forward,
        and only the writer, under the board's lock, calls this)."""
        board = self.board
        before = self.state
        version = (len(board.monitor.looks), board.error, len(board.events))
        live = progress(board)
        if before is not None and before[0] == version:
            snapshot = before[6]
        else:
            retired = {name: dict(info) for name, info in board.monitor.retired.items()}
            body = leaderboard_snapshot(
                board.spec, board.ranking, board.ranking_look, board.x, retired, self._tracker
            )
            snapshot = (body, dumps(body), board.ranking)
        # one tuple, replaced at once: a reader takes it without any lock
        self.state = (version, board.ranking, board.ranking_look, None, live, dumps(live), snapshot)
        return before is None or before[0] != version

    @property
    def progress(self) -> dict:
        """The live progress published last (do not change it)."""
        return self.state[4]

    @property
    def progress_json(self) -> bytes:
        """:attr:`progress` as JSON bytes."""
        return self.state[5]

    def current(self) -> bool:
        """Whether the last look's leaderboard is computed already (always, since it is
        computed before its state is published; kept for the routes)."""
        return self.state is not None

    def leaderboard(self) -> dict:
        """The leaderboard at the last look, with the live progress."""
        state = self.state
        return {**state[6][0], "progress": state[4]}

    def leaderboard_json(self) -> bytes:
        """:meth:`leaderboard` as JSON: the look's bytes (made once per look) and the live
        progress's (once per change) joined."""
        state = self.state
        return state[6][1][:-1] + b',"progress":' + state[5] + b"}"

    def look(self) -> tuple[dict, Ranking, int]:
        """(leaderboard with live progress, ranking, look number) of one and the same look."""
        state = self.state
        body, _, ranking = state[6]
        return {**body, "progress": state[4]}, ranking, body["look"]["number"]
