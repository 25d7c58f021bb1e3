"""Several `rankci serve --cluster` processes on one PostgreSQL database (a schema of its own
per test): each board answered by its owner only, 307 elsewhere, failover after kill -9 with
nothing lost or doubled, a fenced-out process refused, lists from any process."""

from __future__ import annotations

import os
import signal
import time
import urllib.parse

import numpy as np
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import ADMIN, Client, Server, postgres_schema, serve_once

from rankci.service.storage import ClusterStorage, NotOwner, OwnerLockError, PostgresStorage

MODELS = ["m0", "m1", "m2"]
ITEMS = [f"q{i}" for i in range(60)]


@pytest.fixture
def schema():
    with postgres_schema() as url:
        yield url


def member(url: str, tmp_path, name: str) -> Server:
    return Server(url, tmp_path / f"{name}.log", args=("--cluster",))


def board_body(board_id: str, public: bool = True) -> dict:
    return {
        "benchmark": "bench",
        "run": "r1",
        "id": board_id,
        "models": MODELS,
        "items": ITEMS,
        "public": public,
    }


def follow(client_of, server: Server, method: str, path: str, body=None, token=None):
    """The request on ``server``, then on the owner a 307 names (re-sending the token, as a
    client must); returns (status, body, port that answered)."""
    status, answer = server.client().request(method, path, body, token=token)
    port = server.port
    if status == 307:
        location = urllib.parse.urlsplit(answer["owner"])
        port = location.port
        status, answer = client_of(port).request(method, path, body, token=token)
    return status, answer, port


def test_redirect_to_owner_and_lists_from_any_process(schema, tmp_path):
    a, b = member(schema, tmp_path, "a"), member(schema, tmp_path, "b")
    try:
        status, made = a.client().post("/api/boards", board_body("common"))
        assert status == 201
        token = made["write_token"]
        status, private = a.client().post("/api/boards", board_body("hidden", public=False))
        assert status == 201
        # B does not own "common": 307 to A's advertised URL, same path, never a copy
        conn = b.client()
        conn.conn.request("GET", "/api/boards/common/leaderboard?x=1")
        response = conn.conn.getresponse()
        response.read()
        assert response.status == 307
        assert response.getheader("Location") == (
            f"http://127.0.0.1:{a.port}/api/boards/common/leaderboard?x=1"
        )
        # a post to B is redirected too; repeated at A (with the token) it is stored
        post = {"model": "m0", "item": "q0", "score": 1.0}
        status, answer = b.client().post("/api/boards/common/scores", post, token=token)
        assert status == 307 and answer["owner"] == f"http://127.0.0.1:{a.port}"
        status, answer = a.client().post("/api/boards/common/scores", post, token=token)
        assert status == 200 and answer["accepted"] == 1
        # a private board without its token: the same 404 from a non-owner (no redirect leak)
        status, _ = b.client().get("/api/boards/hidden/leaderboard")
        assert status == 404
        status, _ = b.client().get("/api/boards/nosuch/leaderboard")
        assert status == 404
        status, _ = b.client().get("/api/boards/hidden", token=private["read_token"])
        assert status == 307
        # lists from either process: the public board, not the private one
        for server in (a, b):
            status, listed = server.client().get("/api/boards")
            assert status == 200
            assert [entry["id"] for entry in listed] == ["common"]
            status, page = server.client().get("/")
            assert status == 200 and b"common" in page and b"hidden" not in page
        # a board created on B is B's: A redirects to B
        status, _ = b.client().post("/api/boards", board_body("second"))
        assert status == 201
        status, answer = a.client().get("/api/boards/second/leaderboard")
        assert status == 307 and answer["owner"] == f"http://127.0.0.1:{b.port}"
        status, health = b.client().get("/api/health")
        assert health["database"]["cluster"]["boards_owned"] == 1
        # admin acts on a board are its owner's too: a new write token, then deletion
        status, answer = b.client().post("/api/boards/common/tokens/write", None, token=ADMIN)
        assert status == 307 and answer["owner"] == f"http://127.0.0.1:{a.port}"
        status, rotated = a.client().post("/api/boards/common/tokens/write", None, token=ADMIN)
        assert status == 200
        new = next(v for v in rotated.values() if isinstance(v, str) and v.startswith("rkci_"))
        post = {"model": "m1", "item": "q1", "score": 0.0}
        assert a.client().post("/api/boards/common/scores", post, token=token)[0] in (401, 403)
        assert a.client().post("/api/boards/common/scores", post, token=new)[0] == 200
        status, _ = b.client().delete("/api/boards/common", token=ADMIN)
        assert status == 307
        status, _ = a.client().delete("/api/boards/common", token=ADMIN)
        assert status == 200
        for server in (a, b):
            assert server.client().get("/api/boards/common/leaderboard")[0] == 404
            listed = server.client().get("/api/boards")[1]
            assert [entry["id"] for entry in listed] == ["second"]
    finally:
        a.stop()
        b.stop()


