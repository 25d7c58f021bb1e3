"""What a board's readers see: the state published after its last change, and the leaderboard
of its last look as JSON bytes.

A writer publishes (:meth:`Published.publish`) after each change, under the board's lock; a
reader takes the last published :class:`PublishedState` (one frozen object, replaced at once)
without any lock. The leaderboard of a look is computed and
serialised once, by the writer that took the look and before the look is published (so no reader
waits for it), the live progress once per change, so a read only joins bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankci.service.snapshot import ScoreTracker, leaderboard_snapshot

if TYPE_CHECKING:
    from rankci.ranking import Ranking
    from rankci.service.board import Board

__all__ = ["LookSnapshot", "Published", "PublishedState", "dumps"]


def dumps(value) -> bytes:
    """Compact JSON bytes (no NaN: a score or interval is always finite here).

    Examples
    --------
    >>> dumps({"a": [1, 0.5]})
    b'{"a":[1,0.5]}'
    """
    return json.dumps(value, allow_nan=False, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class LookSnapshot:
    """The leaderboard of one look, made once by the writer that took the look.

    Attributes
    ----------
    body : dict
        The leaderboard (:func:`~rankci.service.snapshot.leaderboard_snapshot`), without the
        live progress.
    head : bytes
        Its JSON up to the live progress: ``dumps(body)`` without its closing brace, then
        ``,"progress":`` (a read appends the progress's bytes and ``}``).
    ranking : Ranking
        The ranking of that look.
    """

    body: dict
    head: bytes
    ranking: Ranking


@dataclass(frozen=True, slots=True)
class PublishedState:
    """Everything a reader sees of a board, published at once after a change.

    Attributes
    ----------
    version : tuple
        (number of looks, error, number of events): a new version is a new leaderboard.
    ranking : Ranking
        The ranking of the last look.
    look : int
        The number of the look that produced :attr:`ranking` (0: none yet).
    progress : dict
        The live progress (:func:`~rankci.service.progress.progress`; do not change it).
    progress_json : bytes
        :attr:`progress` as JSON bytes.
    snapshot : LookSnapshot
        The leaderboard of the last look.
    """

    version: tuple
    ranking: Ranking
    look: int
    progress: dict
    progress_json: bytes
    snapshot: LookSnapshot


class Published:
    """A board's published state (:attr:`state`, a :class:`PublishedState`): the writer replaces
    it after each change, readers take it without any lock.

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
    >>> state = board.published.state  # (number of looks, error, number of events), look
    >>> state.version, state.look
    ((0, None, 0), 0)
    >>> storage.close()
    >>> folder.cleanup()
    """

    def __init__(self, board: Board) -> None:
        self.board = board
        self.state: PublishedState | None = None
        self._tracker = ScoreTracker(board.spec)

    def publish(self) -> bool:
        """Make the board's state visible to readers; True if it is a new look (or the first,
        or a new error or event). The leaderboard of a new look is computed before the state
        is published, so that a reader never waits for it (the tracker only moves forward,
        and only the writer, under the board's lock, calls this)."""
        board = self.board
        before = self.state
        version = self._version()
        live = board.progress()
        new_look = before is None or before.version != version
        if new_look:
            body = self._body()
            snapshot = LookSnapshot(body, dumps(body)[:-1] + b',"progress":', board.ranking)
        else:
            snapshot = before.snapshot
        # one object, replaced at once: a reader takes it without any lock
        self.state = PublishedState(
            version, board.ranking, board.ranking_look, live, dumps(live), snapshot
        )
        return new_look

    def _version(self) -> tuple:
        """(number of looks, error, number of events): a new version is a new leaderboard."""
        board = self.board
        return (len(board.monitor.looks), board.error, len(board.events))

    def _body(self) -> dict:
        """The leaderboard of the board's last look (without the live progress)."""
        board = self.board
        retired = {name: dict(info) for name, info in board.monitor.retired.items()}
        return leaderboard_snapshot(
            board.spec, board.ranking, board.ranking_look, board.x, retired, self._tracker
        )

    @property
    def progress(self) -> dict:
        """The live progress published last (do not change it)."""
        return self.state.progress

    @property
    def progress_json(self) -> bytes:
        """:attr:`progress` as JSON bytes."""
        return self.state.progress_json

    def current(self) -> bool:
        """Whether the last look's leaderboard is computed already (always, since it is
        computed before its state is published; kept for the routes)."""
        return self.state is not None

    def leaderboard(self) -> dict:
        """The leaderboard at the last look, with the live progress."""
        state = self.state
        return {**state.snapshot.body, "progress": state.progress}

    def leaderboard_json(self) -> bytes:
        """:meth:`leaderboard` as JSON: the look's bytes (made once per look) and the live
        progress's (once per change) joined."""
        state = self.state
        return b"".join((state.snapshot.head, state.progress_json, b"}"))

    def look(self) -> tuple[dict, Ranking, int]:
        """(leaderboard with live progress, ranking, look number) of one and the same look."""
        state = self.state
        snapshot = state.snapshot
        body = snapshot.body
        return {**body, "progress": state.progress}, snapshot.ranking, body["look"]["number"]
