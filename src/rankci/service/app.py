"""The FastAPI application: the JSON API (documented at ``/docs``) and the boards' web pages.

Writes need the board's write token (``Authorization: Bearer rkci_...``); reads are public or,
for a private board, need its read or write token. Creating boards is open to whoever can reach
the server unless a creation token is set (``RANKCI_CREATE_TOKEN``). Bodies larger than
``max_body`` bytes are refused with 413 before they are read.
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rankci._version import __version__
from rankci.service.board import Board, Conflict, Rejected
from rankci.service.page import board_page, board_summary, fragment, index_page
from rankci.service.registry import Service
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
from rankci.service.storage import BoardExists, Storage, open_storage

__all__ = ["DEFAULT_MAX_BODY", "Service", "create_app"]

log = logging.getLogger("rankci.service")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
bearer = HTTPBearer(auto_error=False, description="rkci_... token of the board")


class _BodyLimit:
    """ASGI middleware: 413 for bodies over ``max_body`` bytes (declared or streamed); every
    response carries a ``Server-Timing`` header with the time the server spent on it."""

    def __init__(self, app, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            response = JSONResponse({"detail": self._message()}, status_code=413)
            return await response(scope, receive, send)
        seen = 0
        began = time.perf_counter()

        async def timed_send(message):
            # Server-Timing: the time the server spent on the request until its response began
            if message["type"] == "http.response.start":
                spent = 1000.0 * (time.perf_counter() - began)
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={spent:.2f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise StarletteHTTPException(413, self._message())
            return message

        return await self.app(scope, limited, timed_send)

    def _message(self) -> str:
        return f"the request body is larger than the limit of {self.max_body:,} bytes"


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return None if credentials is None else credentials.credentials


def _rejected(error: Rejected) -> HTTPException:
    status = 409 if isinstance(error, Conflict) else 422
    return HTTPException(status, {"message": str(error), "problems": error.problems})


def create_app(
    db: str | Storage,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    create_token: str | None = None,
    lock_wait: float = 15.0,
) -> FastAPI:
    """The application serving the boards stored in ``db`` (a SQLite path or PostgreSQL URL).

    The database is opened, and locked for this process, when the application starts.
    """
    storage = db if isinstance(db, Storage) else open_storage(db)
    service = Service(storage, create_token)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        storage.open()
        storage.lock_owner(lock_wait)
        log.info("rankci serve: %s", storage.describe())
        threading.Thread(target=service.warm, name="rankci-warm", daemon=True).start()
        try:
            yield
        finally:
            storage.close()

    app = FastAPI(
        title="rankci live leaderboards",
        version=__version__,
        description=(
            "Boards (benchmark x run) receive per-item scores while an evaluation runs and "
            "answer, at every moment, with anytime-valid rank intervals, certified comparisons, "
            "top-k sets, tiers and score intervals. Writes need the board's token "
            "(`Authorization: Bearer rkci_...`). See docs/service.md."
        ),
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(_BodyLimit, max_body=max_body)

    def reader(board: str, credentials=Depends(bearer)) -> Board:  # noqa: B008
        return service.check(board, _token(credentials), write=False)

    def writer(board: str, credentials=Depends(bearer)) -> Board:  # noqa: B008
        return service.check(board, _token(credentials), write=True)

    # ------------------------------------------------------------------ API
    @app.get("/api/health", tags=["service"])
    def health() -> dict:
        return {
            "status": "ok",
            "version": __version__,
            "storage": storage.kind,
            "pid": os.getpid(),
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
    def create_board(body: BoardCreate, credentials=Depends(bearer)):  # noqa: B008
        if service.create_token is not None:
            given = _token(credentials) or ""
            if not hmac.compare_digest(given.encode(), service.create_token.encode()):
                raise HTTPException(401, "creating boards needs the server's creation token")
        try:
            spec, write, read = service.create(body)
        except ValueError as error:
            raise HTTPException(422, {"message": str(error), "problems": []}) from None
        except BoardExists:
            raise HTTPException(409, f"a board {body.id or 'with this id'!r} exists") from None
        content = {"board": board_summary(spec), "write_token": write, "read_token": read}
        return JSONResponse(content, status_code=201)

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
        # the body is read here and parsed in a worker thread, so that a large batch never holds
        # up the event loop (and with it every other request)
        body = await request.body()
        return await run_in_threadpool(_post_scores, board, body)

    @app.post(
        "/api/boards/{board}/retire",
        tags=["scores"],
        summary="Stop evaluating a model from now on (its comparisons are frozen)",
    )
    def retire(body: RetireRequest, board: Board = Depends(writer)) -> dict:  # noqa: B008
        try:
            return board.retire(body.model)
        except Rejected as error:
            raise _rejected(error) from None

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
            raise _rejected(error) from None

    @app.get(
        "/api/boards/{board}/leaderboard",
        tags=["leaderboard"],
        response_model=Leaderboard,
        summary="The current leaderboard (at the last look) with intervals and progress",
    )
    def leaderboard(board: Board = Depends(reader)):  # noqa: B008
        return Response(board.leaderboard_json(), media_type="application/json")

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
        return HTMLResponse(board_page(service.spec(board)))

    @app.get("/boards/{board}/fragment", include_in_schema=False)
    def page_fragment(board: Board = Depends(reader), since: str | None = None):  # noqa: B008
        return JSONResponse(fragment(board, since))

    app.openapi = _openapi(app)
    return app


_SCORES = TypeAdapter(ScoreBatch | Score)
_POST_SCHEMA = {
    "anyOf": [
        {"$ref": "#/components/schemas/ScoreBatch"},
        {"$ref": "#/components/schemas/Score"},
    ]
}


def _post_scores(board: Board, body: bytes) -> JSONResponse:
    try:
        data = json.loads(body)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise HTTPException(422, {"message": f"the body is not JSON: {error}"}) from None
    kind = ScoreBatch if isinstance(data, dict) and "scores" in data else Score
    try:
        parsed = kind.model_validate(data)
    except ValidationError as error:
        problems = json.loads(error.json(include_url=False, include_input=False))
        raise HTTPException(
            422, {"message": f"not a valid {kind.__name__}", "problems": problems}
        ) from None
    scores = parsed.scores if isinstance(parsed, ScoreBatch) else [parsed]
    entries = [(s.model, str(s.item), s.score) for s in scores]
    try:
        posted = board.post(entries)
    except Rejected as error:
        raise _rejected(error) from None
    return JSONResponse(
        {
            "accepted": posted.accepted,
            "duplicates": posted.duplicates,
            "progress": posted.progress,
        }
    )


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
