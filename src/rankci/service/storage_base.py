"""The storage interface every database implements (:class:`Storage`), and its errors.

:class:`Storage` runs every operation as one transaction, committed before it returns
(:meth:`Storage._run`), and turns database faults into :class:`StorageUnavailable`: a dropped
connection (a killed session, a PostgreSQL restart) is reopened, with bounded retries and backoff
(:data:`RETRY_DELAYS`); while the database cannot be reached, or cannot be written (SQLite: a
read-only file, a full disk), every operation raises :class:`StorageUnavailable` with the reason
at once (no retries while the database is known to be down; a background probe notices when it
is back). A write whose COMMIT was interrupted has an unknown outcome
(:attr:`StorageUnavailable.ambiguous`): the board is then rebuilt from the database before its
next write. The databases themselves are in :mod:`rankci.service.storage_sqlite` and
:mod:`rankci.service.storage_postgres`; :func:`rankci.service.storage.open_storage` picks one.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ARRIVAL_COLUMN",
    "PROBE_EVERY",
    "RETRY_DELAYS",
    "SCHEMA_VERSION",
    "BoardExists",
    "BoardRow",
    "LostOwnership",
    "OwnerLockError",
    "Storage",
    "StorageUnavailable",
    "VOTE_COLUMNS",
]

log = logging.getLogger("rankci.service")
SCHEMA_VERSION = "1"
#: The optional text fields of a vote, stored in nullable columns of the ``scores`` table (added
#: on open to a database made before them; NULL on every score and on votes without them):
#: the idempotency key, the prompt, the voter and the ISO 8601 timestamp.
VOTE_COLUMNS = ("vote_key", "prompt", "voter", "voted_at")
#: A nullable integer column of the ``scores`` table (added on open to a database made before it):
#: the order in which the board accepted the row, 0, 1, 2, ... per board, given at the group
#: commit (a vote's is its number). NULL on the rows written before the column existed.
ARRIVAL_COLUMN = "arrival"
RETRY_DELAYS = (0.05, 0.2, 0.5, 1.0)  # seconds between attempts of one operation
PROBE_EVERY = 1.0  # seconds between background probes (lease renewal, recovery)


class BoardExists(Exception):
    """A board with this id exists already."""


class OwnerLockError(RuntimeError):
    """Another server process owns this database."""


class StorageUnavailable(Exception):
    """The database cannot be reached or written now; ``reason`` says why. Nothing was changed
    unless ``ambiguous`` (the connection failed during COMMIT, so the outcome is unknown)."""

    def __init__(self, reason: str, ambiguous: bool = False, retry_after: int = 2) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ambiguous = ambiguous
        self.retry_after = retry_after


class LostOwnership(StorageUnavailable):
    """Another server holds this database's lease now: this one never writes again."""


@dataclass(frozen=True)
class BoardRow:
    id: str
    num: int
    spec: str
    write_hash: str
    read_hash: str | None
    created_at: str


