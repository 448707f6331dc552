"""Our client (Producer, Consumer, Admin) over every kind of listener of one broker process
(broker.testing.secure): SASL_SSL with PLAIN, SCRAM-SHA-512 and OAUTHBEARER, SASL_PLAINTEXT
with SCRAM-SHA-256, SSL with mutual TLS — records produced, consumed in a group with committed
offsets, and a committed and an aborted transaction seen (or not) by a read_committed consumer.
Also: a new keystore set with IncrementalAlterConfigs applies to new connections while the open
ones keep working, and DescribeConfigs never shows a secret."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing.secure import SecureSetup, secure_broker, unsecured_token
from client import Admin, Consumer, Producer
from client.errors import SaslAuthenticationFailedError  # type: ignore[attr-defined]

CASES = [("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
         ("SSL", None), ("SASL_SSL", "OAUTHBEARER")]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, SecureSetup]]:
    broker, setup = secure_broker(str(tmp_path_factory.mktemp("secure")), metrics=True)
    try:
        yield broker, setup
    finally:
        assert broker.stop() == 0


class _Token:
    async def token(self) -> str:
        return unsecured_token("alice")


def _options(broker: Any, setup: SecureSetup, listener: str, mechanism: str | None) -> dict[str, Any]:
    opts: dict[str, Any] = {"bootstrap_servers": f"127.0.0.1:{broker.listener_ports[listener]}",
                            "security_protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        ctx = ssl.create_default_context(cafile=setup.ca_pem)
        if listener == "SSL":
            ctx.load_cert_chain(setup.client_cert, setup.client_key)
        opts["ssl_context"] = ctx
    if mechanism == "OAUTHBEARER":
        opts.update(sasl_mechanism=mechanism, sasl_oauth_token_provider=_Token())
    elif mechanism is not None:
        opts.update(sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    return opts


async def _consume(consumer: Consumer, want: int, timeout: float = 20.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(got) < want and asyncio.get_running_loop().time() < deadline:
        for records in (await consumer.getmany(timeout_ms=500)).values():
            got += [r.value for r in records]
    return got


@pytest.mark.parametrize("listener,mechanism", CASES, ids=[f"{a}-{b or 'mTLS'}" for a, b in CASES])
async def test_produce_consume_commit_and_transactions(secure: tuple[Any, SecureSetup], listener: str,
                                                       mechanism: str | None) -> None:
    broker, setup = secure
    opts = _options(broker, setup, listener, mechanism)
    tag = f"{listener}-{mechanism or 'mtls'}-{uuid.uuid4().hex[:6]}".lower()
    topic, group = f"sec-{tag}", f"g-{tag}"
    async with Admin(**opts) as admin:
        await admin.create_topics([topic])
    async with Producer(**opts, acks="all") as producer:
        for i in range(3):
            await producer.send(topic, f"plain-{i}".encode())
    async with Consumer(**opts, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])
        assert await _consume(consumer, 3) == [b"plain-0", b"plain-1", b"plain-2"]
        await consumer.commit()
        committed = await consumer.committed([(topic, 0)])
        assert next(iter(committed.values())).offset == 3  # type: ignore[union-attr]
    async with Producer(**opts, transactional_id=f"txn-{tag}") as producer:
        await producer.init_transactions()
        producer.begin_transaction()
        await producer.send(topic, b"committed")
        await producer.commit_transaction()
        producer.begin_transaction()
        await producer.send(topic, b"aborted")
        await producer.abort_transaction()
    async with Consumer(**opts, group_id=group, isolation_level="read_committed",
                        enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])  # resumes at the committed offset 3
        got = await _consume(consumer, 1)
        await asyncio.sleep(0.5)
        got += await _consume(consumer, 1, timeout=1.0)
        assert got == [b"committed"]


def _api_versions(sock: ssl.SSLSocket, cid: int) -> int:
    """ApiVersions v0 over ``sock``; the answer's correlation id."""
    body = struct.pack(">hhih", 18, 0, cid, -1)
    sock.sendall(struct.pack(">i", len(body)) + body)
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        assert chunk, "the broker closed the connection"
        data += chunk
    return int(struct.unpack(">i", data[4:8])[0])


def _tls_connect(port: int, setup: SecureSetup) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=setup.ca_pem)
    ctx.load_cert_chain(setup.client_cert, setup.client_key)
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")


async def test_new_keystore_applies_to_new_connections_only(secure: tuple[Any, SecureSetup],
                                                            tmp_path: Any) -> None:
    broker, setup = secure
    port = broker.listener_ports["SSL"]
    old = _tls_connect(port, setup)
    old_cert = old.getpeercert(binary_form=True)
    renewed = setup.ca.issue_cert("127.0.0.1", "localhost")
    path = tmp_path / "renewed.pem"
    path.write_bytes(renewed.private_key_pem.bytes() + b"".join(c.bytes() for c in renewed.cert_chain_pems))
    async with Admin(bootstrap_servers=broker.bootstrap) as admin:
        with pytest.raises(Exception, match="SSL|keystore"):  # a keystore that does not load changes nothing
            await admin.incremental_alter_configs("broker", 0, {"listener.name.ssl.ssl.keystore.location":
                                                                str(tmp_path / "missing.pem")})
        await admin.incremental_alter_configs("broker", 0, {"listener.name.ssl.ssl.keystore.location": str(path)})
        entries = await admin.describe_configs("broker", 0)
        assert entries["listener.name.ssl.ssl.keystore.location"].value == str(path)
    new = await asyncio.to_thread(_tls_connect, port, setup)
    assert new.getpeercert(binary_form=True) == ssl.PEM_cert_to_DER_cert(renewed.cert_chain_pems[0].bytes().decode())
    assert new.getpeercert(binary_form=True) != old_cert
    assert _api_versions(old, 7) == 7  # the connection opened before keeps its keystore and works
    assert _api_versions(new, 8) == 8
    old.close()
    new.close()


async def test_describe_configs_hides_secrets(secure: tuple[Any, SecureSetup]) -> None:
    broker, _ = secure
    async with Admin(bootstrap_servers=broker.bootstrap) as admin:
        entries = await admin.describe_configs("broker", 0)
    jaas = entries["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    assert jaas.value is None and jaas.is_sensitive
    assert entries["ssl.keystore.password"].value is None and entries["ssl.keystore.password"].is_sensitive
    assert entries["ssl.keystore.location"].value is not None and not entries["ssl.keystore.location"].is_sensitive
    assert "alice-secret" not in broker.log_text()


async def test_authentication_counters(secure: tuple[Any, SecureSetup]) -> None:
    broker, setup = secure

    def count(name: str, listener: str) -> float:
        prefix = f'kafka_server_socket_server_metrics_{name}{{listener="{listener}"}} '
        return next((float(line[len(prefix):]) for line in broker.scrape().splitlines() if line.startswith(prefix)), 0.0)

    ok, failed = count("successful_authentication_total", "SASL_PLAINTEXT"), count("failed_authentication_total",
                                                                                   "SASL_PLAINTEXT")
    opts = _options(broker, setup, "SASL_PLAINTEXT", "SCRAM-SHA-256")
    async with Admin(**opts) as admin:
        await admin.list_topics()
    with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
        async with Admin(**{**opts, "sasl_plain_password": "not-the-password-42"}, request_timeout_ms=5000) as admin:
            await admin.list_topics()
    assert count("successful_authentication_total", "SASL_PLAINTEXT") >= ok + 1
    assert count("failed_authentication_total", "SASL_PLAINTEXT") >= failed + 1
    assert "not-the-password-42" not in broker.log_text()
