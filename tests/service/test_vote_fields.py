"""A vote's stored fields (prompt, voter, timestamp) and its idempotency key, on the real servers
(issue 29 item 3: votes and scores share every endpoint shape, a retry included).

A vote posted again with its ``key`` is acknowledged once (``duplicates``) and never applied
twice, across a SIGKILL and restart too; the key with a different vote is a 409. The fields are
stored (read back from the database here, not through the service) and do not change the
monitor's answer: the leaderboard equals that of a board fed the same votes without them. A
database made before the fields existed (its ``scores`` table without the columns) still loads
and gains them.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from live_boards import create_board
from service_server import Server, database

MODELS = ["alpha", "beta", "gamma"]
FIELDS = ("vote_key", "prompt", "voter", "voted_at")


def _votes(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(1, 3, n)) % 3
    strength = np.array([1.2, 0.0, -1.0])
    win = rng.random(n) < 1 / (1 + np.exp(strength[b] - strength[a]))
    return [
        {"model_a": MODELS[i], "model_b": MODELS[j], "winner": "model_a" if w else "model_b"}
        for i, j, w in zip(a.tolist(), b.tolist(), win.tolist())
    ]


def _create(api, run: str, every: int = 20) -> tuple[str, str]:
    body = {"benchmark": "arena", "run": run, "models": MODELS, "kind": "votes"}
    return create_board(api, {**body, "look_every": every})[:2]


def _with_fields(votes: list[dict]) -> list[dict]:
    return [
        {
            **v,
            "key": f"vote-{n}",
            "prompt": f"prompt {n % 7}",
            "voter": f"judge-{n % 3}",
            "timestamp": f"2026-12-03T08:{n // 60 % 60:02d}:{n % 60:02d}Z",
        }
        for n, v in enumerate(votes)
    ]


def _stored_fields(db: str, kind: str, num: int) -> list[tuple]:
    """(item = sequence number, *FIELDS) rows of board ``num``, read from the database itself."""
    sql = f"SELECT item, {', '.join(FIELDS)} FROM scores WHERE board = {num} ORDER BY item"
    if kind == "sqlite":
        with sqlite3.connect(db) as conn:
            return conn.execute(sql).fetchall()
    import psycopg

    with psycopg.connect(db) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def _board_num(db: str, kind: str, board: str) -> int:
    sql = "SELECT num FROM boards WHERE id = "
    if kind == "sqlite":
        with sqlite3.connect(db) as conn:
            return conn.execute(sql + "?", (board,)).fetchone()[0]
    import psycopg

    with psycopg.connect(db) as conn:
        return conn.execute(sql + "%s", (board,)).fetchone()[0]


def _answer(board_json: dict) -> dict:
    """What the monitor says, without the board's own id."""
    return {k: v for k, v in board_json.items() if k not in ("board", "run", "progress")}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_vote_keys_are_idempotent_and_fields_stored_not_used(kind, tmp_path):
    votes = _votes(130, seed=3)
    keyed = _with_fields(votes)
    with database(kind, tmp_path) as db:
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            board, token = _create(api, "fields")
            plain, plain_token = _create(api, "plain")
            path = f"/api/boards/{board}/votes"
            status, posted = api.post(path, {"votes": keyed[:70]}, token=token)
            assert status == 200 and (posted["accepted"], posted["duplicates"]) == (70, 0)
            # a retry of the whole post, and a post overlapping it: acknowledged, not applied
            status, posted = api.post(path, {"votes": keyed[:70]}, token=token)
            assert status == 200 and (posted["accepted"], posted["duplicates"]) == (0, 70)
            status, posted = api.post(path, {"votes": keyed[60:90]}, token=token)
            assert status == 200 and (posted["accepted"], posted["duplicates"]) == (20, 10)
            assert posted["progress"]["votes_received"] == 90
            # the same key twice in one post: once
            status, posted = api.post(path, {"votes": [keyed[90], keyed[90]]}, token=token)
            assert status == 200 and (posted["accepted"], posted["duplicates"]) == (1, 1)
            # the key with another vote: 409 naming the key, nothing of the post stored
            other = {**keyed[5], "winner": "tie"}
            status, refused = api.post(path, {"votes": [keyed[91], other]}, token=token)
            assert status == 409, refused
            assert "'vote-5'" in refused["detail"]["message"]
            problem = refused["detail"]["problems"][0]
            assert (problem["vote"], problem["field"]) == (1, "key")
            status, refused = api.post(path, {**keyed[6], "voter": "someone else"}, token=token)
            assert status == 409 and "'vote-6'" in refused["detail"]["message"]
            status, lb = api.get(f"/api/boards/{board}/leaderboard")
            assert lb["progress"]["votes_received"] == 91

            server.kill()  # the keys survive a SIGKILL: they are read back from the database
            server = Server(db, tmp_path / "server.log")
            api = server.client()
            status, posted = api.post(path, {"votes": keyed[:100]}, token=token)
            assert status == 200 and (posted["accepted"], posted["duplicates"]) == (9, 91)
            status, refused = api.post(path, {**keyed[7], "prompt": "changed"}, token=token)
            assert status == 409 and "'vote-7'" in refused["detail"]["message"]
            status, posted = api.post(path, {"votes": keyed[100:]}, token=token)
            assert status == 200 and posted["accepted"] == 30

            # bad fields: 4xx before anything is stored
            for field, value in [
                ("key", "k\ud800"),
                ("key", "k" * 201),
                ("key", ""),
                ("voter", "v" * 201),
                ("prompt", "p\ud800"),
                ("timestamp", "yesterday"),
                ("timestamp", "2026-13-01T00:00:00"),
                ("timestamp", "t\ud800"),
            ]:
                status, refused = api.post(path, {**votes[0], field: value}, token=token)
                assert status in (400, 422), (field, value, refused)
                if status == 422 and "message" in refused["detail"]:
                    assert field in refused["detail"]["message"], (field, refused)
            status, lb = api.get(f"/api/boards/{board}/leaderboard")
            assert lb["progress"]["votes_received"] == 130

            # a number is Unix seconds, stored as ISO 8601 UTC
            extra = {**votes[0], "key": "unix", "timestamp": 86400}
            status, posted = api.post(path, extra, token=token)
            assert status == 200 and posted["accepted"] == 1
            status, posted = api.post(f"/api/boards/{plain}/votes", {"votes": votes}, plain_token)
            assert status == 200
            status, posted = api.post(f"/api/boards/{plain}/votes", votes[0], plain_token)
            assert status == 200
            status, with_fields = api.get(f"/api/boards/{board}/leaderboard")
            status, without = api.get(f"/api/boards/{plain}/leaderboard")
        finally:
            server.stop()
        stored = _stored_fields(db, kind, _board_num(db, kind, board))
        assert _stored_fields(db, kind, _board_num(db, kind, plain)) == [
            (n, None, None, None, None) for n in range(131)
        ]
    # fields do not change the monitor's answer
    assert with_fields["look"]["number"] == 6 and _answer(with_fields) == _answer(without)
    # every vote stored once, in commit order, with its fields as posted
    order = [*range(70), *range(70, 90), 90, *range(91, 100), *range(100, 130)]
    assert [row[0] for row in stored] == list(range(131))
    for row, n in zip(stored, order):
        sent = keyed[n]
        assert row[1:] == (sent["key"], sent["prompt"], sent["voter"], sent["timestamp"])
    assert stored[130][1:] == ("unix", None, None, "1970-01-02T00:00:00+00:00")


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_database_without_the_vote_columns_loads_and_gains_them(kind, tmp_path):
    votes = _votes(60, seed=4)
    with database(kind, tmp_path) as db:
        with_server = Server(db, tmp_path / "server.log")
        api = with_server.client()
        try:
            board, token = _create(api, "old")
            status, _ = api.post(f"/api/boards/{board}/votes", {"votes": votes[:45]}, token)
            assert status == 200
            status, before = api.get(f"/api/boards/{board}/leaderboard")
        finally:
            with_server.stop()
        # the layout before the fields: the scores table as it was (no vote columns, and no
        # arrival column, which came later)
        drop = [f"ALTER TABLE scores DROP COLUMN {c}" for c in (*FIELDS, "arrival")]
        if kind == "sqlite":
            with sqlite3.connect(db) as conn:
                for statement in drop:
                    conn.execute(statement)
                columns = [r[1] for r in conn.execute("PRAGMA table_info(scores)")]
        else:
            import psycopg

            with psycopg.connect(db) as conn:
                for statement in drop:
                    conn.execute(statement)
                columns = [
                    r[0]
                    for r in conn.execute(
                        "SELECT column_name FROM information_schema.columns WHERE "
                        "table_schema = current_schema() AND table_name = 'scores'"
                    )
                ]
        assert sorted(columns) == ["board", "item", "model", "score"]
        server = Server(db, tmp_path / "server.log")
        api = server.client()
        try:
            status, after = api.get(f"/api/boards/{board}/leaderboard")
            assert status == 200 and after == before
            keyed = {**votes[45], "key": "k45", "voter": "v"}
            for expected in [(1, 0), (0, 1)]:
                status, posted = api.post(f"/api/boards/{board}/votes", keyed, token)
                assert status == 200 and (posted["accepted"], posted["duplicates"]) == expected
        finally:
            server.stop()
        stored = _stored_fields(db, kind, _board_num(db, kind, board))
    assert stored[:45] == [(n, None, None, None, None) for n in range(45)]
    assert stored[45:] == [(45, "k45", None, "v", None)]
