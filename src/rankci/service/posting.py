"""Score posts and leaderboard reads on the event loop: parsing, the group-commit wait, the answer.

The two requests a running evaluation makes most - posting scores and reading the leaderboard -
are answered by :class:`FastPaths`, an ASGI layer in front of FastAPI (its middleware, telemetry
and router), whenever they need nothing but memory (the board is loaded, its tokens are HMAC
hashes): no routing, no dependency solving, no hop to a worker thread, so a wrong token is
refused (403, 404 or 429) for a few microseconds of work. A post's answer is joined from bytes
(the progress is encoded once per commit). The answers are exactly those of the routes in
:mod:`rankci.service.app`, which serve every other case (a board not yet loaded, a legacy token
hash) and document the API. A post's body is parsed on the event loop when it is small
(:data:`INLINE_BODY`), in a worker thread otherwise; the post then waits, off the event loop,
for the :class:`~rankci.service.commits.GroupWriter`'s next commit.
"""

from __future__ import annotations

import asyncio
import json
import re

from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from rankci.service.board import Board, Conflict, Rejected
from rankci.service.commits import GroupWriter, Pending
from rankci.service.registry import Service
from rankci.service.schemas import Score, ScoreBatch
from rankci.service.storage import StorageUnavailable

__all__ = [
    "INLINE_BODY",
    "FastPaths",
    "answer",
    "problems",
    "rejected",
    "storage_unavailable",
    "submit",
    "wait_for_commit",
]

INLINE_BODY = 8 * 1024  # bytes: a post body up to this size is parsed on the event loop
_PATH = re.compile(r"/api/boards/([^/]+)/(scores|leaderboard)")


def problems(errors) -> list[dict]:
    """Validation errors without the offending input (it may be NaN, huge, or a secret)."""
    out = []
    for error in errors:
        out.append(
            {
                "type": str(error.get("type", "")),
                "loc": [p if isinstance(p, (int, str)) else str(p) for p in error.get("loc", ())],
                "msg": str(error.get("msg", ""))[:500],
            }
        )
    return out[:20]


def rejected(error: Rejected) -> HTTPException:
    """409 for a conflict with a stored score, 422 for any other malformed post."""
    status = 409 if isinstance(error, Conflict) else 422
    return HTTPException(status, {"message": str(error), "problems": error.problems})


def storage_unavailable(error: StorageUnavailable) -> JSONResponse:
    """503 with ``Retry-After`` and the reason."""
    return JSONResponse(
        {"detail": f"the database is unavailable: {error.reason}", "reason": error.reason},
        status_code=503,
        headers={"Retry-After": str(error.retry_after)},
    )


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def submit(board: Board, body: bytes, loop=None, future=None) -> Pending:
    """Parse and validate a post's body, and queue it for the board's next group commit (its
    ``future`` is resolved on ``loop`` once the post is committed or refused)."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, NaN / Infinity
        raise HTTPException(422, {"message": f"the body is not JSON: {error}"}) from None
    except RecursionError:
        raise HTTPException(400, {"message": "the body is nested too deeply"}) from None
    kind = ScoreBatch if isinstance(data, dict) and "scores" in data else Score
    try:
        parsed = kind.model_validate(data)
    except ValidationError as error:
        found = problems(error.errors(include_url=False, include_input=False))
        raise HTTPException(
            422, {"message": f"not a valid {kind.__name__}", "problems": found}
        ) from None
    scores = parsed.scores if isinstance(parsed, ScoreBatch) else [parsed]
    entries = [(s.model, str(s.item), s.score) for s in scores]
    try:
        return board.submit(entries, loop=loop, future=future)
    except Rejected as error:
        raise rejected(error) from None


def answer(pending: Pending) -> Response:
    """The answer to a committed post (raises for a refused one): JSON bytes joined from the
    counts and the progress the commit published (encoded once per commit, not per post)."""
    try:
        posted = pending.outcome()
    except Rejected as error:
        raise rejected(error) from None
    head = b'{"accepted":%d,"duplicates":%d,"progress":' % (posted.accepted, posted.duplicates)
    return Response(head + posted.progress_json + b"}", media_type="application/json")


async def wait_for_commit(board: Board, body: bytes, commits: GroupWriter) -> Response:
    """Submit a post's body and wait (off the event loop) until its group is committed."""
    loop = asyncio.get_running_loop()
    answered = loop.create_future()
    if len(body) <= INLINE_BODY:
        pending = submit(board, body, loop, answered)
    else:
        pending = await run_in_threadpool(submit, board, body, loop, answered)
    commits.wake(board)
    await answered
    return answer(pending)


def _bearer(headers: list) -> str | None:
    """The token as FastAPI's ``HTTPBearer(auto_error=False)`` reads it."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme and token and scheme.lower() == "bearer":
                return token
            return None
    return None


class FastPaths:
    """ASGI: ``POST .../scores`` and ``GET .../leaderboard`` of a loaded board, answered without
    the router (see the module's text); anything else goes on to ``app``."""

    def __init__(self, app, service: Service, commits: GroupWriter) -> None:
        self.app = app
        self.service = service
        self.commits = commits

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            match = _PATH.fullmatch(scope["path"])
            method = scope["method"]
            if match is not None and (method, match[2]) in (
                ("POST", "scores"),
                ("GET", "leaderboard"),
            ):
                response = await self._answer(scope, receive, match[1], match[2] == "scores")
                if response is not None:
                    return await response(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _answer(self, scope, receive, board_id: str, write: bool) -> Response | None:
        client = scope.get("client")
        try:
            board = self.service.check_cached(
                board_id, _bearer(scope["headers"]), write, client[0] if client else "unknown"
            )
            if board is None:
                return None  # needs the database: the route does it in a worker thread
            if not write:
                if not board.snapshot_current():
                    return None
                return Response(board.leaderboard_json(), media_type="application/json")
            body = b""
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Response(status_code=400)  # the client left
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    break
            return await wait_for_commit(board, body, self.commits)
        except (HTTPException, StarletteHTTPException) as error:
            return JSONResponse(
                {"detail": error.detail}, status_code=error.status_code, headers=error.headers
            )
        except StorageUnavailable as error:
            return storage_unavailable(error)
