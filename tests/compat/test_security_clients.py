"""Real clients over TLS and SASL: kcat, confluent-kafka, kafka-python, aiokafka and
KafkaJS against one broker with the four listeners of ``broker.testing.secure``.

For each client and each security setting it supports, among

    SASL_SSL + PLAIN, SASL_SSL + SCRAM-SHA-512, SASL_PLAINTEXT + SCRAM-SHA-256,
    SSL with a client certificate (mutual TLS), SASL_SSL + OAUTHBEARER (unsecured JWT)

the client produces records, consumes them in a consumer group and commits (the committed
offset is checked by the client and again by an admin client on the PLAINTEXT listener), and,
where the client has transactions (all but kcat), aborts one transaction and commits another;
its own read_committed consumer must then see exactly the committed records at their offsets
(behind the aborted ones and their ABORT marker). Every case uses its own topics, group and
transactional id, so the cases share the one broker of the module.

Then the failures: a wrong password is refused with the client's SASL authentication error,
and a client certificate from another CA fails the TLS handshake on the SSL listener; the
broker goes on serving good clients after each.

OAUTHBEARER: librdkafka (kcat, confluent-kafka) makes its own unsecured token
(``enable.sasl.oauthbearer.unsecure.jwt``); kafka-python, aiokafka and KafkaJS are given a token
provider returning ``unsecured_token("alice")``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from broker.testing.process import BrokerProcess
from broker.testing.secure import SecureSetup, secure_broker, unsecured_token

from ._clients import KCAT, KCAT_MISSING, KP_TIMEOUTS, NODE_DIR, create_topic, kcat

KAFKAJS_MISSING = None if shutil.which("node") and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "kafkajs")) else (
    "node or tests/compat/node/node_modules is missing (scripts/test runs `npm ci` there when node and npm are"
    " installed)")

#: (listener, SASL mechanism or None): the test id is "listener-mechanism" ("SSL-mTLS")
CASES = [
    pytest.param("SASL_SSL", "PLAIN", id="SASL_SSL-PLAIN"),
    pytest.param("SASL_SSL", "SCRAM-SHA-512", id="SASL_SSL-SCRAM-SHA-512"),
    pytest.param("SASL_PLAINTEXT", "SCRAM-SHA-256", id="SASL_PLAINTEXT-SCRAM-SHA-256"),
    pytest.param("SSL", None, id="SSL-mTLS"),
    pytest.param("SASL_SSL", "OAUTHBEARER", id="SASL_SSL-OAUTHBEARER"),
]
N = 10  # records per case
RDK_FAST = {"socket.timeout.ms": 5000}
RDK_PRODUCER = {"message.timeout.ms": 10000, "linger.ms": 5}
RDK_CONSUMER = {"fetch.wait.max.ms": 100}


@dataclass
class Secure:
    broker: BrokerProcess
    setup: SecureSetup

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.broker.listener_ports[listener]}"

    @property
    def plain(self) -> str:
        return self.bootstrap("PLAINTEXT")


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    broker, setup = secure_broker(str(tmp_path_factory.mktemp("secure")))
    try:
        yield Secure(broker, setup)
    finally:
        rc = broker.stop()
        assert rc == 0, f"broker exited with {rc}:\n{broker.log_text()}"


@dataclass
class Names:
    topic: str
    txn_topic: str
    group: str
    txn_id: str

    @classmethod
    def of(cls, family: str, listener: str, mechanism: str | None) -> Names:
        base = f"sec-{family}-{listener}-{mechanism or 'mTLS'}".lower()
        # a fresh suffix: a re-run on the same broker (pytest --lf in one session) starts clean
        tag = uuid.uuid4().hex[:6]
        return cls(f"{base}-{tag}", f"{base}-txn-{tag}", f"{base}-group-{tag}", f"{base}-tid-{tag}")


@dataclass
class Outcome:
    offsets: list[int]  # of the N records produced
    consumed: list[bytes]  # by the group consumer, in order
    committed: int  # the group's committed offset, as the client reports it
    txn: list[tuple[int, bytes]] | None  # (offset, value) read with read_committed; None: no transactions


def values(names: Names) -> list[bytes]:
    return [f"{names.topic}-{i}".encode() for i in range(N)]


ABORTED = [b"aborted-0", b"aborted-1", b"aborted-2"]
COMMITTED = [b"committed-0", b"committed-1", b"committed-2"]
#: the aborted records at 0-2, the ABORT marker at 3, the committed records at 4-6
TXN_WANT = [(4 + i, v) for i, v in enumerate(COMMITTED)]


def admin_committed(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offset for partition 0, by confluent-kafka's admin on ``bootstrap``."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])],
                                            request_timeout=10)
    tps = fut[group].result(15).topic_partitions
    assert len(tps) == 1 and tps[0].error is None, tps
    return int(tps[0].offset)


# ---------------------------------------------------------------- librdkafka: confluent-kafka, kcat


def rdk_config(s: Secure, listener: str, mechanism: str | None, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": s.bootstrap(listener), **s.setup.client_properties(listener, mechanism), **RDK_FAST,
            **extra}


def ck_run(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    cfg = rdk_config(s, listener, mechanism)
    offsets: list[int] = []
    p = Producer({**cfg, **RDK_PRODUCER})
    for v in values(names):
        p.produce(names.topic, v, partition=0,
                  on_delivery=lambda err, m: offsets.append(-1 if err else m.offset()))
    assert p.flush(15) == 0
    del p

    c = Consumer({**cfg, **RDK_CONSUMER, "group.id": names.group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    consumed: list[bytes] = []
    try:
        c.subscribe([names.topic])
        deadline = time.monotonic() + 20
        while len(consumed) < N and time.monotonic() < deadline:
            for m in c.consume(N, timeout=0.2):
                if m.error():
                    raise KafkaException(m.error())
                consumed.append(m.value())
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(names.topic, 0)], timeout=10)[0].offset
    finally:
        c.close()

    tp = Producer({**cfg, **RDK_PRODUCER, "transactional.id": names.txn_id})
    tp.init_transactions(15)
    for batch, end in ((ABORTED, tp.abort_transaction), (COMMITTED, tp.commit_transaction)):
        tp.begin_transaction()
        for v in batch:
            tp.produce(names.txn_topic, v, partition=0)
        # abort_transaction() purges what is still queued: flush, so the aborted records are
        # written and read_committed has something to skip
        assert tp.flush(15) == 0
        end(15)
    del tp
    r = Consumer({**cfg, **RDK_CONSUMER, "group.id": f"{names.group}-rc", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    txn: list[tuple[int, bytes]] = []
    try:
        # up to the partition's end (for read_committed its last stable offset: 8, past the COMMIT
        # marker at 7): everything it will ever see
        r.assign([TopicPartition(names.txn_topic, 0, 0)])
        deadline = time.monotonic() + 20
        at_end = False
        while not at_end and time.monotonic() < deadline:
            for m in r.consume(N, timeout=0.2):
                err = m.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    at_end = m.offset() >= 8
                elif err is not None:
                    raise KafkaException(err)
                else:
                    txn.append((m.offset(), m.value()))
    finally:
        r.close()
    return Outcome(offsets, consumed, committed, txn)


def kcat_args(s: Secure, listener: str, mechanism: str | None) -> list[str]:
    args = ["-b", s.bootstrap(listener), "-X", "socket.timeout.ms=5000"]
    for k, v in s.setup.client_properties(listener, mechanism).items():
        args += ["-X", f"{k}={v}"]
    return args


def kcat_run(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    """kcat has no transactions. ``-G`` runs librdkafka's balanced consumer with auto-commit,
    whose final commit happens when ``-c N`` has been reached and kcat closes the consumer."""
    sec = kcat_args(s, listener, mechanism)
    r = kcat(*sec, "-P", "-t", names.topic, "-p", "0", "-X", "message.timeout.ms=10000",
             input=b"".join(v + b"\n" for v in values(names)))
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    r = kcat(*sec, "-G", names.group, "-c", str(N), "-q", "-f", "%o %s\n", "-X", "auto.offset.reset=earliest",
             "-X", "fetch.wait.max.ms=100", "-X", "session.timeout.ms=6000", names.topic, timeout=30)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    lines = [ln.split(b" ", 1) for ln in r.stdout.splitlines()]
    # kcat does not print what the group committed: our admin's answer stands for it
    committed = admin_committed(s.plain, names.group, names.topic)
    return Outcome([int(o) for o, _ in lines], [v for _, v in lines], committed, None)


# ---------------------------------------------------------------- kafka-python, aiokafka


def kp_security(s: Secure, listener: str, mechanism: str | None, user: str = "alice",
                password: str | None = None) -> dict[str, Any]:
    """kafka-python's settings; aiokafka's are the same but for ``ssl_context`` (``aio_security``)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Token(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return unsecured_token(user)

    cfg: dict[str, Any] = {"security_protocol": listener}
    if listener in ("SSL", "SASL_SSL"):
        cfg["ssl_cafile"] = s.setup.ca_pem
    if listener == "SSL":
        cfg.update(ssl_certfile=s.setup.client_cert, ssl_keyfile=s.setup.client_key)
    if mechanism is not None:
        cfg["sasl_mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            cfg["sasl_oauth_token_provider"] = Token()
        else:
            cfg["sasl_plain_username"] = user
            cfg["sasl_plain_password"] = s.setup.client_properties(listener, mechanism, user)["sasl.password"] \
                if password is None else password
    return cfg


def kp_run(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP

    cfg = dict(KP_TIMEOUTS, bootstrap_servers=s.bootstrap(listener), **kp_security(s, listener, mechanism))
    p = KafkaProducer(**cfg, linger_ms=5, max_block_ms=10000, delivery_timeout_ms=15000)
    try:
        futs = [p.send(names.topic, v, partition=0) for v in values(names)]
        p.flush(15)
        offsets = [f.get(15).offset for f in futs]
    finally:
        p.close(5)

    c = KafkaConsumer(group_id=names.group, auto_offset_reset="earliest", enable_auto_commit=False,
                      fetch_max_wait_ms=100, session_timeout_ms=6000, heartbeat_interval_ms=1000, **cfg)
    # The topic's metadata first, then the subscription: kafka-python 3.0.12, when its first
    # generation is assigned nothing (the leader had no metadata for the topic yet, which a
    # loaded machine makes likely), rejoins, gets the partition, then spins in poll() without
    # ever fetching its committed offsets (seen in its debug log: no OffsetFetch, no Fetch, for
    # the whole 20 s); the broker's answers in that log are all well-formed.
    assert c.partitions_for_topic(names.topic) == {0}
    c.subscribe([names.topic])
    consumed: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(consumed) < N and time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=200).values():
                consumed.extend(m.value for m in msgs)
        c.commit()
        committed = c.committed(KTP(names.topic, 0))
    finally:
        c.close(autocommit=False)

    tp = KafkaProducer(**cfg, transactional_id=names.txn_id, max_block_ms=10000)
    try:
        tp.init_transactions()
        tp.begin_transaction()
        for v in ABORTED:
            tp.send(names.txn_topic, v, partition=0)
        tp.flush(15)  # as with librdkafka, aborting drops what is still queued
        tp.abort_transaction()
        tp.begin_transaction()
        for v in COMMITTED:
            tp.send(names.txn_topic, v, partition=0)
        tp.commit_transaction()
    finally:
        tp.close(5)
    r = KafkaConsumer(group_id=None, isolation_level="read_committed", fetch_max_wait_ms=100,
                      enable_auto_commit=False, **cfg)
    txn: list[tuple[int, bytes]] = []
    try:
        tp0 = KTP(names.txn_topic, 0)
        r.assign([tp0])
        r.seek(tp0, 0)
        deadline = time.monotonic() + 20
        # read_committed stops at the last stable offset: past the COMMIT marker (8) is the end
        while r.position(tp0) < 8 and time.monotonic() < deadline:
            for msgs in r.poll(timeout_ms=200).values():
                txn.extend((m.offset, m.value) for m in msgs)
    finally:
        r.close(autocommit=False)
    return Outcome(offsets, consumed, int(committed), txn)


def aio_security(s: Secure, listener: str, mechanism: str | None, user: str = "alice",
                 password: str | None = None) -> dict[str, Any]:
    from aiokafka.abc import AbstractTokenProvider
    from aiokafka.helpers import create_ssl_context

    class Token(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_token(user)

    cfg: dict[str, Any] = {"security_protocol": listener}
    if listener == "SSL":
        cfg["ssl_context"] = create_ssl_context(cafile=s.setup.ca_pem, certfile=s.setup.client_cert,
                                                keyfile=s.setup.client_key)
    elif listener == "SASL_SSL":
        cfg["ssl_context"] = create_ssl_context(cafile=s.setup.ca_pem)
    if mechanism is not None:
        cfg["sasl_mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            cfg["sasl_oauth_token_provider"] = Token()
        else:
            cfg["sasl_plain_username"] = user
            cfg["sasl_plain_password"] = s.setup.client_properties(listener, mechanism, user)["sasl.password"] \
                if password is None else password
    return cfg


async def aio_run_async(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATP

    cfg = dict(bootstrap_servers=s.bootstrap(listener), request_timeout_ms=5000,
               **aio_security(s, listener, mechanism))
    p = AIOKafkaProducer(**cfg, linger_ms=5)
    await p.start()
    try:
        futs = [await p.send(names.topic, v, partition=0) for v in values(names)]
        offsets = [md.offset for md in await asyncio.wait_for(asyncio.gather(*futs), 15)]
    finally:
        await p.stop()

    c = AIOKafkaConsumer(names.topic, group_id=names.group, auto_offset_reset="earliest", enable_auto_commit=False,
                         fetch_max_wait_ms=100, session_timeout_ms=6000, heartbeat_interval_ms=1000, **cfg)
    await c.start()
    consumed: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(consumed) < N and time.monotonic() < deadline:
            for msgs in (await c.getmany(timeout_ms=200)).values():
                consumed.extend(m.value for m in msgs if m.value is not None)
        await c.commit()
        committed = await c.committed(ATP(names.topic, 0))
    finally:
        await c.stop()

    tp = AIOKafkaProducer(**cfg, transactional_id=names.txn_id)
    await tp.start()
    try:
        await tp.begin_transaction()
        for v in ABORTED:
            await tp.send_and_wait(names.txn_topic, v, partition=0)
        await tp.abort_transaction()
        async with tp.transaction():
            for v in COMMITTED:
                await tp.send_and_wait(names.txn_topic, v, partition=0)
    finally:
        await tp.stop()
    r = AIOKafkaConsumer(group_id=None, isolation_level="read_committed", fetch_max_wait_ms=100,
                         enable_auto_commit=False, **cfg)
    await r.start()
    txn: list[tuple[int, bytes]] = []
    try:
        tp0 = ATP(names.txn_topic, 0)
        r.assign([tp0])
        r.seek(tp0, 0)
        deadline = time.monotonic() + 20
        while await r.position(tp0) < 8 and time.monotonic() < deadline:  # see kp_run
            for msgs in (await r.getmany(timeout_ms=200)).values():
                txn.extend((m.offset, m.value) for m in msgs if m.value is not None)
    finally:
        await r.stop()
    assert committed is not None
    return Outcome(offsets, consumed, committed, txn)


def aio_run(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    return asyncio.run(aio_run_async(s, listener, mechanism, names))


# ---------------------------------------------------------------- KafkaJS (tests/compat/node/secure_clients.mjs)


def kafkajs_run(s: Secure, listener: str, mechanism: str | None, names: Names) -> Outcome:
    ssl: dict[str, str] | None = None
    if listener in ("SSL", "SASL_SSL"):
        ssl = {"ca": s.setup.ca_pem}
    if listener == "SSL":
        ssl = {"ca": s.setup.ca_pem, "cert": s.setup.client_cert, "key": s.setup.client_key}
    sasl: dict[str, str] | None = None
    if mechanism == "OAUTHBEARER":
        sasl = {"mechanism": "oauthbearer", "token": unsecured_token("alice")}
    elif mechanism is not None:
        sasl = {"mechanism": mechanism.lower(), "username": "alice",
                "password": s.setup.client_properties(listener, mechanism)["sasl.password"]}
    cfg = {"brokers": [s.bootstrap(listener)], "ssl": ssl, "sasl": sasl, "topic": names.topic, "group": names.group,
           "values": [v.decode() for v in values(names)], "txnTopic": names.txn_topic, "txnId": names.txn_id,
           "aborted": [v.decode() for v in ABORTED], "committed": [v.decode() for v in COMMITTED]}
    r = subprocess.run(["node", os.path.join(NODE_DIR, "secure_clients.mjs"), json.dumps(cfg)], capture_output=True,
                       text=True, timeout=90, cwd=NODE_DIR)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    return Outcome(out["offsets"], [v.encode() for v in out["consumed"]], out["committed"],
                   [(o, v.encode()) for o, v in out["txn"]])


RUNS = {"kcat": kcat_run, "confluent-kafka": ck_run, "kafka-python": kp_run, "aiokafka": aio_run,
        "kafkajs": kafkajs_run}
#: librdkafka 2.0.2's SCRAM client (kcat) sends ``r=<client nonce><server-first's whole r>`` in
#: its client-final message, the client nonce twice; Kafka's ScramSaslServer accepts that (the
#: nonce must end with the server's) and so does ours: kcat's SCRAM cases are ordinary cases.
FAMILIES = [
    pytest.param("kcat", marks=pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)),
    "confluent-kafka",
    "kafka-python",
    "aiokafka",
    pytest.param("kafkajs", marks=pytest.mark.skipif(KAFKAJS_MISSING is not None, reason=KAFKAJS_MISSING or "")),
]


@pytest.mark.parametrize("listener,mechanism", CASES)
@pytest.mark.parametrize("family", FAMILIES)
def test_produce_group_consume_and_transactions(secure: Secure, family: str, listener: str, mechanism: str | None,
) -> None:
    names = Names.of(family, listener, mechanism)
    # created on the PLAINTEXT listener: auto-creation is not what is under test here
    create_topic(secure.plain, names.topic)
    create_topic(secure.plain, names.txn_topic)
    got = RUNS[family](secure, listener, mechanism, names)
    assert got.offsets == list(range(N))
    assert got.consumed == values(names)
    assert got.committed == N
    assert admin_committed(secure.plain, names.group, names.topic) == N
    if family != "kcat":
        assert got.txn == TXN_WANT


# ---------------------------------------------------------------- refusals


def _rdk_errors(cfg: dict[str, Any], want: Any, timeout: float = 10.0) -> list[KafkaError]:
    """The errors a librdkafka producer with ``cfg`` reports through error_cb until one matches
    ``want`` (a predicate) or ``timeout`` passes."""
    errors: list[KafkaError] = []
    p = Producer({**cfg, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while not any(want(e) for e in errors) and time.monotonic() < deadline:
        p.poll(0.1)
    del p
    return errors


def _still_serves(s: Secure) -> None:
    """A good client on each secure listener right after the refusals: a round trip on each."""
    for listener, mechanism in (("SASL_SSL", "SCRAM-SHA-512"), ("SSL", None)):
        md = AdminClient(rdk_config(s, listener, mechanism)).list_topics(timeout=10)
        assert [b.port for b in md.brokers.values()] == [s.broker.listener_ports[listener]]


AUTH_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"


@pytest.mark.parametrize("family", [
    pytest.param("kcat", marks=pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)),
    "confluent-kafka", "kafka-python", "aiokafka"])
def test_wrong_password_is_refused(secure: Secure, family: str, caplog: pytest.LogCaptureFixture) -> None:
    """SASL_SSL with a wrong password: the client reports SASL authentication failure (Kafka's
    SASL_AUTHENTICATION_FAILED, error 58, with Kafka's message for the mechanism). KafkaJS is
    left out: its SASL errors are the same error code through the same broker path."""
    s = secure
    if family == "kcat":
        r = kcat(*kcat_args(s, "SASL_SSL", "PLAIN"), "-X", "sasl.password=wrong", "-m", "3", "-L")
        assert r.returncode != 0
        assert b"SASL authentication error: Authentication failed: Invalid username or password" in r.stderr, r.stderr
        r = kcat(*kcat_args(s, "SASL_SSL", "SCRAM-SHA-512"), "-X", "sasl.password=wrong", "-m", "3", "-L")
        assert r.returncode != 0
        assert b"SASL authentication error: " + AUTH_FAILED.encode() in r.stderr, r.stderr
    elif family == "confluent-kafka":
        cfg = rdk_config(s, "SASL_SSL", "SCRAM-SHA-512", **{"sasl.password": "wrong"})
        errors = _rdk_errors(cfg, lambda e: e.code() == KafkaError._AUTHENTICATION)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth and AUTH_FAILED in auth[0].str(), [e.str() for e in errors]
    elif family == "kafka-python":
        from kafka import KafkaConsumer
        from kafka.errors import KafkaTimeoutError

        # kafka-python retries the bootstrap until bootstrap_timeout_ms, then raises a timeout;
        # the authentication failure is what it logs for an attempt. Not for every attempt: when
        # the broker's error response and its close of the connection arrive together (Kafka's
        # way: both after connection.failed.authentication.delay.ms), kafka-python reports only
        # "socket disconnected", and on a loaded machine that is most attempts. So the refusal
        # is what is checked every round, and the error's text when kafka-python reports it.
        want = f"SaslAuthenticationFailedError: {AUTH_FAILED.replace('512', '256')}"
        for _ in range(4):
            with pytest.raises(KafkaTimeoutError):
                KafkaConsumer(bootstrap_servers=s.bootstrap("SASL_PLAINTEXT"), request_timeout_ms=5000,
                              bootstrap_timeout_ms=2000,
                              **kp_security(s, "SASL_PLAINTEXT", "SCRAM-SHA-256", password="wrong"))
            if want in caplog.text:
                break
        reported = [ln for ln in caplog.text.splitlines() if "SaslAuthenticationFailedError" in ln]
        assert all(want in ln for ln in reported), reported  # when reported, Kafka's message
    else:
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaConnectionError

        async def start() -> None:
            p = AIOKafkaProducer(bootstrap_servers=s.bootstrap("SASL_SSL"), request_timeout_ms=5000,
                                 **aio_security(s, "SASL_SSL", "SCRAM-SHA-512", password="wrong"))
            try:
                await p.start()
            finally:
                await p.stop()

        # aiokafka logs the broker's error and raises "Unable to bootstrap"
        with pytest.raises(KafkaConnectionError):
            asyncio.run(start())
        assert f"[Error 58] SaslAuthenticationFailed: {AUTH_FAILED}" in caplog.text, caplog.text[-2000:]
    _still_serves(s)


@pytest.mark.parametrize("family", [
    pytest.param("kcat", marks=pytest.mark.skipif(KCAT is None, reason=KCAT_MISSING)),
    "confluent-kafka", "kafka-python", "aiokafka"])
def test_certificate_from_another_ca_fails_the_handshake(secure: Secure, family: str,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """On the SSL listener (ssl.client.auth=required) a client certificate signed by another CA
    fails the handshake: the broker sends TLS alert 48 (unknown_ca), which each client names.
    Under TLS 1.3 the client sees it on its first read after its side of the handshake."""
    s = secure
    stranger = {"ssl.certificate.location": s.setup.stranger_cert, "ssl.key.location": s.setup.stranger_key}
    if family == "kcat":
        r = kcat(*kcat_args(s, "SSL", None), *(a for k, v in stranger.items() for a in ("-X", f"{k}={v}")),
                 "-m", "3", "-L")
        assert r.returncode != 0
        assert b"tlsv1 alert unknown ca" in r.stderr, r.stderr
    elif family == "confluent-kafka":
        errors = _rdk_errors(rdk_config(s, "SSL", None, **stranger), lambda e: "alert unknown ca" in e.str())
        assert any("alert unknown ca" in e.str() for e in errors), [e.str() for e in errors]
    elif family == "kafka-python":
        from kafka import KafkaConsumer
        from kafka.errors import KafkaTimeoutError

        cfg = kp_security(s, "SSL", None)
        cfg.update(ssl_certfile=s.setup.stranger_cert, ssl_keyfile=s.setup.stranger_key)
        with pytest.raises(KafkaTimeoutError):
            KafkaConsumer(bootstrap_servers=s.bootstrap("SSL"), request_timeout_ms=5000, bootstrap_timeout_ms=2000,
                          **cfg)
        assert "TLSV1_ALERT_UNKNOWN_CA" in caplog.text, caplog.text[-2000:]
    else:
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaConnectionError
        from aiokafka.helpers import create_ssl_context

        async def start() -> None:
            ctx = create_ssl_context(cafile=s.setup.ca_pem, certfile=s.setup.stranger_cert,
                                     keyfile=s.setup.stranger_key)
            p = AIOKafkaProducer(bootstrap_servers=s.bootstrap("SSL"), request_timeout_ms=5000,
                                 security_protocol="SSL", ssl_context=ctx)
            try:
                await p.start()
            finally:
                await p.stop()

        with pytest.raises(KafkaConnectionError):
            asyncio.run(start())
        # asyncio reads the alert as the connection closing under aiokafka's first request
        assert f"Unable connect to \"{s.bootstrap('SSL')}\"" in caplog.text, caplog.text[-2000:]
    _still_serves(s)


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_tls_close_notify_is_answered(secure: Secure, listener: str) -> None:
    """A client that ends TLS with close_notify (Python's ``unwrap()``; asyncio's SSL transport
    on close, so every aiokafka connection) gets the broker's close_notify or its FIN at once.
    Without it an asyncio client's close waits ssl_shutdown_timeout (30 s)."""
    import socket
    import ssl

    ctx = ssl.create_default_context(cafile=secure.setup.ca_pem)
    if listener == "SSL":
        ctx.load_cert_chain(secure.setup.client_cert, secure.setup.client_key)
    with socket.create_connection(("127.0.0.1", secure.broker.listener_ports[listener]), timeout=5) as raw:
        tls = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        tls.settimeout(3)
        tls.unwrap()  # sends close_notify, then reads until the broker's (TimeoutError without it)
