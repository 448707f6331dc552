"""Connections to a broker: a sans-IO request/response matcher and a small asyncio transport.

``ClientConnectionState`` (no I/O) encodes requests with fresh correlation ids, remembers what
is in flight, and matches responses **in order**: Kafka answers each connection's requests in
the order they were sent, so the oldest request in flight owns the next response, and a
different correlation id is a protocol error. Responses are decoded with the shared codec
(``client.protocol``); byte fields (records) stay memoryviews of the response frame.

``BrokerConnection`` drives it over an ``asyncio.Protocol``: ``await conn.request(...)``
pipelines up to ``max_in_flight`` requests, applies a per-request timeout, and fails every
pending request with KafkaConnectionError when the connection breaks. On connect it asks
ApiVersions (v0: every broker answers it) and keeps the broker's version ranges.

Security (``client.security.config.SecurityConfig``): with SSL or SASL_SSL the connection is
TLS (``ssl_context``, the host name for SNI and, if the context checks it, verification). With
SASL_PLAINTEXT or SASL_SSL, after ApiVersions, ``connect`` logs in: SaslHandshake v1 (the
mechanism's name; UNSUPPORTED_SASL_MECHANISM lists the broker's), then SaslAuthenticate
rounds carrying the mechanism's bytes (``client.security.sasl``) until it is complete; the
broker's ``error_message`` is the raised error's message. When SaslAuthenticate v1+ gives a
``session_lifetime_ms`` > 0 (KIP-368), the connection re-authenticates itself, the same
handshake and rounds again, at a random 85-95 % of that lifetime, as Kafka's Java client: it
holds the write lock throughout, so no other request is written in between (requests already
in flight are answered first: the broker answers in order). A failed re-authentication fails
the connection like a broken one, and the cluster reconnects.

``conn.send_request(..., on_response)`` is the same request without a coroutine: written at
once, or not at all (False) when it would have to wait — for a request slot, for a paused
transport, or behind an awaited request holding the write lock. The response, or the error
that failed the request, is handed to ``on_response(body, exc)`` from the data callback (or
the timeout timer, or ``close``). The
producer's sender uses it so that a Produce request costs no task, and its answer no loop
turn to wake one (an awaited send is a round trip: its loop turns are its cost).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import ssl
import struct
from collections.abc import Callable
from typing import Any

from client.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    error_for_code,
)
from client.protocol.api import ApiKey, response_header_version
from client.protocol.frame import FrameDecoder
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import DecodeError, Reader, Writer
from client.security.config import SecurityConfig

__all__ = ["ClientConnectionState", "BrokerConnection", "CLIENT_VERSIONS"]

logger = logging.getLogger("client.conn")

_SIZE = struct.Struct(">i")

#: Versions this client can speak (its schema tables), per API, except that it fetches by topic
#: name: Fetch v13+ address topics by id (KIP-516), which this client does not track.
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {k: m.valid for k, m in REQUESTS.items()}
CLIENT_VERSIONS[ApiKey.FETCH] = (CLIENT_VERSIONS[ApiKey.FETCH][0], 12)


class ClientConnectionState:
    """Sans-IO: ``encode_request`` -> bytes to send; ``receive(data)`` -> finished responses."""

    def __init__(self, client_id: str | None = "minibroker-python", max_frame: int = 1 << 30) -> None:
        self.client_id = client_id
        self._next_cid = 0
        self.in_flight: collections.deque[tuple[int, int, int]] = collections.deque()  # (cid, key, version)
        self._decoder = FrameDecoder(max_frame, preallocate=True)

    def encode_request(self, api_key: int, version: int, body: dict[str, Any], expect_response: bool = True) -> tuple[int, bytes]:
        cid = self._next_cid
        self._next_cid = (cid + 1) & 0x7FFFFFFF
        w = Writer(bytearray(4))
        encode_request_header(w, api_key, version, cid, self.client_id)
        REQUESTS[api_key].encode(body, version, w)
        _SIZE.pack_into(w.buf, 0, len(w.buf) - 4)
        if expect_response:
            self.in_flight.append((cid, api_key, version))
        return cid, bytes(w.buf)

    def receive(self, data: bytes | bytearray | memoryview) -> list[tuple[int, dict[str, Any]]]:
        """Feed received bytes; return ``(correlation_id, body)`` for each complete response."""
        self._decoder.feed(data)
        return self.responses()

    def get_buffer(self) -> memoryview:
        """Where to receive the next bytes (``FrameDecoder.get_buffer``); then ``received(n)``."""
        return self._decoder.get_buffer()

    def received(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        """As ``receive``, for ``n`` bytes written into the last ``get_buffer``."""
        self._decoder.buffer_updated(n)
        return self.responses()

    def responses(self) -> list[tuple[int, dict[str, Any]]]:
        """``(correlation_id, body)`` of each complete response buffered."""
        out = []
        while (frame := self._decoder.next_frame()) is not None:
            if not self.in_flight:
                raise DecodeError("response received with no request in flight")
            cid, key, version = self.in_flight.popleft()
            r = Reader(frame)
            got = r.int32()
            if got != cid:
                raise DecodeError(f"correlation id {got} does not match the oldest request in flight ({cid})")
            if response_header_version(key, version) >= 1:
                r.tagged_fields()
            if key == ApiKey.API_VERSIONS and version > 0:
                body = _decode_api_versions(r, version)
            else:
                body = RESPONSES[key].decode(r, version)
            out.append((cid, body))
        return out


def _decode_api_versions(r: Reader, version: int) -> dict[str, Any]:
    """An ApiVersions answer may come back in v0 layout (UNSUPPORTED_VERSION fallback)."""
    start = r.pos
    try:
        return RESPONSES[ApiKey.API_VERSIONS].decode(r, version)
    except DecodeError:
        r.pos = start
        return RESPONSES[ApiKey.API_VERSIONS].decode(r, 0)


class _Protocol(asyncio.BufferedProtocol):
    """Reads into the connection's frame decoder (``FrameDecoder.get_buffer``): a large
    response is received straight into its preallocated frame."""

    def __init__(self, conn: BrokerConnection) -> None:
        self.conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn._transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.conn.state.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.conn._on_received(nbytes)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn._on_lost(exc)

    def pause_writing(self) -> None:
        self.conn._can_write.clear()

    def resume_writing(self) -> None:
        self.conn._can_write.set()


class _Callback:
    """A request sent by ``send_request``: in the connection's queue of requests in flight, it
    answers like a future (``done``, ``set_result``, ``set_exception``) and hands the outcome
    to ``fn(body, exc)`` once, releasing its request slot and cancelling its timer first."""

    __slots__ = ("conn", "fn", "timer", "called")

    def __init__(self, conn: BrokerConnection, fn: Callable[[dict[str, Any] | None, KafkaError | None], None]) -> None:
        self.conn = conn
        self.fn = fn
        self.timer: asyncio.TimerHandle | None = None
        self.called = False

    def done(self) -> bool:
        return self.called

    def set_result(self, body: dict[str, Any]) -> None:
        self._call(body, None)

    def set_exception(self, exc: KafkaError) -> None:
        self._call(None, exc)

    def _call(self, body: dict[str, Any] | None, exc: KafkaError | None) -> None:
        if self.called:
            return
        self.called = True
        if self.timer is not None:
            self.timer.cancel()
        self.conn._release_slot()
        try:
            self.fn(body, exc)
        except Exception:  # a callback's bug must not break the connection's reads
            logger.exception("response callback of a request to %s:%d failed", self.conn.host, self.conn.port)


class BrokerConnection:
    def __init__(self, host: str, port: int, *, client_id: str | None = "minibroker-python",
                 request_timeout_ms: int = 30000, max_in_flight: int = 64) -> None:
        self.host = host
        self.port = port
        self.request_timeout = request_timeout_ms / 1000
        self.state = ClientConnectionState(client_id)
        self._transport: asyncio.Transport | None = None
        self._futures: collections.deque[asyncio.Future[dict[str, Any]] | _Callback] = collections.deque()
        self._free_slots = max_in_flight  # requests that may still be put in flight
        self._slot_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._write_lock = asyncio.Lock()
        self._closed_exc: KafkaError | None = None
        #: KIP-219: a response's ``throttle_time_ms`` says the broker throttled this client; no
        #: request goes out before this loop time (the broker would only hold it: it mutes the
        #: connection for that long)
        self.throttled_until = 0.0
        # Set by connect: asyncio.get_running_loop() per request costs a getpid() system call.
        self._loop: asyncio.AbstractEventLoop | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.security = SecurityConfig()
        #: the last SASL session's lifetime (ms; 0: none given), and the re-authentications done
        self.session_lifetime_ms = 0
        self.reauthentications = 0
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, host: str, port: int, *, timeout_ms: int = 10000, security: SecurityConfig | None = None,
                      **kwargs: Any) -> BrokerConnection:
        conn = cls(host, port, **kwargs)
        if security is not None:
            conn.security = security
        loop = conn._loop = asyncio.get_running_loop()
        context = conn.security.ssl_context if conn.security.use_ssl else None
        try:
            await asyncio.wait_for(loop.create_connection(lambda: _Protocol(conn), host, port, ssl=context,
                                                          server_hostname=host if context is not None else None),
                                   timeout_ms / 1000)
        except ssl.SSLCertVerificationError as e:
            raise KafkaConnectionError(f"TLS with {host}:{port}: the broker's certificate is not trusted: "
                                       f"{e.verify_message or e}") from None
        except (TimeoutError, OSError) as e:
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: {e or 'timed out'}") from None
        try:
            resp = await conn.request(ApiKey.API_VERSIONS, 0, {})
            if resp["error_code"]:
                raise KafkaConnectionError(f"ApiVersions failed with error {resp['error_code']}")
            conn.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}
            if conn.security.use_sasl:
                async with conn._write_lock:
                    await conn._authenticate()
        except BaseException:
            await conn.close()
            raise
        return conn

    # -- SASL (KIP-43 handshake, KIP-152 SaslAuthenticate, KIP-368 re-authentication) --

    async def _authenticate(self) -> None:
        """One login: SaslHandshake v1 then SaslAuthenticate rounds. The caller holds the write
        lock, so these are the only requests written meanwhile."""
        mechanism = await self.security.new_mechanism()
        if self.pick_version(ApiKey.SASL_HANDSHAKE) < 1:
            raise KafkaError(f"broker {self.host}:{self.port} has no SaslHandshake v1 (SaslAuthenticate)")
        resp = await self._auth_request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism.name})
        code = resp["error_code"]
        if code == UnsupportedSaslMechanismError.code:
            raise UnsupportedSaslMechanismError(
                f"broker {self.host}:{self.port} does not enable SASL mechanism {mechanism.name}; it enables "
                + (", ".join(resp["mechanisms"]) or "none"))
        if code:
            raise error_for_code(code, f"SaslHandshake with {self.host}:{self.port} failed")
        version = self.pick_version(ApiKey.SASL_AUTHENTICATE)
        out: bytes | None = mechanism.first()
        while out is not None:
            resp = await self._auth_request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": out})
            if resp["error_code"]:
                raise error_for_code(resp["error_code"], f"{mechanism.name} authentication with {self.host}:"
                                     f"{self.port} failed: {resp['error_message'] or 'no reason given'}")
            out = mechanism.step(bytes(resp["auth_bytes"]))
        if not mechanism.complete:  # a mechanism returns None only once complete; kept as a guard
            raise SaslAuthenticationFailedError(f"{mechanism.name} exchange ended incomplete")
        self.session_lifetime_ms = resp.get("session_lifetime_ms", 0)
        if self.session_lifetime_ms > 0 and self._loop is not None:
            # Kafka's client: at 85-95 % of the lifetime, so that connections made together
            # do not all re-authenticate at once.
            delay = self.session_lifetime_ms * random.uniform(0.85, 0.95) / 1000
            self._reauth_timer = self._loop.call_later(delay, self._start_reauthentication)

    async def _auth_request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """A login request, written under the write lock the caller holds. It takes no request
        slot: requests that hold slots may be waiting for that lock (one extra in flight)."""
        if not self._can_write.is_set():
            await self._can_write.wait()
        if self._closed_exc is not None or self._transport is None:
            raise self._closed_exc or KafkaConnectionError("not connected")
        _, data = self.state.encode_request(api_key, version, body, True)
        loop = self._loop or asyncio.get_running_loop()
        fut: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._futures.append(fut)
        self._transport.write(data)
        timer = loop.call_later(self.request_timeout, self._timed_out, fut, api_key)
        try:
            return await fut
        finally:
            timer.cancel()

    def _start_reauthentication(self) -> None:
        self._reauth_timer = None
        if self._closed_exc is None:
            self._reauth_task = asyncio.ensure_future(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        try:
            async with self._write_lock:
                if self._closed_exc is not None:
                    return
                await self._authenticate()
            self.reauthentications += 1
            logger.debug("re-authenticated with %s:%d (session lifetime %d ms)", self.host, self.port,
                         self.session_lifetime_ms)
        except KafkaError as e:
            logger.warning("re-authentication with %s:%d failed: %s", self.host, self.port, e)
            self._fail(e)
        except Exception as e:  # noqa: BLE001 - a token provider's failure: the connection cannot stay either
            logger.warning("re-authentication with %s:%d failed: %r", self.host, self.port, e)
            self._fail(KafkaConnectionError(f"re-authentication with {self.host}:{self.port} failed: {e!r}"))
        finally:
            self._reauth_task = None

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed_exc is None

    def pick_version(self, api_key: int) -> int:
        """The highest version both sides support; KafkaError if there is none."""
        ours = CLIENT_VERSIONS[api_key]
        theirs = self.api_versions.get(api_key)
        if theirs is None:
            raise KafkaError(f"broker {self.host}:{self.port} does not support {ApiKey(api_key).name}")
        hi = min(ours[1], theirs[1])
        if hi < max(ours[0], theirs[0]):
            raise KafkaError(f"no common version of {ApiKey(api_key).name}: client {ours}, broker {theirs}")
        return hi

    async def _take_slot(self) -> None:
        """Wait for a request slot (FIFO); ``_release_slot`` gives it back or hands it over."""
        if self._free_slots > 0 and not self._slot_waiters:
            self._free_slots -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot, then cancelled: pass it on
                self._release_slot()
            raise

    def _release_slot(self) -> None:
        while self._slot_waiters:
            w = self._slot_waiters.popleft()
            if not w.done():  # a cancelled waiter is skipped
                w.set_result(None)
                return
        self._free_slots += 1

    async def request(self, api_key: int, version: int, body: dict[str, Any], *,
                      expect_response: bool = True, timeout: float | None = None) -> dict[str, Any]:
        """Send one request and wait for its response (requests pipeline; replies arrive in order)."""
        if self._closed_exc is not None:
            raise self._closed_exc
        await self._take_slot()
        try:
            # Requests go out in the order they were made: a request that finds the transport
            # paused holds the (FIFO) write lock while it waits, so one made later cannot slip
            # in between the resume and its wake-up. An idempotent producer's batches of a
            # partition must reach the broker in sequence order.
            async with self._write_lock:
                if not self._can_write.is_set():
                    await self._can_write.wait()
                if self.throttled_until:
                    wait = self.throttled_until - (self._loop or asyncio.get_running_loop()).time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                if self._closed_exc is not None or self._transport is None:
                    raise self._closed_exc or KafkaConnectionError("not connected")
                _, data = self.state.encode_request(api_key, version, body, expect_response)
                if not expect_response:
                    self._transport.write(data)
                    return {}
                loop = self._loop or asyncio.get_running_loop()
                fut: asyncio.Future[dict[str, Any]] = loop.create_future()
                self._futures.append(fut)
                self._transport.write(data)
            # A timer, not wait_for(shield(fut)): two futures, three callbacks and three loop
            # turns less per request (measured: ~10 µs of a ~200 µs round trip). A cancelled
            # caller cancels ``fut``; its response is then read and dropped (``_on_received``).
            timer = loop.call_later(self.request_timeout if timeout is None else timeout, self._timed_out, fut, api_key)
            try:
                return await fut
            finally:
                timer.cancel()
        finally:
            self._release_slot()

    def send_request(self, api_key: int, version: int, body: dict[str, Any],
                     on_response: Callable[[dict[str, Any] | None, KafkaError | None], None]) -> bool:
        """Write one request now and return True; ``on_response(body, None)`` gets its answer,
        or ``on_response(None, error)`` the KafkaError that failed it (the connection broke,
        was closed, or the request timed out), from the connection's data callback, its timer
        or ``close()``, never from within this call. False,
        having written nothing, when the request would have to wait (no slot free, the
        transport paused, an awaited request holding the write lock) or the connection is
        closed: the caller then awaits ``request`` instead."""
        transport = self._transport
        if self._closed_exc is not None or transport is None or self._free_slots <= 0 or self._slot_waiters \
                or not self._can_write.is_set() or self._write_lock.locked() \
                or (self.throttled_until and self.throttled_until > (self._loop or asyncio.get_running_loop()).time()):
            return False
        _, data = self.state.encode_request(api_key, version, body, True)
        self._free_slots -= 1
        cb = _Callback(self, on_response)
        self._futures.append(cb)
        transport.write(data)
        cb.timer = (self._loop or asyncio.get_running_loop()).call_later(self.request_timeout, self._timed_out, cb,
                                                                         api_key)
        return True

    def _timed_out(self, fut: asyncio.Future[dict[str, Any]] | _Callback, api_key: int) -> None:
        if not fut.done():
            # The connection's in-order stream is now out of step with us: close it.
            self._fail(KafkaTimeoutError(f"{ApiKey(api_key).name} request to {self.host}:{self.port} timed out"))

    def _on_received(self, n: int) -> None:
        try:
            self._answer(self.state.received(n))
        except (DecodeError, IndexError, ValueError) as e:
            self._fail(KafkaConnectionError(f"bad response from {self.host}:{self.port}: {e}"))

    def _answer(self, got: list[tuple[int, dict[str, Any]]]) -> None:
        for _, body in got:
            throttle = body.get("throttle_time_ms") if type(body) is dict else None
            if throttle:
                self.throttled_until = (self._loop or asyncio.get_running_loop()).time() + throttle / 1000
            fut = self._futures.popleft()
            if not fut.done():
                fut.set_result(body)

    def _on_lost(self, exc: Exception | None) -> None:
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} lost" + (f": {exc}" if exc else "")))

    def _fail(self, exc: KafkaError) -> None:
        if self._closed_exc is None:
            self._closed_exc = exc
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        while self._futures:
            fut = self._futures.popleft()
            if not fut.done():
                fut.set_exception(exc)
        self._can_write.set()
        if self._transport is not None:
            self._transport.close()

    async def close(self) -> None:
        self._fail(KafkaConnectionError("connection closed"))
        task = self._reauth_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
