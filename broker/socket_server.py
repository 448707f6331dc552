"""The broker's only socket code: accept connections, read frames, dispatch them to the
handlers, and write responses strictly in request order, fetch record bytes by ``os.sendfile``.

Per connection, no task: two loop callbacks share one non-blocking socket, so a request that
is answered at once costs one wake-up (epoll, the callback: ``recv``, handle, ``send``).
- *Reading* (``_on_readable``, registered with ``loop.add_reader`` for the connection's life):
  one ``recv`` into the server's one read buffer (shared: its bytes are copied into the
  connection's FrameDecoder at once, so an idle connection holds no buffer), then
  ``_process`` cuts frames (with the ``socket.request.max.bytes`` guard), decodes each request
  and queues its reply: the encoded bytes, or a ``_Pending`` task when the handler must wait
  (acks=all until fsync, a Fetch long-poll, a coordinator's answer after its write). Requests
  are pipelined; reading stops (``remove_reader``: unread bytes would make the level-triggered
  callback spin) as soon as ``queued.max.requests`` replies are pending, checked after every
  request, and resumes once the queue is below it again. After ``_SLICE`` seconds of one
  connection's requests, with more of them buffered, reading stops too and the rest is
  continued by ``call_soon``, after the callbacks already due: a client pipelining thousands
  of requests in one read cannot stall the others.
- *Writing* (``_flush``) takes the replies from the head of the queue, so they leave in
  request order whatever order they complete in, and sends them as far as the socket takes
  them: ready replies in a row in one ``send``; a Fetch reply as header bytes, then each
  partition's records straight from the ``.log`` with ``os.sendfile``, then the next
  partition's header bytes, and so on. It runs after each batch of requests (in the same
  callback), when the task at the head completes (its done callback), and, after a partial
  send, when the socket is writable again (``loop.add_writer``).

uvloop implements neither ``loop.sendfile`` nor ``loop.sock_sendfile``, so ``os.sendfile`` is
called on the socket itself; the socket is never handed to a transport, which is what allows
``add_reader``/``add_writer`` on its descriptor. (uvloop's Protocol API would read and write in
C, but its transports own the socket and offer no sendfile.)

Limits (Kafka's names and defaults): ``max.connections`` and ``max.connections.per.ip``
(unbounded by default, as Kafka) refuse new connections above them; ``connections.max.idle.ms``
(10 minutes; negative: never) closes a connection that has completed no request for that long — which also ends
a client that drips a request byte by byte (Kafka counts any bytes as activity; here only whole
requests do).

Request hook: ``BrokerServer.request_hook``, when set (metrics on, or fault rules pending; see
broker.py), is called instead of the handler for every decoded request and returns what a
handler returns; ``Connection.abort`` lets it drop the connection. When None, the dispatch
below calls the handlers inline (no extra call per request).

Bad input: a frame larger than ``socket.request.max.bytes`` (refused before its body is read),
a negative size, a header or body that does not decode (a body of more than
``MAX_REQUEST_ELEMENTS`` array elements included: the decode budget bounding the memory of one
decoded request), an unknown API key or an unsupported
version (other than ApiVersions, which gets Kafka's v0 fallback answer) close that connection
after a log line; other connections are unaffected. Every log line a peer can trigger (these,
a request that fails, an idle or refused connection) goes through ``BrokerServer.log_limiter``:
per peer host and cause, the first at once, then at most one per 10 s with the count of the
others (log_limiter.py), so that a client retrying in a loop cannot fill the disk.
"""

from __future__ import annotations

import asyncio
import collections
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
from .log_limiter import LogLimiter
from .request_context import RequestContext, Session
from .state import BrokerState
from .storage.file_records import FileSlice

__all__ = ["BrokerServer", "Connection", "RequestHook", "SENDFILE_STATS", "handle_request"]

#: Linux delays the ACK of received bytes (up to ~40 ms) while it has nothing to send back; a
#: client with Nagle on (librdkafka's default) holds its next small request until the previous
#: one is ACKed, so a request that arrives while the broker is still busy answering the one
#: before it could wait that long. TCP_QUICKACK after each read ACKs at once (the kernel clears
#: the flag again after a while, hence per read). One setsockopt per read: its cost and what it
#: does to librdkafka's produce latency are measured by ``scripts/bench.py --only
#: requests,latency`` (docs/pages/benchmarks.md quotes them).
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)
logger = logging.getLogger("broker.socket_server")

