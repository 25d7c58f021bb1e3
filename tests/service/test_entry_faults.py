"""Faults during a model addition (issue 29, "Fault tests"), on the real servers.

``POST /api/boards/{id}/models`` is sent, and the server is killed (SIGKILL) at once or a few
milliseconds later, or PostgreSQL restarts while it runs; the client then does what a client
does with an unanswered request: it retries until it gets 200 (added) or 409 "on the board
already" (the first attempt was committed). Checked: the model joined exactly once (one ``join``
event in the history, at the item count before the addition), every acknowledged score is
there, and after the rest of the scores the leaderboard equals that of the same posts on a
database that met no fault. PostgreSQL restarts run on a private cluster
(:func:`service_server.private_postgres`), never on the shared one.
"""

from __future__ import annotations

import http.client
import json
import threading
import time

import numpy as np
import pytest
from limits import HANG_GUARD  # tests/limits.py: a hang guard, not a time limit
from live_boards import create_board, post_batches
from service_server import Server, database, private_postgres

FIRST = ["a", "b", "c"]
LATE = "late"
N_ITEMS, JOIN_AT, EVERY, SEED = 240, 100, 20, 11
KEEP = ("models", "certified_pairs", "tiers", "look", "alpha", "guarantee")


def _scores(api, board):
    """The scores before the addition (the first JOIN_AT items of the board's shared order, read
    from ``/needs``) and after it (the rest, with the late model's)."""
    status, needs = api.get(f"/api/boards/{board}/needs?limit={N_ITEMS}&model=a")
    assert status == 200
    order = [int(e["item"][1:]) for e in sorted(needs["evaluations"], key=lambda e: e["position"])]
    assert sorted(order) == list(range(N_ITEMS))
    rng = np.random.default_rng(5)
    x = (rng.random((N_ITEMS, 4)) < [0.75, 0.5, 0.3, 0.95]).astype(float)
    before = [
        {"model": m, "item": f"q{i}", "score": float(x[i, j])}
        for i in order[:JOIN_AT]
        for j, m in enumerate(FIRST)
    ]
    after = [
        {"model": m, "item": f"q{i}", "score": float(x[i, j])}
        for i in order[JOIN_AT:]
        for j, m in enumerate([*FIRST, LATE])
    ]
    return before, after


def _create(api, run: str) -> tuple[str, str]:
    body = {
        "benchmark": "faults",
        "run": run,
        "models": FIRST,
        "items": [f"q{i}" for i in range(N_ITEMS)],
        "order_seed": SEED,
        "look_every": EVERY,
        "sampling": "iid",
        "entry": "open",
    }
    return create_board(api, body)[:2]


def _post(api, board, token, scores, batch=60):
    post_batches(api, board, token, scores, batch)


def _send_addition(port: int, board: str, token: str) -> http.client.HTTPConnection:
    """Send the addition without waiting for its answer (the fault comes next)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"model": LATE}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    conn.request("POST", f"/api/boards/{board}/models", body, headers)
    return conn


def _retry_addition(api, board, token) -> str:
    """Retry as a client would, until the answer is final: 'added' or 'already'."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        try:
            status, answer = api.post(f"/api/boards/{board}/models", {"model": LATE}, token)
        except OSError:
            status, answer = 0, None
        if status == 200:
            assert answer["t"] == JOIN_AT, answer
            return "added"
        if status == 409:
            assert "on the board already" in answer["detail"]["message"], answer
            return "already"
        assert status in (0, 503), (status, answer)
        time.sleep(0.1)
    raise AssertionError("the addition never got a final answer")


def _check_and_finish(api, board, token, after) -> dict:
    status, history = api.get(f"/api/boards/{board}/history")
    assert status == 200
    joins = [e for e in history["events"] if e["kind"] == "join"]
    assert [(e["model"], e["t"]) for e in joins] == [(LATE, JOIN_AT)]  # once, where it was sent
    status, lb = api.get(f"/api/boards/{board}/leaderboard")
    assert lb["progress"]["t"] == JOIN_AT  # every acknowledged score is there, nothing more
    _post(api, board, token, after)
    status, lb = api.get(f"/api/boards/{board}/leaderboard")
    assert status == 200 and lb["progress"]["t"] == N_ITEMS
    return {k: lb[k] for k in KEEP}


