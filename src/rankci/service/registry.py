"""The boards of one database: loaded on first use (rebuilt from the stored scores), created,
and guarded by their tokens."""

from __future__ import annotations

import logging
import threading

from fastapi import HTTPException

from rankci.service.auth import TokenCheck, hash_token, new_token
from rankci.service.board import Board
from rankci.service.schemas import BoardCreate
from rankci.service.spec import BoardSpec, make_spec
from rankci.service.storage import BoardRow, Storage

__all__ = ["Service"]

log = logging.getLogger("rankci.service")


class Service:
    """The boards of one database, loaded (rebuilt from the stored scores) on first use."""

    def __init__(self, storage: Storage, create_token: str | None = None) -> None:
        self.storage = storage
        self.create_token = create_token or None
        self.tokens = TokenCheck()
        self._rows: dict[str, BoardRow] = {}
        self._specs: dict[str, BoardSpec] = {}
        self._boards: dict[str, Board] = {}
        self._loading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def row(self, board_id: str) -> BoardRow:
        with self._lock:
            row = self._rows.get(board_id)
        if row is None:
            row = self.storage.get_board(board_id)
            if row is None:
                raise HTTPException(404, f"no board {board_id!r}")
            with self._lock:
                self._rows[board_id] = row
        return row

    def spec(self, board_id: str) -> BoardSpec:
        spec = self._specs.get(board_id)
        if spec is None:
            spec = BoardSpec.from_json(self.row(board_id).spec)
            self._specs[board_id] = spec
        return spec

    def board(self, board_id: str) -> Board:
        with self._lock:
            board = self._boards.get(board_id)
            if board is not None:
                return board
            gate = self._loading.setdefault(board_id, threading.Lock())
        with gate:
            with self._lock:
                board = self._boards.get(board_id)
            if board is None:
                row = self.row(board_id)
                board = Board.load(self.spec(board_id), row.num, self.storage)
                with self._lock:
                    self._boards[board_id] = board
                log.info(
                    "board %s loaded: %d scores, t = %d", board_id, board.received, board.monitor.t
                )
        return board

    def warm(self) -> None:
        """Rebuild every board (run in a background thread at start-up)."""
        for board_id in self.storage.board_ids():
            try:
                self.board(board_id)
            except Exception:  # a board that cannot load must not stop the others
                log.exception("board %s could not be loaded", board_id)

    def create(self, request: BoardCreate) -> tuple[BoardSpec, str, str | None]:
        options = request.model_dump(exclude={"id"})
        spec = make_spec(board_id=request.id, **options)
        write = new_token()
        read = None if spec.public else new_token()
        num = self.storage.create_board(
            spec.id,
            spec.to_json(),
            hash_token(write),
            None if read is None else hash_token(read),
            spec.created_at,
        )
        board = Board(spec, num, self.storage)
        with self._lock:
            self._boards[spec.id] = board
        return spec, write, read

    def check(self, board_id: str, token: str | None, write: bool) -> Board:
        row = self.row(board_id)
        ok = self.tokens.check(token, row.write_hash)
        if not ok and not write:
            ok = row.read_hash is None or self.tokens.check(token, row.read_hash)
        if not ok:
            what = "the board's write token" if write else "a token of this private board"
            if token is None:
                raise HTTPException(
                    401, f"this needs {what}", headers={"WWW-Authenticate": "Bearer"}
                )
            raise HTTPException(403, f"the token is not {what}")
        return self.board(board_id)
