"""PostgreSQL storage (psycopg 3), owned through a lease row with a fencing token.

Ownership: taking the lease (:meth:`PostgresStorage.lock_owner`) increments the token, every
write transaction first renews the lease *under the token it holds*
(``UPDATE lease ... WHERE fence = mine``) and is refused if that matches no row, and a heartbeat
renews it every :data:`LEASE_TTL` / 5 seconds. A second server takes the lease only once it has
expired (the owner was killed, or cut off for longer than the TTL); the old owner's next write
then finds a different token and is refused. Ownership cannot split, even when the owner's
sessions are dropped: sessions do not carry it, the lease row does.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import time

from rankci.service.storage_base import PROBE_EVERY, LostOwnership, OwnerLockError, Storage, log

__all__ = ["LEASE_TTL", "PostgresStorage"]

_GONE = object()  # the advisory lock's session was dropped: take the lock again
LEASE_TTL = 5.0  # seconds a PostgreSQL owner lease lasts without renewal


class PostgresStorage(Storage):
    kind = "postgresql"
    placeholder = "%s"
    integer = "BIGINT"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        try:
            from psycopg.conninfo import conninfo_to_dict

            conninfo_to_dict(url)
        except ImportError:  # pragma: no cover - depends on the install
            pass
        except Exception as error:  # psycopg.ProgrammingError: an invalid URL
            text = " ".join(str(error).split())
            raise ValueError(f"--db is not a valid PostgreSQL URL: {text[:300]}") from None
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.fence: int | None = None
        self._owner = None  # the session holding the advisory lock

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
        except (psycopg.OperationalError, psycopg.ProgrammingError) as error:
            text = " ".join(str(error).split())
            raise ValueError(f"--db: cannot connect to PostgreSQL: {text[:500]}") from None

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

    def _columns(self, cur, table: str) -> set[str]:
        cur.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            (table,),
        )
        return {row[0] for row in cur.fetchall()}

    def _after(self, num: int, key: tuple[int, int]) -> tuple[str, tuple]:
        """As :meth:`Storage._after`, in the form PostgreSQL's planner turns into a range of the
        primary key's index (a row comparison led by ``board``)."""
        return "(board, model, item) > (%s, %s, %s) AND board = %s", (num, *key, num)

    def _bulk_insert(self, cur, rows) -> None:
        with cur.copy("COPY scores (board, model, item, score, arrival) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _take(self, cur):
        holder = self._live_holder(cur, lock=True)
        if holder is not None:
            return None, holder
        cur.execute(
            "UPDATE lease SET holder = %s, fence = fence + 1, "
            "expires_at = now() + make_interval(secs => %s) WHERE id = 1 RETURNING fence",
            (self.holder, LEASE_TTL),
        )
        return int(cur.fetchone()[0]), None

    def _advisory(self, wait: float, shared: bool = False) -> bool:
        """Take the session advisory lock that releases before the lease took (key: SHA-256 of
        ``rankci-serve:<database>/<schema>``) on a session of its own, held for the process's
        life, so that an earlier version is refused beside this one and this one beside it.
        Returns whether it was taken within ``wait`` seconds. ``shared``: in shared mode, as
        the members of a cluster hold it (:mod:`rankci.service.storage_cluster`)."""
        import psycopg

        if self._owner is not None and not self._owner.closed:
            return True
        owner = psycopg.connect(self.url, autocommit=True, connect_timeout=3)
        try:
            where = owner.execute(
                "SELECT current_database() || '/' || current_schema()"
            ).fetchone()[0]
            key = int.from_bytes(
                hashlib.sha256(f"rankci-serve:{where}".encode()).digest()[:8], "big", signed=True
            )
            deadline = time.monotonic() + wait
            take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
            while not owner.execute(f"SELECT {take}(%s)", (key,)).fetchone()[0]:
                if time.monotonic() > deadline:
                    owner.close()
                    return False
                time.sleep(0.2)
        except BaseException:
            owner.close()
            raise
        self._owner = owner
        return True

    def lock_owner(self, wait: float = 15.0) -> None:
        """Take the advisory lock of earlier versions (:meth:`_advisory`) and the lease (a new
        fencing token), waiting up to ``wait`` seconds for a previous owner to go."""
        deadline = time.monotonic() + wait
        while (holder := self._run(self._live_holder)) is not None:
            # a live owner: wait without touching its advisory lock. Taking the lock to look
            # would, were the owner's session down just then (a PostgreSQL restart), make the
            # owner find it held on its way back and stop writing for good.
            if time.monotonic() > deadline:
                raise OwnerLockError(self._owned_by(holder))
            time.sleep(0.2)
        if not self._advisory(max(deadline - time.monotonic(), 0.0)):
            raise OwnerLockError(
                f"another rankci server owns {self.describe()} (it holds the session advisory "
                "lock that rankci releases before the lease took)"
            )
        while True:
            fence, holder = self._run(self._take)
            if fence is not None:
                self.fence = fence
                self.lost = None
                self.owned = True
                return
            if time.monotonic() > deadline:
                self._drop_owner()
                raise OwnerLockError(self._owned_by(holder))
            time.sleep(0.2)

    def _live_holder(self, cur, lock: bool = False) -> str | None:
        """The holder of a live lease that is not this server's, or None (``lock``: the lease
        row stays locked for the rest of the transaction, to take it)."""
        cur.execute(
            "SELECT holder, expires_at > now() FROM lease WHERE id = 1"
            + (" FOR UPDATE" if lock else "")
        )
        holder, live = cur.fetchone()
        return holder if live and holder != self.holder else None

    def _owned_by(self, holder: str) -> str:
        return (
            f"another rankci server ({holder}) owns {self.describe()} (its lease is renewed "
            f"every {LEASE_TTL / 5:g} s and expires {LEASE_TTL:g} s after the last renewal)"
        )

    def _fence(self, cur, boards=None) -> None:
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

    def probe(self) -> None:
        """Renew the lease; and if the advisory lock's session was dropped (a PostgreSQL
        restart), take the lock again: if another server has it now, this one stops writing."""
        super().probe()
        if self._owner is not None and not self._owner.closed:
            try:
                self._owner.execute("SELECT 1")
            except Exception:  # the session is gone
                self._drop_owner()
                self._owner = _GONE
        if self._owner is _GONE and self.lost is None:
            self._owner = None
            try:
                taken = self._advisory(0)
            except Exception:  # the database is down: the next probe retries
                self._owner = _GONE
                return
            if not taken:
                self.lost = (
                    "another rankci server took this database's advisory lock while this "
                    "server's session was down; this server accepts no more writes"
                )
                log.error("%s", self.lost)

    def _drop_owner(self) -> None:
        if self._owner is not None:
            try:
                self._owner.close()
            except Exception:  # noqa: S110
                pass
            self._owner = None

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
        self._drop_owner()
        self.owned = False
