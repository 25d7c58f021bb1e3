"""The JSON API of the real `rankci serve` (uvicorn in a subprocess, loopback), on SQLite and on
PostgreSQL: boards, idempotent posts, rejections that change nothing, tokens, size limits, the
next evaluations in the shared order, the leaderboard and its history, and the export."""

from __future__ import annotations

import io
import json
import socket

import numpy as np
import pandas as pd
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import ADMIN, Client, database, running

import rankci
from rankci.sequential import replay

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    with database(request.param, folder) as db:
        with running(db, folder / "server.log", args=["--auth-failures", "100000"]) as srv:
            srv.kind = request.param
            srv.db = db
            yield srv


@pytest.fixture
def api(server):
    client = server.client()
    yield client
    client.close()


_RUNS = iter(range(10**6))


def _create(api: Client, **options):
    body = {"benchmark": "bench", "run": f"run-{next(_RUNS)}", **options}
    status, created = api.post("/api/boards", body)
    assert status == 201, created
    return created["board"]["id"], created["write_token"], created


def _scores(board_models, items, x, cells):
    return [{"model": board_models[j], "item": items[i], "score": float(x[i, j])} for i, j in cells]


def _stored_rows(server, board_id):
    """The boards table as the database holds it (no API)."""
    if server.kind == "sqlite":
        import sqlite3

        with sqlite3.connect(server.db) as conn:
            return conn.execute(
                "SELECT write_hash, read_hash, spec FROM boards WHERE id = ?", (board_id,)
            ).fetchone()
    import psycopg

    with psycopg.connect(server.db) as conn:
        return conn.execute(
            "SELECT write_hash, read_hash, spec FROM boards WHERE id = %s", (board_id,)
        ).fetchone()


def test_create_board_tokens_are_stored_hashed_and_the_api_is_documented(server, api):
    board_id, token, created = _create(
        api, models=["a", "b", "c"], items=["1", "2", "3"], public=False
    )
    assert token.startswith("rkci_") and len(token) > 40
    read = created["read_token"]
    assert read.startswith("rkci_") and read != token
    write_hash, read_hash, spec = _stored_rows(server, board_id)
    for secret in (token, read):
        assert secret not in write_hash + read_hash + spec
    assert write_hash.startswith("hmac-sha256$") and read_hash.startswith("hmac-sha256$")
    status, _ = api.post("/api/boards", {**json.loads(spec), "id": board_id} | {"created_at": 1})
    assert status == 422  # unknown field
    status, body = api.post(
        "/api/boards",
        {"id": board_id, "benchmark": "x", "run": "y", "models": ["a", "b"], "items": ["1"]},
    )
    assert status == 409, body
    status, schema = api.get("/openapi.json")
    assert status == 200
    for path in [
        "/api/boards",
        "/api/boards/{board}/scores",
        "/api/boards/{board}/needs",
        "/api/boards/{board}/leaderboard",
        "/api/boards/{board}/history",
        "/api/boards/{board}/monitor",
    ]:
        assert path in schema["paths"], path
    status, page = api.get("/docs")  # a plain page from the schema: no CDN, no script
    assert status == 200 and b"/api/boards/{board}/scores" in page
    assert b"<script" not in page and b"https://" not in page.split(b"<body>")[0]
    assert api.get("/redoc")[0] == 404


