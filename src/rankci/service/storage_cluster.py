"""PostgreSQL storage shared by several server processes (``rankci serve --cluster``): each
board is owned by one process through a per-board lease with a fencing token.

The table ``board_leases`` holds, per board number: the owner (a process id of its own), the
URL the owner advertises, the fencing token ``fence`` and the expiry. A process

* takes a board whose lease is missing or expired (:meth:`ClusterStorage.take`): the token
  goes up by one, so that whatever the previous owner held is void;
* renews its leases every :data:`~rankci.service.storage_postgres.LEASE_TTL` / 5 seconds (the
  background probe) and, inside every write transaction, renews the leases of the boards the
  write names *under the tokens it holds and only if they have not expired*
  (``UPDATE board_leases ... WHERE (board, fence) IN (mine) AND owner = me AND
  expires_at > now()``); a write whose boards do not all match is refused
  (:class:`NotOwner`) and changes nothing. The renewal locks the lease rows until the write
  commits, so a process taking the board over waits for that commit and then sees a lease that
  has not expired: two processes can never both write a board;
* answers a board only while its lease is valid by its own clock (:meth:`holds`: the time
  before the renewal that proved it, plus 90 % of the lease time), so a board that another
  process may have taken is never answered from memory.

New boards go to the process that creates them. Free boards (their owner stopped, or was
killed and its lease expired) are taken by the probe of any live process, up to its fair share
(boards / live processes, rounded up; ``cluster_members`` lists the live processes), and by
any process a request for the board reaches. Every process also holds the PostgreSQL session
advisory lock of single-process servers in shared mode, so that a single-process server (of
this version or an earlier one, which take it exclusively) and a cluster never run on one
database together.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from rankci.service.storage_base import OwnerLockError, StorageUnavailable, log
from rankci.service.storage_postgres import LEASE_TTL, PostgresStorage

__all__ = ["VALID_PART", "ClusterStorage", "NotOwner"]

VALID_PART = 0.9  # of the lease time, counted from before the renewal: the board is answered


class NotOwner(StorageUnavailable):
    """This process does not own (or no longer owns) a board the operation names; ``owner``
    is the URL of the process that does, when known."""

    def __init__(self, reason: str, owner: str | None = None, boards=()) -> None:
        super().__init__(reason, retry_after=1)
        self.owner = owner
        self.boards = tuple(boards)


class ClusterStorage(PostgresStorage):
    """A PostgreSQL database shared by several server processes, one owner per board.

    Parameters
    ----------
    url : str
        The PostgreSQL URL.
    advertise : str
        This process's URL as clients reach it (``http://host:port``): requests for its boards
        that reach another process are redirected there.
    """

    cluster = True

    def __init__(self, url: str, advertise: str) -> None:
        super().__init__(url)
        if not advertise.startswith(("http://", "https://")):
            raise ValueError(f"--advertise must be an http:// or https:// URL, got {advertise!r}")
        self.advertise = advertise.rstrip("/")
        self.leases: dict[int, int] = {}  # board number -> the fencing token this process holds
        self.valid_until: dict[int, float] = {}  # board number -> monotonic deadline
        self.on_lost = None  # called with the board numbers whose leases were lost
        self._leases_lock = threading.Lock()

    def describe(self) -> str:
        return super().describe() + f" (cluster member {self.advertise})"

    def _schema(self) -> list[str]:
        return [
            *super()._schema(),
            "CREATE TABLE IF NOT EXISTS board_leases (board BIGINT PRIMARY KEY, "
            "owner TEXT NOT NULL, url TEXT NOT NULL, fence BIGINT NOT NULL, "
            "expires_at TIMESTAMPTZ NOT NULL)",
            "CREATE TABLE IF NOT EXISTS cluster_members (owner TEXT PRIMARY KEY, "
            "url TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
        ]

    # -------------------------------------------------------------- membership
    def lock_owner(self, wait: float = 15.0) -> None:
        """Join the cluster: refused beside a single-process server (its lease row is live, or
        it holds the advisory lock exclusively)."""
        deadline = time.monotonic() + wait
        while (holder := self._run(self._live_holder)) is not None:
            if time.monotonic() > deadline:
                raise OwnerLockError(
                    f"a single-process rankci server ({holder}) owns {super().describe()}: "
                    "stop it before starting cluster members (--cluster)"
                )
            time.sleep(0.2)
        if not self._advisory(max(deadline - time.monotonic(), 0.0), shared=True):
            raise OwnerLockError(
                f"a single-process rankci server owns {super().describe()} (it holds the "
                "session advisory lock): stop it before starting cluster members (--cluster)"
            )
        self._run(self._join)
        self.lost = None
        self.owned = True

    def _join(self, cur) -> None:
        cur.execute(
            "INSERT INTO cluster_members (owner, url, expires_at) VALUES "
            "(%s, %s, now() + make_interval(secs => %s)) ON CONFLICT (owner) DO UPDATE SET "
            "url = EXCLUDED.url, expires_at = EXCLUDED.expires_at",
            (self.holder, self.advertise, LEASE_TTL),
        )
        cur.execute("DELETE FROM cluster_members WHERE expires_at < now() - interval '1 hour'")

    # -------------------------------------------------------------- leases
    def holds(self, num: int) -> bool:
        """Whether this process owns board ``num`` now, by its own clock (no database)."""
        return num in self.leases and time.monotonic() < self.valid_until.get(num, 0.0)

    def fence_of(self, num: int) -> int | None:
        """The fencing token this process holds for board ``num``, or None."""
        return self.leases.get(num)

    def _granted(self, started: float, nums) -> None:
        until = started + VALID_PART * LEASE_TTL
        for num in nums:
            self.valid_until[num] = until

    def _lose(self, nums) -> None:
        nums = [n for n in nums if n in self.leases]
        if not nums:
            return
        with self._leases_lock:
            for num in nums:
                self.leases.pop(num, None)
                self.valid_until.pop(num, None)
        log.warning("cluster: lost the lease of boards %s", sorted(nums))
        if self.on_lost is not None:
            self.on_lost(nums)

    def take(self, num: int) -> str | None:
        """Take board ``num``'s lease if it is free or expired (a new fencing token), or renew
        it if this process holds it; returns None once this process owns it, or the URL of the
        live owner."""
        started = time.monotonic()

        def work(cur):
            cur.execute(
                "SELECT owner, url, fence, expires_at > now() FROM board_leases "
                "WHERE board = %s FOR UPDATE",
                (num,),
            )
            row = cur.fetchone()
            if row is None:
                cur.execute(
                    "INSERT INTO board_leases (board, owner, url, fence, expires_at) VALUES "
                    "(%s, %s, %s, 1, now() + make_interval(secs => %s)) "
                    "ON CONFLICT (board) DO NOTHING RETURNING fence",
                    (num, self.holder, self.advertise, LEASE_TTL),
                )
                got = cur.fetchone()
                if got is None:  # taken by another process meanwhile
                    cur.execute("SELECT url FROM board_leases WHERE board = %s", (num,))
                    return None, cur.fetchone()[0]
                return int(got[0]), None
            owner, url, fence, live = row
            if live and owner != self.holder:
                return None, url
            if live and self.leases.get(num) == fence:
                cur.execute(
                    "UPDATE board_leases SET expires_at = now() + make_interval(secs => %s) "
                    "WHERE board = %s",
                    (LEASE_TTL, num),
                )
                return int(fence), None
            cur.execute(
                "UPDATE board_leases SET owner = %s, url = %s, fence = fence + 1, "
                "expires_at = now() + make_interval(secs => %s) WHERE board = %s RETURNING fence",
                (self.holder, self.advertise, LEASE_TTL, num),
            )
            return int(cur.fetchone()[0]), None

        fence, url = self._run(work)
        if fence is None:
            self._lose([num])
            return url
        if self.leases.get(num) not in (None, fence):
            self._lose([num])
        with self._leases_lock:
            self.leases[num] = fence
        self._granted(started, [num])
        return None

    def _created(self, cur, num: int) -> None:
        cur.execute(
            "INSERT INTO board_leases (board, owner, url, fence, expires_at) VALUES "
            "(%s, %s, %s, 1, now() + make_interval(secs => %s)) ON CONFLICT (board) DO UPDATE "
            "SET owner = EXCLUDED.owner, url = EXCLUDED.url, "
            "fence = board_leases.fence + 1, expires_at = EXCLUDED.expires_at RETURNING fence",
            (num, self.holder, self.advertise, LEASE_TTL),
        )
        self._new_fence = (num, int(cur.fetchone()[0]))

    def create_board(self, board_id, spec, write_hash, read_hash, created_at) -> int:
        """Insert a board, owned by this process (its lease is inserted in the same
        transaction)."""
        started = time.monotonic()
        with self._lock:  # one creation at a time reads _new_fence
            num = super().create_board(board_id, spec, write_hash, read_hash, created_at)
            number, fence = self._new_fence
        with self._leases_lock:
            self.leases[number] = fence
        self._granted(started, [number])
        return num

    def delete_board(self, board_id: str, num: int) -> None:
        super().delete_board(board_id, num)
        self._run(lambda cur: cur.execute("DELETE FROM board_leases WHERE board = %s", (num,)))
        with self._leases_lock:
            self.leases.pop(num, None)
            self.valid_until.pop(num, None)

    def _board_numbers(self, cur, boards) -> list[int]:
        if isinstance(boards, str):
            cur.execute("SELECT num FROM boards WHERE id = %s", (boards,))
            row = cur.fetchone()
            return [] if row is None else [int(row[0])]
        return sorted({int(n) for n in np.atleast_1d(np.asarray(boards, dtype=np.int64))})

    def _fence(self, cur, boards=None) -> None:
        """Renew the leases of the boards this write names, under the tokens this process
        holds, and refuse (:class:`NotOwner`) unless every one matched."""
        if boards is None:
            raise RuntimeError(
                "a storage write that names no board cannot be fenced in a cluster (pass "
                "boards= to Storage._run)"
            )
        nums = self._board_numbers(cur, boards)
        if not nums:
            return
        mine = [n for n in nums if n in self.leases]
        matched: set[int] = set()
        if mine:
            started = time.monotonic()
            cur.execute(
                "UPDATE board_leases AS l SET expires_at = now() + make_interval(secs => %s) "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS t(board, fence) "
                "WHERE l.board = t.board AND l.fence = t.fence AND l.owner = %s "
                "AND l.expires_at > now() RETURNING l.board",
                (LEASE_TTL, mine, [self.leases[n] for n in mine], self.holder),
            )
            matched = {int(row[0]) for row in cur.fetchall()}
        missing = [n for n in nums if n not in matched]
        if missing:
            self._lose(missing)
            raise NotOwner(
                f"this server does not own board number(s) {missing} (their lease expired or "
                "another cluster member took them); retry: the board's owner answers",
                boards=missing,
            )
        self._granted(started, nums)

    # -------------------------------------------------------------- the probe
    def probe(self) -> None:
        """Renew this process's leases and membership, then take free boards up to its fair
        share."""
        started = time.monotonic()
        held = dict(self.leases)

        def renew(cur):
            self._join(cur)
            if not held:
                return set()
            cur.execute(
                "UPDATE board_leases AS l SET expires_at = now() + make_interval(secs => %s) "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS t(board, fence) "
                "WHERE l.board = t.board AND l.fence = t.fence AND l.owner = %s "
                "AND l.expires_at > now() RETURNING l.board",
                (LEASE_TTL, list(held), list(held.values()), self.holder),
            )
            return {int(row[0]) for row in cur.fetchall()}

        renewed = self._run(renew, retry=False)
        self._granted(started, renewed)
        self._lose([n for n in held if n not in renewed])
        self._check_advisory()
        self._adopt()

    def _check_advisory(self) -> None:
        if self._owner is not None and not self._owner.closed:
            try:
                self._owner.execute("SELECT 1")
                return
            except Exception:  # the session is gone (a PostgreSQL restart)
                self._drop_owner()
        try:
            taken = self._advisory(0, shared=True)
        except Exception:  # the database is down: the next probe retries
            return
        if not taken:
            self.lost = (
                "a single-process rankci server took this database's advisory lock while this "
                "cluster member's session was down; this server accepts no more writes"
            )
            log.error("%s", self.lost)
            self._lose(list(self.leases))

    def _adopt(self) -> None:
        def free(cur):
            cur.execute("SELECT COUNT(*) FROM cluster_members WHERE expires_at > now()")
            members = max(int(cur.fetchone()[0]), 1)
            cur.execute(
                "SELECT b.num, (SELECT COUNT(*) FROM boards) FROM boards b "
                "LEFT JOIN board_leases l ON l.board = b.num "
                "WHERE l.board IS NULL OR l.expires_at <= now() ORDER BY b.num"
            )
            rows = cur.fetchall()
            total = int(rows[0][1]) if rows else 0
            return members, total, [int(r[0]) for r in rows]

        members, total, nums = self._run(free, retry=False)
        room = math.ceil(total / members) - len(self.leases)
        for num in nums[: max(room, 0)]:
            if self.take(num) is None:
                log.info("cluster: took over board number %d", num)

    def close(self) -> None:
        """Hand every lease over at once (they would expire anyway), and leave the cluster."""
        if self.leases and self.down is None and self.lost is None:
            try:
                self._run(
                    lambda cur: (
                        cur.execute(
                            "UPDATE board_leases SET expires_at = '-infinity' WHERE owner = %s",
                            (self.holder,),
                        ),
                        cur.execute("DELETE FROM cluster_members WHERE owner = %s", (self.holder,)),
                    ),
                    retry=False,
                )
            except Exception:  # noqa: S110 - they expire anyway
                pass
        self.leases.clear()
        self.fence = None
        super().close()

    def health(self) -> dict:
        return {
            **super().health(),
            "cluster": {
                "advertise": self.advertise,
                "boards_owned": sum(1 for n in list(self.leases) if self.holds(n)),
            },
        }
