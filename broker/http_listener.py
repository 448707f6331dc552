"""A small HTTP/1.1 server on the broker's event loop, for the opt-in operator endpoints:
``metrics.listeners`` (``GET /metrics``, ``GET /healthz``) and ``fault.injection.listener``
(``/faults``, tests only).

Not on any hot path, so plain asyncio streams. One request per connection (the reply carries
``Connection: close``). A route's handler runs on the event loop and may return an awaitable
(``/metrics`` does: broker/metrics.py copies what it needs on the loop and formats it in a
thread, so a scrape does not hold the loop).

Bounded, so that neither a slow client nor a crowd of idle sockets keeps ``/healthz`` from an
orchestrator's health check (which connects, sends its request at once and reads the reply
within a few seconds):

- a request head of at most 8 KiB, a body of at most 64 KiB;
- a connection that has sent no byte ``idle_timeout`` seconds after it was accepted
  (``metrics.connections.max.idle.ms``, 5 s) is closed; one whose request (head and body) is not
  complete ``request_timeout`` seconds after it was accepted (``metrics.request.timeout.ms``,
  30 s) is closed; so is one that has not read its whole reply ``request_timeout`` seconds after
  it was written;
- at most ``max_connections`` open at once (``metrics.connections.max``, 64). A connection
  accepted when that many are open closes the oldest of those whose request is not complete
  yet (idle, or sending slowly) and takes its place: holding sockets open cannot lock a
  newcomer out, and a client that sends its request at once is served. Only when every open
  connection has a complete request being answered (each bounded by the route's time and the
  reply's ``request_timeout``) is the newcomer closed at once.

Listener syntax: ``http://HOST:PORT`` (``PORT`` 0 = any free port); only the first of a
comma-separated list is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from .config import parse_listener

__all__ = ["HttpListener", "Response", "parse_http_listener"]

logger = logging.getLogger("broker.http")

MAX_HEAD = 8192
MAX_BODY = 65536
#: defaults of ``metrics.connections.max``, ``metrics.connections.max.idle.ms`` (in seconds) and
#: ``metrics.request.timeout.ms`` (in seconds); the fault injection listener uses them as they are
MAX_CONNECTIONS = 64
IDLE_TIMEOUT = 5.0
REQUEST_TIMEOUT = 30.0

#: (status, content type, body)
Response = tuple[int, str, bytes]
#: (method, target, body)
Request = tuple[str, str, bytes]
Route = Callable[[str, bytes], Response | Awaitable[Response]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Payload Too Large", 503: "Service Unavailable"}


def parse_http_listener(value: str, name: str) -> tuple[str, int]:
    """``http://127.0.0.1:9404`` -> ("127.0.0.1", 9404). Raises ValueError."""
    return parse_listener(value, name, "http", "127.0.0.1")


class HttpListener:
    def __init__(self, name: str, host: str, port: int, routes: dict[str, Route], *,
                 max_connections: int = MAX_CONNECTIONS, idle_timeout: float = IDLE_TIMEOUT,
                 request_timeout: float = REQUEST_TIMEOUT) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.routes = routes
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self._server: asyncio.Server | None = None
        #: the open connections, oldest first: True once its whole request is read (it is then
        #: never closed to make room), False before
        self._open: dict[asyncio.StreamWriter, bool] = {}

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=MAX_HEAD)
        except OSError as e:  # the line an operator sees names the listener and the address
            error = OSError(f"{self.name} listener: cannot listen on {self.host}:{self.port}: {e.strerror or e}")
            error.errno = e.errno
            raise error from None
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):
                writer.close()
            await self._server.wait_closed()

    def _make_room(self) -> bool:
        """Close the oldest connection whose request is not complete; False if there is none."""
        for writer, answering in self._open.items():
            if not answering:
                del self._open[writer]
                writer.close()
                return True
        return False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= self.max_connections and not self._make_room():
            writer.close()
            return
        self._open[writer] = False
        try:
            try:
                request = await self._read(reader)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                    ConnectionError):
                return
            if request is None or writer not in self._open:  # closed by the client, or to make room
                return
            self._open[writer] = True
            status, ctype, body = request if isinstance(request[0], int) else await self._answer(*request)
            head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {ctype}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            writer.write(head.encode() + body)
            await asyncio.wait_for(writer.drain(), self.request_timeout)
        except (TimeoutError, ConnectionError):
            pass
        except Exception:  # one bad request must not take the listener down
            logger.exception("%s: request failed", self.name)
        finally:
            self._open.pop(writer, None)
            writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> Request | Response | None:
        """(method, target, body) of the request, the Response to a bad one, or None if the
        client closed the connection without sending anything. Raises TimeoutError past
        ``idle_timeout`` with nothing sent, or ``request_timeout`` without a whole request."""
        loop = asyncio.get_running_loop()
        accepted = loop.time()
        async with asyncio.timeout(self.idle_timeout) as deadline:
            first = await reader.read(1)
            if not first:
                return None
            deadline.reschedule(accepted + self.request_timeout)
            head = first + await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split()
            if len(parts) != 3:
                return 400, "text/plain", b"bad request line\n"
            length = 0
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip())
            if length < 0 or length > MAX_BODY:
                return 413, "text/plain", b"body too large\n"
            body = await reader.readexactly(length) if length else b""
        return parts[0], parts[1], body

    async def _answer(self, method: str, target: str, body: bytes) -> Response:
        route = self.routes.get(urlsplit(target).path)
        if route is None:
            return 404, "text/plain", b"not found\n"
        result = route(method, body)
        if not isinstance(result, tuple):
            result = await result
        return result
