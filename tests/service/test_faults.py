"""Database faults under the real `rankci serve`: PostgreSQL sessions killed and PostgreSQL
restarted mid-stream (writes resume, nothing acknowledged is lost, a second server is refused
throughout), SQLite on a full filesystem and on a read-only file (503 with the reason, then
recovery), and a database file with a corrupted page (that board quarantined, the others
serving)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from live_boards import create_board
from service_server import ADMIN, Server, postgres_schema, private_postgres, running


def _as_postgres(sql: str) -> None:
    if os.geteuid() != 0 or shutil.which("psql") is None:
        pytest.skip("needs root and psql to end PostgreSQL sessions (as in CI, see .ci/run)")
    port = os.environ.get("RANKCI_TEST_POSTGRES_URL", "").rsplit(":", 1)[-1].split("/")[0]
    subprocess.run(
        ["su", "postgres", "-s", "/bin/sh", "-c", f'psql -q -p {port} -c "{sql}"'],
        check=True,
        timeout=30,
        capture_output=True,
    )


def _board(api, models, items):
    body = {"benchmark": "faults", "run": f"r{time.monotonic_ns()}", "models": models}
    return create_board(api, {**body, "items": items, "look_every": 10}, ADMIN)[:2]


def _stream(server, board_id, token, models, items, acknowledged):
    """Post every item's scores, retrying 503s (never a 500) for up to 30 s each."""
    client = server.client()
    for i, item in enumerate(items):
        batch = [
            {"model": m, "item": item, "score": float((i + j) % 2)} for j, m in enumerate(models)
        ]
        deadline = time.monotonic() + WAIT_GUARD
        while time.monotonic() < deadline:
            try:
                status, body = client.post(
                    f"/api/boards/{board_id}/scores", {"scores": batch}, token
                )
            except OSError:
                time.sleep(0.05)
                continue
            if status == 200:
                acknowledged.add(item)
                break
            assert status == 503, body
            time.sleep(0.05)
        time.sleep(0.01)  # paced, so that the faults fall mid-stream
    client.close()


def _stored_items(api, board_id) -> set[str]:
    """The items stored, read once the server has its database back (503 until then, never 500:
    the writer can finish before the last fault, whose reconnection the read then meets)."""
    deadline = time.monotonic() + WAIT_GUARD
    while True:
        status, exported = api.get(f"/api/boards/{board_id}/scores?format=jsonl")
        if status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200, exported
    return {
        line.split(b'"item": "')[1].split(b'"')[0].decode()
        for line in exported.splitlines()
        if line
    }


def test_postgres_sessions_killed_mid_stream(tmp_path):
    models = ["a", "b", "c"]
    items = [f"q{i}" for i in range(400)]
    with postgres_schema() as db, running(db, tmp_path / "server.log") as server:
        api = server.client()
        board_id, token = _board(api, models, items)
        acknowledged: set[str] = set()
        writer = threading.Thread(
            target=_stream, args=(server, board_id, token, models, items, acknowledged)
        )
        writer.start()
        try:
            for _ in range(3):
                time.sleep(0.7)
                _as_postgres(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                    f"application_name = 'rankci-serve-{server.process.pid}'"
                )
                # a second server on the same database is refused, even with the sessions gone
                with pytest.raises(RuntimeError, match="another rankci server"):
                    Server(db, tmp_path / "second.log", args=["--lock-wait", "1"])
        finally:
            writer.join(120)
        assert not writer.is_alive()
        assert len(acknowledged) == len(items)  # writes resumed every time
        assert _stored_items(api, board_id) == acknowledged
        deadline = time.monotonic() + 10  # the background probe sees the database is back
        while api.get("/api/health")[1]["status"] != "ok":
            assert time.monotonic() < deadline, api.get("/api/health")[1]
            time.sleep(0.2)
        assert api.get("/api/health")[1]["database"]["writable"]
        api.close()


def _mount(folder, options):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        timeout=30,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[:200]}")


