"""Durable storage of boards, scores and events: SQLite (a file) or PostgreSQL (a URL).

Three tables hold everything a board's state is rebuilt from:

* ``boards``: the board's fixed description (:class:`~rankci.service.spec.BoardSpec` as JSON) and
  the hashes of its tokens;
* ``scores``: one row per accepted (model, item) score, by index, primary key
  ``(board, model, item)`` - the database itself refuses a second score for the same cell;
* ``events``: manual retirements, with the item count at which they happened.

Every write is one transaction, committed (SQLite: WAL with ``synchronous=FULL``; PostgreSQL:
the default synchronous commit) before the service acknowledges it. The standard library's
``sqlite3`` and psycopg 3 are used directly.

Faults. A dropped connection (a killed session, a PostgreSQL restart) is reopened, with bounded
retries and backoff (:data:`RETRY_DELAYS`); while the database cannot be reached, or cannot be
written (SQLite: a read-only file, a full disk), every operation raises
:class:`StorageUnavailable` with the reason at once (no retries while the database is known to
be down; a background probe notices when it is back). A write whose COMMIT was interrupted has
an unknown outcome (:attr:`StorageUnavailable.ambiguous`): the board is then rebuilt from the
database before its next write.

Ownership. One server process owns a database, since the in-memory board states would diverge
if two processes wrote to the same one. SQLite: an exclusive ``flock`` on ``PATH.lock``, held
while the process lives. PostgreSQL: a lease row with a fencing token (:meth:`lock_owner`):
taking the lease increments the token, every write transaction first renews the lease *under
the token it holds* (``UPDATE lease ... WHERE fence = mine``) and is refused if that matches no
row, and a heartbeat renews it every :data:`LEASE_TTL` / 5 seconds. A second server takes the
lease only once it has expired (the owner was killed, or cut off for longer than the TTL); the
old owner's next write then finds a different token and is refused. Ownership cannot split,
even when the owner's sessions are dropped: sessions do not carry it, the lease row does.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BoardExists",
    "BoardRow",
    "LostOwnership",
    "OwnerLockError",
    "Storage",
    "StorageUnavailable",
    "open_storage",
]

log = logging.getLogger("rankci.service")
SCHEMA_VERSION = "1"
RETRY_DELAYS = (0.05, 0.2, 0.5, 1.0)  # seconds between attempts of one operation
LEASE_TTL = 5.0  # seconds a PostgreSQL owner lease lasts without renewal
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

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._conn = None
        self.down: str | None = None  # why the database is unavailable now, or None
        self.down_since: float | None = None
        self.lost: str | None = None  # set once ownership is lost (never cleared)
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

    def _fence(self, cur) -> None:
        """Inside a write transaction: refuse unless this process still owns the database."""

    def _bulk_insert(self, cur, rows) -> None:
        cur.executemany(
            self._q("INSERT INTO scores (board, model, item, score) VALUES (?,?,?,?)"), rows
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

    def _run(self, work, write: bool = False, retry: bool = True):
        """``work(cursor)`` in one transaction, committed; reconnects and retries on a dropped
        connection (bounded, with backoff; one attempt while the database is known to be down).
        Raises :class:`StorageUnavailable` with the reason when the database cannot serve."""
        with self._lock:
            if write and self.lost is not None:
                raise LostOwnership(self.lost)
            delays = RETRY_DELAYS if retry and self.down is None else ()
            for attempt in range(len(delays) + 1):
                committing = False
                try:
                    if self._conn is None:
                        self._conn = self._connect()
                    cur = self._conn.cursor()
                    try:
                        if write:
                            self._fence(cur)
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
            return num

        return self._run(work, write=True)

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
        )

    def delete_board(self, board_id: str, num: int) -> None:
        def work(cur):
            cur.execute(self._q("DELETE FROM scores WHERE board = ?"), (num,))
            cur.execute(self._q("DELETE FROM events WHERE board = ?"), (num,))
            cur.execute(self._q("DELETE FROM boards WHERE id = ?"), (board_id,))

        self._run(work, write=True)

    def insert_scores(self, num: int, model: np.ndarray, item: np.ndarray, score: np.ndarray):
        """Insert new scores in one transaction and commit (the caller checked they are new)."""
        rows = list(zip([num] * len(model), model.tolist(), item.tolist(), score.tolist()))
        self._run(lambda cur: self._bulk_insert(cur, rows), write=True)

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

    def add_event(self, num: int, t: int, kind: str, detail: str) -> int:
        def work(cur):
            cur.execute(
                self._q("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE board = ?"), (num,)
            )
            seq = int(cur.fetchone()[0])
            cur.execute(
                self._q("INSERT INTO events (board, seq, t, kind, detail) VALUES (?, ?, ?, ?, ?)"),
                (num, seq, t, kind, detail),
            )
            return seq

        return self._run(work, write=True)

    def load_events(self, num: int) -> list[tuple[int, int, str, str]]:
        """(seq, t, kind, detail) in order."""

        def work(cur):
            cur.execute(
                self._q("SELECT seq, t, kind, detail FROM events WHERE board = ? ORDER BY seq"),
                (num,),
            )
            return [tuple(row) for row in cur.fetchall()]

        return self._run(work)


# ---------------------------------------------------------------------- SQLite
_SQLITE_FAULTS = {
    "readonly": "the database file is read-only",
    "disk is full": "the disk is full",
    "disk i/o error": "disk I/O error",
    "unable to open": "the database file cannot be opened",
    "database is locked": "the database is locked by another process",
}


class SQLiteStorage(Storage):
    kind = "sqlite"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = os.path.abspath(path)
        self._lock_file = None

    def describe(self) -> str:
        return f"SQLite database {self.path}"

    def _connect(self):
        folder = os.path.dirname(self.path)
        if folder and not os.path.isdir(folder):
            raise ValueError(f"the folder of the database {self.path!r} does not exist")
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level="DEFERRED")
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns
            conn.execute("PRAGMA busy_timeout=10000")
        except Exception:
            conn.close()
            raise
        return conn

    def _fault(self, error: BaseException) -> str | None:
        if isinstance(error, sqlite3.OperationalError):
            text = str(error).lower()
            for key, reason in _SQLITE_FAULTS.items():
                if key in text:
                    return f"{reason} ({error})"
        return None

    def check_integrity(self) -> str:
        """``PRAGMA quick_check``: "ok", or the first problems it reports."""
        try:
            rows = self._run(lambda cur: cur.execute("PRAGMA quick_check(20)").fetchall())
            problems = [row[0] for row in rows]
        except sqlite3.DatabaseError as error:
            problems = [str(error)]
        self.integrity = "ok" if problems == ["ok"] else "; ".join(problems)[:2000]
        if self.integrity != "ok":
            log.error("integrity check of %s failed: %s", self.path, self.integrity)
        return self.integrity

    def _schema(self) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS boards (id TEXT PRIMARY KEY, num INTEGER NOT NULL UNIQUE, "
            "spec TEXT NOT NULL, write_hash TEXT NOT NULL, read_hash TEXT, "
            "created_at TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS scores (board INTEGER NOT NULL, model INTEGER NOT NULL, "
            "item INTEGER NOT NULL, score REAL NOT NULL, PRIMARY KEY (board, model, item)) "
            "WITHOUT ROWID",
            "CREATE TABLE IF NOT EXISTS events (board INTEGER NOT NULL, seq INTEGER NOT NULL, "
            "t INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, "
            "PRIMARY KEY (board, seq))",
        ]

    def lock_owner(self, wait: float = 15.0) -> None:
        import fcntl

        handle = open(f"{self.path}.lock", "a+")  # noqa: SIM115 - held for the process's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the kernel frees it at exit
        except OSError:
            handle.close()
            raise OwnerLockError(
                f"another rankci server is using {self.path} (lock file {self.path}.lock)"
            ) from None
        self._lock_file = handle

    def close(self) -> None:
        super().close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


# ---------------------------------------------------------------------- PostgreSQL
class PostgresStorage(Storage):
    kind = "postgresql"
    placeholder = "%s"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.fence: int | None = None

    def describe(self) -> str:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(self.url)
        host = info.get("host", "localhost")
        return f"PostgreSQL database {info.get('dbname', '')} on {host}:{info.get('port', 5432)}"

    def _connect(self):
        try:
            import psycopg
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ValueError("PostgreSQL needs psycopg 3: pip install 'rankci[service]'") from error
        return psycopg.connect(
            self.url,
            autocommit=False,
            connect_timeout=3,
            application_name=f"rankci-serve-{os.getpid()}",
        )

    def open(self) -> Storage:
        import psycopg

        try:
            return super().open()
        except psycopg.OperationalError as error:
            raise ValueError(f"cannot connect to PostgreSQL: {error}") from None

    def _fault(self, error: BaseException) -> str | None:
        import psycopg

        if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
            text = " ".join(str(error).split())
            return f"PostgreSQL is unavailable ({text[:300]})"
        return None

    def _schema(self) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS boards (id TEXT PRIMARY KEY, num BIGINT NOT NULL UNIQUE, "
            "spec TEXT NOT NULL, write_hash TEXT NOT NULL, read_hash TEXT, "
            "created_at TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS scores (board BIGINT NOT NULL, model INTEGER NOT NULL, "
            "item INTEGER NOT NULL, score DOUBLE PRECISION NOT NULL, "
            "PRIMARY KEY (board, model, item))",
            "CREATE TABLE IF NOT EXISTS events (board BIGINT NOT NULL, seq INTEGER NOT NULL, "
            "t INTEGER NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, "
            "PRIMARY KEY (board, seq))",
            "CREATE TABLE IF NOT EXISTS lease (id INTEGER PRIMARY KEY, holder TEXT NOT NULL, "
            "fence BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
            "INSERT INTO lease (id, holder, fence, expires_at) VALUES (1, '', 0, "
            "'-infinity') ON CONFLICT (id) DO NOTHING",
        ]

    def _bulk_insert(self, cur, rows) -> None:
        with cur.copy("COPY scores (board, model, item, score) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _take(self, cur):
        cur.execute("SELECT holder, fence, expires_at > now() FROM lease WHERE id = 1 FOR UPDATE")
        holder, fence, live = cur.fetchone()
        if live and holder != self.holder:
            return None, holder
        cur.execute(
            "UPDATE lease SET holder = %s, fence = fence + 1, "
            "expires_at = now() + make_interval(secs => %s) WHERE id = 1 RETURNING fence",
            (self.holder, LEASE_TTL),
        )
        return int(cur.fetchone()[0]), holder

    def lock_owner(self, wait: float = 15.0) -> None:
        """Take the lease (a new fencing token), waiting up to ``wait`` seconds for a previous
        owner's lease to expire."""
        deadline = time.monotonic() + wait
        while True:
            fence, holder = self._run(self._take)
            if fence is not None:
                self.fence = fence
                self.lost = None
                return
            if time.monotonic() > deadline:
                raise OwnerLockError(
                    f"another rankci server ({holder}) owns {self.describe()} (its lease is "
                    f"renewed every {LEASE_TTL / 5:g} s and expires {LEASE_TTL:g} s after the "
                    "last renewal)"
                )
            time.sleep(0.2)

    def _fence(self, cur) -> None:
        if self.fence is None:
            raise LostOwnership("this server does not own the database")
        cur.execute(
            "UPDATE lease SET expires_at = now() + make_interval(secs => %s) "
            "WHERE id = 1 AND fence = %s AND holder = %s",
            (LEASE_TTL, self.fence, self.holder),
        )
        if cur.rowcount != 1:
            raise LostOwnership(
                "another rankci server has taken this database over (the lease's fencing token "
                "changed); this server accepts no more writes: restart it once the other stops"
            )

    def _probe_interval(self) -> float:
        return min(PROBE_EVERY, LEASE_TTL / 5)

    def close(self) -> None:
        if self.fence is not None and self.down is None and self.lost is None:
            try:  # hand the lease over at once
                self._run(
                    lambda cur: cur.execute(
                        "UPDATE lease SET expires_at = '-infinity' WHERE id = 1 AND fence = %s",
                        (self.fence,),
                    ),
                    retry=False,
                )
            except Exception:  # noqa: S110 - it expires anyway
                pass
        super().close()