def _reference(tmp_path) -> dict:
    with database("sqlite", tmp_path / "reference") as db:
        server = Server(db, tmp_path / "reference.log")
        api = server.client()
        try:
            board, token = _create(api, "reference")
            before, after = _scores(api, board)
            _post(api, board, token, before)
            status, answer = api.post(f"/api/boards/{board}/models", {"model": LATE}, token)
            assert status == 200 and answer["t"] == JOIN_AT
            return _check_and_finish(api, board, token, after)
        finally:
            server.stop()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The board's end state on a database that met no fault (computed once per module)."""
    folder = tmp_path_factory.mktemp("reference")
    (folder / "reference").mkdir()
    return _reference(folder)


# Kill points: at once, and a few milliseconds on (inside or just after the addition). Fewer on
# PostgreSQL, where each kill -9 costs a lease time (storage_postgres.LEASE_TTL) at the restart.
DELAYS = {"sqlite": (0.0, 0.005), "postgresql": (0.0, 0.01)}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_kill_during_a_model_addition_loses_nothing_and_applies_nothing_twice(
    kind, tmp_path, reference
):
    outcomes = []
    with database(kind, tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        try:
            for delay in DELAYS[kind]:
                api = server.client()
                board, token = _create(api, f"kill-{delay}")
                before, after = _scores(api, board)
                _post(api, board, token, before)
                conn = _send_addition(server.port, board, token)
                time.sleep(delay)
                server.kill()
                conn.close()
                server = Server(db, tmp_path / "server.log")
                api = server.client()
                outcomes.append(_retry_addition(api, board, token))
                assert _check_and_finish(api, board, token, after) == reference
                server.stop()  # and a restart after it: the board reloads the same
                server = Server(db, tmp_path / "server.log")
                status, lb = server.client().get(f"/api/boards/{board}/leaderboard")
                assert {k: lb[k] for k in KEEP} == reference
        finally:
            server.stop()
    assert set(outcomes) <= {"added", "already"}


def test_postgres_restart_during_a_model_addition(tmp_path, reference):
    outcomes = []
    with private_postgres() as (url, control):
        server = Server(url, tmp_path / "server.log")
        try:
            for mode in ("race", "down"):
                api = server.client()
                board, token = _create(api, f"pg-{mode}")
                before, after = _scores(api, board)
                _post(api, board, token, before)
                if mode == "down":  # the addition arrives while PostgreSQL is restarting
                    restart = threading.Thread(target=control, args=("restart",))
                    restart.start()
                    time.sleep(0.05)
                    conn = _send_addition(server.port, board, token)
                    restart.join()
                else:  # the restart starts while the addition runs
                    conn = _send_addition(server.port, board, token)
                    control("restart")
                try:
                    response = conn.getresponse()
                    first = (response.status, response.read())
                except OSError:
                    first = (0, b"")
                conn.close()
                assert first[0] in (0, 200, 503), first
                outcomes.append(_retry_addition(api, board, token))
                if first[0] == 200:
                    assert outcomes[-1] == "already"
                assert _check_and_finish(api, board, token, after) == reference
            server.stop()  # a restart: both boards reload the same
            server = Server(url, tmp_path / "server.log")
            for mode in ("race", "down"):
                status, lb = server.client().get(
                    f"/api/boards/{_board_id(server, f'pg-{mode}')}/leaderboard"
                )
                assert status == 200 and {k: lb[k] for k in KEEP} == reference
        finally:
            server.stop()
    assert set(outcomes) <= {"added", "already"}


def _board_id(server, run: str) -> str:
    status, listed = server.client().get("/api/boards")
    assert status == 200
    rows = listed["boards"] if isinstance(listed, dict) else listed
    (found,) = [row["id"] for row in rows if row["run"] == run]
    return found