def test_failover_after_kill_loses_and_doubles_nothing(schema, tmp_path):
    a = member(schema, tmp_path, "a")
    b = member(schema, tmp_path, "b")
    try:
        tokens = {}
        for name in ("f0", "f1", "f2"):
            status, made = a.client().post("/api/boards", board_body(name))
            assert status == 201
            tokens[name] = made["write_token"]
        clients: dict[int, Client] = {}

        def client_of(port):
            return clients.setdefault(port, Client(port))

        acked = {name: set() for name in tokens}
        for i, item in enumerate(ITEMS[:20]):
            for name, token in tokens.items():
                body = {"model": MODELS[i % 3], "item": item, "score": float(i % 2)}
                status, answer, _ = follow(
                    client_of, a, "POST", f"/api/boards/{name}/scores", body, token
                )
                assert status == 200, answer
                acked[name].add((body["model"], item))
        a.kill()  # no shutdown: its leases are left to expire
        killed = time.monotonic()
        # the same posts again (as a client unsure of its last ones would) and new ones, at B
        for name, token in tokens.items():
            for i, item in enumerate(ITEMS[:30]):
                body = {"model": MODELS[i % 3], "item": item, "score": float(i % 2)}
                while True:
                    try:
                        status, answer, port = follow(
                            client_of, b, "POST", f"/api/boards/{name}/scores", body, token
                        )
                    except OSError:  # redirected to the dead process
                        status, port = 0, None
                    if status == 200:
                        break
                    assert status in (0, 307, 503), answer
                    assert time.monotonic() - killed < WAIT_GUARD  # a hang guard, not a limit
                    time.sleep(0.2)
                assert port == b.port
                acked[name].add((body["model"], item))
        for name in tokens:
            status, board = b.client().get(f"/api/boards/{name}")
            assert status == 200
            assert board["progress"]["scores_received"] == len(
                acked[name]
            )  # nothing lost or doubled
        # the database holds each acknowledged score once
        import psycopg

        with psycopg.connect(schema) as conn:
            rows = conn.execute(
                "SELECT b.id, COUNT(*), COUNT(DISTINCT (s.model, s.item)) FROM scores s "
                "JOIN boards b ON b.num = s.board GROUP BY b.id ORDER BY b.id"
            ).fetchall()
        assert rows == [(name, len(acked[name]), len(acked[name])) for name in sorted(tokens)]
    finally:
        a.stop()
        b.stop()
        for client in clients.values():
            client.close()


