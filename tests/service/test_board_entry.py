"""Models that join a live board (``entry="open"``): Board.add_model, its replay after a restart,
and ``POST /api/boards/{id}/models`` on a real `rankci serve` (SQLite)."""

from __future__ import annotations

import numpy as np
import pytest
from service_server import running

from rankci.sequential import OpenMonitor
from rankci.service.board import Board, Conflict
from rankci.service.spec import make_spec
from rankci.service.storage import open_storage


def _entries(models, items, x, cells):
    return [(models[j], items[i], float(x[i, j])) for i, j in cells]


def test_a_model_added_mid_board_is_replayed_exactly_after_a_restart(tmp_path):
    rng = np.random.default_rng(4)
    n = 400
    items = [f"q{i}" for i in range(n)]
    x = (rng.random((n, 4)) < [0.8, 0.5, 0.3, 0.9]).astype(float)
    spec = make_spec(
        benchmark="b",
        run="r",
        models=["a", "b", "c"],
        items=items,
        order_seed=3,
        look_every=20,
        sampling="iid",
        entry="open",
    )
    assert spec.monitor.certifier == "bonferroni"
    storage = open_storage(str(tmp_path / "e.sqlite")).open()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    order = list(board.order)
    board.post(_entries(["a", "b", "c"], items, x, [(i, j) for i in order[:100] for j in range(3)]))
    answer = board.add_model("late")
    assert answer["model"] == "late" and answer["t"] == 100 and answer["entrant"] == 4
    with pytest.raises(Conflict, match="on the board already"):
        board.add_model("late")
    models = ["a", "b", "c", "late"]
    board.post(_entries(models, items, x, [(i, j) for i in order[100:] for j in range(4)]))
    assert board.monitor.t == n and board.spec.models == tuple(models)
    ranking = board.monitor.ranking()
    assert ("late", "c") in ranking.dominance_pairs()
    assert ranking.details["items_by_model"]["late"] == n - 100
    rebuilt = Board.load(spec, num, storage)
    assert rebuilt.monitor.looks == board.monitor.looks
    np.testing.assert_array_equal(rebuilt.monitor.log_wealth(), board.monitor.log_wealth())
    assert rebuilt.monitor.entrants == board.monitor.entrants
    storage.close()


def test_a_closed_board_refuses_a_new_model_naming_the_setting(tmp_path):
    spec = make_spec(benchmark="b", run="r", models=["a", "b"], items=["1", "2"])
    storage = open_storage(str(tmp_path / "c.sqlite")).open()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    with pytest.raises(Conflict, match="entry 'closed'"):
        Board(spec, num, storage).add_model("c")
    storage.close()


def test_post_models_endpoint(tmp_path):
    with running(str(tmp_path / "api.sqlite"), tmp_path / "log") as srv:
        api = srv.client()
        items = [str(i) for i in range(30)]
        body = {
            "benchmark": "b",
            "run": "open",
            "models": ["a", "b"],
            "items": items,
            "sampling": "iid",
            "entry": "open",
            "look_every": 10,
        }
        status, created = api.post("/api/boards", body)
        assert status == 201, created
        board, token = created["board"]["id"], created["write_token"]
        assert api.post(f"/api/boards/{board}/models", {"model": "c"})[0] == 401
        status, answer = api.post(f"/api/boards/{board}/models", {"model": "c"}, token)
        assert status == 200 and answer["t"] == 0 and answer["entrant"] == 3
        assert api.post(f"/api/boards/{board}/models", {"model": "c"}, token)[0] == 409
        _, history = api.get(f"/api/boards/{board}/history")
        (event,) = history["events"]
        assert {k: event[k] for k in ("t", "kind", "model", "look")} == {
            "t": 0,
            "kind": "join",
            "model": "c",
            "look": 0,
        }
        rng = np.random.default_rng(1)
        scores = [
            {"model": m, "item": i, "score": float(rng.random() < p)}
            for i in items
            for m, p in (("a", 0.9), ("b", 0.5), ("c", 0.2))
        ]
        assert api.post(f"/api/boards/{board}/scores", {"scores": scores}, token)[0] == 200
        status, leaderboard = api.get(f"/api/boards/{board}/leaderboard")
        assert status == 200
        rows = {row["model"]: row for row in leaderboard["models"]}
        assert rows["c"]["joined_at"] == 0 and rows["c"]["n_items"] == 30
        assert rows["c"]["threshold"] == pytest.approx(2 * 3 * 4 / 0.05)
        assert api.get(f"/boards/{board}")[0] == 200
        status, state = api.request("GET", f"/api/boards/{board}/monitor")
        assert status == 200  # the open monitor's whole state, restored below
        (tmp_path / "open.npz").write_bytes(state)
        restored = OpenMonitor.restore(tmp_path / "open.npz")
        assert list(restored.models) == ["a", "b", "c"] and restored.t == 30
        assert sorted(map(list, restored.ranking().dominance_pairs())) == sorted(
            leaderboard["certified_pairs"]
        )
        closed = {**body, "run": "closed", "sampling": "finite", "entry": "closed"}
        status, created = api.post("/api/boards", closed)
        board, token = created["board"]["id"], created["write_token"]
        status, answer = api.post(f"/api/boards/{board}/models", {"model": "c"}, token)
        assert status == 409 and "entry 'closed'" in answer["detail"]["message"]
        api.close()
