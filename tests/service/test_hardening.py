"""Hardening for years of operation, on the real `rankci serve` (loopback; SQLite and PostgreSQL):
text that cannot be stored or served, one owner per database across versions (a deleted lock
file; the advisory lock of earlier releases), the serve command's flags and URLs, the page's
retired-models line, the failed-login limiter under a bad neighbour, the access log's tokens,
the header limit, connection caps, health on a full disk."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from limits import HANG_GUARD, WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import ADMIN, Server, postgres_schema, private_postgres, running


def _body(**fields):
    body = {"benchmark": "hard", "run": f"r{time.monotonic_ns()}", "models": ["a", "b"]}
    return body | {"items": ["1", "2", "3"], "look_every": 1} | fields


def _board(api, **fields):
    status, created = api.post("/api/boards", _body(**fields), ADMIN)
    assert status == 201, created
    return created["board"]["id"], created["write_token"]


def test_text_that_cannot_be_stored_or_served_gets_4xx_and_a_bad_row_stops_nothing(tmp_path):
    db = str(tmp_path / "b.sqlite")
    with running(db, tmp_path / "log") as server:
        api = server.client()
        good, token = _board(api, title="good board")
        bad = [
            {"title": "\ud800"},
            {"benchmark": "x\udfff"},
            {"models": ["a", "\ud800b"]},
            {"items": ["1", "2\ud800"]},
            {"items": [{"id": "1", "cluster": "\udc00"}, {"id": "2", "cluster": "c"}]},
            {"title": "t" * (15 * 1024 * 1024)},  # 15 MiB, under the 16 MiB body limit
            {"models": ["a", "b" * 201]},
            {"run": "r\x00"},
        ]
        for fields in bad:
            status, answer = api.post("/api/boards", _body(id="victim", **fields), ADMIN)
            assert 400 <= status < 500, (list(fields), status, str(answer)[:300])
        assert api.get("/api/boards/victim")[0] == 404  # nothing stored
        score = {"model": "\ud800", "item": "1", "score": 1.0}
        assert api.post(f"/api/boards/{good}/scores", score, token)[0] == 422
        status, listed = api.get("/api/boards")
        assert status == 200 and [b["id"] for b in listed] == [good]
        assert api.get("/")[0] == 200
        # a row written by an earlier version, holding a lone surrogate (escaped in its JSON)
        spec = json.loads(sqlite3.connect(db).execute("SELECT spec FROM boards").fetchone()[0])
        spec["id"], spec["title"] = "legacy", "bad \ud800 title"
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO boards (id, num, spec, write_hash, read_hash, created_at) "
                "VALUES ('legacy', 99, ?, 'hmac-sha256$00', NULL, '2026-01-01')",
                (json.dumps(spec),),  # ensure_ascii: the surrogate is stored as \\ud800
            )
        status, listed = api.get("/api/boards")
        assert status == 200 and [b["id"] for b in listed] == [good], listed
        status, page = api.get("/")
        assert status == 200 and good.encode() in page
        assert api.get(f"/api/boards/{good}/leaderboard")[0] == 200
        health = api.get("/api/health")[1]
        assert "legacy" in health["boards"]["quarantined"], health
        assert "Unicode" in health["boards"]["quarantined"]["legacy"]
        for path in ("/boards/legacy", "/api/boards/legacy", "/api/boards/legacy/leaderboard"):
            assert api.get(path)[0] == 503, path
        api.close()


def test_a_deleted_lock_file_does_not_let_a_second_sqlite_server_start(tmp_path):
    db = str(tmp_path / "b.sqlite")
    with running(db, tmp_path / "log") as server:
        api = server.client()
        board, token = _board(api)
        os.unlink(db + ".lock")
        with pytest.raises(RuntimeError, match="another rankci server"):
            Server(db, tmp_path / "second.log", args=["--lock-wait", "1"])
        path = f"/api/boards/{board}/scores"
        assert api.post(path, {"model": "a", "item": "1", "score": 1.0}, token)[0] == 200
        api.close()
    with running(db, tmp_path / "log") as server:  # the lock goes with its owner
        assert server.client().get(f"/api/boards/{board}")[0] == 200


def _advisory_key(conn) -> int:
    """The advisory lock key of rankci's earlier releases (before the lease row)."""
    where = conn.execute("SELECT current_database() || '/' || current_schema()").fetchone()[0]
    return int.from_bytes(
        hashlib.sha256(f"rankci-serve:{where}".encode()).digest()[:8], "big", signed=True
    )


