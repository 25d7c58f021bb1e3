"""The arrival order in a board's Parquet export (issue 29, leftover), on real servers.

Every accepted score is stored with its arrival number (``scores.arrival``, given at the group
commit), and the export (``GET /api/boards/{id}/export``, ``rankci export``) holds it, its rows in
that order. Checked against what the clients saw, not against the service: with several clients
posting interleaved models at once, each post's scores are numbered consecutively in the post's
order, a client's posts in the order it sent them, and a post acknowledged before another was
sent is numbered before it. A database written before the column (made here with that version's
DDL by hand) opens, gains it, exports its old rows as unknown (null, first, in the shared order)
and the new ones in arrival order, and replays into the server's looks; so does feeding a board
the rows in arrival order. On SQLite and PostgreSQL. The scores export reads the database, so
while PostgreSQL is down it answers 503 with ``Retry-After``, not rows from memory.
"""

from __future__ import annotations

import io
import json
import sqlite3
import threading
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from limits import WAIT_GUARD  # tests/limits.py: a hang guard, not a time limit
from live_boards import create_board, export_table, post_batches, replayed
from service_server import ADMIN, database, private_postgres, running

from rankci.cli import main
from rankci.service.board import Board
from rankci.service.export import EXPORT_KEY, MemoryStorage, replay_export
from rankci.service.spec import BoardSpec, make_spec

MODELS = [f"m{j}" for j in range(6)]
ITEMS = [f"q{i}" for i in range(40)]
RATES = np.linspace(0.9, 0.15, len(MODELS))


def _truth(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {(m, i): float(rng.random() < RATES[j]) for j, m in enumerate(MODELS) for i in ITEMS}


def _client(server, board, token, cells, truth, seed, log) -> None:
    """One harness: posts its cells (two models, interleaved) in random batches of 1-7, one
    post at a time, and records (sent, acknowledged, entries) of each."""
    rng = np.random.default_rng(seed)
    api = server.client()
    start = 0
    while start < len(cells):
        size = int(rng.integers(1, 8))
        part = [
            {"model": m, "item": i, "score": truth[m, i]} for m, i in cells[start : start + size]
        ]
        start += size
        sent = time.monotonic()
        status, answer = api.post(f"/api/boards/{board}/scores", {"scores": part}, token)
        acknowledged = time.monotonic()
        assert status == 200 and answer["accepted"] == len(part), answer
        log.append((sent, acknowledged, [(e["model"], e["item"]) for e in part]))
    api.close()


def _fed_in_arrival_order(table, spec_json: str) -> Board:
    """A fresh board fed the export's rows one post per row, in the rows' (arrival) order."""
    board = Board(BoardSpec.from_json(spec_json), 0, MemoryStorage([], [], [], []))
    rows = zip(*(table.column(c).to_pylist() for c in ("model", "item", "score")))
    for model, item, score in rows:
        assert board.post([(model, item, score)]).accepted == 1
    return board


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_export_numbers_scores_in_the_order_posts_were_acknowledged(kind, tmp_path):
    truth = _truth(3)
    with database(kind, tmp_path) as db, running(db, tmp_path / "server.log") as server:
        api = server.client()
        body = {"benchmark": "arrival", "run": kind, "models": MODELS, "items": ITEMS,
                "look_every": 5, "order_seed": 4}  # fmt: skip
        board, token, _ = create_board(api, body)
        logs: list[list] = [[] for _ in range(3)]
        threads = []
        for k in range(3):  # each client owns two models and interleaves them
            rng = np.random.default_rng(k)
            cells = [(m, i) for m in MODELS[2 * k : 2 * k + 2] for i in ITEMS]
            cells = [cells[c] for c in rng.permutation(len(cells))]
            threads.append(
                threading.Thread(
                    target=_client, args=(server, board, token, cells, truth, 10 + k, logs[k])
                )
            )
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_GUARD)
        assert all(len(log) > 0 for log in logs) and not any(t.is_alive() for t in threads)
        table = export_table(api, board)
        _, history = api.get(f"/api/boards/{board}/history")
        by_db = tmp_path / "db.parquet"
        assert main(["export", db, board, "-o", str(by_db)]) == 0
        api.close()
    n = len(MODELS) * len(ITEMS)
    record = json.loads(table.schema.metadata[EXPORT_KEY])
    assert record["n_scores"] == n and record["arrival_unknown"] == 0
    assert table.column("seq").to_pylist() == list(range(n))
    assert table.column("arrival").to_pylist() == list(range(n))  # the rows in arrival order
    cells = list(zip(table.column("model").to_pylist(), table.column("item").to_pylist()))
    assert dict(zip(cells, table.column("score").to_pylist())) == truth  # each score once
    arrival = {cell: a for a, cell in enumerate(cells)}
    posts = [post for log in logs for post in log]
    numbers = [[arrival[cell] for cell in entries] for _sent, _ack, entries in posts]
    for got in numbers:  # a post's scores: consecutive, in the post's order
        assert got == list(range(got[0], got[0] + len(got)))
    for log in logs:  # one client's posts: in the order it sent them
        firsts = [arrival[entries[0]] for _s, _a, entries in log]
        assert firsts == sorted(firsts)
    # across clients: a post acknowledged before another was sent comes before it
    sent = np.array([p[0] for p in posts])
    acked = np.array([p[1] for p in posts])
    first = np.array([got[0] for got in numbers])
    last = np.array([got[-1] for got in numbers])
    before = acked[:, None] < sent[None, :]
    assert before.sum() > len(posts)  # the check has pairs to check
    assert (last[:, None] < first[None, :])[before].all()
    assert pq.read_table(by_db).equals(table)  # rankci export from the database: the same rows
    # the looks: the replay of the file, and a board fed the rows in arrival order
    assert replay_export(by_db).monitor.looks == history["looks"]
    fed = _fed_in_arrival_order(table, json.dumps(record["board"]))
    assert fed.monitor.looks == history["looks"] and len(history["looks"]) == 8


