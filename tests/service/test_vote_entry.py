"""Models that join a votes board later (issue 29 items 1 and 3), on the real servers.

A votes board made with ``entry: "open"`` takes ``POST /api/boards/{id}/models``, as a scores
board does. The leaderboard equals an :class:`~rankci.votes.sequential.ArenaMonitor` with
``entry="open"`` fed the same votes offline in chunks of ``look_every`` with the model added
after the chunks committed before its join (written here from the replay contract, not by the
service); a restart and a SIGKILL rebuild it bit for bit, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import numpy as np
import pytest
from live_boards import post_batches
from service_server import Server, database

from rankci.sequential.spec import MonitorSpec
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import OUTCOMES, Votes

FIRST = ["alpha", "beta", "gamma"]
ALL = [*FIRST, "delta"]
STRENGTH = np.array([1.0, 0.3, -0.4, 1.6])  # delta, the late one, is the strongest


def _votes(n: int, n_models: int, seed: int):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    p = 1 / (1 + np.exp(-(STRENGTH[a] - STRENGTH[b])))
    u = rng.random(n)
    outcome = np.where(u < 0.08, 2, np.where(rng.random(n) < p, 0, 1))
    return a, b, outcome


def _bodies(a, b, outcome):
    return [
        {"model_a": ALL[i], "model_b": ALL[j], "winner": OUTCOMES[o]}
        for i, j, o in zip(a.tolist(), b.tolist(), outcome.tolist())
    ]


def _post(api, board, token, votes, batch):
    post_batches(api, board, token, votes, batch, kind="votes")


def _offline(a, b, outcome, every, join_at):
    """The replay contract by hand: full chunks of ``every`` votes committed before the join
    are fed (a look after each), then the model joins, then the rest in full chunks."""
    mon = ArenaMonitor(FIRST, MonitorSpec(sampling="iid", entry="open"))
    fed = 0
    while fed + every <= join_at:
        mon.update(
            Votes.from_arrays(
                a[fed : fed + every], b[fed : fed + every], outcome[fed : fed + every], models=FIRST
            )
        )
        mon.look()
        fed += every
    mon.add_model("delta")
    while fed + every <= len(a):
        part = slice(fed, fed + every)
        mon.update(Votes.from_arrays(a[part], b[part], outcome[part], models=ALL))
        mon.look()
        fed += every
    return mon


def _check(board_json, mon):
    ranking = mon.ranking()
    assert board_json["look"] == {"number": len(mon.looks()), "t": mon.n_votes}
    by_name = {row["model"]: row for row in board_json["models"]}
    share = mon.win_share()
    for j, name in enumerate(ALL):
        assert by_name[name]["score"] == float(share[j])
        assert (by_name[name]["rank_lower"], by_name[name]["rank_upper"]) == (
            int(ranking.lower[j]),
            int(ranking.upper[j]),
        )
    expected = sorted([ALL[j], ALL[l]] for j, l in zip(*np.nonzero(mon.certified())))
    assert sorted(board_json["certified_pairs"]) == expected


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_model_joins_a_votes_board_and_survives_restart_and_kill(kind, tmp_path):
    every, join_at = 50, 130
    a1, b1, o1 = _votes(join_at, 3, seed=1)
    a2, b2, o2 = _votes(1370, 4, seed=2)
    a, b, outcome = (np.concatenate(p) for p in ((a1, a2), (b1, b2), (o1, o2)))
    with database(kind, tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            body = {
                "benchmark": "arena",
                "run": "open",
                "models": FIRST,
                "kind": "votes",
                "look_every": every,
                "entry": "open",
            }
            status, created = api.post("/api/boards", body)
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            _post(api, board, token, _bodies(a1, b1, o1), 13)
            # a vote naming the model before it joined: a clear 4xx, nothing stored
            status, refused = api.post(
                f"/api/boards/{board}/votes",
                {"model_a": "delta", "model_b": "alpha", "winner": "model_a"},
                token=token,
            )
            assert status == 422 and "unknown model 'delta'" in str(refused)
            status, joined = api.post(f"/api/boards/{board}/models", {"model": "delta"}, token)
            assert status == 200, joined
            assert joined["model"] == "delta" and joined["t"] == join_at
            assert joined["entrant"] == 4 and joined["threshold"] == pytest.approx(
                2 * 4 * 3 * 3 / 0.05
            )
            status, again = api.post(f"/api/boards/{board}/models", {"model": "delta"}, token)
            assert status == 409 and "on the board already" in str(again)
            _post(api, board, token, _bodies(a2[:400], b2[:400], o2[:400]), 41)
            status, before_kill = api.get(f"/api/boards/{board}/leaderboard")
            server.kill()
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            status, after_kill = api.get(f"/api/boards/{board}/leaderboard")
            assert status == 200 and after_kill == before_kill
            _post(api, board, token, _bodies(a2[400:], b2[400:], o2[400:]), 97)
            raw_live = api.request("GET", f"/api/boards/{board}/leaderboard")
            status, live = api.get(f"/api/boards/{board}/leaderboard")
            server.stop()
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            raw_restarted = api.request("GET", f"/api/boards/{board}/leaderboard")
            status, history = api.get(f"/api/boards/{board}/history")
            state = api.request("GET", f"/api/boards/{board}/monitor")
        finally:
            server.stop()
    mon = _offline(a, b, outcome, every, join_at)
    # the served .npz is the open arena's whole state: restored, it is the offline monitor
    assert state[0] == 200
    (tmp_path / "state.npz").write_bytes(state[1])
    restored = ArenaMonitor.restore(tmp_path / "state.npz")
    assert restored.looks() == mon.looks() and restored.models == mon.models
    assert np.array_equal(restored.certified(), mon.certified())
    assert restored.entrants == mon.entrants
    _check(live, mon)
    assert raw_restarted[1] == raw_live[1]  # the same bytes after a restart
    assert [e["model"] for e in history["events"]] == ["delta"]
    assert ("delta", "alpha") in mon.ranking().dominance_pairs()  # the late model is certified
    assert mon.entrants[3]["t"] == (join_at // every) * every  # its evidence starts after join


def test_a_closed_votes_board_refuses_a_model_naming_why(tmp_path):
    with database("sqlite", tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            body = {"benchmark": "arena", "run": "closed", "models": FIRST, "kind": "votes"}
            status, created = api.post("/api/boards", body)
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            status, refused = api.post(f"/api/boards/{board}/models", {"model": "delta"}, token)
            assert status == 409 and "entry 'closed'" in refused["detail"]["message"]
        finally:
            server.stop()


def test_the_open_arena_never_reads_a_vote_from_before_a_model_joined():
    """Property: a model added after t votes has wealth 1 on every pair until votes naming it
    arrive, and the earlier pairs' wealths are those of an arena that never saw it."""
    a, b, outcome = _votes(600, 3, seed=5)
    spec = MonitorSpec(sampling="iid", entry="open")
    late = ArenaMonitor(FIRST, spec)
    alone = ArenaMonitor(FIRST, spec)
    for mon in (late, alone):
        mon.update(Votes.from_arrays(a, b, outcome, models=FIRST))
        mon.look()
    late.add_model("delta")
    lw = late.log_wealth()
    assert np.all(lw[3, :3] == 0) and np.all(lw[:3, 3] == 0)
    assert np.array_equal(lw[:3, :3], alone.log_wealth(), equal_nan=True)
    assert np.array_equal(late.certified()[:3, :3], alone.certified())
    with pytest.raises(ValueError, match="in the arena already"):
        late.add_model("delta")
    with pytest.raises(ValueError, match="entry='closed'"):
        ArenaMonitor(FIRST, MonitorSpec(sampling="iid")).add_model("delta")
