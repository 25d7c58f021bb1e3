"""The FastAPI application: the JSON API (documented at ``/docs``) and the boards' web pages.

Writes need the board's write token (``Authorization: Bearer rkci_...``); reads are public or,
for a private board, need its read or write token. Creating boards needs the server's admin
token (``RANKCI_ADMIN_TOKEN``) unless the server was started with ``--open-boards``; deleting
boards and rotating or revoking tokens always need it. Bodies larger than ``max_body`` bytes are
refused with 413, bodies not received within ``body_timeout`` seconds with 408. While the
database is unavailable, requests that need it get 503 with ``Retry-After`` and the reason.

:func:`create_app` only assembles: the routes are in the routers ``routes_boards``,
``routes_scores``, ``routes_admin`` and ``routes_pages``, and read the shared state (one
:class:`~rankci.service.deps.ServiceContext`, ``app.state.context``) through the dependencies
of :mod:`rankci.service.deps`.
"""

from __future__ import annotations

import gc
import logging
import threading
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter

from rankci._version import __version__
from rankci.service import routes_admin, routes_boards, routes_pages, routes_scores
from rankci.service.auth import FailureLimit
from rankci.service.commits import GroupWriter
from rankci.service.deps import ServiceContext
from rankci.service.middleware import DEFAULT_BODY_TIMEOUT, SECURITY_HEADERS, BodyLimit
from rankci.service.page import Renderer
from rankci.service.posting import FastPaths, problems, redirect_response, storage_unavailable
from rankci.service.registry import DEFAULT_MAX_BOARDS, DEFAULT_MAX_CELLS, Elsewhere, Service
from rankci.service.schemas import Score, ScoreBatch, Vote, VoteBatch
from rankci.service.storage import Storage, StorageUnavailable, open_storage

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_MAX_BODY", "SECURITY_HEADERS", "Service", "create_app"]

log = logging.getLogger("rankci.service")
DEFAULT_MAX_BODY = 16 * 1024 * 1024
ROUTERS = (routes_boards.router, routes_scores.router, routes_admin.router, routes_pages.router)
DESCRIPTION = (
    "Boards (benchmark x run) receive per-item scores while an evaluation runs and "
    "answer, at every moment, with anytime-valid rank intervals, certified comparisons, "
    "top-k sets, tiers and score intervals. Writes need the board's token "
    "(`Authorization: Bearer rkci_...`). See docs/service.md."
)


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
    cluster: str | None = None,
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
    cluster : str, optional
        This process's advertised URL, to share a PostgreSQL database with other processes
        (``rankci serve --cluster``): each board is served by the process holding its lease
        (:mod:`rankci.service.storage_cluster`), the others answer 307 to its URL.

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
    >>> "/api/boards" in app.openapi()["paths"], app.url_path_for("page", board="b1")
    (True, '/boards/b1')
    """
    storage = db if isinstance(db, Storage) else open_storage(db, cluster=cluster)
    service = Service(
        storage,
        admin_token,
        open_boards=open_boards,
        max_cells=max_cells,
        max_boards=max_boards,
        failures=FailureLimit(auth_failures),
    )
    context = ServiceContext(service, storage, GroupWriter(), Renderer(), lock_wait)
    service.on_look = context.renderer.looked
    app = _ServiceApp(
        title="rankci live leaderboards",
        version=__version__,
        description=DESCRIPTION,
        lifespan=_lifespan,
        docs_url=None,  # /docs is a plain page made here (no CDN), see apidocs.py
        redoc_url=None,
    )
    app.state.context = context
    app.state.service = service
    # in front of FastAPI (its middleware and telemetry): the body limits, then the fast paths
    app.front = BodyLimit(
        FastPaths(app.routed, context),
        max_body=max_body,
        body_timeout=body_timeout,
        failures=service.failures,
        storage=storage,
    )
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StorageUnavailable, _unavailable)
    app.add_exception_handler(Elsewhere, _elsewhere)
    app.add_exception_handler(RecursionError, _too_deep)
    for router in ROUTERS:
        app.include_router(router)
    app.openapi = _openapi(app)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI):
    """Open and lock the database, then load the boards in the background; at the end, stop
    the renderer and the group commit's writer, and close the database."""
    context: ServiceContext = app.state.context
    storage, service = context.storage, context.service
    storage.open()
    if not storage.owned:  # rankci serve takes it before the server starts
        storage.lock_owner(context.lock_wait)
    service.start()
    storage.check_integrity()
    storage.start_probe()
    log.info("rankci serve: %s", storage.describe())
    gc.freeze()  # the modules and objects of start-up: never scanned again (see _warm)
    threading.Thread(target=_warm, args=(service,), name="rankci-warm", daemon=True).start()
    try:
        yield
    finally:
        context.renderer.stop()
        context.commits.stop()
        storage.close()


async def _invalid(request: Request, error: RequestValidationError):
    return JSONResponse(
        {"detail": {"message": "invalid request", "problems": problems(error.errors())}},
        status_code=422,
    )


async def _unavailable(request: Request, error: StorageUnavailable):
    return storage_unavailable(error)


async def _elsewhere(request: Request, error: Elsewhere):
    return redirect_response(error, request.scope)


async def _too_deep(request: Request, error: RecursionError):
    return JSONResponse({"detail": "the request is nested too deeply"}, status_code=400)


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

    async def routed(self, scope, receive, send) -> None:
        """FastAPI's own stack (middleware, router): what ``front`` hands requests on to."""
        await FastAPI.__call__(self, scope, receive, send)

    async def __call__(self, scope, receive, send) -> None:
        if self.front is not None and scope["type"] == "http":
            await self.front(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


_SCORES = TypeAdapter(ScoreBatch | Score | VoteBatch | Vote)  # POST_SCHEMA, VOTE_SCHEMA use these


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
