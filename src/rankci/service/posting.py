"""Score posts and leaderboard reads on the event loop: parsing, the group-commit wait, the answer.

The two requests a running evaluation makes most - posting scores and reading the leaderboard -
are answered by :class:`FastPaths`, an ASGI layer in front of FastAPI (its middleware, telemetry
and router), whenever they need nothing but memory (the board is loaded, its tokens are HMAC
hashes): no routing, no dependency solving, no hop to a worker thread, so a wrong token is
refused (403, 404 or 429) for a few microseconds of work. A post's answer is joined from bytes
(the progress is encoded once per commit). The request is authorised by the routes' own
:func:`rankci.service.deps.authorize`, and the answers are exactly those of the routes in
:mod:`rankci.service.routes_scores` and :mod:`rankci.service.routes_boards`, which serve every
other case (a board not yet loaded, a legacy token hash) and document the API. A post's body is
parsed on the event loop when it is small (:data:`INLINE_BODY`), in a worker thread otherwise;
the post then waits, off the event loop, for the :class:`~rankci.service.commits.GroupWriter`'s
next commit.
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

from rankci.service.board import Board, Conflict, Rejected, TooLarge
from rankci.service.commits import GroupWriter, Pending
from rankci.service.deps import ServiceContext, authorize, bearer_token, client_address
from rankci.service.registry import Elsewhere
from rankci.service.schemas import Score, ScoreBatch, Vote, VoteBatch
from rankci.service.storage import StorageUnavailable

__all__ = [
    "INLINE_BODY",
    "FastPaths",
    "answer",
    "leaderboard_response",
    "problems",
    "redirect_response",
    "rejected",
    "storage_unavailable",
    "submit",
    "submit_votes",
    "wait_for_commit",
]

INLINE_BODY = 8 * 1024  # bytes: a post body up to this size is parsed on the event loop
_PATH = re.compile(r"/api/boards/([^/]+)/(scores|leaderboard)")
_FAST = frozenset({("POST", "scores"), ("GET", "leaderboard")})


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
    """413 for growth past the board's quota, 409 for a conflict with a stored score, 422 for
    any other malformed post."""
    status = 413 if isinstance(error, TooLarge) else 409 if isinstance(error, Conflict) else 422
    return HTTPException(status, {"message": str(error), "problems": error.problems})


def redirect_response(error: Elsewhere, scope) -> JSONResponse:
    """307 to the same path and query on the process that owns the board (a cluster member's
    advertised URL): the method and body are to be repeated there. HTTP clients drop the
    ``Authorization`` header on a redirect to another origin, so a client re-sends it itself.

    Examples
    --------
    >>> scope = {"path": "/api/boards/b1/scores", "query_string": b"x=1"}
    >>> response = redirect_response(Elsewhere("b1", "http://10.0.0.2:8001"), scope)
    >>> response.status_code, response.headers["location"]
    (307, 'http://10.0.0.2:8001/api/boards/b1/scores?x=1')
    """
    location = error.owner + scope["path"]
    query = scope.get("query_string", b"")
    if query:
        location += "?" + query.decode("latin-1")
    return JSONResponse(
        {"detail": error.detail, "owner": error.owner},
        status_code=307,
        headers={"Location": location, "Cache-Control": "no-store"},
    )


def storage_unavailable(error: StorageUnavailable) -> JSONResponse:
    """503 with ``Retry-After`` and the reason."""
    return JSONResponse(
        {"detail": f"the database is unavailable: {error.reason}", "reason": error.reason},
        status_code=503,
        headers={"Retry-After": str(error.retry_after)},
    )


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _parse(body: bytes, batch, single, key: str) -> list:
    """A post's entries: the body parsed as ``batch`` (``{key: [...]}``) or ``single``; a 422
    (400 if nested too deeply) naming the problems otherwise."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, NaN / Infinity
        raise HTTPException(422, {"message": f"the body is not JSON: {error}"}) from None
    except RecursionError:
        raise HTTPException(400, {"message": "the body is nested too deeply"}) from None
    kind = batch if isinstance(data, dict) and key in data else single
    try:
        parsed = kind.model_validate(data)
    except ValidationError as error:
        found = problems(error.errors(include_url=False, include_input=False))
        raise HTTPException(
            422, {"message": f"not a valid {kind.__name__}", "problems": found}
        ) from None
    return getattr(parsed, key) if isinstance(parsed, batch) else [parsed]


