"""Items voided on a live board: Board.void, its replay after a restart and from the export
(SQLite and PostgreSQL), and ``POST /api/boards/{id}/items/{item}/void`` on real `rankci serve`
processes, restarted."""

from __future__ import annotations

import io
import json
import time

import numpy as np
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from service_server import database, running

from rankci.cli import main
from rankci.sequential import VOID_GUARANTEE, Monitor
from rankci.service.board import Board, Conflict, Rejected
from rankci.service.export import parquet_chunks, replay_export
from rankci.service.spec import make_spec
from rankci.service.storage import open_storage


def _entries(models, items, x, cells):
    return [(models[j], items[i], float(x[i, j])) for i, j in cells]


def _reference_looks(spec, x_in_order: np.ndarray) -> list[dict]:
    """The looks of a plain library Monitor fed the rows that were not voided, one at a time
    (the board feeds blocks; the wealths are independent of block sizes), with the board's
    schedule: a look every ``look_every`` consumed items and at the last one."""
    mon = Monitor(list(spec.models), spec.monitor)
    for row in x_in_order:
        mon.update_block(row[None, :])
    if not mon.looks or mon.looks[-1]["t"] != mon.t:
        mon.look()
    return mon.looks


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_void_skips_the_items_row_and_is_replayed_exactly(tmp_path, kind):
    rng = np.random.default_rng(3)
    n = 200
    items = [f"q{i}" for i in range(n)]
    models = ["a", "b", "c"]
    x = (rng.random((n, 3)) < [0.8, 0.5, 0.3]).astype(float)
    spec = make_spec(
        benchmark="b",
        run="v",
        models=models,
        items=items,
        order_seed=4,
        look_every=20,
        sampling="iid",
    )
    with database(kind, tmp_path) as db:
        storage = open_storage(db).open()
        storage.lock_owner()
        num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
        board = Board(spec, num, storage)
        order = [int(i) for i in board.order]
        board.post(_entries(models, items, x, [(i, j) for i in order[:70] for j in range(3)]))
        assert board.monitor.t == 70 and len(board.monitor.looks) == 3
        looks_before = [dict(look) for look in board.monitor.looks]
        # voided ahead of the cursor: the next row, one later, and the last row of the order
        voids = [items[order[70]], items[order[101]], items[order[n - 1]]]
        answer = board.void(voids[0])
        assert answer == {"item": voids[0], "t": 70, "look": 3, "row": 70, "position": 70}
        for item in voids[1:]:
            board.void(item)
        with pytest.raises(Conflict, match=f"item '{voids[0]}' was voided already \\(at look 3"):
            board.void(voids[0])
        with pytest.raises(Conflict, match="consumed it already"):
            board.void(items[order[5]])
        with pytest.raises(Rejected, match="unknown item 'zz'"):
            board.void("zz")
        assert board.monitor.looks == looks_before  # past looks unchanged
        progress = board.progress()
        assert progress["voided"][voids[1]] == {
            "look": 3,
            "row": 71,
            "position": 101,
        }  # row 70 skipped
        assert progress["void_guarantee"] == VOID_GUARANTEE
        # the voided items' scores are stored (received, exported) but never used
        board.post(_entries(models, items, x, [(i, j) for i in order[70:] for j in range(3)]))
        assert board.received == 3 * n
        assert board.state == "finished" and board.monitor.t == n - 3
        assert board.progress()["evaluations_remaining"] == 0
        kept = [i for p, i in enumerate(order) if p not in (70, 101, n - 1)]
        reference = _reference_looks(spec, x[kept])
        assert board.monitor.looks == reference
        assert board.monitor.looks[-1]["t"] == n - 3  # the last consumed item is a look
        assert board.monitor.looks[:3] == looks_before
        # a rebuild after a restart, and the export's replay, are the same board
        rebuilt = Board.load(spec, num, storage)
        assert rebuilt.monitor.looks == board.monitor.looks
        assert rebuilt.events == board.events and rebuilt.voided == board.voided
        assert rebuilt.row == board.row == n
        np.testing.assert_array_equal(rebuilt.monitor.log_wealth(), board.monitor.log_wealth())
        again = replay_export(io.BytesIO(b"".join(parquet_chunks(board))))
        assert again.monitor.looks == board.monitor.looks and again.voided == board.voided
        assert again.received == 3 * n
        storage.close()


def test_voiding_the_rows_left_takes_the_last_look_and_needs_skip_voided_items(tmp_path):
    items = [f"q{i}" for i in range(30)]
    models = ["a", "b"]
    spec = make_spec(
        benchmark="b",
        run="e",
        models=models,
        items=items,
        order_seed=1,
        look_every=7,
        sampling="iid",
    )
    storage = open_storage(str(tmp_path / "b.sqlite")).open()
    storage.lock_owner()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    order = [int(i) for i in board.order]
    x = np.tile([1.0, 0.0], (30, 1))
    board.void(items[order[0]])
    needs = board.needs(limit=1000, horizon="look")
    assert [e["position"] for e in needs["evaluations"]][:4] == [1, 1, 2, 2]
    assert {e["position"] for e in needs["evaluations"]} == set(range(1, 8))  # 7 items to a look
    assert needs["next_look_at"] == 7
    assert items[order[0]] not in {e["item"] for e in board.needs(limit=10_000)["evaluations"]}
    board.post(_entries(models, items, x, [(i, j) for i in order[:26] for j in range(2)]))
    assert board.monitor.t == 25 and [look["t"] for look in board.monitor.looks] == [7, 14, 21]
    for p in range(26, 30):
        board.void(items[order[p]])
    assert board.state == "finished"
    assert [look["t"] for look in board.monitor.looks] == [7, 14, 21, 25]
    rebuilt = Board.load(spec, num, storage)
    assert rebuilt.monitor.looks == board.monitor.looks and rebuilt.state == "finished"
    with pytest.raises(Conflict, match="the board is finished"):
        board.void(items[order[3]])
    storage.close()


