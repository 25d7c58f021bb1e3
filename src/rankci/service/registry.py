"""The boards of one database: loaded on first use (rebuilt from the stored scores), created,
deleted, quarantined when they cannot load, and guarded by their tokens.

Answers that protect private boards: an unknown board id and a private board without a valid
token get the same answer (404, same text), and every refused authentication counts against
the client's address (:class:`~rankci.service.auth.FailureLimit`; over the limit: 429).
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import math
import threading

from fastapi import HTTPException

from rankci.service.auth import REVOKED, Busy, FailureLimit, TokenCheck, new_token
from rankci.service.board import Board
from rankci.service.schemas import BoardCreate
from rankci.service.spec import BoardSpec, make_spec, make_vote_spec
from rankci.service.storage import BoardExists, BoardRow, Storage, StorageUnavailable
from rankci.service.voteboard import VoteBoard

__all__ = ["DEFAULT_MAX_BOARDS", "DEFAULT_MAX_CELLS", "Elsewhere", "Service", "Unservable"]

log = logging.getLogger("rankci.service")
DEFAULT_MAX_CELLS = 4_000_000  # models x items per board (32 MB of float64 scores)
DEFAULT_MAX_BOARDS = 1000


class Unservable(HTTPException):
    """A stored board that cannot be read or served (503; the board is quarantined)."""


class Elsewhere(HTTPException):
    """In a cluster: the board is owned by another server process, whose advertised URL is
    ``owner`` (answered 307 to the same path there, see
    :func:`rankci.service.posting.redirect_response`)."""

    def __init__(self, board_id: str, owner: str) -> None:
        super().__init__(
            307,
            f"board {board_id!r} is served by another process of this cluster: {owner} "
            "(repeat the request there, with the same Authorization header)",
        )
        self.owner = owner


class Service:
    """The boards of one database, loaded (rebuilt from the stored scores) on first use.

    ``admin_token`` guards board creation (unless ``open_boards``), deletion and token rotation.
    """

    def __init__(
        self,
        storage: Storage,
        admin_token: str | None = None,
        *,
        open_boards: bool = False,
        max_cells: int = DEFAULT_MAX_CELLS,
        max_boards: int = DEFAULT_MAX_BOARDS,
        failures: FailureLimit | None = None,
    ) -> None:
        self.storage = storage
        self.admin_token = admin_token or None
        self.open_boards = open_boards
        self.max_cells = max_cells
        self.max_boards = max_boards
        self.failures = failures or FailureLimit()
        self.tokens: TokenCheck | None = None  # set by start(), once the secret is read
        self.quarantined: dict[str, str] = {}
        self.warmed = False
        self.on_look = None  # given to every board (the page renderer's hook)
        self._rows: dict[str, BoardRow] = {}
        self._specs: dict[str, BoardSpec] = {}
        self._boards: dict[str, Board] = {}
        self._loading: dict[str, threading.Lock] = {}
        self._ids: set[str] | None = None  # every board id, once listed (warm)
        self._decoy: BoardRow | None = None  # checked against for an unknown id
        self._lock = threading.Lock()
        # a cluster member (rankci serve --cluster) answers only the boards it holds the
        # lease of; _fences: the fencing token each loaded board was loaded under
        self.cluster = bool(getattr(storage, "cluster", False))
        self._fences: dict[str, int] = {}
        if self.cluster:
            storage.on_lost = self._forget_numbers

    def start(self) -> None:
        self.tokens = TokenCheck(self.storage.token_key)

    # ------------------------------------------------------------------ boards
    @staticmethod
    def not_found(board_id: str) -> HTTPException:
        return HTTPException(
            404, f"no board {board_id!r}, or it is private: a private board needs its token"
        )

    def find(self, board_id: str) -> BoardRow | None:
        with self._lock:
            row = self._rows.get(board_id)
            if self.cluster and row is not None and not self.storage.holds(row.num):
                row = None  # another process may have changed it: read it again
            if row is None and self._ids is not None and board_id not in self._ids:
                return None  # this process owns the database: it knows every board id
        if row is None:
            row = self.storage.get_board(board_id)
            if row is not None:
                with self._lock:
                    self._rows[board_id] = row
        return row

    def row(self, board_id: str) -> BoardRow:
        row = self.find(board_id)
        if row is None:
            raise self.not_found(board_id)
        return row

    def _exists(self, spec: BoardSpec) -> str:
        """Why a board cannot be created over ``spec.id``: it exists (and, when the request
        asks for another entry rule, that an existing board's entry rule never changes)."""
        message = f"a board {spec.id!r} exists"
        try:
            existing = self.spec(spec.id)
        except Exception:  # quarantined or gone since: the plain answer
            return message
        old, new = existing.monitor.entry, spec.monitor.entry
        if old != new:
            message += (
                f" with entry {old!r}: the entry rule of an existing board cannot be changed to "
                f"{new!r} (its pairs' levels were fixed when it was created); create a new board "
                f"with entry {new!r}, or add models to an open board (POST .../models)"
            )
        if existing.item_entry != spec.item_entry:
            message += (
                f" with item_entry {existing.item_entry!r}: the item entry rule of an existing "
                f"board cannot be changed to {spec.item_entry!r} (its shared order and its "
                f"guarantee were fixed when it was created); create a new board with "
                f"item_entry {spec.item_entry!r}"
            )
        return message

    def spec(self, board_id: str) -> BoardSpec:
        """The board's spec; a stored spec that cannot be read or served (text that is not valid
        Unicode, written before it was checked, or a damaged row) quarantines the board and
        raises :class:`Unservable` (503), never a 500."""
        spec = self._specs.get(board_id)
        if spec is None:
            row = self.row(board_id)
            try:
                spec = BoardSpec.from_json(row.spec)
            except Exception as error:
                reason = self.set_aside(board_id, error)
                raise Unservable(
                    503,
                    f"board {board_id!r} is quarantined: {reason}",
                    headers={"Retry-After": "60"},
                ) from None
            self._specs[board_id] = spec
        return spec

    def board(self, board_id: str, read: bool = False) -> Board:
        """The loaded board (loading or rebuilding it when needed). For a ``read``, a board
        waiting to be rebuilt after a write of unknown outcome, while the database cannot be
        reached, is answered from memory: its last state known to be committed (responses are
        marked stale by the middleware while the database is down)."""
        try:
            return self._board(board_id)
        except StorageUnavailable:
            if read:
                with self._lock:
                    board = self._boards.get(board_id)
                if board is not None and (not self.cluster or self.storage.holds(board.num)):
                    return board
            raise

    def _board(self, board_id: str) -> Board:
        reason = self.quarantined.get(board_id)
        if reason is not None:
            raise HTTPException(
                503, f"board {board_id!r} is quarantined: {reason}", headers={"Retry-After": "60"}
            )
        fence = self._claim(board_id) if self.cluster else None
        with self._lock:
            board = self._boards.get(board_id)
            if board is not None and not board.stale:
                return board
            gate = self._loading.setdefault(board_id, threading.Lock())
        with gate:
            with self._lock:
                board = self._boards.get(board_id)
            if board is None or board.stale:
                row = self.row(board_id)
                try:
                    spec = self.spec(board_id)
                    kind = VoteBoard if spec.kind == "votes" else Board
                    board = kind.load(spec, row.num, self.storage)
                    board.on_look = self.on_look
                    board.quota = self.max_cells  # checked when the board grows
                except (StorageUnavailable, HTTPException):
                    raise
                except Exception as error:  # a board that cannot load must not stop the others
                    reason = self.set_aside(board_id, error)
                    raise HTTPException(
                        503,
                        f"board {board_id!r} is quarantined: {reason}",
                        headers={"Retry-After": "60"},
                    ) from None
                with self._lock:
                    self._boards[board_id] = board
                    if self.cluster:
                        self._fences[board_id] = fence
                log.info(
                    "board %s loaded: %d scores, t = %d", board_id, board.received, board.monitor.t
                )
        return board

    def _claim(self, board_id: str) -> int:
        """In a cluster: make sure this process holds the board's lease (taking it if it is
        free or expired), and drop a copy loaded under an older lease, or raise
        :class:`Elsewhere` naming the owner. Returns the fencing token held."""
        row = self.row(board_id)
        storage = self.storage
        with self._lock:
            loaded = self._fences.get(board_id)
        if storage.holds(row.num) and loaded == storage.fence_of(row.num):
            return loaded
        owner = storage.take(row.num)
        if owner is not None:
            self._forget(board_id)
            raise Elsewhere(board_id, owner)
        fence = storage.fence_of(row.num)
        if loaded != fence:
            self._forget(board_id)  # rebuilt from the database under the new lease
        return fence

    def _forget(self, board_id: str) -> None:
        with self._lock:
            board = self._boards.pop(board_id, None)
            self._fences.pop(board_id, None)
            self._rows.pop(board_id, None)
        if board is not None:
            board.stale = True

    def _forget_numbers(self, nums) -> None:
        """The storage's report that this process lost the leases of boards ``nums``."""
        nums = set(nums)
        with self._lock:
            ids = [b for b, board in self._boards.items() if board.num in nums]
            ids += [b for b, row in self._rows.items() if row.num in nums]
        for board_id in set(ids):
            self._forget(board_id)

    def set_aside(self, board_id: str, error: BaseException) -> str:
        """Quarantine a board that cannot be loaded or served; returns the reason."""
        reason = f"{type(error).__name__}: {error}"[:500]
        if board_id not in self.quarantined:
            log.error("board %s quarantined: %s", board_id, reason)
        self.quarantined[board_id] = reason
        return reason

    def loaded(self) -> list[str]:
        with self._lock:
            return [b for b, board in self._boards.items() if not board.stale]

    def public_loaded(self) -> list[str]:
        with self._lock:
            return [b for b, bd in self._boards.items() if not bd.stale and bd.spec.public]

    def public_quarantined(self) -> dict[str, str]:
        """Quarantined boards that are not known to be private (their ids are not secret)."""
        with self._lock:
            rows = dict(self._rows)
        out = {}
        for board_id, reason in list(self.quarantined.items()):
            row = rows.get(board_id)
            if row is None or row.read_hash is None:
                out[board_id] = reason
        return out

    def warm(self) -> None:
        """Rebuild every board (run in a background thread at start-up)."""
        try:
            ids = self.storage.board_ids()
        except Exception:
            log.exception("the boards could not be listed")
            return
        if self.cluster:  # boards are taken by their lease, and loaded when first asked for
            self.warmed = True
            return
        with self._lock:
            self._ids = set(ids) | set(self._rows)
        for board_id in ids:
            try:
                self.board(board_id)
            except Exception:  # reported (quarantined or unavailable), never fatal
                log.warning("board %s not loaded", board_id)
        self.warmed = True

    # ------------------------------------------------------------------ creating, deleting
    def create(self, request: BoardCreate) -> tuple[BoardSpec, str, str | None]:
        cells = len(request.models) * len(request.items or ())
        if cells > self.max_cells:
            raise HTTPException(
                413,
                f"the board would hold {len(request.models):,} models x {len(request.items):,} "
                f"items = {cells:,} scores, over this server's quota of {self.max_cells:,} per "
                "board (rankci serve --max-board-cells)",
            )
        if self.storage.count_boards() >= self.max_boards:
            raise HTTPException(
                403, f"this server holds its quota of {self.max_boards:,} boards (--max-boards)"
            )
        options = request.model_dump(exclude={"id", "kind"})
        if request.kind == "votes":
            for key in ("items", "clusters", "order_seed", "item_entry"):
                options.pop(key)
            spec = make_vote_spec(
                board_id=request.id, given=frozenset(request.model_fields_set), **options
            )
        else:
            spec = make_spec(board_id=request.id, **options)
        write = new_token()
        read = None if spec.public else new_token()
        try:
            num = self.storage.create_board(
                spec.id,
                spec.to_json(),
                self.tokens.hash(write),
                None if read is None else self.tokens.hash(read),
                spec.created_at,
            )
        except BoardExists:
            raise BoardExists(self._exists(spec)) from None
        board = (VoteBoard if spec.kind == "votes" else Board)(spec, num, self.storage)
        board.on_look = self.on_look
        board.quota = self.max_cells  # checked when the board grows (models, items, votes)
        row = BoardRow(
            spec.id,
            num,
            spec.to_json(),
            self.tokens.hash(write),
            None if read is None else self.tokens.hash(read),
            spec.created_at,
        )
        with self._lock:  # kept in memory: reads need no database (they go on in an outage)
            self._boards[spec.id] = board
            if self.cluster:  # the creating process holds the new board's lease
                self._fences[spec.id] = self.storage.fence_of(num)
            self._rows[spec.id] = row
            self._specs[spec.id] = spec
            if self._ids is not None:
                self._ids.add(spec.id)
        return spec, write, read

    def delete(self, board_id: str) -> None:
        if self.cluster:
            self._claim(board_id)  # only the board's owner deletes it
        row = self.row(board_id)
        board = self._boards.get(board_id)
        lock = board.lock if board is not None else threading.Lock()
        with lock:  # no post of this board is in flight while it goes
            self.storage.delete_board(board_id, row.num)
            if board is not None:
                board.stale = True
            with self._lock:
                self._boards.pop(board_id, None)
                self._rows.pop(board_id, None)
                self._specs.pop(board_id, None)
                if self._ids is not None:
                    self._ids.discard(board_id)
            self.quarantined.pop(board_id, None)

    def set_token(self, board_id: str, which: str, revoke: bool = False) -> str | None:
        """A new write or read token (the old one stops working at once), or revocation."""
        if self.cluster:
            self._claim(board_id)  # only the board's owner changes it
        row = self.row(board_id)
        if which == "read" and row.read_hash is None:
            raise HTTPException(422, "a public board has no read token")
        token = None if revoke else new_token()
        stored = REVOKED if revoke else self.tokens.hash(token)
        self.storage.set_token_hash(board_id, which, stored)
        with self._lock:
            self._rows[board_id] = dataclasses.replace(row, **{f"{which}_hash": stored})
        return token

    # ------------------------------------------------------------------ tokens
    def refuse(
        self,
        client: str,
        status: int,
        detail: str,
        headers: dict | None = None,
        credential: str | None = None,
    ):
        """The refusal of a failed authentication (or an unknown id), counted against the
        credential tried and the client's address; 429 once over the limit."""
        wait = self.failures.fail(client, credential)
        if wait is not None:
            return HTTPException(
                429,
                "too many failed authentications from this address; try again later (a valid "
                "token is not refused)",
                headers={"Retry-After": str(math.ceil(wait))},
            )
        return HTTPException(status, detail, headers=headers)

    def _matches(self, board_id: str, row: BoardRow, which: str, token: str | None) -> bool:
        stored = row.write_hash if which == "write" else row.read_hash
        try:
            ok = self.tokens.check(token, stored)
        except Busy:
            raise HTTPException(503, "token check busy", headers={"Retry-After": "1"}) from None
        if ok and self.tokens.is_legacy(stored):  # migrate an old scrypt hash to HMAC
            self.storage.set_token_hash(board_id, which, self.tokens.hash(token))
            with self._lock:
                self._rows.pop(board_id, None)
        return ok

    def check(self, board_id: str, token: str | None, write: bool, client: str = "") -> Board:
        row = self.find(board_id)
        if row is None:
            # the same work as for a private board without its token (two token checks), so
            # that the time of the answer does not tell whether the id exists
            decoy = self._decoy_row()
            self.tokens.check(token, decoy.write_hash)
            self.tokens.check(token, decoy.read_hash)
            raise self.refuse(client, 404, self.not_found(board_id).detail, credential=token)
        private = row.read_hash is not None
        if self._matches(board_id, row, "write", token):
            return self.board(board_id, read=not write)
        readable = not private or self._matches(board_id, row, "read", token)
        if not readable:
            raise self.refuse(client, 404, self.not_found(board_id).detail, credential=token)
        if write:
            if token is None:
                raise self.refuse(
                    client,
                    401,
                    "this needs the board's write token",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            raise self.refuse(
                client, 403, "the token is not the board's write token", credential=token
            )
        return self.board(board_id, read=True)

    def check_cached(
        self, board_id: str, token: str | None, write: bool, client: str = ""
    ) -> Board | None:
        """:meth:`check` when it needs nothing but memory (the board is loaded, its tokens are
        HMAC hashes), so that it can run on the event loop; None when it would need the
        database (then call :meth:`check` in a worker thread)."""
        with self._lock:
            row = self._rows.get(board_id)
            board = self._boards.get(board_id)
            unknown = row is None and self._ids is not None and board_id not in self._ids
        if unknown:
            return self.check(board_id, token, write, client)  # refused, from memory
        if row is None or board is None or board.stale or board_id in self.quarantined:
            return None
        if self.cluster and (
            not self.storage.holds(row.num)
            or self._fences.get(board_id) != self.storage.fence_of(row.num)
        ):
            return None  # the lease must be renewed or taken first (in a worker thread)
        if self.tokens.is_legacy(row.write_hash) or self.tokens.is_legacy(row.read_hash):
            return None
        return self.check(board_id, token, write, client)

    def note_ids(self, ids) -> None:
        """Board ids the database lists (as it does for ``GET /api/boards``): any written
        behind this server's back become known too."""
        with self._lock:
            if self._ids is not None:
                self._ids.update(ids)

    def _decoy_row(self) -> BoardRow:
        if self._decoy is None:
            decoy = self.tokens.hash(new_token())
            self._decoy = BoardRow("", 0, "", decoy, decoy, "")
        return self._decoy

    def check_admin(self, token: str | None, client: str, what: str) -> None:
        if self.admin_token is None:
            raise HTTPException(
                403,
                f"{what} needs the server's admin token, and this server has none: start it "
                "with RANKCI_ADMIN_TOKEN set in the environment",
            )
        given = (token or "").encode()
        if not hmac.compare_digest(given, self.admin_token.encode()):
            raise self.refuse(
                client,
                401 if token is None else 403,
                f"{what} needs the server's admin token",
                headers={"WWW-Authenticate": "Bearer"} if token is None else None,
                credential=token,
            )