_RECV_SIZE = 1 << 18
#: Longest a connection's reader handles requests before letting the other connections run.
_SLICE = 0.002
#: The decode budget: most array elements one request may decode to (every API; the header is
#: not counted). A request's size is bounded by ``socket.request.max.bytes`` alone, as in
#: Kafka, but its decoded form is not bounded by its size: each element becomes a dict (~200-260
#: bytes) or a value, and an element can take two bytes on the wire (100 MiB of empty Metadata
#: topic names would decode to ~10 GB). 200,000 elements decode to at most ~50 MB,
#: and hold any request a client sends in practice (an OffsetCommit of 40,000 partitions is
#: 40,000 elements; a Fetch of every partition of a large cluster, a CreateTopics of thousands
#: of topics); Produce's records are one blob, not elements. A request above it closes the
#: connection, as any malformed request does. Every element takes at least one byte, so
#: only frames longer than the budget get one (no cost per small request).
MAX_REQUEST_ELEMENTS = 200_000
_SIZE = struct.Struct(">i")

#: ``hook(connection, context, request)``: see ``BrokerServer.request_hook``
RequestHook = Callable[["Connection", RequestContext, dict[str, Any]], Any]

#: Counters of the zero-copy path (tests prove fetch bytes go through os.sendfile).
SENDFILE_STATS = {"calls": 0, "bytes": 0}


def handle_request(ctx: RequestContext, request: dict[str, Any]) -> Any:
    """The handler's answer to one request (what a request hook calls for the real work)."""
    return HANDLERS[ctx.api_key](ctx, request)