def test_postgres_owner_excludes_an_earlier_release_and_is_excluded_by_it(tmp_path):
    import psycopg

    with postgres_schema() as url:
        # an earlier release's server: it holds the session advisory lock, and no lease
        with psycopg.connect(url, autocommit=True) as old:
            key = _advisory_key(old)
            assert old.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
            with pytest.raises(RuntimeError, match="another rankci server"):
                Server(url, tmp_path / "new.log", args=["--lock-wait", "1"])
            old.execute("SELECT pg_advisory_unlock(%s)", (key,))
        with running(url, tmp_path / "log") as server:
            _board(server.client())
            with psycopg.connect(url, autocommit=True) as old:  # an earlier release starting
                assert not old.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]


def _serve(*args, timeout=HANG_GUARD):
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "RANKCI_ADMIN_TOKEN": ADMIN},
    )
    return done.returncode, done.stderr


def test_serve_refuses_unbounded_or_negative_times_and_bad_urls_without_a_traceback(tmp_path):
    db = str(tmp_path / "b.sqlite")
    for flag, value in [
        ("--body-timeout", "inf"),
        ("--header-timeout", "nan"),
        ("--lock-wait", "-5"),
    ]:
        code, err = _serve("--db", db, flag, value, "--port", "1")
        assert code == 2 and flag in err and "Traceback" not in err, (flag, err)
    for url in (
        "postgresql://u:p@127.0.0.1:notaport/db",
        "postgresql://nobody:wrong@127.0.0.1:1/db",
    ):
        code, err = _serve("--db", url, "--port", "18999")
        assert code == 2 and "--db" in err and "Traceback" not in err, (url, err[-2000:])


def test_the_page_escapes_the_retired_models_line_once(tmp_path):
    with running(str(tmp_path / "b.sqlite"), tmp_path / "log") as server:
        api = server.client()
        board, token = _board(api, models=["a&b", "c<d>"], items=[str(i) for i in range(30)])
        status, answer = api.post(f"/api/boards/{board}/retire", {"model": "a&b"}, token)
        assert status == 200, answer
        deadline = time.monotonic() + WAIT_GUARD
        while time.monotonic() < deadline:
            status, data = api.get(f"/boards/{board}/fragment")
            html = json.loads(data)["html"] if isinstance(data, bytes) else data.get("html", "")
            if "retired models" in html and "a&amp;b (" in html:
                break
            time.sleep(0.2)
        assert "a&amp;b (" in html and "&amp;amp;" not in html, html[-2000:]
        api.close()


class _From:
    """HTTP requests from a given loopback source address (to 127.0.0.1)."""

    def __init__(self, port: int, source: str) -> None:
        self.port, self.source = port, source

    def request(self, method, path, body=None, token=None, headers=None):
        import http.client

        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=WAIT_GUARD, source_address=(self.source, 0)
        )
        try:
            sent = dict(headers or {})
            if token:
                sent["Authorization"] = f"Bearer {token}"
            data = None if body is None else json.dumps(body)
            if data is not None:
                sent["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def test_a_valid_token_is_never_locked_out_by_a_bad_neighbour(tmp_path):
    with running(
        str(tmp_path / "b.sqlite"), tmp_path / "log", args=["--auth-failures", "5"]
    ) as server:
        board, token = _board(server.client())
        path = f"/api/boards/{board}/scores"
        neighbour = _From(server.port, "127.0.0.1")  # the same address (a NAT, a proxy)
        wrong = [
            neighbour.request(
                "POST", path, {"model": "a", "item": "1", "score": 1}, "rkci_" + "z" * 43
            )[0]
            for _ in range(25)
        ]
        assert wrong[:5] == [403] * 5 and set(wrong[6:]) == {429}, wrong
        # other wrong tokens from that address are refused too (the address is over its limit)
        assert (
            neighbour.request(
                "POST", path, {"model": "a", "item": "1", "score": 1}, "rkci_" + "y" * 43
            )[0]
            == 429
        )
        for i in range(20):  # the valid writer on the same address is never refused
            score = {"model": "ab"[i % 2], "item": str(1 + i % 3), "score": 1.0}
            status, answer = neighbour.request("POST", path, score, token)
            assert status == 200, answer
        # unknown ids and pages are limited too
        other = _From(server.port, "127.0.0.3")
        unknown = [other.request("GET", f"/api/boards/nope{i}/leaderboard")[0] for i in range(8)]
        assert unknown[:5] == [404] * 5 and unknown[-1] == 429, unknown
        pager = _From(server.port, "127.0.0.4")
        pages = [pager.request("GET", f"/boards/nope{i}")[0] for i in range(8)]
        assert pages[:5] == [200] * 5 and pages[-1] == 429, pages
        assert _From(server.port, "127.0.0.5").request("GET", f"/boards/{board}")[0] == 200


def test_tokens_in_query_strings_are_redacted_from_the_access_log(tmp_path):
    log = tmp_path / "log"
    with running(str(tmp_path / "b.sqlite"), log, args=["--log-level", "info"]) as server:
        board, token = _board(server.client())
        assert server.client().get(f"/boards/{board}?token={token}&x=1")[0] == 200
        deadline = time.monotonic() + WAIT_GUARD
        while f"/boards/{board}?" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
    text = log.read_text()
    assert f"/boards/{board}?token=[redacted]&x=1" in text, text[-2000:]
    assert token not in text


def test_a_complete_100_kib_header_is_refused_against_the_64_kib_limit(tmp_path):
    import socket

    with running(str(tmp_path / "b.sqlite"), tmp_path / "log") as server:
        for head in (
            b"X-Big: " + b"a" * 100 * 1024 + b"\r\n",  # one header
            b"".join(b"X-%d: %s\r\n" % (i, b"b" * 1000) for i in range(100)),  # many
        ):
            with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_GUARD) as sock:
                sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: t\r\n" + head + b"\r\n")
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            assert answer.split(b" ", 2)[1] == b"400", answer[:200]
        assert server.client().get("/api/health")[0] == 200


