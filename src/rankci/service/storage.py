"""Durable storage of boards, scores and events: SQLite (a file) or PostgreSQL (a URL).

Three tables hold everything a board's state is rebuilt from:

* ``boards``: the board's fixed description (:class:`~rankci.service.spec.BoardSpec` as JSON) and
  the hashes of its tokens;
* ``scores``: one row per accepted (model, item) score, by index, primary key
  ``(board, model, item)`` - the database itself refuses a second score for the same cell;
* ``events``: manual retirements, with the item count at which they happened.

Every write is one transaction, committed (SQLite: WAL with ``synchronous=FULL``; PostgreSQL:
the default synchronous commit) before the service acknowledges it. The standard library's
``sqlite3`` and psycopg 3 are used directly: three tables, a dozen statements, and bulk paths
(``executemany``, PostgreSQL's COPY) that an ORM would only hide.

One server process owns a database: the in-memory board states would diverge if two processes
wrote to the same one, so :meth:`Storage.lock_owner` takes an exclusive lock (an ``flock`` on
``PATH.lock`` for SQLite, a session advisory lock for PostgreSQL), released when the process ends
however it ends.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["BoardExists", "BoardRow", "OwnerLockError", "Storage", "open_storage"]

SCHEMA_VERSION = "1"


class BoardExists(Exception):
    """A board with this id exists already."""


class OwnerLockError(RuntimeError):
    """Another server process owns this database."""


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

    # -------------------------------------------------------------- to be provided
    def _connect(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _schema(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def lock_owner(self, wait: float = 15.0) -> None:  # pragma: no cover - abstract
        """Take the database for this process, waiting up to ``wait`` seconds for a previous
        owner's lock to go (a killed server's PostgreSQL session ends a moment later)."""
        raise NotImplementedError

    def _bulk_insert(self, cur, rows) -> None:
        cur.executemany(
            self._q("INSERT INTO scores (board, model, item, score) VALUES (?,?,?,?)"), rows
        )

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

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
        return self

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
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

    def create_board(
        self, board_id: str, spec: str, write_hash: str, read_hash: str | None, created_at: str
    ) -> int:
        """Insert a board; returns its number. Raises :class:`BoardExists`."""
        with self._lock, self._transaction() as cur:
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

    def board_ids(self) -> list[str]:
        with self._lock, self._transaction() as cur:
            cur.execute("SELECT id FROM boards ORDER BY num")
            return [row[0] for row in cur.fetchall()]

    def get_board(self, board_id: str) -> BoardRow | None:
        with self._lock, self._transaction() as cur:
            cur.execute(
                self._q(
                    "SELECT id, num, spec, write_hash, read_hash, created_at FROM boards "
                    "WHERE id = ?"
                ),
                (board_id,),
            )
            row = cur.fetchone()
        return None if row is None else BoardRow(*row)

    def insert_scores(self, num: int, model: np.ndarray, item: np.ndarray, score: np.ndarray):
        """Insert new scores in one transaction and commit (the caller checked they are new)."""
        rows = list(zip([num] * len(model), model.tolist(), item.tolist(), score.tolist()))
        with self._lock, self._transaction() as cur:
            self._bulk_insert(cur, rows)

    def load_scores(self, num: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every committed score of a board: model indices, item indices, scores."""
        with self._lock, self._transaction() as cur:
            cur.execute(self._q("SELECT model, item, score FROM scores WHERE board = ?"), (num,))
            rows = cur.fetchall()
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        model, item, score = zip(*rows)
        return (
            np.asarray(model, dtype=np.int64),
            np.asarray(item, dtype=np.int64),
            np.asarray(score, dtype=float),
        )

    def add_event(self, num: int, t: int, kind: str, detail: str) -> int:
        with self._lock, self._transaction() as cur:
            cur.execute(
                self._q("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE board = ?"), (num,)
            )
            seq = int(cur.fetchone()[0])
            cur.execute(
                self._q("INSERT INTO events (board, seq, t, kind, detail) VALUES (?, ?, ?, ?, ?)"),
                (num, seq, t, kind, detail),
            )
        return seq

    def load_events(self, num: int) -> list[tuple[int, int, str, str]]:
        """(seq, t, kind, detail) in order."""
        with self._lock, self._transaction() as cur:
            cur.execute(
                self._q("SELECT seq, t, kind, detail FROM events WHERE board = ? ORDER BY seq"),
                (num,),
            )
            return [tuple(row) for row in cur.fetchall()]


# ---------------------------------------------------------------------- SQLite
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
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # a commit is on disk before it returns
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

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
        self._owner = None

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
        try:
            return psycopg.connect(self.url, autocommit=False)
        except psycopg.Error as error:
            raise ValueError(f"cannot connect to PostgreSQL: {error}") from None

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
        ]

    def _bulk_insert(self, cur, rows) -> None:
        with cur.copy("COPY scores (board, model, item, score) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def lock_owner(self, wait: float = 15.0) -> None:
        import psycopg

        owner = psycopg.connect(self.url, autocommit=True)
        schema = owner.execute("SELECT current_database() || '/' || current_schema()").fetchone()
        key = int.from_bytes(
            hashlib.sha256(f"rankci-serve:{schema[0]}".encode()).digest()[:8], "big", signed=True
        )
        # a killed owner's session ends when PostgreSQL notices the closed connection: wait a bit
        deadline = time.monotonic() + wait
        while not (got := owner.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]):
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not got:
            owner.close()
            raise OwnerLockError(f"another rankci server is using {schema[0]}")
        self._owner = owner

    def close(self) -> None:
        super().close()
        if self._owner is not None:
            self._owner.close()
            self._owner = None


def open_storage(db: str) -> Storage:
    """``postgresql://...`` (or ``postgres://``) for PostgreSQL; anything else is a SQLite path
    (``sqlite:///path`` is accepted too)."""
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
