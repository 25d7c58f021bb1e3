"""A header deadline for uvicorn's HTTP/1.1 protocol (h11): slow clients cannot hold a
connection open by sending a request's headers a byte at a time.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but has no limit on how long
a request's headers may take. :func:`guarded_protocol` gives a protocol class that closes the
connection when a request's headers are not complete ``seconds`` after the connection opened
or after the request's first byte. The body's deadline is the ASGI middleware's
(:mod:`rankci.service.app`, 408).
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["guarded_protocol"]


def guarded_protocol(seconds: float) -> type:
    """A uvicorn h11 protocol class that closes a connection whose request headers are late.

    The connection is closed when a request's line and headers are not complete ``seconds`` after
    the connection opened (or after the first byte of a later request on it).

    Parameters
    ----------
    seconds : float
        Header deadline.

    Returns
    -------
    type
        A subclass of ``uvicorn.protocols.http.h11_impl.H11Protocol`` (pass it as uvicorn's
        ``http=``).

    References
    ----------
    Fielding, R., Nottingham, M. and Reschke, J. (2022). HTTP/1.1. RFC 9112 (message parsing).
    uvicorn documentation, "Settings" (``--http``, ``--timeout-keep-alive``),
    https://www.uvicorn.org/settings/.

    Examples
    --------
    >>> from uvicorn.protocols.http.h11_impl import H11Protocol
    >>> protocol = guarded_protocol(5.0)
    >>> protocol.__name__, protocol.header_timeout, issubclass(protocol, H11Protocol)
    ('GuardedH11Protocol', 5.0, True)
    """

    class GuardedH11Protocol(H11Protocol):
        header_timeout = seconds

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._header_timer = self.loop.call_later(self.header_timeout, self._header_expired)

        def data_received(self, data: bytes) -> None:
            if getattr(self, "_header_timer", None) is None and self.conn.their_state is h11.IDLE:
                self._header_timer = self.loop.call_later(self.header_timeout, self._header_expired)
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # the headers are complete
                self._cancel_header_timer()

        def connection_lost(self, exc) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def _cancel_header_timer(self) -> None:
            timer = getattr(self, "_header_timer", None)
            if timer is not None:
                timer.cancel()
                self._header_timer = None

        def _header_expired(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                # still waiting for (the rest of) a request line and its headers
                self.transport.close()

    return GuardedH11Protocol