def test_next_evaluations_follow_the_shared_order(api):
    items = [f"item-{i}" for i in range(40)]
    board_id, token, _ = _create(
        api, models=["a", "b", "c"], items=items, order_seed=7, look_every=5
    )
    by_string = sorted(items)
    order = [by_string[p] for p in np.random.default_rng(7).permutation(40)]
    status, needs = api.get(f"/api/boards/{board_id}/needs?limit=1000")
    assert status == 200
    assert [(e["item"], e["model"]) for e in needs["evaluations"]] == [
        (item, m) for item in order for m in ["a", "b", "c"]
    ]
    first = [{"model": m, "item": it, "score": 1.0} for it in order[:2] for m in "abc"]
    first.append({"model": "b", "item": order[2], "score": 0.0})
    first.append({"model": "a", "item": order[5], "score": 0.0})  # ahead of the others
    status, posted = api.post(f"/api/boards/{board_id}/scores", {"scores": first}, token)
    assert status == 200 and posted["accepted"] == 8 and posted["progress"]["t"] == 2
    status, needs = api.get(f"/api/boards/{board_id}/needs?limit=7")
    assert [(e["item"], e["model"], e["position"]) for e in needs["evaluations"]] == [
        (order[2], "a", 2),
        (order[2], "c", 2),
        (order[3], "a", 3),
        (order[3], "b", 3),
        (order[3], "c", 3),
        (order[4], "a", 4),
        (order[4], "b", 4),
    ]
    status, mine = api.get(f"/api/boards/{board_id}/needs?limit=3&model=a")
    assert [e["item"] for e in mine["evaluations"]] == [order[2], order[3], order[4]]
    status, body = api.get(f"/api/boards/{board_id}/needs?model=zz")
    assert status == 422


def test_posts_are_idempotent_and_bad_posts_change_nothing(api):
    board_id, token, _ = _create(api, models=["a", "b"], items=["q1", "q2", "q3"], look_every=1)
    path = f"/api/boards/{board_id}/scores"
    batch = [
        {"model": "a", "item": "q1", "score": 0.1 + 0.2},
        {"model": "b", "item": "q1", "score": 1},
    ]
    assert api.post(path, {"scores": batch}, token)[1]["accepted"] == 2
    status, again = api.post(path, {"scores": batch}, token)
    assert status == 200 and (again["accepted"], again["duplicates"]) == (0, 2)
    assert again["progress"]["scores_received"] == 2
    status, one = api.post(path, {"model": "a", "item": "q2", "score": 0.25}, token)
    assert status == 200 and one["accepted"] == 1

    def unchanged():
        _, board = api.get(f"/api/boards/{board_id}")
        assert board["progress"]["scores_received"] == 3
        _, text = api.get(f"/api/boards/{board_id}/scores")
        return text

    before = unchanged()
    good = {"model": "b", "item": "q2", "score": 0.5}
    bad = [
        (422, {"scores": [good, {"model": "nobody", "item": "q2", "score": 0.5}]}, "unknown model"),
        (422, {"scores": [good, {"model": "a", "item": "q9", "score": 0.5}]}, "unknown item"),
        (422, {"scores": [good, {"model": "a", "item": "q3", "score": 1.5}]}, "outside [0, 1]"),
        (422, {"scores": [good, {"model": "a", "item": "q3", "score": -0.1}]}, "outside [0, 1]"),
        (422, {"scores": [good, {"model": "a", "item": "q3", "score": "high"}]}, "score"),
        (422, {"scores": [good, {"model": "a", "item": "q3", "score": True}]}, "score"),
        (422, {"scores": [good, {"model": "a", "item": "q3"}]}, "score"),
        (409, {"scores": [good, {"model": "a", "item": "q1", "score": 0.3}]}, "conflict"),
        (409, {"scores": [good, {**good, "score": 0.75}]}, "conflict"),
    ]
    for want, body, words in bad:
        status, answer = api.post(path, body, token)
        assert status == want, (body, answer)
        assert words in json.dumps(answer), answer
        assert unchanged() == before
    status, answer = api.request("POST", path, raw=b'{"scores": [', token=token)
    assert status == 422
    status, answer = api.request(
        "POST", path, raw=b'{"scores": [{"model": "a", "item": "q3", "score": NaN}]}', token=token
    )
    assert status == 422
    assert unchanged() == before


