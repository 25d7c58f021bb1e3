"""The server's quota of cells per board (``rankci serve --max-board-cells``) when a board grows
(issue 29, leftover): a model joining (models x items), items arriving through posts (models x
items) and votes (one cell each) are refused with 413 past the quota, with a message naming the
flag and the numbers, before anything is stored. The board is unchanged after the refusal and
keeps serving; a restart with the same flag keeps the limit, and one with a larger quota lets the
board grow. On real servers (SQLite and PostgreSQL), and on a group commit (the library)."""

from __future__ import annotations

import pytest
from live_boards import create_board, export_table, post_batches
from service_server import database, running

from rankci.service.board import Board, TooLarge
from rankci.service.export import MemoryStorage
from rankci.service.spec import make_spec, make_vote_spec
from rankci.service.voteboard import VoteBoard

QUOTA = 40
ITEMS = [f"q{i}" for i in range(10)]


def _refused(answer: dict, cells: int, after: int) -> None:
    """A 413's body names the flag and the numbers: the cells now, after, and the quota."""
    message = answer["detail"]["message"]
    assert "--max-board-cells" in message, message
    assert f"from {cells:,} to {after:,}" in message and f"quota of {QUOTA:,}" in message, message
    assert "nothing was stored" in message
    problem = {"cells": cells, "after": after, "limit": QUOTA, "flag": "--max-board-cells"}
    assert answer["detail"]["problems"] == [problem]


def _state(api, ids: dict) -> dict:
    """What each board shows: its description (with the progress), its history, and for the
    items board its exported rows."""
    out = {}
    for name, (board, _token) in ids.items():
        out[name] = (api.get(f"/api/boards/{board}")[1], api.get(f"/api/boards/{board}/history")[1])
    table = export_table(api, ids["items"][0])
    out["rows"] = sorted(zip(table.column("model").to_pylist(), table.column("item").to_pylist()))
    return out


def _grow_to_the_quota(api) -> dict:
    """Three boards at the quota of 40 cells: 4 models x 10 items (the fourth joined), 2 models x
    20 items (10 came through posts), 40 votes."""
    scores = {"benchmark": "quota", "sampling": "iid", "look_every": 5, "items": ITEMS}
    body = {**scores, "run": "models", "models": ["a", "b", "c"], "entry": "open"}
    models, token, _ = create_board(api, body)
    status, joined = api.post(f"/api/boards/{models}/models", {"model": "d"}, token)
    assert status == 200, joined  # 30 -> 40 cells: at the quota, not past it
    rows = [{"model": m, "item": i, "score": float(m < "c")} for i in ITEMS[:6] for m in "abcd"]
    post_batches(api, models, token, rows, batch=13)  # some items left: the board is open
    body = {**scores, "run": "items", "models": ["a", "b"], "item_entry": "open"}
    items, items_token, _ = create_board(api, body)
    rows = [
        {"model": m, "item": f"n{i}", "score": float(m == "a")} for i in range(10) for m in "ab"
    ]
    post_batches(api, items, items_token, rows, batch=6)  # 10 new items: 20 -> 40 cells
    body = {"benchmark": "quota", "run": "votes", "kind": "votes", "models": ["x", "y", "z"]}
    votes, votes_token, _ = create_board(api, {**body, "look_every": 10})
    ballots = [
        {
            "model_a": "xyz"[k % 3],
            "model_b": "xyz"[(k + 1) % 3],
            "winner": "model_a",
            "key": f"k{k}",
        }
        for k in range(40)
    ]
    post_batches(api, votes, votes_token, ballots, batch=15, kind="votes")
    return {"models": (models, token), "items": (items, items_token), "votes": (votes, votes_token)}


