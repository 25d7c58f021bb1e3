"""Votes boards on the real server (issue 27 item 5, issue 29 item 3): created with
``kind: "votes"``, fed one vote or a batch at a time through the group commit, and read as the
scores boards are. The leaderboard equals an ``ArenaMonitor`` fed the same votes offline (in
chunks of ``look_every``, a look after each: the replay contract of a votes board), and after a
restart - and after SIGKILL - the board rebuilt from the stored votes answers bit for bit the
same."""

from __future__ import annotations

import numpy as np
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from live_boards import create_board
from service_server import Server, database

from rankci.sequential.spec import MonitorSpec
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import OUTCOMES, Votes

MODELS = ["alpha", "beta", "gamma", "delta"]
STRENGTH = np.array([1.2, 0.6, 0.0, -0.8])  # Bradley-Terry log-odds


def _votes(n: int, seed: int):
    """n votes from a BT model with ties (the data, drawn here, not by the service)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    p = 1 / (1 + np.exp(-(STRENGTH[a] - STRENGTH[b])))
    u = rng.random(n)
    outcome = np.where(u < 0.1, 2, np.where(u < 0.15, 3, np.where(rng.random(n) < p, 0, 1)))
    return a, b, outcome


def _bodies(a, b, outcome):
    return [
        {"model_a": MODELS[i], "model_b": MODELS[j], "winner": OUTCOMES[o]}
        for i, j, o in zip(a.tolist(), b.tolist(), outcome.tolist())
    ]


def _offline(a, b, outcome, every, spec):
    """ArenaMonitor fed the same votes in chunks of ``every`` (a look after each full chunk)."""
    mon = ArenaMonitor(MODELS, spec)
    full = (len(a) // every) * every
    for s in range(0, full, every):
        part = slice(s, s + every)
        mon.update(Votes.from_arrays(a[part], b[part], outcome[part], models=MODELS))
        mon.look()
    return mon


def _create(api, run, **settings):
    body = {"benchmark": "arena", "run": run, "models": MODELS, "kind": "votes", **settings}
    return create_board(api, body)[:2]


def _post_all(api, board, token, votes, batch):
    for s in range(0, len(votes), batch):
        part = votes[s : s + batch]
        body = part[0] if len(part) == 1 else {"votes": part}
        status, posted = api.post(f"/api/boards/{board}/votes", body, token=token)
        assert status == 200, posted
        assert posted["accepted"] == len(part)


def _check_equal(board_json, mon):
    ranking = mon.ranking()
    assert board_json["look"]["number"] == len(mon.looks())
    assert board_json["look"]["t"] == mon.n_votes
    by_name = {row["model"]: row for row in board_json["models"]}
    share = mon.win_share()
    for j, name in enumerate(MODELS):
        row = by_name[name]
        assert row["score"] == float(share[j])  # the win share, exactly
        assert (row["rank_lower"], row["rank_upper"]) == (
            int(ranking.lower[j]),
            int(ranking.upper[j]),
        )
    certified = mon.certified()
    expected = sorted([MODELS[j], MODELS[l]] for j, l in zip(*np.nonzero(certified)))
    assert sorted(board_json["certified_pairs"]) == expected


@pytest.mark.parametrize("bet", ["mixture", "agrapa"])
def test_votes_board_equals_the_offline_arena_monitor_and_survives_restart_and_kill(bet, tmp_path):
    every, n = 50, 620
    a, b, outcome = _votes(n, seed=3)
    votes = _bodies(a, b, outcome)
    with database("sqlite", tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            board, token = _create(api, bet, bet=bet, look_every=every)
            _post_all(api, board, token, votes[:7], 1)  # one vote at a time
            _post_all(api, board, token, votes[7:300], 37)  # batches crossing look points
            status, before_kill = api.get(f"/api/boards/{board}/leaderboard")
            assert status == 200
            server.kill()  # SIGKILL: every acknowledged vote must be stored
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            status, after_kill = api.get(f"/api/boards/{board}/leaderboard")
            assert status == 200
            assert after_kill["progress"] == before_kill["progress"]
            assert after_kill == before_kill
            _post_all(api, board, token, votes[300:], 160)
            status, live = api.get(f"/api/boards/{board}/leaderboard")
            assert status == 200
            raw_live = api.request("GET", f"/api/boards/{board}/leaderboard")
            server.stop()
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            status, restarted = api.get(f"/api/boards/{board}/leaderboard")
            raw_restarted = api.request("GET", f"/api/boards/{board}/leaderboard")
        finally:
            server.stop()
    spec = MonitorSpec(sampling="iid", bet=bet, certifier="bonferroni")
    mon = _offline(a, b, outcome, every, spec)
    _check_equal(live, mon)
    assert live["look"]["number"] == n // every  # 12 looks; the last 20 votes wait
    assert live["progress"]["votes_received"] == n
    assert live["progress"]["votes_waiting_for_look"] == n % every
    assert live["kind"] == "votes" and "new votes like these" in live["target"]
    assert live["guarantee"] == mon.ranking().guarantee
    assert len(live["certified_pairs"]) > 0  # the stream separates some pairs
    assert restarted == live
    assert raw_restarted[1] == raw_live[1]  # the same bytes
    # the stored votes are those posted, in order: a fresh offline replay of them agrees
    if bet == "mixture":
        from rankci.votes.sequential import replay_votes

        full = (n // every) * every
        v = Votes.from_arrays(a[:full], b[:full], outcome[:full], models=MODELS)
        replayed = replay_votes(v, spec, look_every=every)
        assert np.array_equal(replayed.certified(), mon.certified())


def test_bad_votes_and_kind_mismatch_get_clear_errors(tmp_path):
    with database("sqlite", tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            board, token = _create(api, "errors", look_every=5)
            path = f"/api/boards/{board}/votes"
            status, described = api.get(f"/api/boards/{board}")
            assert status == 200 and described["kind"] == "votes" and described["n_items"] == 0
            vote = {"model_a": "alpha", "model_b": "beta", "winner": "model_a"}

            status, body = api.post(path, {**vote, "model_b": "omega"}, token=token)
            assert status == 422 and "'omega'" in body["detail"]["message"]
            status, body = api.post(path, {**vote, "model_b": "alpha"}, token=token)
            assert status == 422 and "itself" in body["detail"]["message"]
            status, body = api.post(path, {**vote, "winner": "alpha"}, token=token)
            assert status == 422 and body["detail"]["problems"][0]["loc"][-1] == "winner"
            status, body = api.post(path, {**vote, "voter": "x\ud800y"}, token=token)
            assert status in (400, 422)
            status, body = api.post(path, {**vote, "prompt": "p" * 201}, token=token)
            assert status == 422 and "prompt" in body["detail"]["message"]
            status, body = api.post(
                path, {"votes": [vote, {**vote, "model_a": "beta"}]}, token=token
            )
            assert status == 422 and body["detail"]["problems"][0]["vote"] == 1  # all or nothing
            status, body = api.post(path, vote)  # no token
            assert status in (401, 403)
            status, lb = api.get(f"/api/boards/{board}/leaderboard")
            assert lb["progress"]["votes_received"] == 0  # nothing of the refused posts stored

            # scores to a votes board
            score = {"model": "alpha", "item": "q1", "score": 1}
            status, body = api.post(f"/api/boards/{board}/scores", score, token=token)
            assert status == 409 and "votes board" in body["detail"]["message"]

            # votes to a scores board
            status, created = api.post(
                "/api/boards",
                {"benchmark": "s", "run": "r", "models": MODELS, "items": ["q1", "q2"]},
            )
            assert status == 201
            scores_id, scores_token = created["board"]["id"], created["write_token"]
            status, body = api.post(f"/api/boards/{scores_id}/votes", vote, token=scores_token)
            assert status == 409 and "scores board" in body["detail"]["message"]
            assert "kind" not in created["board"] or created["board"]["kind"] == "scores"

            # creation: what a votes board allows is said
            for bad in (
                {"bet": "ons"},
                {"certifier": "exact"},
                {"retire": "topk", "k": 1},
                {"look_every": "1%"},
                {"sampling": "finite"},
            ):
                status, body = api.post(
                    "/api/boards",
                    {"benchmark": "arena", "run": "bad", "models": MODELS, "kind": "votes", **bad},
                )
                assert status == 422, (bad, body)
                assert "votes board allows" in str(body) or "vote count" in str(body), body
            status, body = api.post(
                "/api/boards",
                {
                    "benchmark": "arena",
                    "run": "bad",
                    "models": MODELS,
                    "kind": "votes",
                    "items": ["q1"],
                },
            )
            assert status == 422 and "no items" in str(body)
        finally:
            server.stop()


def test_votes_board_on_postgresql_survives_restart(tmp_path):
    every = 20
    a, b, outcome = _votes(130, seed=8)
    with database("postgresql", tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            board, token = _create(api, "pg", look_every=every)
            _post_all(api, board, token, _bodies(a, b, outcome), 25)
            status, live = api.get(f"/api/boards/{board}/leaderboard")
            server.kill()
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            status, restarted = api.get(f"/api/boards/{board}/leaderboard")
        finally:
            server.stop()
    _check_equal(live, _offline(a, b, outcome, every, MonitorSpec(sampling="iid")))
    assert restarted == live


def test_votes_board_page_shows_the_arena_leaderboard(tmp_path):
    import time

    a, b, outcome = _votes(60, seed=5)
    with database("sqlite", tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            board, token = _create(api, "page", look_every=30, title="Arena <b>x</b>")
            _post_all(api, board, token, _bodies(a, b, outcome), 60)
            status, page = api.get(f"/boards/{board}")
            assert status == 200 and b"votes board" in page and b"new vote like these" in page
            assert b"<b>x</b>" not in page  # the title is escaped
            deadline = time.monotonic() + WAIT_GUARD
            while True:  # rendered in the background: poll with a generous timeout
                status, frag = api.get(f"/boards/{board}/fragment")
                assert status == 200, frag
                if frag["version"] != "rendering" or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert frag["version"] == "2-open"
            assert "60 votes received" in frag["status"]
            assert 'id="leaderboard-table"' in frag["html"] and "alpha" in frag["html"]
            assert "win share" in frag["html"]
        finally:
            server.stop()


def test_scores_boards_store_and_load_as_before_kinds_existed():
    import json

    from rankci.service.spec import BoardSpec, make_spec

    spec = make_spec(benchmark="b", run="r", models=["x", "y"], items=["q1"], order_seed=1)
    stored = spec.to_json()
    assert "kind" not in json.loads(stored)  # the stored JSON of a scores board is unchanged
    assert BoardSpec.from_json(stored).kind == "scores"
    with pytest.raises(ValueError, match="unknown kind"):
        BoardSpec.from_json(json.dumps({**json.loads(stored), "kind": "ballots"}))


def test_a_votes_board_takes_open_entry_and_a_closed_one_refuses_a_model():
    """entry='open' makes a votes board whose models may join (the arena's weighted
    e-Bonferroni); a closed votes board keeps its models and its pair code."""
    from rankci.service.spec import make_vote_spec

    spec = make_vote_spec(benchmark="arena", run="r", models=["alpha", "beta"], entry="open")
    assert spec.monitor.entry == "open" and spec.monitor.certifier == "bonferroni"
    closed = make_vote_spec(benchmark="arena", run="r", models=["alpha", "beta"])
    assert closed.monitor.entry == "closed"