def _nofile_1024() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_1100_half_open_connections_under_1024_descriptors_starve_no_one(tmp_path):
    import socket

    log = tmp_path / "log"
    # the default caps: 1,000 connections, lowered to 1,024 - 100 descriptors; 256 per address
    with running(str(tmp_path / "b.sqlite"), log, preexec=_nofile_1024) as server:
        flood = []
        try:
            for n in range(1100):  # 300 from one address, then 800 from ten; half requests
                sock = socket.socket()
                sock.settimeout(10)
                try:
                    sock.bind(("127.0.0.2" if n < 300 else f"127.0.0.{3 + n % 10}", 0))
                    sock.connect(("127.0.0.1", server.port))
                    sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: t\r\n")
                except OSError:
                    pass
                flood.append(sock)
            api = server.client()
            statuses = []
            for _ in range(30):
                api.conn.close()  # a new connection each time
                statuses.append(api.get("/api/health")[0])
            assert statuses == [200] * 30, statuses
        finally:
            for sock in flood:
                sock.close()
        deadline = time.monotonic() + WAIT_GUARD
        while "connections refused" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        text = log.read_text()
        assert "--max-connections-per-address" in text and "--max-connections)" in text, text[
            -3000:
        ]


def test_health_reports_a_full_disk_before_any_write_fails(tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True
    )
    assert done.returncode == 0, done.stderr  # root, as in CI (see test_faults.py)
    try:
        with running(str(folder / "b.sqlite"), tmp_path / "log") as server:
            api = server.client()
            assert api.get("/api/health")[1]["database"]["writable"] is True
            with open(folder / "filler", "wb") as handle:  # fill the filesystem
                try:
                    while True:
                        handle.write(b"\0" * 65536)
                        handle.flush()
                except OSError:
                    pass
            health = api.get("/api/health")[1]  # no write has been tried since
            assert health["status"] == "degraded" and not health["database"]["writable"]
            assert "full" in health["database"]["reason"], health
            (folder / "filler").unlink()
            assert api.get("/api/health")[1]["status"] == "ok"
            api.close()
    finally:
        subprocess.run(["umount", "-l", str(folder)], timeout=30)