OLD_DDL = {  # the tables of the version before the arrival column (and before the vote fields)
    "sqlite": [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE boards (id TEXT PRIMARY KEY, num INTEGER NOT NULL UNIQUE, "
        "spec TEXT NOT NULL, write_hash TEXT NOT NULL, read_hash TEXT, created_at TEXT NOT NULL)",
        "CREATE TABLE scores (board INTEGER NOT NULL, model INTEGER NOT NULL, "
        "item INTEGER NOT NULL, score REAL NOT NULL, PRIMARY KEY (board, model, item)) "
        "WITHOUT ROWID",
        "CREATE TABLE events (board INTEGER NOT NULL, seq INTEGER NOT NULL, t INTEGER NOT NULL, "
        "kind TEXT NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (board, seq))",
    ],
    "postgresql": [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE boards (id TEXT PRIMARY KEY, num BIGINT NOT NULL UNIQUE, "
        "spec TEXT NOT NULL, write_hash TEXT NOT NULL, read_hash TEXT, created_at TEXT NOT NULL)",
        "CREATE TABLE scores (board BIGINT NOT NULL, model INTEGER NOT NULL, "
        "item INTEGER NOT NULL, score DOUBLE PRECISION NOT NULL, "
        "PRIMARY KEY (board, model, item))",
        "CREATE TABLE events (board BIGINT NOT NULL, seq INTEGER NOT NULL, t INTEGER NOT NULL, "
        "kind TEXT NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (board, seq))",
    ],
}


def _sql(kind: str, db: str, statements, rows=()):
    """Run ``statements`` on the database directly (no rankci), then the query of ``rows``
    (a statement and its parameters) whose result is returned, if given."""
    if kind == "sqlite":
        connection = sqlite3.connect(db)
    else:
        import psycopg

        connection = psycopg.connect(db)
    mark = "?" if kind == "sqlite" else "%s"
    with connection as conn:
        cur = conn.cursor()
        for statement, params in statements:
            statement = statement.replace("?", mark)
            if params and isinstance(params[0], tuple):
                cur.executemany(statement, params)
            else:
                cur.execute(statement, params)
        result = None
        if rows:
            cur.execute(rows[0].replace("?", mark), rows[1])
            result = cur.fetchall()
    connection.close()
    return result


def _columns(kind: str, db: str) -> list[str]:
    if kind == "sqlite":
        return sorted(r[1] for r in _sql(kind, db, [], ("PRAGMA table_info(scores)", ())))
    query = (
        "SELECT column_name FROM information_schema.columns WHERE "
        "table_schema = current_schema() AND table_name = ?"
    )
    return sorted(r[0] for r in _sql(kind, db, [], (query, ("scores",))))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_old_database_gains_the_arrival_column_exports_and_replays(kind, tmp_path):
    models, items = ["a", "b", "c"], [f"i{k:02d}" for k in range(30)]
    spec = make_spec(benchmark="old", run=kind, models=models, items=items, look_every=6,
                     order_seed=2)  # fmt: skip
    rng = np.random.default_rng(9)
    x = (rng.random((30, 3)) < [0.85, 0.5, 0.2]).astype(float)
    old = [(1, j, i, float(x[i, j])) for i in range(20) for j in range(3)]  # by index, as stored
    with database(kind, tmp_path) as db:
        board_row = (spec.id, 1, spec.to_json(), "old", None, spec.created_at)
        by_hand = [
            ("INSERT INTO meta (key, value) VALUES (?, ?)", ("schema", "1")),
            (
                "INSERT INTO boards (id, num, spec, write_hash, read_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                board_row,
            ),
            ("INSERT INTO scores (board, model, item, score) VALUES (?, ?, ?, ?)", tuple(old)),
        ]
        _sql(kind, db, [(statement, ()) for statement in OLD_DDL[kind]] + by_hand)
        assert _columns(kind, db) == ["board", "item", "model", "score"]
        new = [
            [{"model": models[j], "item": items[i], "score": float(x[i, j])} for j in (2, 0, 1)]
            for i in range(20, 30)
        ]  # ten posts, each one item's scores in the model order c, a, b
        with running(db, tmp_path / "server.log") as server:
            assert "arrival" in _columns(kind, db)  # gained on open (with the vote fields)
            api = server.client()
            status, rotated = api.post(f"/api/boards/{spec.id}/tokens/write", {}, ADMIN)
            assert status == 200, rotated
            token = rotated["token"]
            for post in new[:9]:
                post_batches(api, spec.id, token, post, batch=3)
            api.close()
        null = ("SELECT COUNT(*) FROM scores WHERE arrival IS NULL", ())
        assert _sql(kind, db, [], null)[0][0] == 60  # the old rows keep NULL
        with running(db, tmp_path / "server.log") as server:  # a restart numbers on from 27
            api = server.client()
            post_batches(api, spec.id, token, new[9], batch=3)
            status, data = api.get(f"/api/boards/{spec.id}/export")
            assert status == 200
            _, history = api.get(f"/api/boards/{spec.id}/history")
            api.close()
    table = pq.read_table(io.BytesIO(data))
    record = json.loads(table.schema.metadata[EXPORT_KEY])
    assert record["n_scores"] == 90 and record["arrival_unknown"] == 60
    arrival = table.column("arrival").to_pylist()
    assert arrival == [None] * 60 + list(range(30))
    position = table.column("position").to_pylist()
    model_index = [models.index(m) for m in table.column("model").to_pylist()]
    rows = list(zip(table.column("model").to_pylist(), table.column("item").to_pylist()))
    # the old rows first, in the shared order then the model's column, as every row was before
    expected_position = [int(np.flatnonzero(spec.order == items.index(i))[0]) for _m, i in rows]
    assert position == expected_position
    assert list(zip(position[:60], model_index[:60])) == sorted(
        zip(position[:60], model_index[:60])
    )
    assert sorted(rows[:60]) == sorted((models[j], items[i]) for _b, j, i, _s in old)
    # then the new ones, in the order they were posted
    assert rows[60:] == [(e["model"], e["item"]) for post in new for e in post]
    assert table.column("score").to_pylist() == [
        float(x[items.index(i), models.index(m)]) for m, i in rows
    ]
    replay = replayed(tmp_path, data, "old")
    assert replay["looks"] == history["looks"] and len(history["looks"]) == 5
    assert replay_export(io.BytesIO(data)).monitor.looks == history["looks"]
    # an export written before the column (no arrival) still replays
    earlier = tmp_path / "earlier.parquet"
    pq.write_table(table.drop_columns(["arrival"]), earlier)
    assert EXPORT_KEY in pq.read_schema(earlier).metadata
    assert replay_export(earlier).monitor.looks == history["looks"]


def test_the_scores_export_answers_503_while_postgres_is_down(tmp_path):
    """The export reads the database: during an outage it is refused (503, Retry-After, the
    reason), while the leaderboard keeps answering from memory, marked stale; once PostgreSQL is
    back the export is the same file's rows as before."""
    with private_postgres() as (db, control), running(db, tmp_path / "server.log") as server:
        api = server.client()
        body = {"benchmark": "outage", "run": "r", "models": ["a", "b"], "items": ITEMS[:10],
                "look_every": 5}  # fmt: skip
        board, token, _ = create_board(api, body)
        scores = [
            {"model": m, "item": i, "score": float(m == "a")} for i in ITEMS[:10] for m in "ab"
        ]
        post_batches(api, board, token, scores, batch=4)
        before = export_table(api, board)
        control("stop")
        try:
            status, answer = api.get(f"/api/boards/{board}/export")
            assert status == 503, answer
            assert "database is unavailable" in answer["detail"]
            status, headers = api.headers(f"/api/boards/{board}/export")
            assert status == 503 and int(headers["retry-after"]) >= 1
            status, headers = api.headers(f"/api/boards/{board}/leaderboard")
            assert status == 200 and "database unavailable" in headers["x-rankci-stale"]
        finally:
            control("start")
        deadline = time.monotonic() + WAIT_GUARD
        while (status := api.get(f"/api/boards/{board}/export")[0]) != 200:
            assert status == 503 and time.monotonic() < deadline
            time.sleep(0.2)
        assert export_table(api, board).equals(before)
        assert before.column("arrival").to_pylist() == list(range(20))
        api.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_export_reads_the_database_in_chunks_that_make_one_set(kind, tmp_path):
    """The rows are read a chunk at a time (commits go on between the chunks): in chunks of 7
    they are the rows of one read, old rows (no arrival) and rows at or past ``below`` (committed
    after the board's state was read) handled the same, and the other board's rows left out."""
    from rankci.service.storage import open_storage

    rng = np.random.default_rng(5)
    with database(kind, tmp_path) as db:
        storage = open_storage(db).open()
        storage.lock_owner()
        nums = []
        for run in ("a", "b"):
            spec = make_spec(benchmark="chunks", run=run, models=MODELS[:4], items=ITEMS)
            nums.append(storage.create_board(spec.id, spec.to_json(), "h", None, spec.created_at))
        cells = np.array([(j, i) for j in range(4) for i in range(40)])
        cells = cells[rng.permutation(len(cells))]
        old, new = cells[:50], cells[50:]
        for num in nums:  # 50 old rows (NULL arrival), then 110 numbered ones, on both boards
            storage.insert_scores(num, old[:, 0], old[:, 1], rng.random(50))
            storage.insert_scores(num, new[:, 0], new[:, 1], rng.random(110), np.arange(110))
        whole = storage.export_scores(nums[0], 80, chunk=10**6)
        chunked = storage.export_scores(nums[0], 80, chunk=7)
        storage.close()
    assert whole[0].size == 50 + 80  # the old rows and the arrivals 0..79
    assert sorted(whole[3].tolist()) == [-1] * 50 + list(range(80))
    assert chunked[0].size == whole[0].size
    key = np.lexsort((whole[1], whole[0]))  # the single read in key order, as the chunks come
    for got, expected in zip(chunked, whole):
        assert np.array_equal(got, expected[key])
