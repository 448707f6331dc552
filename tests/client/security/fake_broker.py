"""A fake SASL broker for the client's login tests, written on the shared codec: it answers
ApiVersions, SaslHandshake, SaslAuthenticate (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER with
hand-written server sides) and, once logged in, ApiVersions and Metadata with no brokers.
Optionally TLS. It records every request's API key and refuses a non-login request made
while a (re-)authentication is under way, as Kafka's broker does (KIP-368)."""

from __future__ import annotations

import asyncio
import base64
import ssl
import struct
from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey
from client.protocol.frame import FrameDecoder
from client.protocol.header import decode_request_header, encode_response_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Writer
from client.security import scram

SALT = b"fake-broker-salt"


class _Login:
    """One server-side exchange; ``step(token) -> (challenge, error message or None, done)``."""

    def __init__(self, broker: FakeSaslBroker, mechanism: str) -> None:
        self.broker = broker
        self.mechanism = mechanism
        self.state = "first"
        self.auth = b""
        self.cred: scram.ScramCredential | None = None
        self.principal = ""

    def step(self, token: bytes) -> tuple[bytes, str | None, bool]:
        if self.mechanism == "PLAIN":
            _, user, password = token.split(b"\0")
            ok = self.broker.users.get(user.decode()) == password.decode()
            self.principal = user.decode()
            return b"", None if ok else "Authentication failed: Invalid username or password", True
        if self.mechanism == "OAUTHBEARER":
            if self.state == "error":
                return b"", "invalid_token: the token is bad", True
            text = token.decode()
            self.broker.oauth_messages.append(text)
            bearer = text.split("\x01")[1].removeprefix("auth=Bearer ")
            if bearer == "bad":
                self.state = "error"
                return b'{"status":"invalid_token"}', None, False
            self.principal = bearer
            return b"", None, True
        digest = scram.digest_of(self.mechanism)
        if self.state == "first":
            bare = token.decode()[3:]
            attrs = scram.parse_attributes(bare)
            user = scram.saslname_unescape(attrs["n"])
            password = self.broker.users.get(user, "")
            self.principal = user
            self.cred = scram.make_credential(self.mechanism, password.encode(), SALT, 4096)
            self.server_first = f"r={attrs['r']}SERVER,s={base64.b64encode(SALT).decode()},i=4096"
            self.bare = bare
            self.state = "final"
            return self.server_first.encode(), None, False
        assert self.cred is not None
        without_proof, _, proof = token.decode().rpartition(",p=")
        auth = f"{self.bare},{self.server_first},{without_proof}".encode()
        client_key = scram.xor(base64.b64decode(proof), scram.hmac_of(digest, self.cred.stored_key, auth))
        if scram.stored_key(digest, client_key) != self.cred.stored_key:
            return b"", f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism}", True
        sig = self.broker.forge_signature or scram.hmac_of(digest, self.cred.server_key, auth)
        return b"v=" + base64.b64encode(sig), None, True


class FakeSaslBroker:
    def __init__(self, *, mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"),
                 users: dict[str, str] | None = None, session_lifetime_ms: int = 0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.mechanisms = mechanisms
        self.users = users if users is not None else {"alice": "alice-secret"}
        self.session_lifetime_ms = session_lifetime_ms
        self.ssl_context = ssl_context
        self.forge_signature: bytes | None = None
        self.requests: list[int] = []  # API keys in arrival order, all connections
        self.logins: list[str] = []  # principals authenticated (re-authentications included)
        self.oauth_messages: list[str] = []
        self.violations: list[str] = []  # non-login requests made during a login
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def __aenter__(self) -> FakeSaslBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        decoder = FrameDecoder(1 << 20)
        login: _Login | None = None
        authenticated = False
        try:
            while data := await reader.read(65536):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    header, r = decode_request_header(frame)
                    key, version = header.api_key, header.api_version
                    body = REQUESTS[key].decode(r, version)
                    self.requests.append(key)
                    close = False
                    if key == ApiKey.API_VERSIONS:
                        resp: dict[str, Any] = {"error_code": 0, "api_keys": [
                            {"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in SUPPORTED_VERSIONS.items()]}
                    elif key == ApiKey.SASL_HANDSHAKE:
                        ok = body["mechanism"] in self.mechanisms
                        resp = {"error_code": 0 if ok else 33, "mechanisms": list(self.mechanisms)}
                        login = _Login(self, body["mechanism"]) if ok else None
                    elif key == ApiKey.SASL_AUTHENTICATE:
                        if login is None:
                            resp = {"error_code": 34, "error_message": "no handshake", "auth_bytes": b""}
                        else:
                            challenge, error, done = login.step(bytes(body["auth_bytes"]))
                            resp = {"error_code": 58 if error else 0, "error_message": error, "auth_bytes": challenge,
                                    "session_lifetime_ms": self.session_lifetime_ms if done and not error else 0}
                            close = error is not None
                            if done and not error:
                                self.logins.append(f"{login.mechanism}:{login.principal}")
                                authenticated = True
                                login = None
                    else:
                        if login is not None or not authenticated:
                            self.violations.append(ApiKey(key).name)
                            return
                        resp = {"brokers": [], "topics": [], "cluster_id": "fake", "controller_id": -1}
                    w = Writer(bytearray(4))
                    encode_response_header(w, key, version, header.correlation_id)
                    RESPONSES[key].encode(resp, version, w)
                    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
                    writer.write(bytes(w.buf))
                    if close:
                        await writer.drain()
                        return
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
