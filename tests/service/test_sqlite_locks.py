"""SQLite's POSIX locks are the server's for as long as it runs (no close() of another
descriptor of the database's files may drop them), so another process opening the database,
such as ``rankci export DB BOARD``, never resets the WAL index under it."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct

from service_server import Server

#: Byte of ``PATH-shm`` that every connection to a WAL database holds a shared lock on (SQLite's
#: unix VFS: UNIX_SHM_DMS = (22 + SQLITE_SHM_NLOCK) * 4 + SQLITE_SHM_NLOCK, SQLITE_SHM_NLOCK = 8).
SHM_DMS = (22 + 8) * 4 + 8


def _holder(path: str, offset: int) -> tuple[int, int]:
    """(lock type, pid) of a POSIX lock that would block a write lock on byte ``offset``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        kind, _whence, _start, _len, pid = struct.unpack(
            "hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, query)
        )
    finally:
        os.close(fd)
    return kind, pid


def test_the_server_keeps_its_sqlite_locks_while_it_serves(tmp_path):
    db = str(tmp_path / "boards.sqlite")
    server = Server(db, tmp_path / "server.log")
    api = server.client()
    try:
        body = {"benchmark": "b", "run": "r", "models": ["a", "b"],
                "items": [f"q{i}" for i in range(50)]}  # fmt: skip
        status, created = api.post("/api/boards", body)
        assert status == 201, created
        board, token = created["board"]["id"], created["write_token"]
        for i in range(0, 50, 10):
            scores = [{"model": m, "item": f"q{j}", "score": float((j + (m == "a")) % 2)}
                      for j in range(i, i + 10) for m in "ab"]  # fmt: skip
            assert api.post(f"/api/boards/{board}/scores", {"scores": scores}, token)[0] == 200
        assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200
        kind, pid = _holder(db + "-shm", SHM_DMS)
        assert (kind, pid) == (fcntl.F_RDLCK, server.process.pid)
        # another process reading the database meanwhile (as rankci export DB does) leaves the
        # server running and serving
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            assert conn.execute("SELECT COUNT(*) FROM scores").fetchone() == (100,)
        assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200
        assert server.process.poll() is None
        assert _holder(db + "-shm", SHM_DMS) == (fcntl.F_RDLCK, server.process.pid)
    finally:
        server.stop()
