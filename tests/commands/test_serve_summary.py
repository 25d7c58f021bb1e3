"""`rankci serve` prints a reading summary once it has rebuilt its boards (issue 15), as every
command does for the data it reads: boards loaded with their models, items, clusters and scores,
the cells not scored yet, and the boards set aside (quarantined, with the reason)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from service_server import ADMIN, running  # noqa: E402


def _summary(log, start: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_bytes()[start:].decode(errors="replace")
        lines = [line for line in text.splitlines() if line.startswith("rankci: serve ")]
        if lines:
            assert len(lines) == 1, text
            return lines[0]
        time.sleep(0.1)
    raise AssertionError(f"no reading summary:\n{log.read_text()[-3000:]}")


def test_serve_summarises_the_boards_it_rebuilt_and_those_set_aside(tmp_path):
    db = str(tmp_path / "boards.sqlite")
    log = tmp_path / "server.log"
    items = [f"q{i:02d}" for i in range(10)]
    with running(db, log) as server:
        api = server.client()
        assert "0 boards loaded" in _summary(log, 0)  # a new database
        ids = []
        for name, clusters in (("first", ["x", "y"] * 5), ("second", None)):
            body = {"benchmark": name, "run": "r1", "models": ["a", "b", "c"], "items": items}
            if clusters:
                body["clusters"] = clusters
            status, created = api.post("/api/boards", body, ADMIN)
            assert status == 201, created
            ids.append((created["board"]["id"], created["write_token"]))
        board, token = ids[0]
        batch = [{"model": m, "item": it, "score": 1.0} for it in items[:4] for m in "abc"]
        assert api.post(f"/api/boards/{board}/scores", {"scores": batch}, token)[0] == 200
        api.close()
    start = log.stat().st_size
    with running(db, log):
        line = _summary(log, start)
    assert "2 boards loaded (6 models, 20 items, 12 scores in all)" in line
    assert f"{ids[0][0]} (3 models, 10 items, 2 clusters, 12 scores)" in line
    assert f"{ids[1][0]} (3 models, 10 items, 0 scores)" in line
    assert "rows excluded: none" in line and "48 cells not scored yet" in line
    assert "set aside" not in line

    # a board whose stored description cannot be read is set aside, with the reason
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE boards SET spec = ? WHERE id = ?", (json.dumps({}), ids[1][0]))
    start = log.stat().st_size
    with running(db, log):
        line = _summary(log, start)
    assert "1 boards loaded (3 models, 10 items, 12 scores in all)" in line
    assert f"boards set aside (quarantined): 1: {ids[1][0]} (" in line
