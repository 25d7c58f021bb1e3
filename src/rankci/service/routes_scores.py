"""Routes of the scores: post them, retire a model, list the evaluations needed next, export
every score received.

Posting and retiring need the board's write token (:data:`~rankci.service.deps.WritableBoard`),
the others its read token for a private board (:data:`~rankci.service.deps.ReadableBoard`).
``POST .../scores`` of a loaded board is usually answered before it reaches this router, by
:class:`rankci.service.posting.FastPaths`, which shares its parsing and its wait for the group
commit (:func:`rankci.service.posting.wait_for_commit`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from rankci.service.board import Board, Rejected
from rankci.service.deps import Context, ReadableBoard, WritableBoard
from rankci.service.export import EXPORT_MEDIA_TYPE, parquet_chunks
from rankci.service.posting import rejected, wait_for_commit
from rankci.service.schemas import Needed, Posted, RetireRequest
from rankci.service.voteboard import KindMismatch

__all__ = ["POST_SCHEMA", "VOTE_SCHEMA", "router"]

router = APIRouter()

# the body of a score post, read by hand (so not seen by FastAPI): ScoreBatch or Score, whose
# schemas the application adds to its OpenAPI document (rankci.service.app)
POST_SCHEMA = {
    "anyOf": [
        {"$ref": "#/components/schemas/ScoreBatch"},
        {"$ref": "#/components/schemas/Score"},
    ]
}


@router.post(
    "/api/boards/{board}/scores",
    tags=["scores"],
    response_model=Posted,
    summary="Post one score or a batch (idempotent by (model, item))",
    responses={
        409: {"description": "A (model, item) already has a different score"},
        422: {"description": "Unknown model or item, or a score outside [0, 1]"},
        413: {
            "description": "The body is too large, or its new items would take the board past "
            "the server's quota (rankci serve --max-board-cells)"
        },
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": POST_SCHEMA}},
        }
    },
)
async def post_scores(request: Request, board: WritableBoard, context: Context):
    # A small body is parsed here, a large one in a worker thread (so that a large batch
    # never holds up the event loop, and with it every other request); the post then waits
    # for the writer thread's next group commit (commits.py), off the event loop.
    return await wait_for_commit(board, await request.body(), context.commits)


VOTE_SCHEMA = {
    "anyOf": [
        {"$ref": "#/components/schemas/VoteBatch"},
        {"$ref": "#/components/schemas/Vote"},
    ]
}


@router.post(
    "/api/boards/{board}/votes",
    tags=["scores"],
    response_model=Posted,
    summary="Post one vote or a batch to a votes board (each vote is stored once per post)",
    responses={
        409: {"description": "The board holds scores, not votes"},
        422: {"description": "Unknown model, a self-vote, an unknown winner, a bad text field"},
        413: {
            "description": "The body is too large, or its new votes would take the board past "
            "the server's quota (rankci serve --max-board-cells)"
        },
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": VOTE_SCHEMA}},
        }
    },
)
async def post_votes(request: Request, board: WritableBoard, context: Context):
    # the same parsing split and group-commit wait as scores (posting.wait_for_commit)
    return await wait_for_commit(board, await request.body(), context.commits, votes=True)


@router.post(
    "/api/boards/{board}/retire",
    tags=["scores"],
    summary="Stop evaluating a model from now on (its comparisons are frozen)",
)
def retire(body: RetireRequest, board: WritableBoard) -> dict:
    try:
        return board.retire(body.model)
    except Rejected as error:
        raise rejected(error) from None


@router.post(
    "/api/boards/{board}/models",
    tags=["scores"],
    summary="Add a model to a board created with entry open (its comparisons start now)",
    responses={
        409: {"description": "A closed board, a model on it already, a finished board"},
        413: {
            "description": "The model would take the board past the server's quota of models "
            "x items (rankci serve --max-board-cells)"
        },
    },
)
def add_model(body: RetireRequest, board: WritableBoard) -> dict:
    try:
        return board.add_model(body.model)
    except Rejected as error:
        raise rejected(error) from None


@router.post(
    "/api/boards/{board}/models/{model}/withdraw",
    tags=["scores"],
    summary="Withdraw a model (its owner's request): no evidence from now on, statements kept",
)
def withdraw_model(model: str, board: WritableBoard) -> dict:
    if board.spec.kind == "votes":
        raise rejected(KindMismatch("a votes board has no withdrawals yet (scores boards only)"))
    try:
        return board.withdraw(model)
    except Rejected as error:
        raise rejected(error) from None


@router.post(
    "/api/boards/{board}/items/{item}/void",
    tags=["scores"],
    summary="Void an item found broken: its row is skipped from now on, evidence kept",
)
def void_item(item: str, board: WritableBoard) -> dict:
    if board.spec.kind == "votes":
        raise rejected(KindMismatch("a votes board has no items to void (scores boards only)"))
    try:
        return board.void(item)
    except Rejected as error:
        raise rejected(error) from None


@router.get(
    "/api/boards/{board}/needs",
    tags=["scores"],
    response_model=Needed,
    summary="The evaluations needed next, in the shared order, for the active models",
)
def needs(
    board: ReadableBoard,
    limit: int = Query(1000, ge=1, le=100_000, description="At most this many."),
    model: str | None = Query(None, description="Only this model's."),
    horizon: Literal["all", "look"] = Query(
        "all",
        description="look: only up to the next look, so that every evaluation listed will "
        "be used (past it, a model may be retired at the look and its scores unused).",
    ),
):
    try:
        return JSONResponse(board.needs(limit, model, horizon))
    except Rejected as error:
        raise rejected(error) from None


@router.get(
    "/api/boards/{board}/scores",
    tags=["scores"],
    summary="Export every received score (CSV or JSON lines), in the shared order",
    response_class=StreamingResponse,
)
def export(board: ReadableBoard, format: str = Query("csv", pattern="^(csv|jsonl)$")):
    if board.spec.kind != "scores":
        raise rejected(
            KindMismatch(
                "a votes board has no scores to export; its votes are exported as Parquet "
                "(GET /api/boards/{id}/export)"
            )
        )
    lines = _csv_lines(board) if format == "csv" else _jsonl_lines(board)
    return StreamingResponse(
        lines,
        media_type="text/csv" if format == "csv" else "application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{board.spec.id}-scores.{format}"'},
    )


@router.get(
    "/api/boards/{board}/export",
    tags=["scores"],
    summary="Export every accepted score (or vote, on a votes board) as Parquet, in arrival "
    "order, with the spec and the events (rankci monitor replays it)",
    response_class=StreamingResponse,
    responses={503: {"description": "The database cannot be read now (Retry-After)"}},
)
def export_parquet(board: ReadableBoard):
    # read from the database before the answer starts (a 503 while it cannot be read)
    return StreamingResponse(
        parquet_chunks(board),
        media_type=EXPORT_MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{board.spec.id}.parquet"'},
    )


def _chunks(board: Board, chunk: int = 20_000) -> Iterator[zip]:
    """The received scores in evaluation order, ``chunk`` at a time, as (position, model name,
    item name, score, cluster or None) rows."""
    spec = board.spec
    pos, model, score = board.export()
    items = board.order[pos]
    clusters = spec.clusters
    for start in range(0, len(score), chunk):
        part = slice(start, start + chunk)
        index = items[part].tolist()
        yield zip(
            pos[part].tolist(),
            [spec.models[j] for j in model[part].tolist()],
            [spec.items[i] for i in index],
            score[part].tolist(),
            [clusters[i] for i in index] if clusters else [None] * len(index),
        )


def _csv_lines(board: Board) -> Iterator[str]:
    clusters = board.spec.clusters
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["position", "model", "item", "score"] + (["cluster"] if clusters else []))
    for rows in _chunks(board):
        for p, model, item, s, cluster in rows:
            writer.writerow([p, model, item, repr(s)] + ([cluster] if clusters else []))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _jsonl_lines(board: Board) -> Iterator[str]:
    clusters = board.spec.clusters
    for rows in _chunks(board):
        lines = []
        for p, model, item, s, cluster in rows:
            record = {"position": p, "model": model, "item": item, "score": s}
            if clusters:
                record["cluster"] = cluster
            lines.append(json.dumps(record))
        yield "\n".join(lines) + "\n"
