"""ASGI middleware of the service: request body limits and deadlines, the failed-authentication
gate, security headers and ``Server-Timing`` on every response."""

from __future__ import annotations

import asyncio
import time

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["CSP", "DEFAULT_BODY_TIMEOUT", "SECURITY_HEADERS", "BodyLimit", "secured"]

DEFAULT_BODY_TIMEOUT = 30.0
_timeout_at = getattr(asyncio, "timeout_at", None)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``max_body`` bytes (declared or streamed), 408 for a
    body not received within ``body_timeout`` seconds of the request's start; every response
    carries the security headers and a ``Server-Timing`` header with the time the server spent
    on it."""

    def __init__(
        self,
        app,
        max_body: int,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        failures=None,
        storage=None,
    ) -> None:
        self.app = app
        self.storage = storage
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.failures = failures

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers", []))
        client = scope.get("client")
        storage = self.storage
        if storage is not None and storage.lost is not None and _board_path(scope["path"]):
            # fenced out: another server owns the database now, so this one's copy of every
            # board may be behind; it answers nothing from it
            response = JSONResponse(
                {"detail": f"this server no longer owns the database: {storage.lost}"},
                status_code=503,
                headers={"Retry-After": "5"},
            )
            return await response(scope, receive, secured(send))
        if self.failures is not None and b"authorization" in headers and client:
            # a credential over its failed-authentication limit from this address: refused here,
            # before any work (keyed on the credential tried: a valid token is never refused)
            token = headers[b"authorization"].decode("latin-1")
            wait = self.failures.blocked(client[0], token.partition(" ")[2] or token)
            if wait is not None:
                response = JSONResponse(
                    {"detail": "too many failed authentications with this token from this address"},
                    status_code=429,
                    headers={"Retry-After": str(int(wait) + 1)},
                )
                return await response(scope, receive, secured(send))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            response = JSONResponse({"detail": self._message()}, status_code=413)
            return await response(scope, receive, secured(send))
        seen = 0
        began = time.perf_counter()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        complete = False

        async def timed_send(message):
            # Server-Timing: the time the server spent on the request until its response began
            if message["type"] == "http.response.start":
                spent = 1000.0 * (time.perf_counter() - began)
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={spent:.2f}".encode()))
                headers.extend(SECURITY_HEADERS)
                if storage is not None and storage.down is not None:
                    # answered from memory while the database is unavailable: the last state
                    # known to be committed
                    headers.append((b"x-rankci-stale", _stale(storage.down)))
                message = {**message, "headers": headers}
            await send(message)

        async def limited():
            nonlocal seen, complete
            if complete:  # after the body: e.g. a streaming response waiting for a disconnect
                return await receive()
            try:
                if _timeout_at is not None:  # one timer, no extra task (Python >= 3.11)
                    async with _timeout_at(deadline):
                        message = await receive()
                else:  # pragma: no cover - Python 3.10
                    message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except asyncio.TimeoutError:
                raise StarletteHTTPException(
                    408, f"the request body was not received within {self.body_timeout:g} s"
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise StarletteHTTPException(413, self._message())
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        return await self.app(scope, limited, timed_send)

    def _message(self) -> str:
        return f"the request body is larger than the limit of {self.max_body:,} bytes"


def _board_path(path: str) -> bool:
    return path == "/" or path.startswith(("/api/boards", "/boards/"))


def _stale(reason: str) -> bytes:
    text = f"database unavailable ({reason})"[:300]
    return text.encode("ascii", "replace").replace(b"\r", b" ").replace(b"\n", b" ")


def secured(send):
    """``send`` adding the security headers to the response's start."""

    async def with_headers(message):
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", [])) + SECURITY_HEADERS
            message = {**message, "headers": headers}
        await send(message)

    return with_headers