def test_sqlite_full_disk_answers_503_with_the_reason_then_recovers(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    _mount(folder, "size=8m")
    try:
        db = str(folder / "boards.sqlite")
        with running(db, tmp_path / "server.log") as server:
            api = server.client()
            items = [f"q{i}" for i in range(3000)]
            board_id, token = _board(api, ["a", "b"], items)
            path = f"/api/boards/{board_id}/scores"
            assert api.post(path, {"model": "a", "item": "q0", "score": 1.0}, token)[0] == 200
            filler = folder / "filler"
            with open(filler, "wb") as handle:  # fill the filesystem
                try:
                    while True:
                        handle.write(b"\0" * 65536)
                        handle.flush()
                except OSError:
                    pass
            before = api.get(f"/api/boards/{board_id}/leaderboard")[1]["progress"]
            batch = [{"model": m, "item": it, "score": 1.0} for it in items[1:] for m in "ab"]
            status, answer = api.post(path, {"scores": batch}, token)
            assert status == 503 and "full" in answer["detail"], answer
            health = api.get("/api/health")[1]
            assert health["status"] == "degraded" and not health["database"]["writable"]
            assert "full" in health["database"]["reason"]
            after = api.get(f"/api/boards/{board_id}/leaderboard")[1]["progress"]
            assert after["scores_received"] == before["scores_received"]
            filler.unlink()
            status, answer = api.post(path, {"scores": batch}, token)
            assert status == 200 and answer["accepted"] == len(batch), answer
            assert api.get("/api/health")[1]["status"] == "ok"
            api.close()
    finally:
        subprocess.run(["umount", "-l", str(folder)], timeout=30)


def test_a_corrupted_board_is_quarantined_and_the_others_serve(tmp_path):
    db = str(tmp_path / "boards.sqlite")
    items = [f"item-{i:05d}" for i in range(3000)]
    with running(db, tmp_path / "server.log") as server:
        api = server.client()
        ids = []
        for _ in range(2):
            board_id, token = _board(api, ["a", "b", "c"], items)
            batch = [{"model": m, "item": it, "score": 1.0} for it in items for m in "abc"]
            assert api.post(f"/api/boards/{board_id}/scores", {"scores": batch}, token)[0] == 200
            ids.append(board_id)
        api.close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        leaves = [
            row[0]
            for row in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'scores' AND pagetype = 'leaf' "
                "ORDER BY path"
            )
        ]
    victim = leaves[len(leaves) // 4]  # inside the first board's rows (they come first)
    with open(db, "r+b") as handle:
        handle.seek((victim - 1) * page_size)
        handle.write(b"\xff" * page_size)
    with running(db, tmp_path / "server.log") as server:
        api = server.client()
        deadline = time.monotonic() + WAIT_GUARD
        while not (health := api.get("/api/health")[1])["boards"]["warmed"]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert health["status"] == "degraded" and health["database"]["integrity"] != "ok"
        assert list(health["boards"]["quarantined"]) == [ids[0]]
        status, answer = api.get(f"/api/boards/{ids[0]}/leaderboard")
        assert status == 503 and "quarantined" in answer["detail"]
        status, board = api.get(f"/api/boards/{ids[1]}/leaderboard")
        assert status == 200 and board["progress"]["scores_received"] == 3 * len(items)
        api.close()


def test_sqlite_read_only_file_answers_503_with_the_reason_then_recovers(tmp_path):
    # As root, chmod does not stop writes and a bind mount cannot be remounted read-only while
    # the server holds the file open for writing (EBUSY); the immutable attribute (chattr +i)
    # stops writes even by root, through file descriptors already open. The -shm file stays
    # writable (it is mapped into memory; SQLite needs it to read).
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr to make the database file read-only")
    db = tmp_path / "boards.sqlite"
    files = [str(db), f"{db}-wal"]
    with running(str(db), tmp_path / "server.log") as server:
        api = server.client()
        items = [f"q{i}" for i in range(50)]
        board_id, token = _board(api, ["a", "b"], items)
        path = f"/api/boards/{board_id}/scores"
        assert api.post(path, {"model": "a", "item": "q0", "score": 1.0}, token)[0] == 200
        locked = subprocess.run(["chattr", "+i", *files], capture_output=True, timeout=30)
        if locked.returncode != 0:
            pytest.skip(f"chattr +i does not work here: {locked.stderr.decode()[:200]}")
        try:
            before = api.get(f"/api/boards/{board_id}/leaderboard")[1]["progress"]
            status, answer = api.post(path, {"model": "b", "item": "q0", "score": 1.0}, token)
            assert status == 503 and "read-only" in answer["detail"], answer
            health = api.get("/api/health")[1]
            assert health["status"] == "degraded" and not health["database"]["writable"]
            assert "read-only" in health["database"]["reason"]
            after = api.get(f"/api/boards/{board_id}/leaderboard")[1]["progress"]
            assert after["scores_received"] == before["scores_received"]
        finally:
            subprocess.run(["chattr", "-i", *files], timeout=30, check=True)
        deadline = time.monotonic() + WAIT_GUARD  # the background probe reconnects once writable
        while api.get("/api/health")[1]["status"] != "ok":
            assert time.monotonic() < deadline, api.get("/api/health")[1]
            time.sleep(0.2)
        status, answer = api.post(path, {"model": "b", "item": "q0", "score": 1.0}, token)
        assert status == 200 and answer["accepted"] == 1, answer
        api.close()
    with sqlite3.connect(db) as conn:  # both acknowledged scores are in the file
        assert conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 2


def test_postgres_restarted_mid_stream(tmp_path):
    models = ["a", "b", "c"]
    items = [f"q{i}" for i in range(300)]
    with private_postgres() as (db, control), running(db, tmp_path / "server.log") as server:
        api = server.client()
        board_id, token = _board(api, models, items)
        acknowledged: set[str] = set()
        writer = threading.Thread(
            target=_stream, args=(server, board_id, token, models, items, acknowledged)
        )
        writer.start()
        during = 0
        try:
            for _ in range(2):
                time.sleep(0.7)
                during += writer.is_alive()
                control("restart")  # fast shutdown and start: every session of the server is cut
                # a second server on the same database is refused, its lease still held
                with pytest.raises(RuntimeError, match="another rankci server"):
                    Server(db, tmp_path / "second.log", args=["--lock-wait", "1"])
        finally:
            writer.join(120)
        assert not writer.is_alive()
        assert during >= 1  # a restart fell mid-stream
        assert len(acknowledged) == len(items)  # writes resumed after every restart
        assert _stored_items(api, board_id) == acknowledged  # and nothing acknowledged was lost
        deadline = time.monotonic() + 10
        while api.get("/api/health")[1]["status"] != "ok":
            assert time.monotonic() < deadline, api.get("/api/health")[1]
            time.sleep(0.2)
        api.close()
