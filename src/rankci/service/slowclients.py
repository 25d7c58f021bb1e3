"""A header deadline for uvicorn's HTTP/1.1 protocols: slow clients cannot hold a connection open
by sending a request's headers a byte at a time.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but has no limit on how long
a request's headers may take. :func:`guarded_protocol` gives a protocol class that closes the
connection when a request's headers are not complete ``seconds`` after the connection opened
or after the request's first byte. The body's deadline is the ASGI middleware's
(:mod:`rankci.service.middleware`, 408).

The protocol is uvicorn's httptools one (the C parser ``llhttp``, installed by
``uvicorn[standard]``) when httptools is installed, else its pure-Python h11 one. Parsing a
request with h11 costs a few hundred microseconds of Python on the event loop, httptools a few;
that is most of what a single-score post or a refused wrong-token request costs the server. The
httptools class also refuses a request line plus headers longer than uvicorn's
``h11_max_incomplete_event_size`` (400 and close, as h11 does), which llhttp does not limit.
"""

from __future__ import annotations

import logging
import socket
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

try:  # uvicorn[standard]
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools not installed
    HttpToolsProtocol = None

__all__ = ["ConnectionCaps", "default_caps", "guarded_protocol"]

log = logging.getLogger("rankci.service")

_TCP_CORK = getattr(socket, "TCP_CORK", None)  # Linux
DEFAULT_MAX_HEADERS = 64 * 1024  # bytes of request line and headers (httptools protocol)


def guarded_protocol(
    seconds: float,
    parser: str = "auto",
    coalesce: bool = True,
    caps: ConnectionCaps | None = None,
) -> type:
    """A uvicorn protocol class that closes a connection whose request headers are late.

    The connection is closed when a request's line and headers are not complete ``seconds`` after
    the connection opened (or after the first byte of a later request on it).

    With ``coalesce`` (httptools protocol, Linux), a response's status line and headers and its
    body leave in one TCP segment: uvicorn writes them to the socket separately, and on loopback
    or a fast network each write is its own segment, which the client's kernel delivers and its
    process wakes up for. The socket is corked (``TCP_CORK``) from the end of a request's headers
    to the end of its response (not for a request that expects ``100 Continue``, which must go
    out at once); the kernel sends full segments meanwhile, so a streamed response still flows.

    Parameters
    ----------
    seconds : float
        Header deadline.
    parser : {"auto", "httptools", "h11"}, default "auto"
        The HTTP parser: httptools when it is installed ("auto"), else h11.
    coalesce : bool, default True
        Send each response's head and body together (see above; httptools only).
    caps : ConnectionCaps, optional
        The connection caps (total and per address); none by default.

    Returns
    -------
    type
        A subclass of uvicorn's ``HttpToolsProtocol`` or ``H11Protocol`` (pass it as uvicorn's
        ``http=``).

    References
    ----------
    Fielding, R., Nottingham, M. and Reschke, J. (2022). HTTP/1.1. RFC 9112 (message parsing).
    Linux ``tcp(7)``: ``TCP_CORK``.
    uvicorn documentation, "Settings" (``--http``, ``--timeout-keep-alive``),
    https://www.uvicorn.org/settings/.

    Examples
    --------
    >>> from uvicorn.protocols.http.h11_impl import H11Protocol
    >>> protocol = guarded_protocol(5.0, parser="h11")
    >>> protocol.__name__, protocol.header_timeout, issubclass(protocol, H11Protocol)
    ('GuardedH11Protocol', 5.0, True)
    >>> guarded_protocol(5.0).header_timeout
    5.0
    """
    if parser not in ("auto", "httptools", "h11"):
        raise ValueError(f"parser must be 'auto', 'httptools' or 'h11', got {parser!r}")
    if parser == "httptools" and HttpToolsProtocol is None:
        raise ValueError("parser='httptools' needs httptools (pip install 'uvicorn[standard]')")
    if parser != "h11" and HttpToolsProtocol is not None:
        return _httptools_protocol(seconds, coalesce and _TCP_CORK is not None, caps)

    class GuardedH11Protocol(_HeaderDeadline, H11Protocol):
        header_timeout = seconds
        caps = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._start_header_timer()
            self._admit(transport)

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:
                self._start_header_timer()
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the headers are complete
                self._cancel_header_timer()

        def _awaiting_headers(self) -> bool:
            return self.conn.their_state is h11.IDLE

    GuardedH11Protocol.caps = caps
    return GuardedH11Protocol