def test_tokens_guard_writes_and_private_reads(api):
    board_id, token, created = _create(api, models=["a", "b"], items=["1", "2"], public=False)
    read = created["read_token"]
    path = f"/api/boards/{board_id}/scores"
    score = {"model": "a", "item": "1", "score": 1.0}
    # a private board without a valid token answers exactly as an unknown board
    unknown = "no-such-board-" + board_id[-6:]
    for where in ["", "/leaderboard", "/history", "/needs", "/scores", "/monitor"]:
        for bad in (None, "rkci_" + "x" * 43):
            status, body = api.get(f"/api/boards/{board_id}{where}", bad)
            other = api.get(f"/api/boards/{unknown}{where}", bad)
            assert status == other[0] == 404, where
            assert body["detail"].replace(board_id, "ID") == other[1]["detail"].replace(
                unknown, "ID"
            )
        assert api.get(f"/api/boards/{board_id}{where}", read)[0] == 200, where
        assert api.get(f"/api/boards/{board_id}{where}", token)[0] == 200, where
    assert api.post(path, score)[0] == 404
    assert api.post(path, score, "rkci_" + "x" * 43)[0] == 404
    assert api.post(f"/api/boards/{unknown}/scores", score)[0] == 404
    assert api.post(path, score, read)[0] == 403  # the reader knows the board exists
    assert api.get(f"/boards/{board_id}/fragment")[0] == 404
    assert api.get(f"/boards/{unknown}/fragment")[0] == 404
    shell, other_shell = api.get(f"/boards/{board_id}")[1], api.get(f"/boards/{unknown}")[1]
    assert shell.replace(board_id.encode(), b"ID") == other_shell.replace(unknown.encode(), b"ID")
    assert api.get(f"/boards/{board_id}/fragment", read)[0] == 200
    _, listed = api.get("/api/boards")
    assert board_id not in [b["id"] for b in listed]
    public_id, public_token, _ = _create(api, models=["a", "b"], items=["1", "2"])
    assert api.get(f"/api/boards/{public_id}/leaderboard")[0] == 200
    assert api.post(f"/api/boards/{public_id}/scores", score)[0] == 401
    assert api.post(f"/api/boards/{public_id}/scores", score, token)[0] == 403  # other board's
    assert public_id in [b["id"] for b in api.get("/api/boards")[1]]
    assert api.get("/api/boards/no-such-board/leaderboard")[0] == 404


