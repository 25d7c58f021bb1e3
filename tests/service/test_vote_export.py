"""A votes board's Parquet export and its replay (issue 29 item 4), on the real servers.

Every committed vote is exported in commit order with its stored fields, from the API
(``GET /api/boards/{id}/export``) and the CLI (``rankci export DB BOARD``); ``rankci monitor`` on
the file replays the board's looks bit for bit. The rows are checked against the votes this test
posted, and the replay against an :class:`~rankci.votes.sequential.ArenaMonitor` fed the same
votes by hand (the replay contract: full chunks of ``look_every``, the late model added after the
chunks committed before its join), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from limits import HANG_GUARD
from service_server import Server, database

from rankci.sequential.spec import MonitorSpec
from rankci.service.export import EXPORT_KEY, replay_export
from rankci.votes.sequential import ArenaMonitor
from rankci.votes.table import OUTCOMES, Votes

FIRST = ["alpha", "beta", "gamma"]
ALL = [*FIRST, "delta"]
STRENGTH = np.array([1.0, 0.3, -0.4, 1.6])
EVERY, JOIN_AT, N = 40, 130, 537  # 537 = 13 full chunks and 17 votes waiting for the next


def _votes(seed: int = 3):
    rng = np.random.default_rng(seed)
    m = np.where(np.arange(N) < JOIN_AT, 3, 4)  # delta only after it joined
    a = (rng.random(N) * m).astype(int)
    b = (a + 1 + (rng.random(N) * (m - 1)).astype(int)) % m
    p = 1 / (1 + np.exp(-(STRENGTH[a] - STRENGTH[b])))
    outcome = np.where(rng.random(N) < 0.1, 2, np.where(rng.random(N) < p, 0, 1))
    return a, b, outcome


def _bodies(a, b, outcome):
    bodies = []
    for s, (i, j, o) in enumerate(zip(a.tolist(), b.tolist(), outcome.tolist())):
        vote = {"model_a": ALL[i], "model_b": ALL[j], "winner": OUTCOMES[o]}
        if s % 3 == 0:
            vote["key"] = f"battle-{s}"
        if s % 5 == 0:
            vote.update(prompt=f"p{s % 11}", voter=f"v{s % 4}", timestamp=1_700_000_000 + s)
        bodies.append(vote)
    return bodies


def _offline(a, b, outcome):
    mon = ArenaMonitor(FIRST, MonitorSpec(sampling="iid", entry="open"))
    fed = 0
    while fed + EVERY <= JOIN_AT:
        part = slice(fed, fed + EVERY)
        mon.update(Votes.from_arrays(a[part], b[part], outcome[part], models=FIRST))
        mon.look()
        fed += EVERY
    mon.add_model("delta")
    while fed + EVERY <= len(a):
        part = slice(fed, fed + EVERY)
        mon.update(Votes.from_arrays(a[part], b[part], outcome[part], models=ALL))
        mon.look()
        fed += EVERY
    return mon


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_votes_board_exports_every_vote_and_replays_bit_for_bit(kind, tmp_path):
    a, b, outcome = _votes()
    bodies = _bodies(a, b, outcome)
    with database(kind, tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            body = {"benchmark": "arena", "run": "export", "models": FIRST, "kind": "votes",
                    "look_every": EVERY, "entry": "open"}  # fmt: skip
            status, created = api.post("/api/boards", body)
            assert status == 201, created
            board, token = created["board"]["id"], created["write_token"]
            path = f"/api/boards/{board}/votes"
            for s in range(0, JOIN_AT, 29):
                part = bodies[s : min(s + 29, JOIN_AT)]
                assert api.post(path, {"votes": part}, token=token)[0] == 200
            assert api.post(f"/api/boards/{board}/models", {"model": "delta"}, token)[0] == 200
            for s in range(JOIN_AT, N, 61):
                assert api.post(path, {"votes": bodies[s : s + 61]}, token=token)[0] == 200
            # a retried keyed vote is not exported twice
            status, again = api.post(path, {"votes": bodies[:9]}, token=token)
            assert status == 200 and again["accepted"] == 6 and again["duplicates"] == 3
            status, data = api.request("GET", f"/api/boards/{board}/export")
            assert status == 200
            _, history = api.get(f"/api/boards/{board}/history")
            _, leaderboard = api.get(f"/api/boards/{board}/leaderboard")
        finally:
            server.stop()
        out = tmp_path / "cli.parquet"
        done = subprocess.run(
            [sys.executable, "-m", "rankci", "export", db, board, "-o", str(out)],
            capture_output=True, text=True, timeout=HANG_GUARD,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    table = pq.read_table(io.BytesIO(data))
    # the votes as posted, in commit order (the 6 unkeyed re-posts last), with their fields
    sent = bodies + [v for v in bodies[:9] if "key" not in v]
    assert table.column("seq").to_pylist() == list(range(len(sent)))
    for column in ("model_a", "model_b", "winner", "key", "prompt", "voter"):
        assert table.column(column).to_pylist() == [v.get(column) for v in sent], column
    stamps = table.column("timestamp").to_pylist()
    assert stamps[0] == "2023-11-14T22:13:20+00:00" and stamps[1] is None
    record = json.loads(table.schema.metadata[EXPORT_KEY])
    assert record["board"]["models"] == FIRST and record["n_scores"] == len(sent)
    assert [(e["kind"], e["t"]) for e in record["events"]] == [("join", JOIN_AT)]
    cli = pq.read_table(out)
    assert cli.equals(table)  # the database read directly gives the same file's rows
    assert json.loads(cli.schema.metadata[EXPORT_KEY]) == record

    # the replay is the board: its looks, and an arena monitor fed the same votes by hand
    replayed = replay_export(io.BytesIO(data))
    assert replayed.monitor.looks() == history["looks"]
    sa, sb = (np.array([ALL.index(v[k]) for v in sent]) for k in ("model_a", "model_b"))
    so = np.array([OUTCOMES.index(v["winner"]) for v in sent])
    mon = _offline(sa, sb, so)
    assert replayed.monitor.looks() == mon.looks()
    assert np.array_equal(replayed.monitor.certified(), mon.certified())
    assert leaderboard["look"] == {"number": len(mon.looks()), "t": mon.n_votes}
    assert mon.n_votes == (len(sent) // EVERY) * EVERY < len(sent)  # some votes wait

    # rankci monitor on the export prints the board's looks
    done = subprocess.run(
        [sys.executable, "-m", "rankci", "monitor", str(out), "--format", "json"],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["looks"] == json.loads(json.dumps(mon.looks()))
    assert f"{len(sent)} votes ({mon.n_votes} fed" in done.stderr


def test_a_votes_export_naming_an_unknown_model_is_refused(tmp_path):
    import pyarrow as pa

    mon_rows = {"seq": [0], "model_a": ["alpha"], "model_b": ["omega"], "winner": ["tie"]}
    mon_rows.update({f: [None] for f in ("key", "prompt", "voter", "timestamp")})
    meta = {
        "format": "rankci board export",
        "version": 1,
        "board": json.loads(_spec_json()),
        "events": [],
        "n_scores": 1,
    }
    table = pa.Table.from_pydict(mon_rows).replace_schema_metadata(
        {EXPORT_KEY: json.dumps(meta).encode()}
    )
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match="'omega', not on the board"):
        replay_export(path)
    mon_rows["model_b"] = ["beta"]
    mon_rows["winner"] = ["draw"]
    pq.write_table(pa.Table.from_pydict(mon_rows).replace_schema_metadata(
        {EXPORT_KEY: json.dumps(meta).encode()}), path)  # fmt: skip
    with pytest.raises(ValueError, match="winner 'draw' is not one of"):
        replay_export(path)


def _spec_json() -> str:
    from rankci.service.spec import make_vote_spec

    return make_vote_spec(benchmark="arena", run="x", models=FIRST, look_every=EVERY,
                          entry="open").to_json()  # fmt: skip