class ConnectionCaps:
    """At most ``total`` open connections, and at most ``per_address`` from one client address.

    A connection over the per-address cap is closed at once. At the total cap, the oldest
    connection still waiting for its request's headers (a half-open or idle one) is closed to
    make room, and the new one is closed only if there is none: a flood of half-open
    connections cannot take every file descriptor and starve legitimate clients. Either refusal
    is logged (a warning, at most one per cap every 10 seconds, with the count since the last).
    """

    LOG_EVERY = 10.0

    def __init__(self, total: int, per_address: int) -> None:
        self.total = total
        self.per_address = per_address
        self.open: dict = {}  # protocol -> address, in the order they connected
        self.by_address: dict[str, int] = {}
        self._refused = {"total": 0, "address": 0}
        self._logged = {"total": -1e9, "address": -1e9}

    def admit(self, protocol, address: str) -> bool:
        if self.by_address.get(address, 0) >= self.per_address:
            self._note("address", address)
            return False
        if len(self.open) >= self.total:
            oldest = next((p for p in self.open if p._awaiting_headers()), None)
            self._note("total", address)
            if oldest is None:
                return False
            oldest.transport.close()
            self.release(oldest)
        self.open[protocol] = address
        self.by_address[address] = self.by_address.get(address, 0) + 1
        return True

    def release(self, protocol) -> None:
        address = self.open.pop(protocol, None)
        if address is not None:
            left = self.by_address[address] - 1
            if left:
                self.by_address[address] = left
            else:
                del self.by_address[address]

    def _note(self, which: str, address: str) -> None:
        self._refused[which] += 1
        now = time.monotonic()
        if now - self._logged[which] >= self.LOG_EVERY:
            if which == "address":
                what = (
                    f"over the cap of {self.per_address} connections per address "
                    "(--max-connections-per-address); the last from " + address
                )
            else:
                what = (
                    f"at the cap of {self.total} open connections (--max-connections): "
                    "the oldest waiting for its headers closed, or the new one refused"
                )
            log.warning("connections refused: %d %s", self._refused[which], what)
            self._refused[which] = 0
            self._logged[which] = now


class _HeaderDeadline:
    """The header timer shared by both protocols: started when a request's line and headers
    are awaited, cancelled when they are complete, and on expiry the connection is closed if
    they are still awaited (``_awaiting_headers``)."""

    header_timeout: float
    _header_timer = None
    caps: ConnectionCaps | None = None

    def _admit(self, transport) -> None:
        """Close the connection at once when a cap refuses it (:class:`ConnectionCaps`)."""
        if self.caps is None:
            return
        peer = transport.get_extra_info("peername")
        address = peer[0] if isinstance(peer, tuple) else "unknown"
        if not self.caps.admit(self, address):
            transport.abort()

    def _awaiting_headers(self) -> bool:  # pragma: no cover - each protocol says
        raise NotImplementedError

    def _start_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._header_expired)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_expired(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            # still waiting for (the rest of) a request line and its headers
            self.transport.close()

    def connection_lost(self, exc) -> None:
        self._cancel_header_timer()
        if self.caps is not None:
            self.caps.release(self)
        super().connection_lost(exc)


class _HeadLimit:
    """The 64 KiB limit of a request's line and headers for httptools (counted as they arrive
    and as they are parsed), and TCP_CORK for coalescing a response's head with its body."""

    def data_received(self, data: bytes) -> None:
        completed, inside = self._completed, self._in_headers
        super().data_received(data)
        if inside and self._in_headers and completed == self._completed:
            # these bytes are all part of one request line and headers, still incomplete
            self._header_bytes += len(data)
            if self._header_bytes > self._max_headers and not self.transport.is_closing():
                self._cancel_header_timer()
                self.send_400_response("Invalid HTTP request received.")

    def _parsed(self, size: int) -> None:
        # the request line and headers as parsed: a complete head over the limit, even
        # one that arrived in a single read, is refused (an exception in a parser callback
        # makes httptools raise its parser error: uvicorn answers 400 and closes)
        self._parsed_bytes = getattr(self, "_parsed_bytes", 0) + size
        if self._parsed_bytes > self._max_headers:
            raise ValueError("request line and headers over the limit")

    def on_url(self, url: bytes) -> None:
        self._parsed(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._parsed(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _cork(self, on: int) -> None:
        if self._socket is not None and not self.transport.is_closing():
            try:
                self._socket.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, on)
            except OSError:  # pragma: no cover - not a TCP socket
                pass


def _httptools_protocol(seconds: float, coalesce: bool, caps=None) -> type:
    class GuardedHttpToolsProtocol(_HeaderDeadline, _HeadLimit, HttpToolsProtocol):
        header_timeout = seconds
        coalesces = coalesce

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._header_bytes = 0
            self._completed = 0  # requests whose headers were complete
            self._in_headers = True  # the first bytes are a request line and headers
            self._max_headers = (
                getattr(self.config, "h11_max_incomplete_event_size", None) or DEFAULT_MAX_HEADERS
            )
            self._socket = transport.get_extra_info("socket") if self.coalesces else None
            self._start_header_timer()
            self._admit(transport)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_headers = True
            self._parsed_bytes = 0
            self._start_header_timer()

        def on_headers_complete(self) -> None:
            self._in_headers = False
            self._header_bytes = 0
            self._parsed_bytes = 0
            self._completed += 1
            self._cancel_header_timer()
            if self.coalesces and not self.expect_100_continue:
                self._cork(1)  # the response's head waits for its body (or a full segment)
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            if self.coalesces:
                self._cork(0)  # out it goes
            super().on_response_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._in_headers = True  # what comes next is the next request's line and headers

        def _awaiting_headers(self) -> bool:
            return self._in_headers

    GuardedHttpToolsProtocol.caps = caps
    return GuardedHttpToolsProtocol


def default_caps(total: int | None = None, per_address: int = 256) -> ConnectionCaps:
    """The caps of ``rankci serve``: ``total`` defaults to 1,000, and is lowered to the open-file
    limit (``RLIMIT_NOFILE``) less 100 descriptors kept for the database, logs and the listening
    socket, so that the cap is met before the process runs out of descriptors.

    Examples
    --------
    >>> caps = default_caps(50, 10)
    >>> caps.total, caps.per_address
    (50, 10)
    """
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    room = soft - 100 if soft != resource.RLIM_INFINITY else 1_000_000
    return ConnectionCaps(max(1, min(total or 1000, room)), per_address)
