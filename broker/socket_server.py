"""The broker's only socket code: accept connections, read frames, dispatch them to the
handlers, and write responses strictly in request order, fetch record bytes by ``os.sendfile``.

Per connection, two tasks share one non-blocking socket:
- the *reader* receives into the server's one read buffer (shared: its bytes are handed to the
  connection's FrameDecoder before anything awaits, so an idle connection holds no buffer),
  cuts frames (with the ``socket.request.max.bytes`` guard), decodes each request and queues
  its response: a ready body, or a task (acks=all waiting for fsync, a Fetch long-poll).
  Requests are pipelined; the reader pauses as soon as ``queued.max.requests`` responses are
  pending (checked after every request, not every read), and yields to the other connections
  after ``_SLICE`` seconds of handling one connection's requests, so a client pipelining
  thousands of expensive requests in one read cannot stall the others. Its readability callback
  stays registered while it reads (``loop.sock_recv_into`` would add and remove it per call),
  and while the writer is idle it sends ready replies itself (``_flush_ready``).
- the *writer* takes responses in queue order, so replies leave in request order whatever
  order they complete in. Ready responses queued together go out in one ``send``. A Fetch
  reply is written as: header bytes, then each partition's records straight from the ``.log``
  with ``os.sendfile``, then the next partition's header bytes, and so on.

uvloop implements neither ``loop.sendfile`` nor ``loop.sock_sendfile``, so the writer calls
``os.sendfile`` on the socket itself and, on EAGAIN, waits for writability with
``loop.add_writer`` (the socket is never handed to a transport, so that is allowed).

Limits (Kafka's names and defaults): ``max.connections`` and ``max.connections.per.ip``
(unbounded by default, as Kafka) refuse new connections above them; ``connections.max.idle.ms``
(10 minutes) closes a connection that has completed no request for that long — which also ends
a client that drips a request byte by byte (Kafka counts any bytes as activity; here only whole
requests do).

Request hook: ``BrokerServer.request_hook``, when set (metrics on, or fault rules pending; see
broker.py), is called instead of the handler for every decoded request and returns what a
handler returns; ``Connection.abort`` lets it drop the connection. When None, the dispatch
below calls the handlers inline (no extra call per request).

Bad input: a frame larger than ``socket.request.max.bytes`` (refused before its body is read),
a negative size, a header or body that does not decode, an unknown API key or an unsupported
version (other than ApiVersions, which gets Kafka's v0 fallback answer) close that connection
after a log line; other connections are unaffected.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import logging
import os
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.protocol.frame import FrameDecoder, FrameError
from client.protocol.header import decode_request_header, encode_response_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import DecodeError, Writer

from .handlers import CLOSE, HANDLERS, NO_RESPONSE, FetchReply
from .handlers import fetch as fetch_handler
from .state import BrokerState
from .storage.file_records import FileSlice

__all__ = ["BrokerServer", "SENDFILE_STATS", "handle_request"]

logger = logging.getLogger("broker.socket_server")

_RECV_SIZE = 1 << 18
#: Longest a connection's reader handles requests before letting the other connections run.
_SLICE = 0.002
#: Largest request other than Produce (Metadata, Fetch, CreateTopics, ...): 1 MiB holds ~35,000
#: fetch partitions. Bounds the memory one request's decoding can take (a 1 MiB Metadata
#: request of empty topic names decodes to ~280 MB of dicts).
MAX_CONTROL_REQUEST = 1 << 20
_SIZE = struct.Struct(">i")

#: Counters of the zero-copy path (tests prove fetch bytes go through os.sendfile).
SENDFILE_STATS = {"calls": 0, "bytes": 0}


def handle_request(key: int, version: int, cid: int, request: dict[str, Any], state: BrokerState) -> Any:
    """The handler's answer to one request (what a request hook calls for the real work)."""
    if key == ApiKey.FETCH:
        return fetch_handler.handle(request, version, state, cid)
    return HANDLERS[key](request, version, state)


class _Close(Exception):
    """Close this connection (after logging why)."""


