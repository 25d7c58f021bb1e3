"""Routes of the boards: list, create and describe them; read a board's leaderboard, its history
and its monitor's state.

Each route reads the shared state through :data:`~rankci.service.deps.Context` and is
authorised by :data:`~rankci.service.deps.ReadableBoard` (the board's read or write token, or
none for a public board); creating needs the admin token unless the server has open boards.
``GET .../leaderboard`` of a loaded board is usually answered before it reaches this router, by
:class:`rankci.service.posting.FastPaths`, with the same bytes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from rankci.service.deps import Context, ReadableBoard, ServiceContext, creator
from rankci.service.page import board_summary
from rankci.service.posting import leaderboard_response
from rankci.service.registry import Unservable
from rankci.service.schemas import BoardCreate, BoardCreated, History, Leaderboard
from rankci.service.storage import BoardExists

__all__ = ["public_boards", "router"]

router = APIRouter()


def public_boards(context: ServiceContext) -> list[dict]:
    """The summaries of the public boards (as ``GET /api/boards`` lists them).

    A stored board that cannot be read or served (a row written before its text was checked,
    or damaged) is left out and quarantined (reported by ``GET /api/health`` and the log):
    it never stops the others from being listed."""
    out = []
    ids = context.storage.board_ids()
    context.service.note_ids(ids)
    for board_id in ids:
        try:
            spec = context.service.spec(board_id)
        except Unservable:
            continue
        if spec.public:
            out.append(board_summary(spec))
    return out


@router.get("/api/boards", tags=["boards"], summary="List the public boards")
def list_boards(context: Context) -> list[dict]:
    return public_boards(context)


@router.post(
    "/api/boards",
    tags=["boards"],
    status_code=201,
    response_model=BoardCreated,
    summary="Create a board (returns its write token, shown only once)",
)
def create_board(body: BoardCreate, context: Context, _: Annotated[None, Depends(creator)]):
    try:
        spec, write, read = context.service.create(body)
    except ValueError as error:
        raise HTTPException(422, {"message": str(error), "problems": []}) from None
    except BoardExists as error:
        raise HTTPException(409, str(error) or f"a board {body.id!r} exists") from None
    content = {"board": board_summary(spec), "write_token": write, "read_token": read}
    return JSONResponse(content, status_code=201)


@router.get("/api/boards/{board}", tags=["boards"], summary="A board's description")
def get_board(board: ReadableBoard) -> dict:
    return {**board_summary(board.spec), "progress": board.progress()}


@router.get(
    "/api/boards/{board}/leaderboard",
    tags=["leaderboard"],
    response_model=Leaderboard,
    summary="The current leaderboard (at the last look) with intervals and progress",
)
async def leaderboard(board: ReadableBoard):
    # the leaderboard of the last look is computed once, by the writer: a read copies bytes
    response = leaderboard_response(board)
    if response is not None:
        return response
    body = await run_in_threadpool(board.leaderboard_json)
    return Response(body, media_type="application/json")


@router.get(
    "/api/boards/{board}/history",
    tags=["leaderboard"],
    response_model=History,
    summary="Every look so far: certified pairs, rank intervals, cost, retirements",
)
def history(board: ReadableBoard):
    return JSONResponse(board.history())


@router.get(
    "/api/boards/{board}/monitor",
    tags=["leaderboard"],
    summary="The monitor's full state (.npz; Monitor.restore, OpenMonitor.restore on a board "
    "with entry open, ArenaMonitor.restore on a votes board)",
    response_class=Response,
)
def monitor_state(board: ReadableBoard):
    return Response(
        board.monitor_state(),
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{board.spec.id}.npz"'},
    )
