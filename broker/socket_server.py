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

Listeners and security: ``BrokerServer`` listens on every listener of ``listeners`` (one
``ListenerSecurity`` each, broker/security/). A connection on an SSL or SASL_SSL listener is a
``TlsConnection``: the same two callbacks with TLS in memory between the socket and the frames
(and fetch record bytes read with aiofiles and encrypted: sendfile cannot encrypt). On a SASL
listener, frames go to the connection's ``SaslAuthenticator`` (``_dispatch_sasl``) until the
login completes: ApiVersions, SaslHandshake and SaslAuthenticate only, anything else closes the
connection unanswered; a failed login's answer waits
``connection.failed.authentication.delay.ms``, then the connection closes. Once logged in, the
session's principal is set, a SaslHandshake starts a re-authentication (KIP-368) and a request
after the session's expiry closes the connection. ``connections.authentication.timeout.ms``
closes a connection whose TLS handshake or login is not done in time.

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
import ssl
import struct
import time
from collections.abc import Callable
from typing import Any

import aiofiles.os

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from client.protocol.frame import FrameDecoder, FrameError
from client.protocol.header import decode_request_header, encode_response_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import DecodeError, Writer

from .handlers import CLOSE, HANDLERS, NO_RESPONSE, FetchReply
from .handlers.quotas import EXEMPT as QUOTA_EXEMPT
from .handlers.quotas import client_throttles
from .handlers.quotas import throttle as quota_throttle
from .log_limiter import LogLimiter
from .request_context import RequestContext, Session
from .security.authenticator import AuthenticationFailed, SaslAuthenticator
from .security.listener_security import ListenerSecurity
from .security.principal import KafkaPrincipal, PrincipalMappingError, certificate_subject
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

    def __init__(self, server: BrokerServer, sock: socket.socket, peer: str, listener: ListenerSecurity) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.listener = listener
        #: the peer's address without the port: the key of its log lines' rate limit
        self.host, _, port = peer.rpartition(":")
        #: who is at the other end: every request's context holds it (the principal is set by
        #: the TLS handshake or the SASL login)
        self.session = Session(self.host, int(port or 0), listener_name=listener.name,
                               security_protocol=listener.endpoint.security_protocol)
        self.loop = asyncio.get_running_loop()
        #: SASL listeners: the login's state machine (None on PLAINTEXT and SSL listeners)
        self.auth: SaslAuthenticator | None = SaslAuthenticator(listener) if listener.endpoint.sasl else None
        #: True until the SASL login completes: requests go to ``_dispatch_sasl``
        self.authenticating = self.auth is not None
        #: a frame before the login is bounded by sasl.server.max.receive.size (Kafka's)
        self.decoder = FrameDecoder(min(server.max_request_size, listener.max_receive_size)
                                    if self.authenticating else server.max_request_size)
        #: how bytes go out: the socket's own send, or TLS's (TlsConnection)
        self._send: Callable[[Any], int] = sock.send
        #: closes a connection whose TLS handshake or SASL login is not done in time
        self._auth_timer: asyncio.TimerHandle | None = None
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
        #: while a client quota throttles this connection: the timer that ends it, and when
        self._throttle_timer: asyncio.TimerHandle | None = None
        self._throttled_until = 0.0

    def start(self) -> None:
        if self.authenticating or self.listener.endpoint.tls:
            self._start_auth_timer()
        self._start_reading()

    def _start_auth_timer(self) -> None:
        self._auth_timer = self.loop.call_later(self.listener.auth_timeout_ms / 1000, self._auth_timed_out)

    def _auth_timed_out(self) -> None:
        self._auth_timer = None
        self.server.log_limiter.info(self.host, "authentication timeout", "closing connection from %s: no"
                                     " TLS handshake and SASL login within connections.authentication.timeout.ms"
                                     " (%d ms)", self.peer, self.listener.auth_timeout_ms)
        self.close()

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
            while not self.closing and self._throttle_timer is None and (frame := self.decoder.next_frame()) is not None:
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
        if not self.closing and self._throttle_timer is None:
            self._start_reading()

    def _dispatch(self, frame: bytearray) -> None:
        if self.authenticating:
            self._dispatch_sasl(frame)
            return
        try:
            header, reader = decode_request_header(frame)
        except DecodeError as e:
            raise _Close(f"malformed request header: {e}", "malformed header") from None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        if self.auth is not None and self._session_check(key):
            self._dispatch_sasl(frame)
            return
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
        # client quotas (handlers/quotas.py): once any is set, every request but the exempt ones
        # (and those before a SASL login completes) is measured
        measure = self.server.quotas.active and key not in QUOTA_EXEMPT and (self.auth is None or self.auth.complete)
        t0 = time.perf_counter_ns() if measure else 0
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
        if measure:
            result = self._throttled(ctx, request, len(frame), time.perf_counter_ns() - t0, result)
        if result is NO_RESPONSE:
            return
        if result is CLOSE:
            raise _Close("acks=0 produce request failed; closing as Kafka does so the producer notices",
                         "acks=0 produce failed")
        if type(result) is not dict and asyncio.iscoroutine(result):  # the type test spares an ABC check
            self.queue.append(_Pending(key, version, cid, asyncio.ensure_future(result)))
        elif type(result) is _Pending:
            self.queue.append(result)
        else:
            self.queue.append(_encode(key, version, cid, result))

    # ------------------------------------------------------------ client quotas

    def _throttled(self, ctx: RequestContext, request: dict[str, Any], size: int, handler_ns: int, result: Any) -> Any:
        """``result`` measured against the client's quotas (handlers/quotas.py): the reply with
        its throttle time; the connection muted for that long, and the reply held back as long
        for a version before KIP-219 (a ``_Pending`` then). A reply still being computed is
        measured once it is ready."""
        if type(result) is not dict and asyncio.iscoroutine(result):
            return self._throttled_later(ctx, request, size, handler_ns, result)
        result, ms = quota_throttle(ctx, request, size, handler_ns, result)
        if ms <= 0:
            return result
        self.throttle(ms)
        if result is NO_RESPONSE or result is CLOSE or client_throttles(ctx.api_key, ctx.api_version):
            return result
        held: asyncio.Future[Any] = self.loop.create_future()
        self.loop.call_later(ms / 1000, _resolve, held, result)
        return _Pending(ctx.api_key, ctx.api_version, ctx.correlation_id, held)

    async def _throttled_later(self, ctx: RequestContext, request: dict[str, Any], size: int, handler_ns: int,
                               pending: Any) -> Any:
        result, ms = quota_throttle(ctx, request, size, handler_ns, await pending)
        if ms > 0:
            self.throttle(ms)
            if not (result is NO_RESPONSE or result is CLOSE or client_throttles(ctx.api_key, ctx.api_version)):
                await asyncio.sleep(ms / 1000)  # this reply's task waits; the event loop does not
        return result

    def throttle(self, ms: int) -> None:
        """Read nothing from this connection for ``ms`` (KIP-219's muted channel); requests
        already received wait too. A longer throttle than the one running extends it."""
        until = time.monotonic() + ms / 1000
        if self._throttle_timer is not None:
            if until <= self._throttled_until:
                return
            self._throttle_timer.cancel()
        self._throttled_until = until
        self._throttle_timer = self.loop.call_later(ms / 1000, self._throttle_ended)
        self._stop_reading()

    def _throttle_ended(self) -> None:
        self._throttle_timer = None
        if not self.closing and not self._paused and self._resume is None:
            self._process()  # the requests already received, then reading again

    # ------------------------------------------------------------ SASL

    def _session_check(self, key: int) -> bool:
        """An authenticated SASL connection's request: True if it starts a re-authentication
        (a SaslHandshake when sessions expire); _Close if the session has expired (KIP-368:
        a client that did not re-authenticate in time is disconnected)."""
        auth = self.auth
        assert auth is not None
        if key == ApiKey.SASL_HANDSHAKE and auth.can_reauthenticate():
            auth.begin_reauthentication()
            self.authenticating = True
            return True
        if auth.expired():
            raise _Close(f"the SASL session of {self.session.principal} expired (connections.max.reauth.ms) and the"
                         " client did not re-authenticate", "session expired")
        return False

    def _dispatch_sasl(self, frame: bytearray) -> None:
        """A frame before the SASL login completes (the authenticator's states)."""
        auth = self.auth
        assert auth is not None
        if auth.raw:  # after SaslHandshake v0: the frame is the token itself, answered raw
            try:
                challenge = auth.raw_token(bytes(frame))
            except AuthenticationFailed as e:
                self._authentication_failed(e, 0, 0, 0)
                return
            self.queue.append(_SIZE.pack(len(challenge)) + challenge)
            if auth.complete:
                self._authenticated()
            return
        try:
            header, reader = decode_request_header(frame)
        except DecodeError as e:
            raise _Close(f"malformed request header during SASL authentication: {e}", "malformed header") from None
        key, version, cid = header.api_key, header.api_version, header.correlation_id
        if not auth.accepts(key):
            name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
            raise _Close(f"Unexpected Kafka request of type {name} during SASL handshake.", "unexpected request")
        if key == ApiKey.API_VERSIONS:
            auth.saw_api_versions()
            self.authenticating = False  # served as any connection's
            try:
                self._dispatch(frame)
            finally:
                self.authenticating = not auth.complete
            return
        lo, hi = SUPPORTED_VERSIONS[ApiKey(key)]
        if not lo <= version <= hi:
            raise _Close(f"unsupported version {version} of API {ApiKey(key).name} during SASL authentication",
                         "unsupported version")
        try:
            request = REQUESTS[key].decode(reader, version)
        except DecodeError as e:
            raise _Close(f"malformed {ApiKey(key).name} v{version} request body: {e}", "malformed body") from None
        try:
            if key == ApiKey.SASL_HANDSHAKE:
                response = auth.handshake(version, request["mechanism"])
            else:
                response = auth.authenticate(version, bytes(request["auth_bytes"]))
        except AuthenticationFailed as e:
            self._authentication_failed(e, key, version, cid)
            return
        self.queue.append(_encode(key, version, cid, response))
        if auth.complete:
            self._authenticated()

    def _count(self, name: str) -> None:
        """One more of Kafka's authentication counter ``name`` for this connection's listener."""
        self.server.auth_stats[(self.listener.name, name)] += 1

    def _authenticated(self) -> None:
        auth = self.auth
        assert auth is not None and auth.principal is not None
        self.authenticating = False
        self.decoder.max_size = self.server.max_request_size
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if auth.reauthenticating:
            auth.reauthenticating = False
            self._count("successful-reauthentication-total")
        else:
            self._count("successful-authentication-total")
            if not auth.reauth_capable:
                self._count("successful-authentication-no-reauth-total")
        self.session.principal = auth.principal
        logger.debug("%s authenticated as %s with %s on listener %s", self.peer, auth.principal,
                     auth.mechanism_name, self.listener.name)

    def _authentication_failed(self, e: Exception, key: int, version: int, cid: int) -> None:
        """Kafka's KIP-306: the failure's answer goes out after
        ``connection.failed.authentication.delay.ms``, then the connection closes; nothing more is
        read from it meanwhile."""
        reauth = self.auth is not None and self.auth.reauthenticating
        self._count("failed-reauthentication-total" if reauth else "failed-authentication-total")
        self.server.log_limiter.info(self.host, "authentication failed", "failed authentication from %s on"
                                     " listener %s: %s", self.peer, self.listener.name, e)
        response = e.response if isinstance(e, AuthenticationFailed) else None
        delay = self.listener.failed_delay_ms / 1000
        answer: asyncio.Future[Any] = self.loop.create_future()
        self.loop.call_later(delay, _resolve, answer, NO_RESPONSE if response is None else response)
        self.queue.append(_Pending(key, version, cid, answer))
        self._end()

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
            if self._pending_output():
                self._wait_writable()
                return
            while q:
                item = q[0]
                t = type(item)
                if t is bytes:
                    data = q.popleft()
                    if q:
                        data = self._take_ready(data)
                    try:
                        n = self._send(data)
                    except BlockingIOError:
                        n = 0
                    if n < len(data):
                        q.appendleft(collections.deque([memoryview(data)[n:]]))
                        self._wait_writable()
                        break
                elif t is collections.deque:
                    done = self._send_parts(item)
                    if not done:
                        if done is False:  # None: waiting for a file read (_waiting is set)
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
        try:  # TLS records of the last reply the socket has not taken: wait to send them
            pending = not self._writable and self._pending_output()
        except OSError as e:
            logger.debug("writing to %s failed: %s", self.peer, e)
            self._finish()
            return
        if pending:
            self._wait_writable()
            return
        if not q and self.closing:
            self._finish()

    def _pending_output(self) -> bool:
        """Bytes accepted by ``_send`` but not yet on the socket (TLS records); none here."""
        return False

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

    def _send_parts(self, parts: collections.deque[Any]) -> bool | None:
        """Send ``parts`` (bytes-like, or FileSlice by ``os.sendfile``) from the left, removing
        what went out; False when the socket is full (what is left stays in ``parts``)."""
        fd = self.fd
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
                    n = self._send(part)
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
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        self._stop_reading()
        if self._resume is not None:
            self._resume.cancel()
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None
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