def test_a_fenced_out_process_is_refused(schema, tmp_path):
    """A process stopped (SIGSTOP) past its lease: another takes the board; when the first
    wakes it neither writes the board nor answers it from its copy."""
    a, b = member(schema, tmp_path, "a"), member(schema, tmp_path, "b")
    try:
        status, made = a.client().post("/api/boards", board_body("fenced"))
        token = made["write_token"]
        first = {"model": "m0", "item": "q0", "score": 1.0}
        assert a.client().post("/api/boards/fenced/scores", first, token=token)[0] == 200
        waiting = a.client()  # connected before the stop
        os.kill(a.process.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + WAIT_GUARD  # a hang guard: load can stretch the lease
            while True:  # B takes the board once A's lease expires
                status, answer = b.client().post(
                    "/api/boards/fenced/scores",
                    {"model": "m1", "item": "q0", "score": 0.0},
                    token=token,
                )
                if status == 200:
                    break
                assert status == 307 and time.monotonic() < deadline
                time.sleep(0.3)
        finally:
            os.kill(a.process.pid, signal.SIGCONT)
        # A, awake: its write and its read are refused or sent to B, never answered from A
        status, answer = waiting.post(
            "/api/boards/fenced/scores", {"model": "m2", "item": "q0", "score": 1.0}, token=token
        )
        assert status in (307, 503), answer
        if status == 307:
            assert answer["owner"] == f"http://127.0.0.1:{b.port}"
        status, answer = a.client().get("/api/boards/fenced/leaderboard")
        assert status == 307 and answer["owner"] == f"http://127.0.0.1:{b.port}"
        status, board = b.client().get("/api/boards/fenced")
        assert board["progress"]["scores_received"] == 2  # A's refused post is not there
    finally:
        a.stop()
        b.stop()


def test_the_fence_refuses_a_write_in_its_transaction(schema):
    """Storage level: a lease that expired and was taken over refuses the old owner's write,
    even though the old owner has not noticed (its own clock says nothing yet)."""
    old = ClusterStorage(schema, "http://127.0.0.1:1").open()
    new = ClusterStorage(schema, "http://127.0.0.1:2").open()
    try:
        old.lock_owner(5)
        new.lock_owner(5)
        num = old.create_board("b", "{}", "w", None, "2026-01-01")
        one = np.array([0]), np.array([0]), np.array([1.0])
        old.insert_scores(num, *one)
        assert new.take(num) == "http://127.0.0.1:1"  # live: not taken
        old._run(
            lambda cur: cur.execute(
                "UPDATE board_leases SET expires_at = now() - interval '1 second'"
            )
        )
        assert new.take(num) is None  # expired: taken, with a new fencing token
        assert new.fence_of(num) == old.fence_of(num) + 1
        with pytest.raises(NotOwner):
            old.insert_scores(num, np.array([1]), np.array([0]), np.array([0.0]))
        assert not old.holds(num)
        new.insert_scores(num, np.array([2]), np.array([0]), np.array([0.0]))
        model, _, _ = new.load_scores(num)
        assert sorted(model.tolist()) == [0, 2]
        with pytest.raises(RuntimeError, match="names no board"):
            new._run(lambda cur: None, write=True)  # a write must name its boards
    finally:
        old.close()
        new.close()


def test_single_process_server_and_cluster_refuse_each_other(schema):
    single = PostgresStorage(schema).open()
    single.lock_owner(1)
    try:
        joining = ClusterStorage(schema, "http://127.0.0.1:1").open()
        with pytest.raises(OwnerLockError, match="single-process"):
            joining.lock_owner(0.5)
        joining.close()
    finally:
        single.close()
    joined = ClusterStorage(schema, "http://127.0.0.1:1").open()
    joined.lock_owner(1)
    try:
        alone = PostgresStorage(schema).open()
        with pytest.raises(OwnerLockError):
            alone.lock_owner(0.5)
        alone.close()
    finally:
        joined.close()


def test_cluster_refuses_sqlite_and_needs_an_address(tmp_path):
    serve = serve_once
    code, err = serve("--db", str(tmp_path / "b.db"), "--cluster")
    assert code != 0 and "--cluster needs --db postgresql://" in err
    assert not (tmp_path / "b.db").exists()  # refused before anything is created
    code, err = serve("--db", "postgresql://x@127.0.0.1/x", "--cluster", "--host", "0.0.0.0")
    assert code != 0 and "needs --advertise URL" in err
    code, err = serve("--db", str(tmp_path / "b.db"), "--advertise", "http://a:1")
    assert code != 0 and "add --cluster" in err
    with pytest.raises(ValueError, match="--advertise must be an http"):
        ClusterStorage("postgresql://x@127.0.0.1/x", "a:1")