def _refuses_growth(api, ids: dict) -> None:
    """Every growth path past the quota is a 413 and stores nothing; what stays within it (a
    score for a known item, a vote posted again) is served."""
    before = _state(api, ids)
    board, token = ids["models"]
    status, answer = api.post(f"/api/boards/{board}/models", {"model": "e"}, token)
    assert status == 413, answer
    _refused(answer, 40, 50)
    board, token = ids["items"]
    # a post with a known item's score and a new item: refused whole (its known score too)
    post = {"scores": [{"model": "a", "item": "q0", "score": 1.0},
                       {"model": "b", "item": "brand-new", "score": 0.0}]}  # fmt: skip
    status, answer = api.post(f"/api/boards/{board}/scores", post, token)
    assert status == 413, answer
    _refused(answer, 40, 42)
    board, token = ids["votes"]
    new_vote = {"model_a": "y", "model_b": "z", "winner": "tie"}
    status, answer = api.post(f"/api/boards/{board}/votes", {"votes": [new_vote] * 2}, token)
    assert status == 413, answer
    _refused(answer, 40, 42)
    assert _state(api, ids) == before  # nothing stored, nothing changed
    # the boards keep serving what does not grow them
    again = {"model_a": "x", "model_b": "y", "winner": "model_a", "key": "k0"}
    status, answer = api.post(f"/api/boards/{board}/votes", again, token)
    assert status == 200 and (answer["accepted"], answer["duplicates"]) == (0, 1), answer
    board, token = ids["items"]
    known = {"model": "a", "item": "q0", "score": 1.0}
    status, answer = api.post(f"/api/boards/{board}/scores", known, token)
    assert status == 200 and answer["accepted"] == 1, answer
    for board, _ in ids.values():
        assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_each_growth_path_stops_at_the_quota_and_a_restart_keeps_it(kind, tmp_path):
    quota = ["--max-board-cells", str(QUOTA)]
    with database(kind, tmp_path) as db:
        with running(db, tmp_path / "server.log", args=quota) as server:
            api = server.client()
            big = {"benchmark": "quota", "run": "big", "models": ["a", "b", "c", "d", "e"],
                   "items": ITEMS[:9]}  # fmt: skip
            status, answer = api.post("/api/boards", big)  # 45 cells at creation: as before
            assert status == 413 and "--max-board-cells" in answer["detail"], answer
            ids = _grow_to_the_quota(api)
            _refuses_growth(api, ids)
            after = _state(api, ids)
            api.close()
        with running(db, tmp_path / "server.log", args=quota) as server:  # the same flag
            api = server.client()
            assert _state(api, ids) == after  # rebuilt as it was
            board, token = ids["models"]
            status, answer = api.post(f"/api/boards/{board}/models", {"model": "e"}, token)
            assert status == 413, answer
            _refused(answer, 40, 50)
            board, token = ids["votes"]
            vote = {"model_a": "y", "model_b": "z", "winner": "tie"}
            status, answer = api.post(f"/api/boards/{board}/votes", vote, token)
            assert status == 413, answer
            _refused(answer, 40, 41)
            assert _state(api, ids) == after
            api.close()
        with running(db, tmp_path / "server.log", args=["--max-board-cells", "50"]) as server:
            api = server.client()  # the quota is the running server's: a larger one, more room
            board, token = ids["models"]
            status, answer = api.post(f"/api/boards/{board}/models", {"model": "e"}, token)
            assert status == 200, answer
            board, token = ids["votes"]
            vote = {"model_a": "y", "model_b": "z", "winner": "tie"}
            assert api.post(f"/api/boards/{board}/votes", {"votes": [vote] * 10}, token)[0] == 200
            status, answer = api.post(f"/api/boards/{board}/votes", vote, token)
            assert status == 413 and "from 50 to 51 votes" in answer["detail"]["message"]
            api.close()
        with running(db, tmp_path / "server.log", args=["--max-board-cells", "30"]) as server:
            api = server.client()  # boards over a smaller quota load and serve, and do not grow
            for board, _ in ids.values():
                assert api.get(f"/api/boards/{board}/leaderboard")[0] == 200
            board, token = ids["models"]
            status, answer = api.post(f"/api/boards/{board}/models", {"model": "f"}, token)
            assert status == 413 and "from 50 to 60 scores" in answer["detail"]["message"]
            assert "quota of 30" in answer["detail"]["message"]
            score = {"model": "e", "item": ITEMS[0], "score": 1.0}  # a known cell: no growth
            assert api.post(f"/api/boards/{board}/scores", score, token)[0] == 200
            api.close()


def test_a_group_commit_refuses_only_the_posts_past_the_quota():
    """Posts committed together are counted in their order: the first that would pass the quota
    is refused alone (with what the earlier posts of the group bring), the others go in."""
    spec = make_spec(benchmark="b", run="g", models=["a", "b"], items=["q0"], sampling="iid",
                     look_every=2, item_entry="open")  # fmt: skip
    board = Board(spec, 0, MemoryStorage([], [], [], []))
    board.quota = 6  # 3 items x 2 models
    first = board.submit([("a", "n1", 1.0)])
    second = board.submit([("a", "n2", 1.0), ("b", "n3", 0.0)])  # 2 more items: 8 cells
    third = board.submit([("b", "n1", 0.0), ("a", "n2", 0.0)])  # n1 known by then, n2 new: 6
    fourth = board.submit([("a", "q0", 1.0)])
    assert board.commit_waiting() == 4
    with pytest.raises(TooLarge, match="from 4 to 8 scores, over this server's quota of 6"):
        second.outcome()
    assert [p.outcome().accepted for p in (first, third, fourth)] == [1, 2, 1]
    assert board.spec.items == ("q0", "n1", "n2") and board.received == 4
    grows = make_spec(benchmark="b", run="m", models=["a", "b"], items=["q0", "q1"],
                      sampling="iid", entry="open")  # fmt: skip
    joined = Board(grows, 0, MemoryStorage([], [], [], []))
    joined.quota = 5
    with pytest.raises(TooLarge, match="adding model 'c' .* from 4 to 6 scores"):
        joined.add_model("c")
    assert joined.spec.models == ("a", "b") and joined.events == []

    votes = VoteBoard(make_vote_spec(benchmark="v", run="g", models=["x", "y"], look_every=5),
                      0, MemoryStorage([], [], [], []))  # fmt: skip
    votes.quota = 3
    ballot = {"model_a": "x", "model_b": "y", "winner": "tie"}
    kept = votes.submit_votes([ballot, ballot])
    over = votes.submit_votes([{**ballot, "key": "late"}, ballot])  # 2 + 2 > 3: refused
    fits = votes.submit_votes([{**ballot, "key": "one"}])
    assert votes.commit_waiting() == 3
    assert kept.outcome().accepted == 2 and fits.outcome().accepted == 1
    with pytest.raises(TooLarge, match="from 2 to 4 votes"):
        over.outcome()
    assert votes.received == 3 and "late" not in votes.keys  # the refused post's key is not kept
    votes.quota = 4
    late = votes.submit_votes([{**ballot, "key": "late"}])
    votes.commit_waiting()
    assert (late.outcome().accepted, late.outcome().duplicates) == (1, 0)  # new, not a repeat
    assert sorted(votes.keys) == ["late", "one"]