def submit(board: Board, body: bytes, loop=None, future=None) -> Pending:
    """Parse and validate a post's body, and queue it for the board's next group commit (its
    ``future`` is resolved on ``loop`` once the post is committed or refused)."""
    scores = _parse(body, ScoreBatch, Score, "scores")
    entries = [(s.model, str(s.item), s.score) for s in scores]
    try:
        return board.submit(entries, loop=loop, future=future)
    except Rejected as error:
        raise rejected(error) from None


def submit_votes(board: Board, body: bytes, loop=None, future=None) -> Pending:
    """Parse and validate a vote post's body (:class:`~rankci.service.schemas.VoteBatch` or
    :class:`~rankci.service.schemas.Vote`), and queue it for the board's next group commit."""
    from rankci.service.voteboard import VoteBoard

    if not isinstance(board, VoteBoard):
        raise HTTPException(
            409,
            {
                "message": f"board {board.spec.id!r} is a scores board: post scores "
                f"{{model, item, score}} to /api/boards/{board.spec.id}/scores, not votes",
                "problems": [],
            },
        )
    votes = _parse(body, VoteBatch, Vote, "votes")
    try:
        return board.submit_votes([v.model_dump() for v in votes], loop=loop, future=future)
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


async def wait_for_commit(
    board: Board, body: bytes, commits: GroupWriter, votes: bool = False
) -> Response:
    """Submit a post's body (scores, or ``votes``) and wait (off the event loop) until its
    group is committed."""
    loop = asyncio.get_running_loop()
    answered = loop.create_future()
    parse = submit_votes if votes else submit
    if len(body) <= INLINE_BODY:
        pending = parse(board, body, loop, answered)
    else:
        pending = await run_in_threadpool(parse, board, body, loop, answered)
    commits.wake(board)
    await answered
    return answer(pending)


class FastPaths:
    """ASGI: ``POST .../scores`` and ``GET .../leaderboard`` of a loaded board, answered without
    the router (see the module's text); anything else goes on to ``app``.

    The request is authorised by :func:`rankci.service.deps.authorize`, as the routes'; when
    that needs the database, the request goes on to the route, which authorises it again in a
    worker thread.
    """

    def __init__(self, app, context: ServiceContext) -> None:
        self.app = app
        self.service = context.service
        self.commits = context.commits

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            match = _PATH.fullmatch(scope["path"])
            if match is not None and (scope["method"], match[2]) in _FAST:
                response = await self._answer(scope, receive, match[1], match[2] == "scores")
                if response is not None:
                    return await response(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _answer(self, scope, receive, board_id: str, write: bool) -> Response | None:
        try:
            board = authorize(
                self.service, board_id, bearer_token(scope["headers"]), write, client_address(scope)
            )
            if board is None:
                return None  # needs the database: the route does it in a worker thread
            if not write:
                return leaderboard_response(board)
            body = b""  # read here, not in a helper: no extra coroutine per post
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Response(status_code=400)  # the client left
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    break
            return await wait_for_commit(board, body, self.commits)
        except Elsewhere as error:
            return redirect_response(error, scope)
        except (HTTPException, StarletteHTTPException) as error:
            return JSONResponse(
                {"detail": error.detail}, status_code=error.status_code, headers=error.headers
            )
        except StorageUnavailable as error:
            return storage_unavailable(error)


def leaderboard_response(board: Board) -> Response | None:
    """The leaderboard's bytes (joined, never computed, on a read); None if the last look's
    leaderboard is not computed yet (it always is: see :mod:`rankci.service.published`)."""
    if not board.snapshot_current():
        return None
    return Response(board.leaderboard_json(), media_type="application/json")
