"""A small HTTP/1.1 server on the broker's event loop, for the opt-in operator endpoints:
``metrics.listeners`` (``GET /metrics``, ``GET /healthz``) and ``fault.injection.listener``
(``/faults``, tests only).

Not on any hot path, so plain asyncio streams. One request per connection (the reply carries
``Connection: close``). Bounded: a request head of at most 8 KiB, a body of at most 64 KiB, 10 s
to send them, at most 64 connections at once (more are closed at once). The routes' handlers run
on the event loop, so they read broker state while nothing changes it; a Prometheus scrape of
many partitions therefore holds the loop for the time it takes to format them (milliseconds for
thousands of partitions), a cost paid once per scrape interval.

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
MAX_CONNECTIONS = 64
TIMEOUT = 10.0

#: (status, content type, body)
Response = tuple[int, str, bytes]
Route = Callable[[str, bytes], Response | Awaitable[Response]]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Payload Too Large", 503: "Service Unavailable"}


def parse_http_listener(value: str, name: str) -> tuple[str, int]:
    """``http://127.0.0.1:9404`` -> ("127.0.0.1", 9404). Raises ValueError."""
    return parse_listener(value, name, "http", "127.0.0.1")


class HttpListener:
    def __init__(self, name: str, host: str, port: int, routes: dict[str, Route]) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.routes = routes
        self._server: asyncio.Server | None = None
        self._open = 0

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
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        try:
            if self._open > MAX_CONNECTIONS:
                return
            try:
                status, ctype, body = await asyncio.wait_for(self._handle(reader), TIMEOUT)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                    ConnectionError):
                return
            head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {ctype}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            writer.write(head.encode() + body)
            await asyncio.wait_for(writer.drain(), TIMEOUT)
        except (TimeoutError, ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - one bad request must not take the listener down
            logger.exception("%s: request failed", self.name)
        finally:
            self._open -= 1
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader) -> Response:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) != 3:
            return 400, "text/plain", b"bad request line\n"
        method, target = parts[0], parts[1]
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        if length < 0 or length > MAX_BODY:
            return 413, "text/plain", b"body too large\n"
        body = await reader.readexactly(length) if length else b""
        route = self.routes.get(urlsplit(target).path)
        if route is None:
            return 404, "text/plain", b"not found\n"
        result = route(method, body)
        if not isinstance(result, tuple):
            result = await result
        return result
