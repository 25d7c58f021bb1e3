"""Routes of the web pages: the front page, a board's page and its sections, their scripts, and
the offline API documentation (``/docs``). None of them is in the OpenAPI document.

A board's page is public (a private board's page reads its token from the URL's fragment, which
the browser never sends); its sections (``/boards/{board}/fragment``) are read like the board's
leaderboard (:data:`~rankci.service.deps.ReadableBoard`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from rankci.service.apidocs import api_page
from rankci.service.deps import Context, ReadableBoard, client_address
from rankci.service.page import PAGE_JS, board_page, fragment, index_page, report_js
from rankci.service.routes_boards import public_boards
from rankci.service.spec import BOARD_ID

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def index(context: Context):
    return HTMLResponse(index_page(public_boards(context)))


@router.get("/boards/{board}", response_class=HTMLResponse)
def page(board: str, context: Context, request: Request):
    # an unknown id gets the same shell as a private board (the data say which it is)
    service = context.service
    if not BOARD_ID.match(board):
        raise service.not_found(board)
    row = service.find(board)
    if row is None or row.read_hash is not None:
        # unknown and private ids alike: counted as a failed look-up (rate-limited, 429 over
        # the limit), then the same shell
        wait = service.failures.fail(client_address(request.scope), f"page:{board}")
        if wait is not None:
            raise service.refuse(client_address(request.scope), 404, "", credential=None)
    spec = service.spec(board) if row is not None and row.read_hash is None else None
    return HTMLResponse(board_page(spec, board))


@router.get("/static/page.js")
def page_script():
    return Response(PAGE_JS, media_type="text/javascript")


@router.get("/static/report.js")
def report_script():
    return Response(report_js(), media_type="text/javascript")


@router.get("/docs", response_class=HTMLResponse)
def docs(request: Request):
    return HTMLResponse(api_page(request.app.openapi()))


@router.get("/boards/{board}/fragment")
def page_fragment(board: ReadableBoard, context: Context, since: str | None = None):
    return JSONResponse(fragment(board, since, context.renderer))
