"""The FastAPI application: the JSON API (documented at ``/docs``) and the boards' web pages.

Writes need the board's write token (``Authorization: Bearer rkci_...``); reads are public or,
for a private board, need its read or write token. Creating boards needs the server's admin
token (``RANKCI_ADMIN_TOKEN``) unless the server was started with ``--open-boards``; deleting
boards and rotating or revoking tokens always need it. Bodies larger than ``max_body`` bytes are
refused with 413, bodies not received within ``body_timeout`` seconds with 408. While the
database is unavailable, requests that need it get 503 with ``Retry-After`` and the reason.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter

from rankci._version import __version__
from rankci.service.apidocs import api_page
from rankci.service.board import Board, Rejected
from rankci.service.commits import GroupWriter
from rankci.service.middleware import DEFAULT_BODY_TIMEOUT, SECURITY_HEADERS, BodyLimit
from rankci.service.page import (
    PAGE_JS,
    Renderer,
    board_page,
    board_summary,
    fragment,
    index_page,
    report_js,
)
from rankci.service.posting import (
    FastPaths,
    problems,
    rejected,
    storage_unavailable,
    wait_for_commit,
)
from rankci.service.registry import DEFAULT_MAX_BOARDS, DEFAULT_MAX_CELLS, Service
from rankci.service.schemas import (
    BoardCreate,
    BoardCreated,
    History,
    Leaderboard,
    Needed,
    Posted,
    RetireRequest,
    Score,
    ScoreBatch,
)
from rankci.service.spec import BOARD_ID
from rankci.service.storage import BoardExists, Storage, StorageUnavailable, open_storage

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_MAX_BODY", "SECURITY_HEADERS", "Service", "create_app"]

log = logging.getLogger("rankci.service")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
bearer = HTTPBearer(auto_error=False, description="rkci_... token of the board")


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return None if credentials is None else credentials.credentials


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def create_app(
    db: str | Storage,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    admin_token: str | None = None,
    open_boards: bool = False,
    lock_wait: float = 15.0,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_cells: int = DEFAULT_MAX_CELLS,
    max_boards: int = DEFAULT_MAX_BOARDS,
    auth_failures: int = 20,
    create_token: str | None = None,
) -> FastAPI:
    """The application serving the boards stored in ``db`` (a SQLite path or PostgreSQL URL).

    The database is opened, and locked for this process, when the application starts (its
    lifespan); creating the application connects to nothing.

    Parameters
    ----------
    db : str or Storage
        A SQLite file path, a PostgreSQL URL (see :func:`~rankci.service.storage.open_storage`), or
        a storage object.
    max_body : int, default DEFAULT_MAX_BODY
        Largest request body in bytes; larger ones are refused with 413.
    admin_token : str, optional
        The server's admin token: needed to create boards (unless ``open_boards``), to delete
        boards and to rotate or revoke tokens. Without one, none of these is possible.
    open_boards : bool, default False
        Let anyone who can reach the server create boards (local use).
    lock_wait : float, default 15.0
        Seconds to wait for another process to release the database.
    body_timeout : float, default DEFAULT_BODY_TIMEOUT
        Seconds a request's body may take to arrive (then 408).
    max_cells, max_boards : int
        Quotas: models x items per board, and boards per server.
    auth_failures : int, default 20
        Failed authentications per client address per minute before 429.
    create_token : str, optional
        The old name of ``admin_token``.

    Returns
    -------
    fastapi.FastAPI
        The ASGI application (serve it with an ASGI server such as uvicorn); HTTP requests go
        first through the body limits and the fast paths of :mod:`rankci.service.posting`.

    References
    ----------
    FastAPI documentation (https://fastapi.tiangolo.com/), "Lifespan Events".
    Jones, M. and Hardt, D. (2012). The OAuth 2.0 Authorization Framework: Bearer Token Usage.
    RFC 6750 (the ``Authorization: Bearer`` header).

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     app = create_app(os.path.join(folder, "boards.db"))
    >>> isinstance(app, FastAPI)
    True
    >>> paths = {route.path for route in app.routes}
    >>> "/api/boards" in paths, "/boards/{board}" in paths
    (True, True)
    """
    from rankci.service.auth import FailureLimit

    storage = db if isinstance(db, Storage) else open_storage(db)
    service = Service(
        storage,
        admin_token or create_token,
        open_boards=open_boards,
        max_cells=max_cells,
        max_boards=max_boards,
        failures=FailureLimit(auth_failures),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        storage.open()
        storage.lock_owner(lock_wait)
        service.start()
        storage.check_integrity()
        storage.start_probe()
        log.info("rankci serve: %s", storage.describe())
        gc.freeze()  # the modules and objects of start-up: never scanned again (see _warm)
        threading.Thread(target=_warm, args=(service,), name="rankci-warm", daemon=True).start()
        try:
            yield
        finally:
            renderer.stop()
            commits.stop()
            storage.close()

    app = _ServiceApp(
        title="rankci live leaderboards",
        version=__version__,
        description=(
            "Boards (benchmark x run) receive per-item scores while an evaluation runs and "
            "answer, at every moment, with anytime-valid rank intervals, certified comparisons, "
            "top-k sets, tiers and score intervals. Writes need the board's token "
            "(`Authorization: Bearer rkci_...`). See docs/service.md."
        ),
        lifespan=lifespan,
        docs_url=None,  # /docs is a plain page made here (no CDN), see apidocs.py
        redoc_url=None,
    )
    app.state.service = service
    renderer = Renderer()
    service.on_look = renderer.looked
    commits = GroupWriter()

    async def routes(scope, receive, send):
        await FastAPI.__call__(app, scope, receive, send)

    # in front of FastAPI (its middleware and telemetry): the body limits, then the fast paths
    app.front = BodyLimit(
        FastPaths(routes, service=service, commits=commits),
        max_body=max_body,
        body_timeout=body_timeout,
        failures=service.failures,
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        return JSONResponse(
            {"detail": {"message": "invalid request", "problems": problems(error.errors())}},
            status_code=422,
        )

    @app.exception_handler(StorageUnavailable)
    async def unavailable(request: Request, error: StorageUnavailable):
        return storage_unavailable(error)

    @app.exception_handler(RecursionError)
    async def too_deep(request: Request, error: RecursionError):
        return JSONResponse({"detail": "the request is nested too deeply"}, status_code=400)

    async def checked(board: str, token, write: bool, client: str) -> Board:
        # on the event loop when it needs nothing but memory, else in a worker thread
        found = service.check_cached(board, token, write, client)
        if found is not None:
            return found
        return await run_in_threadpool(service.check, board, token, write, client)

    async def reader(request: Request, board: str, credentials=Depends(bearer)) -> Board:  # noqa: B008
        return await checked(board, _token(credentials), False, _client(request))

    async def writer(request: Request, board: str, credentials=Depends(bearer)) -> Board:  # noqa: B008
        return await checked(board, _token(credentials), True, _client(request))

    def creator(request: Request, credentials=Depends(bearer)) -> None:  # noqa: B008
        # a dependency: checked before the body is parsed
        if not service.open_boards:
            service.check_admin(_token(credentials), _client(request), "creating boards")

    def admin(what: str):
        def check(request: Request, credentials=Depends(bearer)) -> None:  # noqa: B008
            service.check_admin(_token(credentials), _client(request), what)

        return check

    # ------------------------------------------------------------------ API
    @app.get("/api/health", tags=["service"])
    def health() -> dict:
        """``ok``, or ``degraded`` when the database cannot be written, failed its integrity
        check, or a board is quarantined."""
        database = storage.health()
        ok = database["writable"] and database["integrity"] in ("ok", "not applicable")
        return {
            "status": "ok" if ok and not service.quarantined else "degraded",
            "version": __version__,
            "storage": storage.kind,
            "pid": os.getpid(),
            "database": database,
            "boards": {
                "warmed": service.warmed,
                "n_loaded": len(service.loaded()),
                "loaded": service.public_loaded(),
                "n_quarantined": len(service.quarantined),
                "quarantined": service.public_quarantined(),
            },
        }

    @app.get("/api/boards", tags=["boards"], summary="List the public boards")
    def list_boards() -> list[dict]:
        out = []
        for board_id in storage.board_ids():
            spec = service.spec(board_id)
            if spec.public:
                out.append(board_summary(spec))
        return out

    @app.post(
        "/api/boards",
        tags=["boards"],
        status_code=201,
        response_model=BoardCreated,
        summary="Create a board (returns its write token, shown only once)",
    )
    def create_board(body: BoardCreate, _=Depends(creator)):  # noqa: B008
        try:
            spec, write, read = service.create(body)
        except ValueError as error:
            raise HTTPException(422, {"message": str(error), "problems": []}) from None
        except BoardExists:
            raise HTTPException(409, f"a board {body.id or 'with this id'!r} exists") from None
        content = {"board": board_summary(spec), "write_token": write, "read_token": read}
        return JSONResponse(content, status_code=201)

    @app.delete(
        "/api/boards/{board}",
        tags=["boards"],
        summary="Delete a board and all its scores (admin token)",
        dependencies=[Depends(admin("deleting boards"))],
    )
    def delete_board(board: str) -> dict:
        service.delete(board)
        return {"deleted": board}

    @app.post(
        "/api/boards/{board}/tokens/{which}",
        tags=["boards"],
        summary="Rotate a board's write or read token: a new one, the old stops working (admin)",
        dependencies=[Depends(admin("rotating tokens"))],
    )
    def rotate_token(board: str, which: Literal["write", "read"] = Path()) -> dict:  # noqa: B008
        return {"board": board, "which": which, "token": service.set_token(board, which)}

    @app.delete(
        "/api/boards/{board}/tokens/{which}",
        tags=["boards"],
        summary="Revoke a board's write or read token (admin token)",
        dependencies=[Depends(admin("revoking tokens"))],
    )
    def revoke_token(board: str, which: Literal["write", "read"] = Path()) -> dict:  # noqa: B008
        service.set_token(board, which, revoke=True)
        return {"board": board, "which": which, "revoked": True}

    @app.get("/api/boards/{board}", tags=["boards"], summary="A board's description")
    def get_board(board: Board = Depends(reader)) -> dict:  # noqa: B008
        return {**board_summary(board.spec), "progress": board.progress()}

    @app.post(
        "/api/boards/{board}/scores",
        tags=["scores"],
        response_model=Posted,
        summary="Post one score or a batch (idempotent by (model, item))",
        responses={
            409: {"description": "A (model, item) already has a different score"},
            422: {"description": "Unknown model or item, or a score outside [0, 1]"},
            413: {"description": "The body is too large"},
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _POST_SCHEMA}},
            }
        },
    )
    async def post_scores(request: Request, board: Board = Depends(writer)):  # noqa: B008
        # A small body is parsed here, a large one in a worker thread (so that a large batch
        # never holds up the event loop, and with it every other request); the post then waits
        # for the writer thread's next group commit (commits.py), off the event loop.
        return await wait_for_commit(board, await request.body(), commits)

    @app.post(
        "/api/boards/{board}/retire",
        tags=["scores"],
        summary="Stop evaluating a model from now on (its comparisons are frozen)",
    )
    def retire(body: RetireRequest, board: Board = Depends(writer)) -> dict:  # noqa: B008
        try:
            return board.retire(body.model)
        except Rejected as error:
            raise rejected(error) from None

    @app.get(
        "/api/boards/{board}/needs",
        tags=["scores"],
        response_model=Needed,
        summary="The evaluations needed next, in the shared order, for the active models",
    )
    def needs(
        board: Board = Depends(reader),  # noqa: B008
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

    @app.get(
        "/api/boards/{board}/leaderboard",
        tags=["leaderboard"],
        response_model=Leaderboard,
        summary="The current leaderboard (at the last look) with intervals and progress",
    )
    async def leaderboard(board: Board = Depends(reader)):  # noqa: B008
        # the leaderboard of the last look is computed once, by the writer: a read copies bytes
        if board.snapshot_current():
            return Response(board.leaderboard_json(), media_type="application/json")
        body = await run_in_threadpool(board.leaderboard_json)
        return Response(body, media_type="application/json")

    @app.get(
        "/api/boards/{board}/history",
        tags=["leaderboard"],
        response_model=History,
        summary="Every look so far: certified pairs, rank intervals, cost, retirements",
    )
    def history(board: Board = Depends(reader)):  # noqa: B008
        return JSONResponse(board.history())

    @app.get(
        "/api/boards/{board}/scores",
        tags=["scores"],
        summary="Export every received score (CSV or JSON lines), in the shared order",
        response_class=StreamingResponse,
    )
    def export(
        board: Board = Depends(reader),  # noqa: B008
        format: str = Query("csv", pattern="^(csv|jsonl)$"),
    ):
        return StreamingResponse(
            _export_lines(board, format),
            media_type="text/csv" if format == "csv" else "application/x-ndjson",
            headers={
                "Content-Disposition": f'attachment; filename="{board.spec.id}-scores.{format}"'
            },
        )

    @app.get(
        "/api/boards/{board}/monitor",
        tags=["leaderboard"],
        summary="The monitor's full state (.npz; rankci.sequential.Monitor.restore reads it)",
        response_class=Response,
    )
    def monitor_state(board: Board = Depends(reader)):  # noqa: B008
        return Response(
            board.monitor_state(),
            media_type="application/octet-stream",
            headers={"Content-Disposition": f'attachment; filename="{board.spec.id}.npz"'},
        )

    # ------------------------------------------------------------------ pages
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index():
        boards = [b for b in list_boards()]
        return HTMLResponse(index_page(boards))

    @app.get("/boards/{board}", response_class=HTMLResponse, include_in_schema=False)
    def page(board: str):
        # an unknown id gets the same shell as a private board (the data say which it is)
        if not BOARD_ID.match(board):
            raise service.not_found(board)
        row = service.find(board)
        spec = service.spec(board) if row is not None and row.read_hash is None else None
        return HTMLResponse(board_page(spec, board))

    @app.get("/static/page.js", include_in_schema=False)
    def page_script():
        return Response(PAGE_JS, media_type="text/javascript")

    @app.get("/static/report.js", include_in_schema=False)
    def report_script():
        return Response(report_js(), media_type="text/javascript")

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs():
        return HTMLResponse(api_page(app.openapi()))

    @app.get("/boards/{board}/fragment", include_in_schema=False)
    def page_fragment(board: Board = Depends(reader), since: str | None = None):  # noqa: B008
        return JSONResponse(fragment(board, since, renderer))

    app.openapi = _openapi(app)
    return app


def _warm(service: Service) -> None:
    """Load every board, then move the long-lived objects out of the collector's generations
    (:func:`gc.freeze`): a full collection over them took 140-200 ms, during which no request
    was answered; the boards' state is numpy arrays, so little is left for it to scan."""
    service.warm()
    gc.freeze()


class _ServiceApp(FastAPI):
    """FastAPI, with HTTP requests taken first by ``front`` (the body limits and the fast paths
    of :mod:`rankci.service.posting`), which hands the others to FastAPI's own stack."""

    front = None

    async def __call__(self, scope, receive, send) -> None:
        if self.front is not None and scope["type"] == "http":
            await self.front(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


_SCORES = TypeAdapter(ScoreBatch | Score)
_POST_SCHEMA = {
    "anyOf": [
        {"$ref": "#/components/schemas/ScoreBatch"},
        {"$ref": "#/components/schemas/Score"},
    ]
}


def _openapi(app: FastAPI):
    """The generated schema, plus the score bodies (read by hand, so not seen by FastAPI)."""

    def build() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            defs = _SCORES.json_schema(ref_template="#/components/schemas/{model}")
            schema.setdefault("components", {}).setdefault("schemas", {}).update(defs["$defs"])
            app.openapi_schema = schema
        return app.openapi_schema

    return build


def _export_lines(board: Board, fmt: str, chunk: int = 20_000) -> Iterator[str]:
    spec = board.spec
    pos, model, score = board.export()
    items = board.order[pos]
    clusters = spec.clusters
    if fmt == "csv":
        header = ["position", "model", "item", "score"] + (["cluster"] if clusters else [])
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for start in range(0, len(score), chunk):
            for p, j, i, s in zip(
                pos[start : start + chunk].tolist(),
                model[start : start + chunk].tolist(),
                items[start : start + chunk].tolist(),
                score[start : start + chunk].tolist(),
            ):
                row = [p, spec.models[j], spec.items[i], repr(s)]
                if clusters:
                    row.append(clusters[i])
                writer.writerow(row)
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()
        return
    for start in range(0, len(score), chunk):
        lines = []
        for p, j, i, s in zip(
            pos[start : start + chunk].tolist(),
            model[start : start + chunk].tolist(),
            items[start : start + chunk].tolist(),
            score[start : start + chunk].tolist(),
        ):
            record = {"position": p, "model": spec.models[j], "item": spec.items[i], "score": s}
            if clusters:
                record["cluster"] = clusters[i]
            lines.append(json.dumps(record))
        yield "\n".join(lines) + "\n"