def test_a_finite_board_refuses_voids(tmp_path):
    spec = make_spec(
        benchmark="b",
        run="f",
        models=["a", "b"],
        items=[f"q{i}" for i in range(10)],
        order_seed=1,
        look_every=5,
    )
    storage = open_storage(str(tmp_path / "f.sqlite")).open()
    storage.lock_owner()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    with pytest.raises(Conflict, match="sampling='finite'"):
        board.void("q3")
    assert board.events == [] and list(storage.load_events(num)) == []
    storage.close()


def _page(api, board: str) -> str:
    deadline = time.monotonic() + WAIT_GUARD
    while True:  # rendered in the background: poll with a generous timeout
        status, fragment = api.get(f"/boards/{board}/fragment")
        assert status == 200, fragment
        if fragment["version"] != "rendering" or time.monotonic() > deadline:
            return fragment["html"]
        time.sleep(0.2)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_void_endpoint_restart_and_replay_on_real_servers(tmp_path, kind):
    rng = np.random.default_rng(5)
    items = [str(i) for i in range(60)]
    body = {
        "id": "voids",
        "benchmark": "b",
        "run": "v",
        "models": ["a", "b", "c"],
        "items": items,
        "sampling": "iid",
        "look_every": 10,
        "order_seed": 9,
    }
    scores = {
        (m, i): float(rng.random() < p)
        for i in items
        for m, p in (("a", 0.9), ("b", 0.5), ("c", 0.2))
    }
    with database(kind, tmp_path) as db:
        with running(db, tmp_path / "log1") as srv:
            api = srv.client()
            status, created = api.post("/api/boards", body)
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            status, needs = api.get(f"/api/boards/{board}/needs?limit=1000")
            order = list(dict.fromkeys(e["item"] for e in needs["evaluations"]))
            assert sorted(order, key=int) == items
            first = [
                {"model": m, "item": i, "score": scores[m, i]} for i in order[:25] for m in "abc"
            ]
            assert api.post(f"/api/boards/{board}/scores", {"scores": first}, token)[0] == 200
            path = f"/api/boards/{board}/items/{order[30]}/void"
            assert api.post(path, {}, None)[0] == 401
            status, answer = api.post(path, {}, token)
            assert status == 200, answer
            assert answer == {"item": order[30], "t": 25, "look": 2, "row": 25, "position": 30}
            status, again = api.post(path, {}, token)
            assert status == 409 and "voided already" in again["detail"]["message"]
            status, used = api.post(f"/api/boards/{board}/items/{order[3]}/void", {}, token)
            assert status == 409 and "consumed it already" in used["detail"]["message"]
            status, unknown = api.post(f"/api/boards/{board}/items/zz/void", {}, token)
            assert status == 422 and "unknown item 'zz'" in unknown["detail"]["message"]
            rest = [
                {"model": m, "item": i, "score": scores[m, i]} for i in order[25:] for m in "abc"
            ]
            assert api.post(f"/api/boards/{board}/scores", {"scores": rest}, token)[0] == 200
            _, described = api.get(f"/api/boards/{board}")
            progress = described["progress"]
            assert progress["voided"][order[30]]["look"] == 2
            assert progress["void_guarantee"] == VOID_GUARANTEE
            assert progress["t"] == 59 and progress["scores_received"] == 180
            _, history = api.get(f"/api/boards/{board}/history")
            assert {"t": 25, "kind": "void", "item": order[30], "look": 2, "row": 25} in history[
                "events"
            ]
            assert [look["t"] for look in history["looks"]] == [10, 20, 30, 40, 50, 59]
            html = _page(api, board)
            assert f"{order[30]} (at look 2)" in html and "voided item" in html
            status, data = api.get(f"/api/boards/{board}/export")
            assert status == 200 and isinstance(data, bytes)
            api.close()
        with running(db, tmp_path / "log2") as srv:  # a restart rebuilds the same looks
            api = srv.client()
            _, after = api.get(f"/api/boards/{board}/history")
            assert after["looks"] == history["looks"] and after["events"] == history["events"]
            _, described = api.get(f"/api/boards/{board}")
            assert described["progress"]["voided"] == progress["voided"]
            status, votes = api.post(
                "/api/boards",
                {"benchmark": "arena", "run": "v", "kind": "votes", "models": ["a", "b"]},
            )
            assert status == 201, votes  # a votes board has no items to void
            vb, vt = votes["board"]["id"], votes["write_token"]
            status, refused = api.post(f"/api/boards/{vb}/items/q1/void", {}, vt)
            assert status == 409 and "votes board" in refused["detail"]["message"]
            api.close()
    # rankci monitor on the export reproduces the board's looks
    path = tmp_path / "voids.parquet"
    path.write_bytes(data)
    out = tmp_path / "replay.json"
    assert main(["monitor", str(path), "--format", "json", "-o", str(out)]) == 0
    replay = json.loads(out.read_text())
    assert replay["looks"] == history["looks"] and replay["events"] == history["events"]
