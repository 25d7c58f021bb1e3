"""What the routes share: the service's state (:class:`ServiceContext`) and authorisation.

Every route reads the state through the :data:`Context` dependency (the one
:class:`ServiceContext` of its application, ``app.state.context``), never through a closure. A
request for a board is authorised by :func:`authorize`, whether it is answered by a route (the
:data:`ReadableBoard` and :data:`WritableBoard` dependencies, through :func:`authorized`) or by
the fast paths of :mod:`rankci.service.posting`: one function decides who may read or write a
board. The server's admin token is checked by :func:`creator` and :func:`admin`.

Routes are written like this one (``Context`` and ``ReadableBoard`` as annotations, so FastAPI
solves them; the board's id is the path's ``{board}``):

>>> from fastapi import APIRouter
>>> router = APIRouter()
>>> @router.get("/api/boards/{board}/models")
... def models(board: ReadableBoard, context: Context) -> list[str]:
...     return list(board.spec.models)
>>> [route.path for route in router.routes]
['/api/boards/{board}/models']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rankci.service.board import Board
from rankci.service.commits import GroupWriter
from rankci.service.registry import Service
from rankci.service.storage import Storage

if TYPE_CHECKING:
    from rankci.service.sections import Renderer

__all__ = [
    "BoardAccess",
    "Context",
    "ReadableBoard",
    "ServiceContext",
    "WritableBoard",
    "admin",
    "authorize",
    "authorized",
    "bearer",
    "bearer_token",
    "client_address",
    "context",
    "creator",
    "reader",
    "writer",
]

bearer = HTTPBearer(auto_error=False, description="rkci_... token of the board")


@dataclass(frozen=True, slots=True)
class ServiceContext:
    """The state every route of one application shares (``app.state.context``).

    Attributes
    ----------
    service : Service
        The boards of the database, and their tokens.
    storage : Storage
        The database.
    commits : GroupWriter
        The group commit's writer thread (score posts wait for it).
    renderer : Renderer
        The web pages' background renderer.
    lock_wait : float
        Seconds to wait, at start-up, for another process to release the database.
    """

    service: Service
    storage: Storage
    commits: GroupWriter
    renderer: Renderer
    lock_wait: float


async def context(request: Request) -> ServiceContext:
    """The application's :class:`ServiceContext` (a dependency, solved on the event loop)."""
    return request.app.state.context


def client_address(scope) -> str:
    """The client's address in an ASGI ``scope`` (``"unknown"`` when the server gives none).

    Examples
    --------
    >>> client_address({"client": ("127.0.0.1", 5000)}), client_address({})
    ('127.0.0.1', 'unknown')
    """
    client = scope.get("client")
    return client[0] if client else "unknown"


def bearer_token(headers: list) -> str | None:
    """The token of a raw ``Authorization: Bearer`` header, as :data:`bearer` reads it
    (FastAPI's ``HTTPBearer(auto_error=False)``), for the fast paths that bypass FastAPI.

    Examples
    --------
    >>> bearer_token([(b"authorization", b"Bearer rkci_x")]), bearer_token([])
    ('rkci_x', None)
    >>> bearer_token([(b"authorization", b"Basic abc")]) is None
    True
    """
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme and token and scheme.lower() == "bearer":
                return token
            return None
    return None


def authorize(
    service: Service, board_id: str, token: str | None, write: bool, client: str
) -> Board | None:
    """The board, if ``token`` may read it (or write it, with ``write``), when that can be
    decided in memory (the board is loaded, its tokens are HMAC hashes); None when it needs the
    database (then :func:`authorized` asks in a worker thread).

    The one authorisation of a board's requests: the routes' dependencies and the fast paths of
    :mod:`rankci.service.posting` both call it.

    Raises
    ------
    fastapi.HTTPException
        401, 403 or 404 for a token that may not (an unknown board and a private board without
        its token get the same 404), 429 for a client over its failed-authentication limit.
    """
    return service.check_cached(board_id, token, write, client)


async def authorized(
    service: Service, board_id: str, token: str | None, write: bool, client: str
) -> Board:
    """:func:`authorize`, on the event loop when it needs nothing but memory, otherwise in a
    worker thread (:meth:`~rankci.service.registry.Service.check`, which may load the board)."""
    found = authorize(service, board_id, token, write, client)
    if found is not None:
        return found
    return await run_in_threadpool(service.check, board_id, token, write, client)


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return None if credentials is None else credentials.credentials


class BoardAccess:
    """A dependency: the board ``{board}`` of the path, if the request's token may read it (or
    write it, with ``write``); :data:`reader` and :data:`writer` are the two."""

    def __init__(self, write: bool) -> None:
        self.write = write

    async def __call__(
        self,
        request: Request,
        board: str,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Board:
        service = request.app.state.context.service
        token, client = _token(credentials), client_address(request.scope)
        return await authorized(service, board, token, self.write, client)


reader = BoardAccess(write=False)
writer = BoardAccess(write=True)


def creator(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """Creating boards needs the admin token, unless the server has open boards (a dependency:
    checked before the body is parsed)."""
    service = request.app.state.context.service
    if not service.open_boards:
        service.check_admin(_token(credentials), client_address(request.scope), "creating boards")


def admin(what: str):
    """A dependency: the request carries the server's admin token (``what`` names the act in
    the refusal, e.g. ``"deleting boards"``)."""

    def check(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> None:
        service = request.app.state.context.service
        service.check_admin(_token(credentials), client_address(request.scope), what)

    return check


Context = Annotated[ServiceContext, Depends(context)]
ReadableBoard = Annotated[Board, Depends(reader)]
WritableBoard = Annotated[Board, Depends(writer)]
