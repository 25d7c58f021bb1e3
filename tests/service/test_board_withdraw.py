"""Models withdrawn by their owners on a live board: Board.withdraw, its replay after a restart
(SQLite and PostgreSQL), and ``POST /api/boards/{id}/models/{model}/withdraw`` on a real
`rankci serve`."""

from __future__ import annotations

import time

import numpy as np
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import database, running

from rankci.service.board import Board, Conflict, Rejected
from rankci.service.spec import make_spec
from rankci.service.storage import open_storage


def _entries(models, items, x, cells):
    return [(models[j], items[i], float(x[i, j])) for i, j in cells]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("entry", ["closed", "open"])
def test_a_withdrawal_is_journalled_and_replayed_exactly_after_a_restart(tmp_path, kind, entry):
    rng = np.random.default_rng(7)
    n = 300
    items = [f"q{i}" for i in range(n)]
    models = ["a", "b", "c"]
    x = (rng.random((n, 3)) < [0.9, 0.2, 0.5]).astype(float)
    spec = make_spec(
        benchmark="b",
        run="w",
        models=models,
        items=items,
        order_seed=2,
        look_every=25,
        sampling="iid",
        entry=entry,
    )
    with database(kind, tmp_path) as db:
        storage = open_storage(db).open()
        storage.lock_owner()
        num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
        board = Board(spec, num, storage)
        order = list(board.order)
        board.post(_entries(models, items, x, [(i, j) for i in order[:140] for j in range(3)]))
        answer = board.withdraw("a")
        assert answer == {"model": "a", "t": 140, "look": 5, "reason": "withdrawn by its owner"}
        with pytest.raises(Conflict, match="model 'a' was withdrawn already \\(at look 5\\)"):
            board.withdraw("a")
        with pytest.raises(Rejected, match="unknown model 'zz'"):
            board.withdraw("zz")
        frozen = board.monitor.log_wealth()[0]
        board.post(_entries(models, items, x, [(i, j) for i in order[140:] for j in range(3)]))
        assert board.monitor.t == n
        np.testing.assert_allclose(board.monitor.log_wealth()[0], frozen, rtol=1e-14)
        assert board.progress()["withdrawn"]["a"]["look"] == 5
        ranking = board.monitor.ranking()
        assert ranking.details["withdrawn"]["a"]["look"] == 5
        assert ("a", "b") in ranking.dominance_pairs()  # certified before it left, kept
        rebuilt = Board.load(spec, num, storage)
        assert rebuilt.monitor.looks == board.monitor.looks
        assert rebuilt.monitor.withdrawn == board.monitor.withdrawn
        np.testing.assert_array_equal(rebuilt.monitor.log_wealth(), board.monitor.log_wealth())
        assert rebuilt.events == board.events
        storage.close()


def test_withdraw_endpoint_and_page(tmp_path):
    with running(str(tmp_path / "api.sqlite"), tmp_path / "log") as srv:
        api = srv.client()
        items = [str(i) for i in range(40)]
        body = {
            "benchmark": "b",
            "run": "w",
            "models": ["a", "b", "c"],
            "items": items,
            "sampling": "iid",
            "look_every": 10,
        }
        status, created = api.post("/api/boards", body)
        assert status == 201, created
        board, token = created["board"]["id"], created["write_token"]
        rng = np.random.default_rng(1)
        first = [
            {"model": m, "item": i, "score": float(rng.random() < p)}
            for i in items[:40]
            for m, p in (("a", 0.9), ("b", 0.5), ("c", 0.2))
        ]
        half = [s for s in first if int(s["item"]) < 20]
        assert api.post(f"/api/boards/{board}/scores", {"scores": half}, token)[0] == 200
        path = f"/api/boards/{board}/models/c/withdraw"
        assert api.post(path, {}, None)[0] == 401
        status, answer = api.post(path, {}, token)
        assert status == 200, answer
        t = answer["t"]
        assert answer["model"] == "c" and answer["look"] == t // 10
        status, again = api.post(path, {}, token)
        assert status == 409 and "withdrawn already" in again["detail"]["message"]
        status, unknown = api.post(f"/api/boards/{board}/models/zz/withdraw", {}, token)
        assert status == 422 and "unknown model 'zz'" in unknown["detail"]["message"]
        _, history = api.get(f"/api/boards/{board}/history")
        assert {"t": t, "kind": "withdraw", "model": "c"} in history["events"]
        _, described = api.get(f"/api/boards/{board}")
        assert described["progress"]["withdrawn"]["c"]["look"] == t // 10
        assert api.get(f"/boards/{board}")[0] == 200
        deadline = time.monotonic() + WAIT_GUARD
        while True:  # rendered in the background: poll with a generous timeout
            status, fragment = api.get(f"/boards/{board}/fragment")
            assert status == 200, fragment
            if fragment["version"] != "rendering" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert f"c (at look {t // 10}, item {t:,})" in fragment["html"]
        api.close()