#: plaintext encrypted per TLS write (a bound on the TLS records waiting for the socket)
_TLS_CHUNK = 1 << 18
#: bytes of a .log slice read per file read on a TLS connection (one read in flight per connection)
_TLS_READ_CHUNK = 1 << 20
_pread = aiofiles.os.wrap(os.pread)


class TlsConnection(Connection):
    """A connection on an SSL or SASL_SSL listener: the same callbacks, with TLS in memory
    (``ssl.MemoryBIO`` in and out of an ``SSLObject``) between the socket and the frames.

    - Reading: the received bytes feed the TLS object; until the handshake is done they only
      drive it (its answers go out raw); then the decrypted bytes feed the FrameDecoder.
    - Writing: ``_send`` (``_tls_send``) encrypts up to ``_TLS_CHUNK`` bytes at a time and sends
      the records; records the socket did not take wait in ``_cipher_out`` (``_pending_output``)
      and nothing more is encrypted until they are gone: the buffered output stays bounded.
    - Fetch record bytes cannot be sent with ``os.sendfile`` (the kernel would send them
      unencrypted): each ``FileSlice`` is read with aiofiles off the event loop, at most
      ``_TLS_READ_CHUNK`` bytes and one read at a time, then encrypted and sent like any bytes;
      the next read starts only once the previous chunk is on its way (back-pressure).
    - On an SSL listener the principal comes from the client's certificate (when it sent one)
      through ``ssl.principal.mapping.rules``; otherwise ``User:ANONYMOUS``. A handshake that
      fails (a plaintext client, an untrusted certificate) closes the connection after a log line.
    """

    def __init__(self, server: BrokerServer, sock: socket.socket, peer: str, listener: ListenerSecurity,
                 context: ssl.SSLContext) -> None:
        super().__init__(server, sock, peer, listener)
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._handshaken = False
        self._cipher_out: memoryview | None = None
        self._file_read: asyncio.Future[bytes] | None = None
        self._send = self._tls_send

    def _on_readable(self) -> None:
        try:
            n = self.sock.recv_into(self.server.read_buffer)
        except BlockingIOError:
            return
        except OSError as e:
            logger.debug("connection from %s failed: %s", self.peer, e)
            self._end()
            return
        if n == 0:
            self._end()
            return
        self._incoming.write(self.server.read_view[:n])
        tls = self._tls
        try:
            if not self._handshaken:
                try:
                    tls.do_handshake()
                except ssl.SSLWantReadError:
                    self._collect_output()
                    self._flush()
                    return
                self._handshake_done()
                if self._finished or self.closing:
                    return
            while True:
                data = tls.read(_RECV_SIZE)
                if not data:  # the client's close_notify (Python's read returns b"" for it)
                    self._tls_closed()
                    return
                self.decoder.feed(data)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:  # the client's close_notify
            self._tls_closed()
            return
        except ssl.SSLError as e:
            self._tls_failed(e)
            return
        self._collect_output()  # a TLS 1.3 key update's answer, session tickets
        self._process()

    def _tls_closed(self) -> None:
        """The client ended TLS (close_notify): answer with ours, as Kafka's transport does (an
        asyncio client's close waits for it), send the replies already queued, then close."""
        try:
            self._tls.unwrap()  # writes our close_notify into the outgoing BIO
        except ssl.SSLError:  # SSLWantReadError: nothing more to read anyway
            pass
        self._collect_output()
        self._end()

    def _tls_failed(self, e: ssl.SSLError) -> None:
        what = "TLS handshake" if not self._handshaken else "TLS"
        if not self._handshaken:
            self._count("failed-authentication-total")
        self.server.log_limiter.info(self.host, "tls failed", "closing connection from %s on listener %s: %s failed:"
                                     " %s", self.peer, self.listener.name, what, e.reason or e)
        self.closing = True
        self._stop_reading()
        if not self._handshaken and self.listener.failed_delay_ms > 0:
            # a failed handshake is a failed authentication: its alert and the close wait
            # connection.failed.authentication.delay.ms, as a failed SASL login's answer does
            # (Kafka closes a failed TLS handshake at once; one rule for both here)
            self.loop.call_later(self.listener.failed_delay_ms / 1000, self._close_after_tls_failure)
            return
        self._close_after_tls_failure()

    def _close_after_tls_failure(self) -> None:
        if self._finished:
            return
        self._collect_output()  # the alert, if any, goes out before the close
        self._flush()
        if not self._finished and not self._pending_output():
            self._finish()

    def _handshake_done(self) -> None:
        self._handshaken = True
        self._collect_output()
        if self.auth is not None:  # SASL_SSL: the principal comes from the SASL login
            return
        der = self._tls.getpeercert(binary_form=True)
        if der:
            try:
                name = self.listener.principal_mapper.name(certificate_subject(der))
            except (PrincipalMappingError, ValueError) as e:
                self._count("failed-authentication-total")
                self.server.log_limiter.info(self.host, "authentication failed", "failed authentication from %s on"
                                             " listener %s: %s", self.peer, self.listener.name, e)
                self.close()
                return
            self.session.principal = KafkaPrincipal("User", name)
        self._count("successful-authentication-total")
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None

    def _collect_output(self) -> None:
        data = self._outgoing.read()
        if data:
            self._cipher_out = memoryview(data if self._cipher_out is None else bytes(self._cipher_out) + data)

    def _flush_cipher(self) -> bool:
        """Send the TLS records waiting; False if the socket did not take them all."""
        out = self._cipher_out
        if out is None:
            return True
        try:
            n = self.sock.send(out)
        except BlockingIOError:
            return False
        if n < len(out):
            self._cipher_out = out[n:]
            return False
        self._cipher_out = None
        return True

    def _pending_output(self) -> bool:
        return self._cipher_out is not None and not self._flush_cipher()

    def _tls_send(self, data: Any) -> int:
        """Encrypt and send ``data`` as far as the socket takes it: the plaintext bytes taken
        (BlockingIOError when records of an earlier call still wait)."""
        if self._cipher_out is not None and not self._flush_cipher():
            raise BlockingIOError
        view = memoryview(data)
        total, size = 0, len(view)
        while total < size:
            chunk = view[total:total + _TLS_CHUNK]
            self._tls.write(chunk)
            total += len(chunk)
            self._collect_output()
            if not self._flush_cipher():
                break
        return total

    def _send_parts(self, parts: collections.deque[Any]) -> bool | None:
        """As Connection's, but a FileSlice is read (aiofiles, off the loop) and encrypted; None
        while a read is in flight (``_waiting`` is set to it)."""
        while parts:
            part = parts[0]
            if type(part) is FileSlice:
                read = self._file_read
                if read is None:
                    self._file_read = read = asyncio.ensure_future(
                        _pread(part.fd, min(part.size, _TLS_READ_CHUNK), part.position))
                if not read.done():
                    self._waiting = read
                    read.add_done_callback(self._on_done)
                    return None
                self._file_read = None
                data = read.result()
                if not data:
                    raise _Close(f"log file shrank during a fetch (fd {part.fd} at {part.position})")
                if len(data) < part.size:
                    parts[0] = part._replace(position=part.position + len(data), size=part.size - len(data))
                    parts.appendleft(data)
                else:
                    parts[0] = data
                continue
            try:
                n = self._send(part)
            except BlockingIOError:
                return False
            if n < len(part):
                parts[0] = memoryview(part)[n:]
                return False
            parts.popleft()
        return True

    def _finish(self) -> None:
        read = self._file_read
        if read is not None:
            self._file_read = None
            read.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no warning
        super()._finish()


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


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
    """Listens on every listener of ``listeners`` and serves ``state``; ``start()``, then
    ``stop()``. ``max.connections`` counts the connections of all listeners together."""

    def __init__(self, state: BrokerState, listeners: list[ListenerSecurity]) -> None:
        self.state = state
        self.listeners = {ls.name: ls for ls in listeners}
        first = listeners[0].endpoint
        #: the first listener's address (its port once bound)
        self.host, self.port = first.host, first.port
        #: per listener name, the port it listens on (once bound)
        self.ports: dict[str, int] = {ls.name: ls.endpoint.port for ls in listeners}
        #: Kafka's authentication counters (its socket-server metrics' names), by (listener, name)
        self.auth_stats: collections.Counter[tuple[str, str]] = collections.Counter()
        self.max_request_size = state.config.int("socket.request.max.bytes")
        self.max_queued = state.config.int("queued.max.requests")
        self.max_connections = state.config.int("max.connections")
        self.max_connections_per_ip = state.config.int("max.connections.per.ip")
        self.max_idle = state.config.int("connections.max.idle.ms") / 1000
        #: the client quotas (broker/quota/): requests are measured once ``quotas.active``
        self.quotas = state.quotas
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
        self._sockets: list[socket.socket] = []
        self._accept_tasks: list[asyncio.Task[None]] = []
        self._idle_task: asyncio.Task[None] | None = None
        #: connections over their ip's connection_creation_rate, closed once their throttle time is over
        self._delayed_close: set[socket.socket] = set()

    @staticmethod
    def _bind(host: str, port: int, name: str) -> socket.socket:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
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
            error = OSError(f"listeners: cannot listen on {host}:{port} (listener {name}): {e.strerror or e}")
            error.errno = e.errno
            raise error from None
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        try:
            for ls in self.listeners.values():
                sock = self._bind(ls.endpoint.host, ls.endpoint.port, ls.name)
                self._sockets.append(sock)
                self.ports[ls.name] = sock.getsockname()[1]
        except OSError:
            for sock in self._sockets:
                sock.close()
            raise
        self.port = next(iter(self.ports.values()))
        for ls, sock in zip(self.listeners.values(), self._sockets, strict=True):
            self._accept_tasks.append(asyncio.ensure_future(self._accept_loop(sock, ls)))
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

    async def _accept_loop(self, listener: socket.socket, security: ListenerSecurity) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn_sock, addr = await loop.sock_accept(listener)
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
            delay = self.quotas.connections.accept(ip)
            if delay > 0:  # over the ip's connection_creation_rate: closed after the throttle time, as Kafka does
                logger.debug("delaying the close of a connection from %s for %d ms (connection_creation_rate)",
                             ip, delay)
                self._delayed_close.add(conn_sock)
                loop.call_later(delay / 1000, self._close_delayed, conn_sock)
                continue
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = f"{ip}:{addr[1]}"
            context = security.ssl_context  # read per connection: a new keystore applies to new ones
            conn = (Connection(self, conn_sock, peer, security) if context is None
                    else TlsConnection(self, conn_sock, peer, security, context))
            self.connections.add(conn)
            self._per_ip[ip] += 1
            self.accepted += 1
            conn.start()

    def _close_delayed(self, sock: socket.socket) -> None:
        if sock in self._delayed_close:
            self._delayed_close.discard(sock)
            sock.close()

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
        for task in self._accept_tasks:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        for sock in self._sockets:
            sock.close()
        for sock in list(self._delayed_close):
            self._close_delayed(sock)

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
