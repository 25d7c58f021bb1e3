"""Boards built through the API of a running `rankci serve` (:mod:`service_server`): create one,
post its scores or votes in batches, read its Parquet export. Shared by the service tests that
build boards over HTTP."""

from __future__ import annotations

import io
import json


def create_board(api, body: dict, token: str | None = None) -> tuple[str, str, dict]:
    """``POST /api/boards`` (``token``: the admin token, when boards are not open to create);
    asserts 201. Returns the board's id, its write token and the whole answer."""
    status, created = api.post("/api/boards", body, token)
    assert status == 201, created
    return created["board"]["id"], created["write_token"], created


def post_batches(
    api, board: str, token: str, entries: list, batch: int, kind: str = "scores"
) -> list[dict]:
    """Post ``entries`` (scores, or ``kind="votes"``) ``batch`` at a time, in order, each as a
    batch body; asserts every post is answered 200 and accepts all of its entries (none was
    posted before). Returns the answers."""
    answers = []
    for start in range(0, len(entries), batch):
        part = entries[start : start + batch]
        status, posted = api.post(f"/api/boards/{board}/{kind}", {kind: part}, token)
        assert status == 200 and posted["accepted"] == len(part), posted
        answers.append(posted)
    return answers


def replayed(tmp_path, data: bytes, name: str) -> dict:
    """``rankci monitor FILE --format json`` on an export's bytes (written to ``tmp_path``): the
    replayed board's history record and ranking."""
    from rankci.cli import main

    path = tmp_path / f"{name}.parquet"
    path.write_bytes(data)
    out = tmp_path / f"{name}.json"
    assert main(["monitor", str(path), "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


def export_table(api, board: str, token: str | None = None):
    """The board's Parquet export (``GET /api/boards/{board}/export``) as a pyarrow Table;
    asserts 200."""
    import pyarrow.parquet as pq

    status, data = api.get(f"/api/boards/{board}/export", token)
    assert status == 200, data
    return pq.read_table(io.BytesIO(data))