class _Pending:
    """A queued response still being computed (acks=all, Fetch long-poll)."""

    __slots__ = ("key", "version", "cid", "task")

    def __init__(self, key: int, version: int, cid: int, task: asyncio.Future[Any]) -> None:
        self.key, self.version, self.cid, self.task = key, version, cid, task


def _api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: an ApiVersions request above our max gets a v0 response header and a v0 body:
    UNSUPPORTED_VERSION plus our ApiVersions range, so the client can retry with a version we
    support."""
    lo, hi = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    body = struct.pack(">ihihhh", correlation_id, ErrorCode.UNSUPPORTED_VERSION, 1, ApiKey.API_VERSIONS, lo, hi)
    return _SIZE.pack(len(body)) + body


class Connection:
    def __init__(self, server: BrokerServer, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.loop = asyncio.get_running_loop()
        self.decoder = FrameDecoder(server.max_request_size)
        self.queue: collections.deque[Any] = collections.deque()
        self.queue_event = asyncio.Event()
        self.drained = asyncio.Event()
        self.drained.set()
        self.closing = False
        # True while the writer task waits for work with nothing in hand: the reader may then
        # send ready responses itself (_flush_ready) without breaking the reply order.
        self._writer_idle = False
        self._read_waiter: asyncio.Future[None] | None = None
        self._reader_added = False
        #: loop time of the last whole request received (or reply sent): the idle timeout's clock
        self.last_active = time.monotonic()

    # ------------------------------------------------------------ reading

    async def run(self) -> None:
        writer = asyncio.ensure_future(self._writer())
        buf = self.server.read_buffer
        view = memoryview(buf)
        reads = 0  # reads in a row that found data, without yielding to the loop
        try:
            while not self.closing:
                if reads >= 2:  # a client streaming requests must not starve the others
                    reads = 0
                    await asyncio.sleep(0)
                try:
                    n = self.sock.recv_into(buf)
                except BlockingIOError:
                    reads = 0
                    await self._readable()
                    continue
                reads += 1
                if n == 0:
                    break
                self.decoder.feed(view[:n])  # copied out of the shared buffer before any await
                await self._handle_frames()
        except FrameError as e:
            logger.warning("closing connection from %s: %s", self.peer, e)
        except _Close as e:
            logger.warning("closing connection from %s: %s", self.peer, e)
        except (ConnectionError, OSError) as e:
            logger.debug("connection from %s failed: %s", self.peer, e)
        finally:
            self.closing = True
            self._stop_reading()
            # No one will read the reply of a Fetch still long-polling: end it now instead of
            # holding the socket (and its fd) for the client-chosen max_wait_ms (up to 24 days).
            # The writer stops at it. Kafka drops a closed channel's delayed fetch replies too.
            for item in self.queue:
                if isinstance(item, _Pending) and item.key == ApiKey.FETCH:
                    item.task.cancel()
            self.queue.append(None)  # end marker: the writer sends what is before it, then stops
            self.queue_event.set()
            try:
                await writer
            except Exception:  # noqa: BLE001
                pass
            self.server.connections.discard(self)
            try:
                self.sock.close()
            except OSError:
                pass

    def close(self) -> None:
        """Close this connection from the server's side (idle timeout, fault injection): the
        reader and writer see it and free everything, as when the peer goes away."""
        self.closing = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.drained.set()
        self._on_readable()
        self.queue_event.set()

    async def _handle_frames(self) -> None:
        """Dispatch the whole frames buffered, pausing (reads stopped) while the response queue
        is full and yielding to the loop every ``_SLICE`` seconds."""
        # time.monotonic, not loop.time: uvloop's clock only advances between loop iterations
        clock = time.monotonic
        yield_at = clock() + _SLICE
        while not self.closing and (frame := self.decoder.next_frame()) is not None:
            self._dispatch(frame)
            now = clock()
            self.last_active = now
            if len(self.queue) >= self.server.max_queued:
                self._flush_ready()  # may send (and dequeue) the ready replies at once
                if len(self.queue) >= self.server.max_queued:
                    self._stop_reading()  # unread bytes would make a level-triggered reader spin
                    self.drained.clear()
                    await self.drained.wait()
                yield_at = clock() + _SLICE
            elif now >= yield_at:
                self._flush_ready()
                await asyncio.sleep(0)
                yield_at = clock() + _SLICE
        self._flush_ready()

    async def _readable(self) -> None:
        """Wait until the socket is readable. The reader callback stays registered between
        waits: ``loop.sock_recv_into`` adds and removes it around every call (two epoll_ctl
        and uvloop's transport check per request)."""
        if not self._reader_added:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reader_added = True
        self._read_waiter = self.loop.create_future()
        try:
            await self._read_waiter
        finally:
            self._read_waiter = None

    def _on_readable(self) -> None:
        w = self._read_waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _stop_reading(self) -> None:
        if self._reader_added:
            self._reader_added = False
            try:
                self.loop.remove_reader(self.fd)
            except (OSError, ValueError):
                pass

    def _dispatch(self, frame: bytearray) -> None:
        try:
            header, reader = decode_request_header(frame)
        except DecodeError as e:
            raise _Close(f"malformed request header: {e}") from None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        supported = SUPPORTED_VERSIONS.get(key)  # type: ignore[call-overload]
        if supported is None:
            raise _Close(f"unknown API key {key} (correlation id {cid}, client {header.client_id!r})")
        if key != ApiKey.PRODUCE and len(frame) > MAX_CONTROL_REQUEST:
            # Every decoded element becomes a Python dict (~100x its wire size when elements
            # are 2 bytes), so only Produce, whose bulk is one records blob, may use the full
            # socket.request.max.bytes; the others are small in practice.
            raise _Close(f"{ApiKey(key).name} request of {len(frame)} bytes is larger than {MAX_CONTROL_REQUEST}")
        if not supported[0] <= version <= supported[1]:
            if key == ApiKey.API_VERSIONS and version > supported[1]:
                self._enqueue(_api_versions_fallback(cid))
                return
            raise _Close(f"unsupported version {version} of API {ApiKey(key).name} (supported {supported[0]}-{supported[1]})")
        try:
            request = REQUESTS[key].decode(reader, version)
        except DecodeError as e:
            raise _Close(f"malformed {ApiKey(key).name} v{version} request body: {e}") from None
        if reader.remaining:
            logger.debug("%d trailing bytes after %s v%d from %s", reader.remaining, ApiKey(key).name, version, self.peer)
        if key == ApiKey.JOIN_GROUP:  # the member's client id and host are part of the group's state
            request["_client_id"] = header.client_id or ""
            request["_client_host"] = "/" + self.peer.rpartition(":")[0]
        hook = self.server.request_hook
        if hook is not None:
            result = hook(self, key, version, cid, request)
        elif key == ApiKey.FETCH:
            result = fetch_handler.handle(request, version, self.server.state, cid)
        else:
            result = HANDLERS[key](request, version, self.server.state)
        if result is NO_RESPONSE:
            return
        if result is CLOSE:
            raise _Close("acks=0 produce request failed; closing as Kafka does so the producer notices")
        if type(result) is not dict and asyncio.iscoroutine(result):  # the type test spares an ABC check
            task = asyncio.ensure_future(result)
            self._enqueue(_Pending(key, version, cid, task))
        else:
            self._enqueue(self._encode(key, version, cid, result))

    def _encode(self, key: int, version: int, cid: int, body: Any) -> bytes | FetchReply:
        if isinstance(body, FetchReply):
            return body
        w = Writer(bytearray(4))
        encode_response_header(w, key, version, cid)
        RESPONSES[key].encode(body, version, w)
        _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
        return bytes(w.buf)

    def _enqueue(self, item: Any) -> None:
        self.queue.append(item)
        if not (self._writer_idle and type(item) is bytes):
            self.queue_event.set()
        # else: run() calls _flush_ready() after this batch of frames

    def _flush_ready(self) -> None:
        """Fast path: with the writer idle, send the ready replies at the head of the queue now,
        from the reader, in one ``send``, instead of waking the writer (an Event, a future and a
        task step per request). Whatever does not go out at once (a partial send, an acks=all or
        Fetch reply behind them) is left, in order, to the writer. With the persistent reader
        (_readable), broker CPU per small produce request went from ~120 to ~78 us
        (scripts/bench.py --only latency, raw socket, 2-core VM)."""
        q = self.queue
        if not (self._writer_idle and q):
            return
        if type(q[0]) is bytes:
            data = q.popleft()
            if q and type(q[0]) is bytes:
                parts = [data]
                while q and type(q[0]) is bytes:
                    parts.append(q.popleft())
                data = b"".join(parts)
            try:
                n = self.sock.send(data)
            except OSError:  # BlockingIOError, or a real error the writer will meet and report
                n = 0
            if n < len(data):
                q.appendleft(data[n:])
        if q:
            self.queue_event.set()

    def abort(self, reason: str) -> None:
        """Drop this connection now (fault injection): replies not yet sent are lost."""
        logger.info("dropping connection from %s: %s", self.peer, reason)
        self.close()

    # ------------------------------------------------------------ writing

    async def _writer(self) -> None:
        q = self.queue
        pending = bytearray()
        try:
            while True:
                if not q:
                    if pending:
                        await self._send(pending)
                        pending = bytearray()
                        continue  # replies queued while the send waited: look again before idling
                    self.queue_event.clear()
                    self._writer_idle = True
                    try:
                        await self.queue_event.wait()
                    finally:
                        self._writer_idle = False
                    continue
                item = q[0]
                if item is None:
                    break
                if isinstance(item, _Pending):
                    key, version, cid, task = item.key, item.version, item.cid, item.task
                    if not task.done():
                        if pending:
                            await self._send(pending)
                            pending = bytearray()
                        await asyncio.wait([task])
                    if task.cancelled():
                        raise _Close("connection closing with a long-poll Fetch in flight")
                    try:
                        item = self._encode(key, version, cid, task.result())
                    except Exception as e:  # noqa: BLE001
                        logger.exception("request %d (%s v%d) from %s failed", cid, ApiKey(key).name, version, self.peer)
                        raise _Close(str(e)) from e
                q.popleft()
                self.last_active = time.monotonic()
                if len(q) < self.server.max_queued:
                    self.drained.set()
                if isinstance(item, FetchReply):
                    if pending:
                        await self._send(pending)
                        pending = bytearray()
                    await self._send_fetch(item)
                else:
                    pending += item
                    if len(pending) > (1 << 20):
                        await self._send(pending)
                        pending = bytearray()
            if pending:
                await self._send(pending)
        except Exception as e:  # noqa: BLE001 - any failure closes just this connection
            if isinstance(e, (ConnectionError, _Close)):
                logger.debug("writer for %s stopped: %s", self.peer, e)
            else:
                logger.exception("writer for %s failed; closing the connection", self.peer)
            for it in q:
                if isinstance(it, _Pending):
                    it.task.cancel()
            # The reader may be parked on a full queue (queued.max.requests) or on readability:
            # close() releases both so it sees ``closing`` and the connection's state is freed.
            self.close()

    async def _send(self, data: bytes | bytearray) -> None:
        try:
            n = self.sock.send(data)
        except BlockingIOError:
            n = 0
        if n < len(data):
            await self.loop.sock_sendall(self.sock, memoryview(data)[n:])

    async def _send_fetch(self, reply: FetchReply) -> None:
        prefix = True
        for part in reply.parts:
            if isinstance(part, FileSlice):
                await self._sendfile(part)
            else:
                await self._send((_SIZE.pack(reply.size) + part) if prefix else part)
            prefix = False

    async def _sendfile(self, s: FileSlice) -> None:
        offset, count = s.position, s.size
        while count > 0:
            try:
                sent = os.sendfile(self.fd, s.fd, offset, count)
            except BlockingIOError:
                await self._writable()
                continue
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    await self._writable()
                    continue
                raise
            if sent == 0:
                raise _Close(f"log file shrank during a fetch (fd {s.fd} at {offset})")
            SENDFILE_STATS["calls"] += 1
            SENDFILE_STATS["bytes"] += sent
            offset += sent
            count -= sent

    async def _writable(self) -> None:
        fut = self.loop.create_future()
        self.loop.add_writer(self.fd, lambda: fut.done() or fut.set_result(None))
        try:
            await fut
        finally:
            self.loop.remove_writer(self.fd)


class BrokerServer:
    """Listens on ``host:port`` and serves ``state``; ``start()``, then ``stop()``."""

    def __init__(self, state: BrokerState, host: str, port: int) -> None:
        self.state = state
        self.host = host
        self.port = port
        self.max_request_size = state.config.int("socket.request.max.bytes")
        self.max_queued = state.config.int("queued.max.requests")
        self.max_connections = state.config.int("max.connections")
        self.max_connections_per_ip = state.config.int("max.connections.per.ip")
        self.max_idle = state.config.int("connections.max.idle.ms") / 1000
        #: the one receive buffer of every connection (all run on this loop's thread)
        self.read_buffer = bytearray(_RECV_SIZE)
        self.connections: set[Connection] = set()
        self._per_ip: collections.Counter[str] = collections.Counter()
        self.accepted = 0
        #: None, or ``hook(connection, api_key, version, correlation_id, request)`` called instead
        #: of the handler for every decoded request (metrics, fault injection; see
        #: ``handle_request``); returns what a handler returns.
        self.request_hook: Callable[[Connection, int, int, int, dict[str, Any]], Any] | None = None
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task[None] | None = None
        self._idle_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, addr = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(512)
        sock.setblocking(False)
        self._listener = sock
        self.port = sock.getsockname()[1]
        self._accept_task = asyncio.ensure_future(self._accept_loop())
        self._idle_task = asyncio.ensure_future(self._close_idle_connections())

    async def _close_idle_connections(self) -> None:
        """Every tenth of ``connections.max.idle.ms`` (at most 30 s), close the connections with
        no whole request (and no reply in progress) for longer than that."""
        period = min(self.max_idle / 10, 30.0)
        while True:
            await asyncio.sleep(period)
            deadline = time.monotonic() - self.max_idle
            for conn in list(self.connections):
                if conn.last_active < deadline and not conn.queue and not conn.closing:
                    logger.info("closing connection from %s: idle for more than connections.max.idle.ms (%d ms)",
                                conn.peer, int(self.max_idle * 1000))
                    conn.close()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._listener is not None
        while True:
            try:
                conn_sock, addr = await loop.sock_accept(self._listener)
            except asyncio.CancelledError:
                raise
            except OSError as e:
                logger.warning("accept failed: %s", e)
                await asyncio.sleep(0.05)
                continue
            ip = addr[0]
            if len(self.connections) >= self.max_connections or self._per_ip[ip] >= self.max_connections_per_ip:
                logger.warning("refusing a connection from %s: %d open (max.connections %d), %d from that address"
                               " (max.connections.per.ip %d)", ip, len(self.connections), self.max_connections,
                               self._per_ip[ip], self.max_connections_per_ip)
                conn_sock.close()
                continue
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self, conn_sock, f"{ip}:{addr[1]}")
            self.connections.add(conn)
            self._per_ip[ip] += 1
            self.accepted += 1
            task = asyncio.ensure_future(conn.run())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda _t, ip=ip: self._forget_ip(ip))

    def _forget_ip(self, ip: str) -> None:
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]

    async def stop_accepting(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        if self._accept_task is not None:
            self._accept_task.cancel()
            try:
                await self._accept_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        if self._listener is not None:
            self._listener.close()

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``grace`` s), close connections."""
        await self.stop_accepting()
        for conn in list(self.connections):
            conn.closing = True
            try:
                conn.sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        if self._tasks:
            done, pending = await asyncio.wait(list(self._tasks), timeout=grace)
            for t in pending:
                t.cancel()
