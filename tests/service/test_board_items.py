"""Items that grow on a live board (``item_entry: "open"``): a score for an item not on the board
appends it to the shared order. Its journal and replay after a restart (SQLite and PostgreSQL),
the export and its replay, against a plain library ``Monitor`` fed the same items with
``update_item``; and the API on real `rankci serve` processes, restarted."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from pydantic import ValidationError
from service_server import database, running

from rankci.cli import main
from rankci.sequential import Monitor
from rankci.service.board import Board, Conflict, Rejected
from rankci.service.export import parquet_chunks, replay_export
from rankci.service.schemas import BoardCreate
from rankci.service.spec import make_spec
from rankci.service.storage import open_storage


def _library_looks(spec, board) -> list[dict]:
    """The looks of a plain library Monitor fed, with ``update_item``, the board's complete
    rows in its shared order (the items given at creation in their permuted order, then each
    later item where it joined)."""
    mon = Monitor(list(spec.models), spec.monitor)
    names = board.spec.items
    for p in range(board.spec.n_items):
        row = board.x[p]
        if not np.isfinite(row).all():
            break
        assert mon.update_item(names[board.order[p]], row)
    return mon.looks


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_growing_board_equals_update_item_after_restart_and_replay(tmp_path, kind, seed):
    rng = np.random.default_rng(seed)
    models = ["a", "b", "c"]
    given = [f"g{i}" for i in range(int(rng.integers(3, 12)))]
    later = [f"n{i}" for i in range(int(rng.integers(40, 120)))]
    p = np.array([0.8, 0.5, 0.3])
    truth = {
        (m, i): float(rng.random() < p[j]) for i in given + later for j, m in enumerate(models)
    }
    spec = make_spec(
        benchmark="b", run=f"g{seed}", models=models, items=given, order_seed=seed,
        look_every=int(rng.integers(3, 15)), sampling="iid", item_entry="open",
    )  # fmt: skip
    # the scores arrive in random posts, several posts committed in one group; a post that
    # conflicts is rejected and brings no item
    cells = [(m, i) for i in given + later for m in models]
    cells = [cells[k] for k in rng.permutation(len(cells))]
    tail = set(later[-5:])  # some scores of the last items never come
    cells = [c for c in cells if c[1] not in tail or rng.random() < 0.7]
    with database(kind, tmp_path) as db:
        storage = open_storage(db).open()
        storage.lock_owner()
        num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
        board = Board(spec, num, storage)
        start, bad_items = 0, []
        while start < len(cells):
            posts = []
            for _ in range(int(rng.integers(1, 4))):
                size = int(rng.integers(1, 30))
                part = cells[start : start + size]
                start += size
                if part:
                    posts.append(board.submit([(m, i, truth[m, i]) for m, i in part]))
                if rng.random() < 0.2:  # a conflicting post naming an item no one else does
                    bad = f"bad{len(bad_items)}"
                    bad_items.append(bad)
                    posts.append(board.submit([("a", bad, 1.0), ("a", bad, 0.0)]))
            board.commit_waiting()
            for pending in posts:
                if pending.error is not None:
                    assert "conflict" in str(pending.error)
        assert not set(bad_items) & set(board.spec.items)
        added = board.spec.items[len(given) :]
        # new items enter in arrival order: the order each was first committed
        arrived = list(dict.fromkeys(i for _m, i in cells if i not in given))
        assert list(added) == arrived
        assert board.state == "open" and board.monitor.t < board.spec.n_items + 1
        looks = [dict(look) for look in board.monitor.looks]
        assert looks == _library_looks(spec, board)
        assert len(looks) >= 1
        again = Board.load(spec, num, storage)  # the restart
        assert again.monitor.looks == looks and again.spec.items == board.spec.items
        assert again.progress() == board.progress()
        exported = b"".join(parquet_chunks(board))  # the export reads the database
        storage.close()
    replayed = replay_export(io.BytesIO(exported))
    assert replayed.monitor.looks == looks and replayed.spec.items == board.spec.items


def test_a_closed_board_refuses_new_items_and_open_needs_iid(tmp_path, monkeypatch):
    spec = make_spec(benchmark="b", run="c", models=["a", "b"], items=["q0"], look_every=1)
    storage = open_storage(str(tmp_path / "b.db")).open()
    storage.lock_owner()
    num = storage.create_board(spec.id, spec.to_json(), "x", None, spec.created_at)
    board = Board(spec, num, storage)
    with pytest.raises(Rejected, match="unknown item 'q9'"):
        board.post([("a", "q9", 1.0)])
    assert '"item_entry"' not in spec.to_json()  # closed boards are stored as before
    with pytest.raises(ValueError, match="item_entry 'open' needs sampling 'iid'"):
        make_spec(benchmark="b", run="c", models=["a", "b"], items=["q0"], item_entry="open")
    with pytest.raises(ValueError, match="without clusters"):
        make_spec(
            benchmark="b", run="c", models=["a", "b"], items=[{"id": "q0", "cluster": "x"}],
            sampling="iid", item_entry="open",
        )  # fmt: skip
    grow = make_spec(
        benchmark="b", run="o", models=["a", "b"], items=["q0"], sampling="iid",
        look_every=2, item_entry="open",
    )  # fmt: skip
    board = Board(grow, 0, storage)
    with pytest.raises(Rejected, match="not valid Unicode"):
        board.post([("a", "\ud800", 1.0)])
    with pytest.raises(Rejected, match="1-200 characters"):
        board.post([("a", "x" * 201, 1.0)])
    with pytest.raises(Rejected, match="unknown model 'z'"):  # the model is checked as ever
        board.post([("z", "q5", 1.0)])
    assert board.spec.items == ("q0",) and board.received == 0
    monkeypatch.setattr("rankci.service.board.MAX_CELLS", 6)  # 3 items x 2 models at most
    board.post([("a", "q1", 1.0), ("a", "q2", 1.0)])
    with pytest.raises(Conflict, match="'q3' .* would take the board over 6 scores per board"):
        board.post([("b", "q1", 0.0), ("a", "q3", 1.0)])
    assert board.spec.items == ("q0", "q1", "q2") and board.received == 2
    with pytest.raises(ValidationError, match="a votes board has no items"):
        BoardCreate(benchmark="b", run="v", kind="votes", models=["a", "b"], item_entry="open")
    storage.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_items_grow_through_the_api_restart_and_export_on_real_servers(tmp_path, kind):
    rng = np.random.default_rng(8)
    body = {
        "id": "grows", "benchmark": "b", "run": "g", "models": ["a", "b", "c"],
        "items": ["s0", "s1"], "sampling": "iid", "look_every": 10, "order_seed": 3,
        "item_entry": "open",
    }  # fmt: skip
    later = [f"x{i}" for i in range(45)]
    scores = {(m, i): float(rng.random() < q) for i in ["s0", "s1", *later]
              for m, q in (("a", 0.9), ("b", 0.5), ("c", 0.2))}  # fmt: skip
    with database(kind, tmp_path) as db:
        with running(db, tmp_path / "log1") as srv:
            api = srv.client()
            status, created = api.post("/api/boards", body)
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            assert created["board"]["item_entry"] == "open"
            for k in range(0, len(later), 5):
                part = ["s0", "s1"] if k == 0 else []
                post = [{"model": m, "item": i, "score": scores[m, i]}
                        for i in part + later[k : k + 5] for m in "abc"]  # fmt: skip
                status, answer = api.post(f"/api/boards/{board}/scores", {"scores": post}, token)
                assert status == 200, answer
            status, bad = api.post(
                f"/api/boards/{board}/scores", {"model": "a", "item": "\ud800", "score": 1.0}, token
            )
            assert status == 422 and "not valid Unicode" in json.dumps(bad)
            _, described = api.get(f"/api/boards/{board}")
            progress = described["progress"]
            assert progress["n_items"] == 47 and progress["t"] == 47 and progress["state"] == "open"
            assert progress["next_look_at"] == 50
            _, history = api.get(f"/api/boards/{board}/history")
            assert [look["t"] for look in history["looks"]] == [10, 20, 30, 40]
            status, data = api.get(f"/api/boards/{board}/export")
            assert status == 200 and isinstance(data, bytes)
            # the item entry rule of an existing board cannot be changed
            status, refused = api.post("/api/boards", {**body, "item_entry": "closed"})
            assert status == 409 and "item_entry 'open'" in json.dumps(refused)
            status, closed = api.post(
                "/api/boards", {**body, "id": "fixed", "item_entry": "closed"}
            )
            assert status == 201
            status, unknown = api.post(
                "/api/boards/fixed/scores", {"model": "a", "item": "new", "score": 1.0},
                closed["write_token"],
            )  # fmt: skip
            assert status == 422 and "unknown item" in json.dumps(unknown)
            status, finite = api.post("/api/boards", {**body, "id": "fin", "sampling": "finite"})
            assert status == 422 and "sampling 'iid'" in json.dumps(finite)
            api.close()
        with running(db, tmp_path / "log2") as srv:  # a restart rebuilds the same board
            api = srv.client()
            _, after = api.get(f"/api/boards/{board}/history")
            assert after["looks"] == history["looks"]
            _, described = api.get(f"/api/boards/{board}")
            assert described["progress"] == progress
            post = [{"model": m, "item": f"y{i}", "score": 1.0 * (m == "a")}
                    for i in range(3) for m in "abc"]  # fmt: skip
            status, answer = api.post(f"/api/boards/{board}/scores", {"scores": post}, token)
            assert status == 200 and answer["progress"]["t"] == 50, answer
            api.close()
    path = tmp_path / "grows.parquet"
    path.write_bytes(data)
    out = tmp_path / "replay.json"
    assert main(["monitor", str(path), "--format", "json", "-o", str(out)]) == 0
    replay = json.loads(out.read_text())
    assert replay["looks"] == history["looks"]