def open_storage(db: str) -> Storage:
    """The storage behind a ``--db`` value (not yet opened).

    ``postgresql://...`` (or ``postgres://``) selects PostgreSQL; anything else is a SQLite path
    (``sqlite:///path`` is accepted too). The folder of a SQLite file must exist, and ``:memory:``
    is refused (scores must survive a restart).

    Parameters
    ----------
    db : str
        A SQLite file path or a PostgreSQL URL.

    Returns
    -------
    Storage
        A :class:`SQLiteStorage` or :class:`PostgresStorage`; call ``open()`` to connect.

    References
    ----------
    SQLite documentation, "Write-Ahead Logging" (https://sqlite.org/wal.html).
    PostgreSQL documentation, libpq "Connection Strings" (the ``postgresql://`` URI form),
    https://www.postgresql.org/docs/current/libpq-connect.html.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     storage = open_storage(os.path.join(folder, "boards.db"))
    ...     kind = type(storage).__name__
    >>> kind
    'SQLiteStorage'
    >>> type(open_storage("postgresql://localhost/rankci")).__name__  # no connection yet
    'PostgresStorage'
    >>> open_storage(":memory:")
    Traceback (most recent call last):
    ...
    ValueError: the service needs a database file (scores must survive a restart)
    """
    if not isinstance(db, str) or not db:
        raise ValueError("--db must be a SQLite file path or a postgresql:// URL")
    if db.startswith(("postgresql://", "postgres://")):
        return PostgresStorage(db)
    if db.startswith("sqlite:///"):  # sqlite:///relative.db, sqlite:////absolute.db
        db = db[len("sqlite:///") :]
    if db == ":memory:":
        raise ValueError("the service needs a database file (scores must survive a restart)")
    folder = os.path.dirname(os.path.abspath(db))
    if not os.path.isdir(folder):
        raise ValueError(f"the folder of the database {db!r} does not exist")
    return SQLiteStorage(db)