class _Close(Exception):
    """Close this connection (after logging why); ``cause`` keys the log line's rate limit."""

    def __init__(self, message: str, cause: str = "closed") -> None:
        super().__init__(message)
        self.cause = cause


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
    """One client connection: the readable callback (``_on_readable``) and the write path
    (``_flush``) described in the module docstring."""

    def __init__(self, server: BrokerServer, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        #: the peer's address without the port: the key of its log lines' rate limit
        self.host, _, port = peer.rpartition(":")
        #: who is at the other end (the principal, once authentication exists): every request's context holds it
        self.session = Session(self.host, int(port or 0))
        self.loop = asyncio.get_running_loop()
        self.decoder = FrameDecoder(server.max_request_size)
        #: replies in request order: bytes (a whole frame), a deque of wire parts (bytes,
        #: memoryview, FileSlice: a Fetch reply, or what is left of a partial send), _Pending
        self.queue: collections.deque[Any] = collections.deque()
        #: no more requests are read (peer gone, bad input, close()); replies still go out
        self.closing = False
        #: set once the socket is closed and the connection forgotten
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self._reading = False       # the readable callback is registered
        self._paused = False        # reading stopped: queued.max.requests replies pending
        self._resume: asyncio.Handle | None = None  # a _SLICE yield's continuation
        self._waiting: asyncio.Future[Any] | None = None  # the queue head's task we wait for
        self._writable = False      # the writable callback is registered (socket buffer full)
        self._finished = False
        #: time.monotonic of the last whole request received (or reply sent): the idle timeout's clock
        self.last_active = time.monotonic()

    def start(self) -> None:
        self._start_reading()

    # ------------------------------------------------------------ reading

    def _start_reading(self) -> None:
        if not self._reading:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            try:
                self.loop.remove_reader(self.fd)
            except (OSError, ValueError):
                pass

    def _on_readable(self) -> None:
        """One ``recv`` into the server's shared buffer, then the frames it completes. One read
        per callback: if more bytes wait, the (level-triggered) callback runs again after the
        other ready connections had their turn."""
        try:
            n = self.sock.recv_into(self.server.read_buffer)
        except BlockingIOError:  # a spurious wake-up
            return
        except OSError as e:
            logger.debug("connection from %s failed: %s", self.peer, e)
            self._end()
            return
        if n == 0:
            self._end()
            return
        if _QUICKACK is not None:
            try:
                self.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:  # the connection is going away: the next read says so
                pass
        self.decoder.feed(self.server.read_view[:n])  # copied out of the shared buffer
        self._process()

    def _process(self) -> None:
        """Dispatch the whole frames buffered, then send the replies that are ready. Stops
        reading while ``queued.max.requests`` replies are pending (``_flush`` resumes), and
        after ``_SLICE`` seconds of this connection's requests (resumed by ``call_soon``, after
        the callbacks already due: the other connections)."""
        self._resume = None
        # time.monotonic, not loop.time: uvloop's clock only advances between loop iterations
        clock = time.monotonic
        yield_at = clock() + _SLICE
        queue, max_queued = self.queue, self.server.max_queued
        try:
            while not self.closing and (frame := self.decoder.next_frame()) is not None:
                self._dispatch(frame)
                now = self.last_active = clock()
                if len(queue) >= max_queued:
                    self._flush()
                    if len(queue) >= max_queued:
                        self._stop_reading()  # unread bytes would make a level-triggered reader spin
                        self._paused = True
                        return
                elif now >= yield_at and self.decoder.buffered >= 4:  # more requests wait: yield
                    self._stop_reading()
                    self._flush()
                    self._resume = self.loop.call_soon(self._process)
                    return
        except (FrameError, _Close) as e:
            cause = e.cause if isinstance(e, _Close) else "bad frame"
            self.server.log_limiter.warning(self.host, cause, "closing connection from %s: %s", self.peer, e)
            self._end()
            return
        except Exception:  # a failing request closes just this connection
            self.server.log_limiter.log(logging.ERROR, self.host, "request failed",
                                        "request from %s failed; closing the connection", self.peer, exc_info=True)
            self._end()
            return
        self._flush()
        if not self.closing:
            self._start_reading()

    def _dispatch(self, frame: bytearray) -> None:
        try:
            header, reader = decode_request_header(frame)
        except DecodeError as e:
            raise _Close(f"malformed request header: {e}", "malformed header") from None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        supported = SUPPORTED_VERSIONS.get(key)  # type: ignore[call-overload]
        if supported is None:
            raise _Close(f"unknown API key {key} (correlation id {cid}, client {header.client_id!r})", "unknown API key")
        if len(frame) > MAX_REQUEST_ELEMENTS:
            reader.elements = MAX_REQUEST_ELEMENTS
        if not supported[0] <= version <= supported[1]:
            if key == ApiKey.API_VERSIONS and version > supported[1]:
                self.queue.append(_api_versions_fallback(cid))
                return
            raise _Close(f"unsupported version {version} of API {ApiKey(key).name}"
                         f" (supported {supported[0]}-{supported[1]})", "unsupported version")
        try:
            request = REQUESTS[key].decode(reader, version)
        except DecodeError as e:
            raise _Close(f"malformed {ApiKey(key).name} v{version} request body: {e}", "malformed body") from None
        if reader.remaining:
            logger.debug("%d trailing bytes after %s v%d from %s", reader.remaining, ApiKey(key).name, version, self.peer)
        ctx = RequestContext(self.server.state, key, version, cid, header.client_id or "", self.session)
        hook = self.server.request_hook
        if hook is not None:
            result = hook(self, ctx, request)
        else:
            result = HANDLERS[key](ctx, request)
        if result is NO_RESPONSE:
            return
        if result is CLOSE:
            raise _Close("acks=0 produce request failed; closing as Kafka does so the producer notices",
                         "acks=0 produce failed")
        if type(result) is not dict and asyncio.iscoroutine(result):  # the type test spares an ABC check
            self.queue.append(_Pending(key, version, cid, asyncio.ensure_future(result)))
        else:
            self.queue.append(_encode(key, version, cid, result))

    # ------------------------------------------------------------ writing

    def _flush(self) -> None:
        """Send the queue's head replies that are ready, in order, as far as the socket takes
        them; called after each batch of requests, when the head's task completes
        (``_on_done``) and when the socket becomes writable again (``_on_writable``). Ready
        replies in a row go out in one ``send`` (up to 1 MiB); a Fetch reply's record bytes go
        by ``os.sendfile``. A partial send leaves the rest at the head and waits for
        writability; a reply still being computed at the head waits for its task."""
        if self._writable or self._waiting is not None or self._finished:
            return  # a callback will call again
        q = self.queue
        sent = False
        try:
            while q:
                item = q[0]
                t = type(item)
                if t is bytes:
                    data = q.popleft()
                    if q:
                        data = self._take_ready(data)
                    try:
                        n = self.sock.send(data)
                    except BlockingIOError:
                        n = 0
                    if n < len(data):
                        q.appendleft(collections.deque([memoryview(data)[n:]]))
                        self._wait_writable()
                        break
                elif t is collections.deque:
                    if not self._send_parts(item):
                        self._wait_writable()
                        break
                    q.popleft()
                else:  # _Pending
                    task = item.task
                    if not task.done():
                        self._waiting = task
                        task.add_done_callback(self._on_done)
                        break
                    q[0] = self._result(item)
                    continue
                sent = True
        except (ConnectionError, OSError, _Close) as e:
            logger.debug("writing to %s failed: %s", self.peer, e)
            self._finish()
            return
        if sent:
            self.last_active = time.monotonic()
        if not q and self.closing:
            self._finish()

    def _take_ready(self, first: bytes) -> bytes:
        """``first`` and the ready replies behind it, up to about 1 MiB, as one buffer. Replies
        whose task is done count as ready (acks=all requests covered by one fsync complete
        together: one ``send`` for all of them)."""
        q = self.queue
        parts = [first]
        size = len(first)
        while q and size < (1 << 20):
            item = q[0]
            if type(item) is _Pending:
                if not item.task.done():
                    break
                item = q[0] = self._result(item)
            if type(item) is not bytes:
                break
            size += len(item)
            parts.append(q.popleft())
        return first if len(parts) == 1 else b"".join(parts)

    def _send_parts(self, parts: collections.deque[Any]) -> bool:
        """Send ``parts`` (bytes-like, or FileSlice by ``os.sendfile``) from the left, removing
        what went out; False when the socket is full (what is left stays in ``parts``)."""
        fd, sock = self.fd, self.sock
        while parts:
            part = parts[0]
            if type(part) is FileSlice:
                try:
                    n = os.sendfile(fd, part.fd, part.position, part.size)
                except BlockingIOError:
                    return False
                if n == 0:
                    raise _Close(f"log file shrank during a fetch (fd {part.fd} at {part.position})")
                SENDFILE_STATS["calls"] += 1
                SENDFILE_STATS["bytes"] += n
                if n < part.size:
                    parts[0] = part._replace(position=part.position + n, size=part.size - n)
                    return False
            else:
                try:
                    n = sock.send(part)
                except BlockingIOError:
                    return False
                if n < len(part):
                    parts[0] = memoryview(part)[n:]
                    return False
            parts.popleft()
        return True

    def _result(self, item: _Pending) -> Any:
        """The wire form of a completed task's reply."""
        task = item.task
        if task.cancelled():
            raise _Close("connection closing with a long-poll Fetch in flight")
        if task.exception() is None:  # an acks=0 Produce answered once its appends are done
            result = task.result()
            if result is NO_RESPONSE:
                return b""
            if result is CLOSE:
                raise _Close("acks=0 produce request failed; closing as Kafka does so the producer notices",
                             "acks=0 produce failed")
        try:
            return _encode(item.key, item.version, item.cid, task.result())
        except Exception as e:
            self.server.log_limiter.log(logging.ERROR, self.host, "request failed", "request %d (%s v%d) from %s failed",
                                        item.cid, ApiKey(item.key).name, item.version, self.peer, exc_info=True)
            raise _Close(str(e)) from e

    def _wait_writable(self) -> None:
        self._writable = True
        self.loop.add_writer(self.fd, self._on_writable)

    def _on_writable(self) -> None:
        self._writable = False
        self.loop.remove_writer(self.fd)
        self._wrote()

    def _on_done(self, task: asyncio.Future[Any]) -> None:
        if task is self._waiting:
            self._waiting = None
            self._wrote()

    def _wrote(self) -> None:
        """Continue writing; resume reading once the queue is below ``queued.max.requests``."""
        self._flush()
        if self._paused and len(self.queue) < self.server.max_queued and not self.closing:
            self._paused = False
            self._process()

    # ------------------------------------------------------------ closing

    def _end(self) -> None:
        """Read no more requests; the replies queued still go out, then the socket closes.
        No one will read the reply of a Fetch still long-polling: it ends now instead of
        holding the socket (and its fd) for the client-chosen max_wait_ms (up to 24 days), and
        the replies behind it are dropped. Kafka drops a closed channel's delayed fetch replies
        too."""
        self.closing = True
        self._stop_reading()
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        for item in self.queue:
            if type(item) is _Pending and item.key == ApiKey.FETCH:
                item.task.cancel()
        self._flush()  # closes the socket at once if nothing is left to send

    def _finish(self) -> None:
        """Close the socket and forget the connection (replies not sent are dropped)."""
        if self._finished:
            return
        self._finished = self.closing = True
        self._stop_reading()
        if self._resume is not None:
            self._resume.cancel()
        if self._writable:
            self._writable = False
            self.loop.remove_writer(self.fd)
        for item in self.queue:
            if type(item) is _Pending:
                item.task.cancel()
        self.queue.clear()
        try:
            self.sock.close()
        except OSError:
            pass
        self.server._forget(self)
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        """Close this connection from the server's side (idle timeout, fault injection): read
        no more, and sends fail, so the connection ends as soon as no reply is being computed."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._end()

    def abort(self, reason: str) -> None:
        """Drop this connection now (fault injection): replies not yet sent are lost."""
        logger.info("dropping connection from %s: %s", self.peer, reason)
        self.close()

    def stop_reading(self) -> None:
        """Server shutdown: read no more requests, send the replies of those already read."""
        try:
            self.sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass
        self._end()


def _encode(key: int, version: int, cid: int, body: Any) -> bytes | collections.deque[Any]:
    """A reply's wire form: the whole frame as bytes, or for a Fetch reply with record bytes
    the parts to send in turn (the size field is prepended to the first)."""
    if isinstance(body, FetchReply):
        out: collections.deque[Any] = collections.deque(body.parts)
        first = out[0] if out else b""
        if type(first) is bytes:  # the response header, and the bytes up to the first records
            out[0] = _SIZE.pack(body.size) + first
        else:
            out.appendleft(_SIZE.pack(body.size))
        return out[0] if len(out) == 1 else out
    w = Writer(bytearray(4))
    encode_response_header(w, key, version, cid)
    RESPONSES[key].encode(body, version, w)
    _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


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
        self.read_view = memoryview(self.read_buffer)
        self.connections: set[Connection] = set()
        self._per_ip: collections.Counter[str] = collections.Counter()
        self.accepted = 0
        #: the log lines a peer can trigger, per peer host and cause (log_limiter.py)
        self.log_limiter = LogLimiter(logger)
        #: None, or ``hook(connection, context, request)`` called instead
        #: of the handler for every decoded request (metrics, fault injection; see
        #: ``handle_request``); returns what a handler returns.
        self.request_hook: RequestHook | None = None
        self._listener: socket.socket | None = None
        self._accept_task: asyncio.Task[None] | None = None
        self._idle_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            family, _, _, _, addr = infos[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(addr)
                sock.listen(512)
            except OSError:
                sock.close()
                raise
        except OSError as e:  # the line an operator sees names the property and the address
            error = OSError(f"listeners: cannot listen on {self.host}:{self.port}: {e.strerror or e}")
            error.errno = e.errno
            raise error from None
        sock.setblocking(False)
        self._listener = sock
        self.port = sock.getsockname()[1]
        self._accept_task = asyncio.ensure_future(self._accept_loop())
        if self.max_idle >= 0:  # negative: no idle timeout (Kafka's Selector)
            self._idle_task = asyncio.ensure_future(self._close_idle_connections())

    async def _close_idle_connections(self) -> None:
        """Every tenth of ``connections.max.idle.ms`` (at most 30 s; at least 10 ms, as the
        property is at least 100, config.py's PERIOD_FLOORS), close the connections with no
        whole request (and no reply in progress) for longer than that."""
        period = min(self.max_idle / 10, 30.0)
        while True:
            await asyncio.sleep(period)
            deadline = time.monotonic() - self.max_idle
            for conn in list(self.connections):
                if conn.last_active < deadline and not conn.queue and not conn.closing:
                    self.log_limiter.info(conn.host, "idle", "closing connection from %s: idle for more than"
                                          " connections.max.idle.ms (%d ms)", conn.peer, int(self.max_idle * 1000))
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
                self.log_limiter.warning("any peer", "accept failed", "accept failed: %s", e)
                await asyncio.sleep(0.05)
                continue
            ip = addr[0]
            if len(self.connections) >= self.max_connections or self._per_ip[ip] >= self.max_connections_per_ip:
                self.log_limiter.warning(ip, "connection refused", "refusing a connection from %s: %d open"
                                         " (max.connections %d), %d from that address (max.connections.per.ip %d)",
                                         ip, len(self.connections), self.max_connections, self._per_ip[ip],
                                         self.max_connections_per_ip)
                conn_sock.close()
                continue
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self, conn_sock, f"{ip}:{addr[1]}")
            self.connections.add(conn)
            self._per_ip[ip] += 1
            self.accepted += 1
            conn.start()

    def _forget(self, conn: Connection) -> None:
        """``conn`` is closed (called once per connection)."""
        self.connections.discard(conn)
        ip = conn.peer.rpartition(":")[0]
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
            conn.stop_reading()
        waiting = [conn.closed for conn in self.connections]
        if waiting:
            await asyncio.wait(waiting, timeout=grace)
        for conn in list(self.connections):  # replies still being computed after the grace period
            conn._finish()
        self.log_limiter.flush()