def _raw_post(port, path, token, head: str, body_parts) -> tuple[int, bytes]:
    """Send a request by hand (the server may answer before the body is complete)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_GUARD)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\n{head}\r\n".encode()
    )
    try:
        for part in body_parts:
            sock.sendall(part)
    except OSError:  # the server answered and closed without reading the rest
        pass
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    sock.close()
    return int(answer.split(b" ", 2)[1]), answer


def test_request_size_is_limited(server, api):
    board_id, token, _ = _create(api, models=["a", "b"], items=["1", "2"])
    path = f"/api/boards/{board_id}/scores"
    # a declared length over the limit (16 MiB) is refused before any of the body is read
    status, answer = _raw_post(
        server.port, path, token, f"Content-Length: {17 * 1024 * 1024}\r\n", [b'{"scores": [']
    )
    assert status == 413, answer
    # the same without a declared length (chunked): refused once the limit is passed
    chunk = b" " * (1024 * 1024)
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(18)] + [b"0\r\n\r\n"]
    status, answer = _raw_post(server.port, path, token, "Transfer-Encoding: chunked\r\n", parts)
    assert status == 413, answer
    status, board = api.get(f"/api/boards/{board_id}")
    assert status == 200 and board["progress"]["scores_received"] == 0


def _stream(api, board_id, token, models, items, x, rng, follow_needs=False):
    """Post the evaluation in a random arrival order and random batch sizes (or, following the
    needs endpoint, as an evaluation harness would)."""
    path = f"/api/boards/{board_id}/scores"
    if follow_needs:
        index = {item: i for i, item in enumerate(items)}
        while True:
            _, needs = api.get(f"/api/boards/{board_id}/needs?limit=60&horizon=look")
            assert all(e["position"] < needs["next_look_at"] for e in needs["evaluations"])
            if not needs["evaluations"]:
                return needs
            batch = [
                {
                    "model": e["model"],
                    "item": e["item"],
                    "score": float(x[index[e["item"]], models.index(e["model"])]),
                }
                for e in needs["evaluations"]
            ]
            assert api.post(path, {"scores": batch}, token)[0] == 200
    cells = [(i, j) for i in range(len(items)) for j in range(len(models))]
    rng.shuffle(cells)
    start = 0
    while start < len(cells):
        size = int(rng.integers(1, 300))
        status, answer = api.post(
            path, {"scores": _scores(models, items, x, cells[start : start + size])}, token
        )
        assert status == 200, answer
        start += size
    return None


def test_leaderboard_history_and_export_match_an_offline_replay(api):
    rng = np.random.default_rng(21)
    m, n = 5, 400
    models = [f"m{j}" for j in range(m)]
    items = [f"q{i}" for i in range(n)]
    clusters = [["algebra", "law", "chemistry"][i % 3] for i in range(n)]
    x = (rng.random((n, m)) < np.array([0.8, 0.7, 0.55, 0.5, 0.3])).astype(float)
    x[:, 2] = np.round(rng.random(n), 3)  # one model with non-binary scores
    board_id, token, _ = _create(
        api,
        models=models,
        items=[{"id": it, "cluster": c} for it, c in zip(items, clusters)],
        order_seed=3,
        look_every=20,
    )
    _stream(api, board_id, token, models, items, x, rng)
    status, board = api.get(f"/api/boards/{board_id}/leaderboard")
    assert status == 200 and board["progress"]["state"] == "finished"
    status, text = api.get(f"/api/boards/{board_id}/scores")
    exported = pd.read_csv(io.BytesIO(text))
    assert len(exported) == n * m
    back = exported.pivot(index="item", columns="model", values="score").loc[items, models]
    np.testing.assert_array_equal(back.to_numpy(), x)  # exact round trip
    run = replay(rankci.read_scores(exported), order_seed=3, look_every=20)
    frame = run.to_frame().reset_index(drop=True)
    got = pd.DataFrame(board["models"])
    assert got["model"].tolist() == frame["model"].tolist()
    np.testing.assert_array_equal(got["score"], frame["score"])
    np.testing.assert_array_equal(got["rank_lower"], frame["rank_lower"])
    np.testing.assert_array_equal(got["rank_upper"], frame["rank_upper"])
    np.testing.assert_array_equal(got["tier"], frame["tier"])
    assert got["rank_set"].tolist() == frame["rank_set"].tolist()
    assert board["certified_pairs"] == [list(p) for p in run.ranking.dominance_pairs()]
    _, history = api.get(f"/api/boards/{board_id}/history")
    assert history["looks"] == json.loads(json.dumps(run.looks))
    # all N items seen: each score interval is the mean itself (model F)
    means = x.mean(axis=0)[[models.index(v) for v in got["model"]]]
    np.testing.assert_allclose(got["score_lower"], means, atol=1e-12)
    np.testing.assert_allclose(got["score_upper"], got["score_lower"], atol=1e-12)
    # per-cluster subscores against pandas
    by_cluster = exported.groupby(["cluster", "model"])["score"].mean()
    for cluster in board["subscores"]:
        for row in cluster["models"]:
            want = by_cluster[(cluster["cluster"], row["model"])]
            assert row["score"] == pytest.approx(want, abs=1e-12)
            assert row["score_lower"] == pytest.approx(row["score"], abs=1e-12)
    assert board["progress"]["evaluations"] == n * m
    assert board["progress"]["evaluations_saved"] == 0
    status, lines = api.get(f"/api/boards/{board_id}/scores?format=jsonl")
    records = [json.loads(line) for line in lines.decode().splitlines()]
    assert len(records) == n * m and set(records[0]) == {
        "position",
        "model",
        "item",
        "score",
        "cluster",
    }


def test_retirement_saves_evaluations_and_needs_skip_retired_models(api):
    rng = np.random.default_rng(8)
    m, n = 4, 2000
    models = ["strong", "middle", "weak", "weakest"]
    items = [f"i{i}" for i in range(n)]
    x = (rng.random((n, m)) < np.array([0.9, 0.6, 0.35, 0.1])).astype(float)
    board_id, token, _ = _create(
        api, models=models, items=items, order_seed=1, look_every=10, retire="topk", k=1
    )
    last = _stream(api, board_id, token, models, items, x, rng, follow_needs=True)
    assert last["state"] == "finished"
    _, board = api.get(f"/api/boards/{board_id}/leaderboard")
    progress = board["progress"]
    assert progress["t"] < n
    assert progress["evaluations"] + progress["evaluations_saved"] == n * m
    assert progress["evaluations_saved"] > n * m / 2
    assert progress["scores_received"] == progress["evaluations"]  # only needed scores posted
    assert board["top_k"]["in"] == ["strong"]
    assert set(board["top_k"]["out"]) == {"middle", "weak", "weakest"}
    assert all(row["status"] == "retired" for row in board["models"])
    _, history = api.get(f"/api/boards/{board_id}/history")
    retired_at = {}
    for look in history["looks"]:
        for model in look.get("retired", []):
            retired_at[model] = look["t"]
    _, text = api.get(f"/api/boards/{board_id}/scores")
    exported = pd.read_csv(io.BytesIO(text))
    for model, t in retired_at.items():  # nothing was asked of a model after its retirement
        assert exported.loc[exported["model"] == model, "position"].max() == t - 1


def test_manual_retirement(api):
    board_id, token, _ = _create(api, models=["a", "b", "c"], items=[str(i) for i in range(30)])
    assert api.post(f"/api/boards/{board_id}/retire", {"model": "b"})[0] == 401
    status, answer = api.post(f"/api/boards/{board_id}/retire", {"model": "b"}, token)
    assert status == 200 and answer == {"model": "b", "t": 0}
    assert api.post(f"/api/boards/{board_id}/retire", {"model": "b"}, token)[0] == 409
    assert api.post(f"/api/boards/{board_id}/retire", {"model": "zz"}, token)[0] == 422
    _, needs = api.get(f"/api/boards/{board_id}/needs?limit=100")
    assert {e["model"] for e in needs["evaluations"]} == {"a", "c"}
    _, history = api.get(f"/api/boards/{board_id}/history")
    assert history["events"] == [{"t": 0, "kind": "retire", "model": "b"}]


def test_board_creation_needs_the_admin_token_by_default(tmp_path):
    body = {"benchmark": "b", "run": "r", "models": ["a", "b"], "items": ["1"]}
    with running(str(tmp_path / "b.sqlite"), tmp_path / "log", open_boards=False) as srv:
        api = srv.client()
        assert api.post("/api/boards", body)[0] == 401
        assert api.post("/api/boards", body, "wrong")[0] == 403
        assert api.post("/api/boards", body, ADMIN)[0] == 201
        assert api.get("/api/boards")[1][0]["id"] == "b--r"
        api.close()
    # no admin token at all: nobody can create boards (unless --open-boards)
    with running(
        str(tmp_path / "c.sqlite"), tmp_path / "log", {"RANKCI_ADMIN_TOKEN": ""}, open_boards=False
    ) as srv:
        api = srv.client()
        status, answer = api.post("/api/boards", body, ADMIN)
        assert status == 403 and "RANKCI_ADMIN_TOKEN" in answer["detail"]
        api.close()


def test_a_second_server_on_the_same_database_is_refused(server, tmp_path):
    from service_server import Server

    with pytest.raises(RuntimeError, match="another rankci server"):
        Server(server.db, tmp_path / "second.log", args=["--lock-wait", "1"])


def test_serve_command_refuses_bad_options_clearly(tmp_path):
    from service_server import serve_once as serve

    code, err = serve("--db", ":memory:")
    assert code == 2 and "needs a database file" in err
    code, err = serve("--db", str(tmp_path / "no" / "such" / "folder" / "b.sqlite"))
    assert code == 2 and "does not exist" in err
    code, err = serve("--db", str(tmp_path / "b.sqlite"), "--port", "70000")
    assert code == 2 and "--port" in err
