"""SQLite storage: one file in WAL mode with ``synchronous=FULL`` (a commit is on disk before it
returns), owned by one process through an exclusive ``flock`` on the database file itself (and,
for earlier versions, on ``PATH.lock``).

Faults: a read-only file, a full disk, an I/O error or a file that cannot be opened make the
database unavailable (:class:`~rankci.service.storage_base.StorageUnavailable` with the reason);
the background probe writes nothing but notices when writes work again. ``PRAGMA quick_check``
runs at start (:meth:`SQLiteStorage.check_integrity`).
"""

from __future__ import annotations

import os
import sqlite3

from rankci.service.storage_base import OwnerLockError, Storage, log

__all__ = ["LOW_SPACE", "SQLiteStorage"]

LOW_SPACE = 1 << 20  # bytes free below which health reports the disk full

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
        self._lock_files: list = []

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
                    if key in ("disk i/o error", "readonly"):
                        reason = self._unwritable() or reason
                    return f"{reason} ({error})"
        return None

    def _unwritable(self) -> str | None:
        """Why the database file or its WAL cannot be written (a read-only file or filesystem,
        an immutable file), or None; SQLite itself reports some of these as an I/O error.

        Asked with ``access(2)``, never by opening the files: closing any descriptor of a file
        drops every POSIX lock this process holds on it, SQLite's included, and then another
        process opening the database (``rankci export DB``, a backup) takes the WAL index for
        its own and resets it under this one (a SIGBUS, or worse; SQLite's "How To Corrupt",
        section 2.2). Linux's ``access`` reports an immutable file as not writable, and a
        read-only filesystem as ``EROFS``."""
        for name in (self.path, f"{self.path}-wal", f"{self.path}-shm"):
            if os.access(name, os.W_OK) or not os.path.exists(name):
                continue
            try:
                read_only_fs = bool(os.statvfs(name).f_flag & os.ST_RDONLY)
            except OSError:
                read_only_fs = False
            why = "a read-only filesystem" if read_only_fs else "not writable by this process"
            return f"the database file is read-only ({name}: {why})"
        return None

    def health(self) -> dict:
        """As :meth:`Storage.health`, and not writable when the database's filesystem has less
        than :data:`LOW_SPACE` bytes free for unprivileged writers (a full disk is reported
        before a write fails on it)."""
        out = super().health()
        try:
            info = os.statvfs(os.path.dirname(self.path))
            free = info.f_bavail * info.f_frsize
        except OSError:
            return out
        if free < LOW_SPACE and out["writable"]:
            out["writable"] = False
            out["reason"] = f"the disk is full ({free:,} bytes free on the database's filesystem)"
        return out

    def _precheck(self) -> str | None:
        """SQLite maps the WAL index (``PATH-shm``) into memory and writes it even to read: on an
        immutable (``chattr +i``) or read-only file that write is a SIGBUS, which kills the
        process. So every operation first checks that the files can be opened for writing, and
        is refused (503, the reason) when they cannot; the connection is then neither used
        nor closed (closing checkpoints, which writes too)."""
        return self._unwritable()

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

    def _columns(self, cur, table: str) -> set[str]:
        cur.execute(f"PRAGMA table_info({table})")
        return {row[1] for row in cur.fetchall()}

    def lock_owner(self, wait: float = 15.0) -> None:
        """Take the database for this process: an exclusive ``flock`` on the database file
        itself (SQLite locks with ``fcntl`` byte ranges, which do not interact with ``flock``
        on Linux), and one on ``PATH.lock``, which is what earlier versions took (so that they
        are refused beside this one). Deleting ``PATH.lock`` cannot split ownership: the lock
        on the database file stays. The kernel frees both when the process ends, however it
        ends. Waits up to ``wait`` seconds for a previous owner to go."""
        import fcntl
        import time

        deadline = time.monotonic() + wait
        handles = []
        try:
            for name in (self.path, f"{self.path}.lock"):
                handle = open(name, "ab")  # noqa: SIM115 - held for the process's life
                handles.append(handle)
                while True:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            raise OwnerLockError(
                                f"another rankci server is using {self.path} (it holds the lock "
                                f"on {name})"
                            ) from None
                        time.sleep(0.1)
        except BaseException:
            for handle in handles:
                handle.close()
            raise
        self._lock_files = handles
        self.owned = True

    def close(self) -> None:
        super().close()
        for handle in self._lock_files:
            handle.close()
        self._lock_files = []
        self.owned = False