def test_postgres_outage_reads_answer_the_last_committed_state_marked_stale(tmp_path):
    with private_postgres() as (url, control):  # its own cluster: the outage is this test's only
        with running(url, tmp_path / "log") as server:
            api = server.client()
            board, token = _board(api, items=[str(i) for i in range(10)])
            for i in range(4):  # posted, never read before the outage
                batch = [{"model": m, "item": str(i), "score": 1.0} for m in "ab"]
                assert api.post(f"/api/boards/{board}/scores", {"scores": batch}, token)[0] == 200
            api.close()
            control("stop")
            try:
                api = server.client()
                score = {"model": "a", "item": "5", "score": 1.0}
                status, answer = api.post(f"/api/boards/{board}/scores", score, token)
                assert status == 503, answer
                for _ in range(20):
                    api.conn.close()
                    api.conn.request("GET", f"/api/boards/{board}/leaderboard")
                    response = api.conn.getresponse()
                    body = json.loads(response.read())
                    assert response.status == 200, body
                    assert body["progress"]["scores_received"] == 8
                    assert "unavailable" in response.getheader("x-rankci-stale", "")
            finally:
                control("start")
            deadline = time.monotonic() + WAIT_GUARD
            while time.monotonic() < deadline:  # back: writes resume, no stale marker
                status, _ = server.client().post(
                    f"/api/boards/{board}/scores", {"model": "a", "item": "5", "score": 1.0}, token
                )
                if status == 200:
                    break
                time.sleep(0.5)
            assert status == 200
            assert "x-rankci-stale" not in server.client().headers(f"/api/boards/{board}")[1]


def _server_time(port: int, path: str) -> tuple[int, float]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_GUARD)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        timing = response.getheader("server-timing", "")
        return response.status, float(timing.split("dur=")[1])
    finally:
        conn.close()


def test_the_time_of_a_404_does_not_tell_whether_a_private_board_exists(tmp_path):
    import numpy as np

    args = ["--auth-failures", "100000"]
    with running(str(tmp_path / "b.sqlite"), tmp_path / "log", args=args) as server:
        private, _ = _board(server.client(), public=False)
        deadline = time.monotonic() + WAIT_GUARD  # the boards are listed at start (warm)
        while not server.client().get("/api/health")[1]["boards"]["warmed"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        times = {"private": [], "unknown": []}
        for n in range(300):  # interleaved, so that the machine's load falls on both alike
            for kind, board in (("private", private), ("unknown", f"nope-{n % 7}")):
                status, spent = _server_time(server.port, f"/api/boards/{board}/leaderboard")
                assert status == 404
                times[kind].append(spent)
        ratio = np.median(times["unknown"]) / np.median(times["private"])
        # before: the unknown id went to a worker thread and the database (several times slower)
        assert 0.5 < ratio < 2.0, (ratio, np.median(times["unknown"]), np.median(times["private"]))


def test_immutable_sqlite_files_answer_503_instead_of_a_sigbus(tmp_path):
    db = str(tmp_path / "b.sqlite")
    with running(db, tmp_path / "log") as server:
        api = server.client()
        board, token = _board(api)
        path = f"/api/boards/{board}/scores"
        assert api.post(path, {"model": "a", "item": "1", "score": 1.0}, token)[0] == 200
        files = [str(tmp_path / f) for f in os.listdir(tmp_path) if f.startswith("b.sqlite")]
        subprocess.run(["chattr", "+i", *files], check=True)  # root, as in CI
        try:
            for item in ("2", "3"):
                status, answer = api.post(path, {"model": "a", "item": item, "score": 1.0}, token)
                assert status == 503 and "read-only" in answer["detail"], answer
            assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200
            assert not api.get("/api/health")[1]["database"]["writable"]
            assert server.process.poll() is None  # alive (before: killed by SIGBUS, -7)
        finally:
            subprocess.run(["chattr", "-i", *files], check=True)
        deadline = time.monotonic() + WAIT_GUARD
        while api.post(path, {"model": "a", "item": "2", "score": 1.0}, token)[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        api.close()


def test_a_fenced_out_server_serves_no_stale_reads(tmp_path):
    import psycopg

    with postgres_schema() as url:
        with running(url, tmp_path / "log") as server:
            api = server.client()
            board, _ = _board(api)
            assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200
            with psycopg.connect(url, autocommit=True) as conn:  # another server takes over
                conn.execute(
                    "UPDATE lease SET holder = 'other', fence = fence + 1, "
                    "expires_at = now() + interval '1 hour' WHERE id = 1"
                )
            deadline = time.monotonic() + WAIT_GUARD  # the heartbeat (every second) finds out
            while api.get("/api/health")[1]["database"]["writable"]:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            for path in (f"/api/boards/{board}/leaderboard", f"/boards/{board}", "/api/boards"):
                status, answer = api.get(path)
                assert status == 503 and "no longer owns" in str(answer), (path, answer)
            assert api.get("/api/health")[0] == 200
            api.close()