class Storage:
    """The common interface; :func:`open_storage` picks SQLite or PostgreSQL."""

    kind = ""
    placeholder = "?"
    integer = "INTEGER"  # the SQL type of the arrival column (64 bits on every database)

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._conn = None
        self.down: str | None = None  # why the database is unavailable now, or None
        self.down_since: float | None = None
        self.lost: str | None = None  # set once ownership is lost (never cleared)
        self.owned = False  # set by lock_owner
        self.integrity: str = "not checked"
        self.token_key: bytes = b""
        self._stop = threading.Event()
        self._probe: threading.Thread | None = None

    # -------------------------------------------------------------- to be provided
    def _connect(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _schema(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fault(self, error: BaseException) -> str | None:  # pragma: no cover - abstract
        """The reason if ``error`` means the database is unreachable or unwritable, else None."""
        raise NotImplementedError

    def lock_owner(self, wait: float = 15.0) -> None:  # pragma: no cover - abstract
        """Take the database for this process, waiting up to ``wait`` seconds for a previous
        owner to go."""
        raise NotImplementedError

    def _precheck(self) -> str | None:
        """Before every operation: why it cannot be tried safely now, or None."""
        return None

    def _columns(self, cur, table: str) -> set[str]:  # pragma: no cover - abstract
        """The names of ``table``'s columns."""
        raise NotImplementedError

    def _add_columns(self, cur) -> None:
        """Add the optional vote fields (:data:`VOTE_COLUMNS`) and the arrival order
        (:data:`ARRIVAL_COLUMN`) to a ``scores`` table made before them (nullable, so every
        earlier version still reads and writes the table; its rows keep NULL there)."""
        have = self._columns(cur, "scores")
        wanted = [(column, "TEXT") for column in VOTE_COLUMNS]
        wanted.append((ARRIVAL_COLUMN, self.integer))
        for column, kind in wanted:
            if column not in have:
                cur.execute(f"ALTER TABLE scores ADD COLUMN {column} {kind}")  # noqa: S608

    def _fence(self, cur, boards=None) -> None:
        """Inside a write transaction: refuse unless this process still owns the database (or,
        in a cluster, every board the write names: ``boards``, see :meth:`_run`)."""

    def _created(self, cur, num: int) -> None:
        """Inside :meth:`create_board`'s transaction, once board ``num`` is inserted (a cluster
        gives the new board's lease to this process)."""

    def _bulk_insert(self, cur, rows) -> None:
        """Insert (board, model, item, score, arrival) rows."""
        cur.executemany(
            self._q("INSERT INTO scores (board, model, item, score, arrival) VALUES (?,?,?,?,?)"),
            rows,
        )

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_integrity(self) -> str:
        self.integrity = "not applicable"
        return self.integrity

    # -------------------------------------------------------------- common
    def _q(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def open(self) -> Storage:
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
                with self._transaction() as cur:
                    for statement in self._schema():
                        cur.execute(statement)
                    self._add_columns(cur)
                    cur.execute(self._q("SELECT value FROM meta WHERE key = ?"), ("schema",))
                    row = cur.fetchone()
                    if row is None:
                        cur.execute(
                            self._q("INSERT INTO meta (key, value) VALUES (?, ?)"),
                            ("schema", SCHEMA_VERSION),
                        )
                    elif row[0] != SCHEMA_VERSION:
                        raise RuntimeError(
                            f"the database has rankci schema {row[0]}, this version needs "
                            f"{SCHEMA_VERSION}"
                        )
                    cur.execute(self._q("SELECT value FROM meta WHERE key = ?"), ("token_key",))
                    row = cur.fetchone()
                    if row is None:
                        row = (secrets.token_hex(32),)
                        cur.execute(
                            self._q("INSERT INTO meta (key, value) VALUES (?, ?)"),
                            ("token_key", row[0]),
                        )
                    self.token_key = bytes.fromhex(row[0])
        return self

    def start_probe(self) -> None:
        """Start the background probe: renews the lease, and notices when a database that was
        down is back."""
        if self._probe is None:
            self._probe = threading.Thread(target=self._probe_loop, name="rankci-db", daemon=True)
            self._probe.start()

    def _probe_loop(self) -> None:
        while not self._stop.wait(self._probe_interval()):
            try:
                self.probe()
            except StorageUnavailable:
                pass
            except Exception:  # pragma: no cover - never let the probe die
                log.exception("database probe failed")

    def _probe_interval(self) -> float:
        return PROBE_EVERY

    def probe(self) -> None:
        """One check that the database can be written (for PostgreSQL, this renews the lease)."""
        if self.down is not None or self.kind == "postgresql":
            self._run(self._probe_write, write=True, retry=False)

    def _probe_write(self, cur) -> None:
        """A write that changes nothing (PostgreSQL: the lease renewal in :meth:`_fence` is the
        probe)."""
        if self.kind == "sqlite":
            cur.execute(self._q("UPDATE meta SET value = value WHERE key = ?"), ("schema",))

    def health(self) -> dict:
        return {
            "writable": self.down is None and self.lost is None,
            "reason": self.lost or self.down,
            "integrity": self.integrity,
        }

    def close(self) -> None:
        self._stop.set()
        if self._probe is not None:
            self._probe.join(5)
            self._probe = None
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None and self._precheck() is not None:
            return  # closing would write to files that cannot be written (see _precheck)
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: S110 - a dead connection may fail to close
                pass
            self._conn = None

    class _Tx:
        def __init__(self, storage: Storage) -> None:
            self.storage = storage

        def __enter__(self):
            self.cur = self.storage._conn.cursor()
            return self.cur

        def __exit__(self, kind, value, tb):
            conn = self.storage._conn
            try:
                if kind is None:
                    conn.commit()
                else:
                    conn.rollback()
            finally:
                self.cur.close()
            return False

    def _transaction(self) -> Storage._Tx:
        return Storage._Tx(self)

    def _run(self, work, write: bool = False, retry: bool = True, boards=None):
        """``work(cursor)`` in one transaction, committed; reconnects and retries on a dropped
        connection (bounded, with backoff; one attempt while the database is known to be down).
        Raises :class:`StorageUnavailable` with the reason when the database cannot serve.

        ``boards``: the boards a ``write`` changes (a board number, an array of numbers, a board
        id, or ``()`` for a write that changes no existing board, such as creating one). Every
        method that writes a board must name it: in a cluster
        (:class:`~rankci.service.storage_cluster.ClusterStorage`) the write is fenced by those
        boards' leases, in the same transaction, and a write that names none is refused."""
        with self._lock:
            if write and self.lost is not None:
                raise LostOwnership(self.lost)
            unsafe = self._precheck()
            if unsafe is not None:  # refused before the database is touched at all
                if self.down is None:
                    log.warning("database unavailable: %s", unsafe)
                    self.down_since = time.monotonic()
                self.down = unsafe
                raise StorageUnavailable(unsafe)
            delays = RETRY_DELAYS if retry and self.down is None else ()
            for attempt in range(len(delays) + 1):
                committing = False
                try:
                    if self._conn is None:
                        self._conn = self._connect()
                    cur = self._conn.cursor()
                    try:
                        if write:
                            self._fence(cur, boards)
                        result = work(cur)
                        committing = True
                        self._conn.commit()
                    finally:
                        try:
                            cur.close()
                        except Exception:  # noqa: S110
                            pass
                except LostOwnership as error:
                    self._rollback()
                    self.lost = error.reason
                    log.error("%s", error.reason)
                    raise
                except Exception as error:
                    reason = self._fault(error)
                    self._rollback()
                    if reason is None:
                        raise
                    self._drop()
                    if self.down is None:
                        log.warning("database unavailable: %s", reason)
                        self.down_since = time.monotonic()
                    self.down = reason
                    if committing or attempt == len(delays):
                        raise StorageUnavailable(reason, ambiguous=committing) from None
                    time.sleep(delays[attempt])
                    continue
                if self.down is not None:
                    log.warning("database available again: %s", self.describe())
                self.down = self.down_since = None
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _rollback(self) -> None:
        if self._conn is not None:
            try:
                self._conn.rollback()
            except Exception:  # noqa: S110 - the connection may be gone
                pass

    def create_board(
        self, board_id: str, spec: str, write_hash: str, read_hash: str | None, created_at: str
    ) -> int:
        """Insert a board; returns its number. Raises :class:`BoardExists`."""

        def work(cur):
            cur.execute(self._q("SELECT 1 FROM boards WHERE id = ?"), (board_id,))
            if cur.fetchone() is not None:
                raise BoardExists(board_id)
            cur.execute("SELECT COALESCE(MAX(num), 0) + 1 FROM boards")
            num = int(cur.fetchone()[0])
            cur.execute(
                self._q(
                    "INSERT INTO boards (id, num, spec, write_hash, read_hash, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)"
                ),
                (board_id, num, spec, write_hash, read_hash, created_at),
            )
            self._created(cur, num)
            return num

        return self._run(work, write=True, boards=())

    def board_ids(self) -> list[str]:
        def work(cur):
            cur.execute("SELECT id FROM boards ORDER BY num")
            return [row[0] for row in cur.fetchall()]

        return self._run(work)

    def count_boards(self) -> int:
        def work(cur):
            cur.execute("SELECT COUNT(*) FROM boards")
            return int(cur.fetchone()[0])

        return self._run(work)

    def get_board(self, board_id: str) -> BoardRow | None:
        def work(cur):
            cur.execute(
                self._q(
                    "SELECT id, num, spec, write_hash, read_hash, created_at FROM boards "
                    "WHERE id = ?"
                ),
                (board_id,),
            )
            return cur.fetchone()

        row = self._run(work)
        return None if row is None else BoardRow(*row)

    def set_token_hash(self, board_id: str, which: str, value: str) -> None:
        """Replace a board's write or read token hash (rotation, revocation, migration)."""
        column = {"write": "write_hash", "read": "read_hash"}[which]
        self._run(
            lambda cur: cur.execute(
                self._q(f"UPDATE boards SET {column} = ? WHERE id = ?"),  # noqa: S608 - fixed
                (value, board_id),
            ),
            write=True,
            boards=board_id,
        )

    def delete_board(self, board_id: str, num: int) -> None:
        def work(cur):
            cur.execute(self._q("DELETE FROM scores WHERE board = ?"), (num,))
            cur.execute(self._q("DELETE FROM events WHERE board = ?"), (num,))
            cur.execute(self._q("DELETE FROM boards WHERE id = ?"), (board_id,))

        self._run(work, write=True, boards=num)

    def insert_scores(
        self,
        num,
        model: np.ndarray,
        item: np.ndarray,
        score: np.ndarray,
        arrival: np.ndarray | None = None,
        fields=None,
        events=(),
    ):
        """Insert new scores in one transaction and commit (the caller checked they are new).

        ``num`` is the board's number, or an array of one per score (several boards' scores
        in one transaction: a group commit). ``arrival``, one per score, is each row's place in
        its board's arrival order (:data:`ARRIVAL_COLUMN`; None stores NULL). ``fields``, if
        given, holds one entry per score: None, or the vote's text fields (:data:`VOTE_COLUMNS`,
        each a string or None). ``events`` (board number, t, kind, detail) are inserted in the
        same transaction (the items a board with ``item_entry: "open"`` gains with these
        scores)."""
        nums = np.broadcast_to(np.asarray(num, dtype=np.int64), np.shape(model)).tolist()
        order = [None] * len(nums) if arrival is None else np.asarray(arrival).tolist()
        rows = list(zip(nums, model.tolist(), item.tolist(), score.tolist(), order))
        if fields is None:

            def plain_work(cur):
                self._bulk_insert(cur, rows)
                for event in events:
                    self._insert_event(cur, *event)

            self._run(plain_work, write=True, boards=nums)
            return
        plain = [row for row, f in zip(rows, fields) if f is None]
        texted = [(*row, *f) for row, f in zip(rows, fields) if f is not None]
        names = ", ".join((ARRIVAL_COLUMN, *VOTE_COLUMNS))
        marks = ", ".join("?" * (5 + len(VOTE_COLUMNS)))
        sql = self._q(f"INSERT INTO scores (board, model, item, score, {names}) VALUES ({marks})")

        def work(cur):
            if plain:
                self._bulk_insert(cur, plain)
            cur.executemany(sql, texted)
            for event in events:
                self._insert_event(cur, *event)

        self._run(work, write=True, boards=nums)

    def next_arrival(self, num: int) -> int:
        """The arrival number board ``num``'s next accepted score gets: one more than the
        largest stored (0 for a board whose rows all predate the arrival column)."""

        def work(cur):
            cur.execute(
                self._q("SELECT COALESCE(MAX(arrival), -1) + 1 FROM scores WHERE board = ?"),
                (num,),
            )
            return int(cur.fetchone()[0])

        return self._run(work)

    def _after(self, num: int, key: tuple[int, int]) -> tuple[str, tuple]:
        """The condition "board ``num``'s rows after (model, item) ``key``, in key order", in
        the form the database answers from its primary key (SQLite: ``board = ? AND (model,
        item) > (?, ?)``), and its parameters."""
        return "board = ? AND (model, item) > (?, ?)", (num, *key)

    def export_scores(self, num: int, below: int, chunk: int = 100_000) -> tuple[np.ndarray, ...]:
        """``(model, item, score, arrival)`` arrays of board ``num``'s rows whose arrival is
        below ``below`` (those committed when the board's state was read) or unknown (NULL:
        written before the column existed; their arrival is -1 here).

        Read ``chunk`` rows at a time in primary-key order, one transaction each, so that the
        commits of the database's boards go on between the chunks: the rows read are never
        changed once committed (a score is never updated, and a later one has an arrival of at
        least ``below``), so the chunks make one consistent set."""
        parts, key = [], (-1, -1)
        while True:
            where, params = self._after(num, key)
            sql = self._q(
                "SELECT model, item, score, COALESCE(arrival, -1) FROM scores "  # noqa: S608
                f"WHERE {where} AND (arrival IS NULL OR arrival < ?) "
                "ORDER BY board, model, item LIMIT ?"
            )

            def work(cur, sql=sql, params=params):
                cur.execute(sql, (*params, below, chunk))
                return cur.fetchall()

            rows = self._run(work)
            if rows:
                parts.append(np.array(rows, dtype=np.float64).reshape(-1, 4))
                key = (int(rows[-1][0]), int(rows[-1][1]))
            if len(rows) < chunk:
                break
        table = np.concatenate(parts or [np.zeros((0, 4))])
        model, item, arrival = (table[:, k].astype(np.int64) for k in (0, 1, 3))
        return model, item, table[:, 2].copy(), arrival

    def load_vote_fields(self, num: int) -> list[tuple]:
        """The stored text fields of a votes board's votes that have any: (sequence number,
        *:data:`VOTE_COLUMNS`) rows, in sequence order."""
        names = ", ".join(VOTE_COLUMNS)
        where = " OR ".join(f"{c} IS NOT NULL" for c in VOTE_COLUMNS)

        def work(cur):
            cur.execute(
                self._q(
                    f"SELECT item, {names} FROM scores WHERE board = ? AND ({where}) "  # noqa: S608
                    "ORDER BY item"
                ),
                (num,),
            )
            return [tuple(row) for row in cur.fetchall()]

        return self._run(work)

    def load_scores(self, num: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every committed score of a board: model indices, item indices, scores."""

        def work(cur):
            cur.execute(self._q("SELECT model, item, score FROM scores WHERE board = ?"), (num,))
            return cur.fetchall()

        rows = self._run(work)
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        model, item, score = zip(*rows)
        return (
            np.asarray(model, dtype=np.int64),
            np.asarray(item, dtype=np.int64),
            np.asarray(score, dtype=float),
        )

    def _insert_event(self, cur, num: int, t: int, kind: str, detail: str) -> int:
        cur.execute(self._q("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE board = ?"), (num,))
        seq = int(cur.fetchone()[0])
        cur.execute(
            self._q("INSERT INTO events (board, seq, t, kind, detail) VALUES (?, ?, ?, ?, ?)"),
            (num, seq, t, kind, detail),
        )
        return seq

    def add_event(self, num: int, t: int, kind: str, detail: str) -> int:
        return self._run(
            lambda cur: self._insert_event(cur, num, t, kind, detail), write=True, boards=num
        )

    def load_events(self, num: int) -> list[tuple[int, int, str, str]]:
        """(seq, t, kind, detail) in order."""

        def work(cur):
            cur.execute(
                self._q("SELECT seq, t, kind, detail FROM events WHERE board = ? ORDER BY seq"),
                (num,),
            )
            return [tuple(row) for row in cur.fetchall()]

        return self._run(work)
