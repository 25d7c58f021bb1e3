"""Durable storage of boards, scores and events: SQLite (a file) or PostgreSQL (a URL).

Three tables hold everything a board's state is rebuilt from:

* ``boards``: the board's fixed description (:class:`~rankci.service.spec.BoardSpec` as JSON) and
  the hashes of its tokens;
* ``scores``: one row per accepted (model, item) score, by index, primary key
  ``(board, model, item)`` - the database itself refuses a second score for the same cell -
  with its ``arrival``, the order in which the board accepted it (NULL on rows written before
  the column existed; it is added when a server opens such a database);
* ``events``: manual retirements, with the item count at which they happened.

Every write is one transaction, committed (SQLite: WAL with ``synchronous=FULL``; PostgreSQL:
the default synchronous commit) before the service acknowledges it. The standard library's
``sqlite3`` and psycopg 3 are used directly: the common interface and its errors are in
:mod:`rankci.service.storage_base`, the databases in :mod:`rankci.service.storage_sqlite` and
:mod:`rankci.service.storage_postgres`; this module picks one (:func:`open_storage`) and
re-exports every public name.

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

Several processes (``rankci serve --cluster``, PostgreSQL only): each board is owned by one
process through a lease of its own (:mod:`rankci.service.storage_cluster`), and every write names
the boards it changes (``Storage._run(..., boards=...)``) so that it is fenced by their leases.
"""

from __future__ import annotations

import os

from rankci.service.storage_base import (
    ARRIVAL_COLUMN,
    PROBE_EVERY,
    RETRY_DELAYS,
    SCHEMA_VERSION,
    VOTE_COLUMNS,
    BoardExists,
    BoardRow,
    LostOwnership,
    OwnerLockError,
    Storage,
    StorageUnavailable,
)
from rankci.service.storage_cluster import ClusterStorage, NotOwner
from rankci.service.storage_postgres import LEASE_TTL, PostgresStorage
from rankci.service.storage_sqlite import SQLiteStorage

__all__ = [
    "ARRIVAL_COLUMN",
    "LEASE_TTL",
    "PROBE_EVERY",
    "RETRY_DELAYS",
    "SCHEMA_VERSION",
    "BoardExists",
    "BoardRow",
    "ClusterStorage",
    "LostOwnership",
    "NotOwner",
    "OwnerLockError",
    "PostgresStorage",
    "SQLiteStorage",
    "Storage",
    "StorageUnavailable",
    "VOTE_COLUMNS",
    "open_storage",
]


def open_storage(db: str, cluster: str | None = None) -> Storage:
    """The storage behind a ``--db`` value (not yet opened).

    ``postgresql://...`` (or ``postgres://``) selects PostgreSQL; anything else is a SQLite path
    (``sqlite:///path`` is accepted too). The folder of a SQLite file must exist, and ``:memory:``
    is refused (scores must survive a restart).

    Parameters
    ----------
    db : str
        A SQLite file path or a PostgreSQL URL.
    cluster : str, optional
        The advertised URL of a cluster member (``rankci serve --cluster``): PostgreSQL only,
        each board owned by one process (:class:`ClusterStorage`).

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
    >>> open_storage("boards.db", cluster="http://127.0.0.1:8001")
    Traceback (most recent call last):
    ...
    ValueError: --cluster needs --db postgresql://... (a SQLite file is served by one process)
    >>> open_storage(":memory:")
    Traceback (most recent call last):
    ...
    ValueError: the service needs a database file (scores must survive a restart)
    """
    if not isinstance(db, str) or not db:
        raise ValueError("--db must be a SQLite file path or a postgresql:// URL")
    if cluster is not None:
        if not db.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "--cluster needs --db postgresql://... (a SQLite file is served by one process)"
            )
        return ClusterStorage(db, cluster)
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
