"""Producer: asyncio, batching, Kafka's default partitioner, retries, bounded memory.

::

    async with Producer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as producer:
        md = await producer.send("events", b"value", key=b"user-1")     # RecordMetadata once acked
        fut = producer.send_nowait("events", b"v2")                      # a future, no await
        await producer.flush()

Structure (as aiokafka's and Kafka's Java producer): the producer builds a ``Cluster``
(metadata, connections), a ``RecordAccumulator`` (``client/accumulator.py``: open and sealed
batches, buffer memory, lingering, records waiting for memory or metadata) and a ``Sender``
(``client/sender.py``) handed both, which never knows the producer. Each depends only on the
ones built before it.

Data path. ``send_nowait`` hands the record to ``RecordAccumulator.append``, the one append
path, which picks the partition (``client.partitioner``: murmur2 of the key as Kafka's Java
client, sticky batches for unkeyed records), then encodes the record straight into that
partition's open ``ProducerBatch`` (``client/producer_batch.py``: one ``bytes.join`` and one
``bytearray +=`` per record, no per-record object kept). It returns a ``RecordFuture``
(``client/record_future.py``), a three-slot object pointing at the batch's future and the
record's index: the batch future
resolves once per batch and each record's ``RecordMetadata`` (offset = base_offset + index) is
computed only when asked. A batch is sealed (header written with ``struct.pack_into``, records
compressed, CRC-32C once) when the next record does not fit in ``batch_size`` or ``linger_ms``
after its first record; then the sender (``client/sender.py``) puts the sealed batches of
every partition led by the same broker into one Produce request (one batch per partition per
request, up to ``max_request_size``), with up to ``max_in_flight_requests_per_connection``
requests pipelined per connection.

Memory. Every open or unacknowledged batch holds ``batch_size`` bytes (or its one large
record's size) of ``buffer_memory``. When a new batch would exceed it, the record *waits*
instead of the buffer growing: ``send_nowait`` still returns a future at once (the producer
keeps references to the caller's key and value, not a copy) and the waiting records are
appended in order as acknowledged batches free memory; a record that waits more than
``max_block_ms`` fails with KafkaTimeoutError. ``await producer.drain()`` is the back-pressure
point for loops of ``send_nowait`` (as ``StreamWriter.drain``): it returns once the sealed
batches fit in the free request slots and nothing waits for memory. Nothing is sent or
answered while the caller's loop runs without awaiting, so such a loop should ``drain()`` every
few hundred records. Records for a topic whose metadata is not known yet wait the same way (up
to ``max_block_ms``; UnknownTopicOrPartitionError if the topic does not exist then). A waiting
record costs about what a batched one costs (``RecordAccumulator.park``: its future carries it,
one asyncio future per group of 1024), so the aiokafka idiom — start, a burst of sends before
the metadata is in, ``flush``, ``gather`` — runs at the speed of the fast path.

``send`` waits for the acknowledgement (aiokafka's ``send_and_wait``, also available under that
name; Kafka's Java ``send().get()``); aiokafka's ``send``, which returns a future, is our
``send_nowait``.

Errors. Retriable errors (connection lost, NOT_LEADER_OR_FOLLOWER, ...) are retried after
``retry_backoff_ms`` until ``retries`` or ``delivery_timeout_ms`` (from the batch's creation)
runs out; others fail the batch's records at once. MESSAGE_TOO_LARGE for a batch of several
records splits it in two and retries (as Kafka's Java producer does); for one record it is
final.

Idempotence (``enable_idempotence``, on by default as in Kafka's Java producer since 3.0): at
start the producer gets a producer id (InitProducerId) and numbers each partition's records;
the broker then writes a retried batch exactly once, in order, even with 5 requests in flight
and across a broker restart (``client/producer_state.py``). It is turned off by default,
and refused if asked for, with ``acks=0``, ``retries=0`` or more than 5 requests in flight.
Kafka's Java producer also requires ``acks=all``, because of its replicas; on one node
``acks=1`` keeps the exactly-once across retries and broker process crashes, and ``acks=all``
adds the fsync that survives a machine crash. Without idempotence a retried batch whose first
attempt *was* written (its answer was lost with the connection) is written twice, and with
more than one request in flight a retried batch can land after later batches of its
partition; ``max_in_flight_requests_per_connection=1`` keeps the order.

Transactions (``transactional_id``, as Kafka's Java producer; ``client/transactions.py``)::

    async with Producer(bootstrap, transactional_id="orders-1") as p:
        await p.init_transactions()              # fences older producers of "orders-1"
        p.begin_transaction()
        p.send_nowait("out", b"result")
        await p.send_offsets_to_transaction({("in", 0): 42}, consumer.group_metadata())
        await p.commit_transaction()             # or abort_transaction()

The records of a transaction, and the consumer offsets sent with it, become visible to
``isolation_level="read_committed"`` consumers together when it commits, and never if it
aborts. A transactional producer is idempotent with ``acks='all'`` (the default then; other
values are refused, as Kafka does) and sends only inside a transaction. Errors:
``ProducerFencedError`` (another producer with the same id took over, or the transaction
timed out: close the producer) and ``TransactionAbortableError`` (a send failed: call
``abort_transaction``, then retry the work in a new transaction). ``close`` aborts an open
transaction.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from client.accumulator import (
    TYPE_HELP,
    RecordAccumulator,
)
from client.cluster import Cluster
from client.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from client.partitioner import Partitioner
from client.producer_batch import ProducerBatch, RecordMetadata, WaitGroup, record_size_upper_bound
from client.producer_state import TransactionManager
from client.protocol.api import ErrorCode
from client.record_future import RecordFuture, new_record_future, new_waiting_record
from client.records.compression import Compression
from client.security.config import SecurityConfig, TokenProvider
from client.sender import Sender
from client.structs import ConsumerGroupMetadata, OffsetAndMetadata, offsets_and_metadata
from client.transactions import Transactions, TxnState

__all__ = ["Producer", "RecordMetadata", "RecordFuture"]

logger = logging.getLogger("client.producer")

_time_ns = time.time_ns
_GROUP_MAX = WaitGroup.GROUP_MAX
#: RecordAccumulator.check_size's bound for a key- and header-less record, less its value's
#: length (97): the send paths check plain records against it inline
_PLAIN_OVERHEAD = record_size_upper_bound(None, b"", None) + 61
Header = tuple[str, "bytes | None"]
_DRAIN_YIELD_EVERY = 0.001  # seconds: drain() yields at least this often


def _acks(value: int | str) -> int:
    if value in ("all", -1, "-1"):
        return -1
    if value in (0, 1, "0", "1"):
        return int(value)
    raise ValueError(f"acks must be 0, 1, -1 or 'all', not {value!r}")


class Producer:
    """An asyncio Kafka producer (see the module docstring for the data path).

    Options keep Kafka's names in snake_case; defaults are Kafka's except ``acks=1`` (Kafka 3+
    defaults to ``all``, which on minibroker means an fsync before each answer; kafka-python
    and aiokafka default to 1 as well; ``all`` with a ``transactional_id``) and ``linger_ms=5`` (Kafka 4.0's default, KIP-1030).
    """

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092",
        *,
        client_id: str = "minibroker-python",
        acks: int | str | None = None,
        compression_type: str | int | Compression | None = None,
        batch_size: int = 16384,
        linger_ms: float = 5,
        buffer_memory: int = 32 * 1024 * 1024,
        max_request_size: int = 1048576,
        max_block_ms: int = 60000,
        request_timeout_ms: int = 30000,
        delivery_timeout_ms: int = 120000,
        retries: int = 2147483647,
        retry_backoff_ms: int = 100,
        max_in_flight_requests_per_connection: int = 5,
        connect_timeout_ms: int = 10000,
        metadata_max_age_ms: int = 300000,
        allow_auto_create_topics: bool = True,
        partitioner: Partitioner | None = None,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
        enable_idempotence: bool | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_oauth_token_provider: TokenProvider | None = None,
    ) -> None:
        if batch_size < 1 or buffer_memory < batch_size:
            raise ValueError("batch_size must be >= 1 and buffer_memory >= batch_size")
        self.acks = _acks(acks if acks is not None else "all" if transactional_id is not None else 1)
        if transactional_id is not None:
            if enable_idempotence is False:
                raise ValueError("a transactional producer is idempotent: enable_idempotence=False cannot be used"
                                 " with transactional_id")
            if self.acks != -1:
                raise ValueError("transactional_id requires acks='all'")
            if transaction_timeout_ms <= 0:
                raise ValueError("transaction_timeout_ms must be > 0")
            enable_idempotence = True
        conflicts = [what for what, bad in (
            ("acks=0", self.acks == 0),
            ("max_in_flight_requests_per_connection > 5", max_in_flight_requests_per_connection > 5),
            ("retries=0", retries == 0)) if bad]
        if enable_idempotence and conflicts:
            raise ValueError("enable_idempotence=True cannot be used with " + ", ".join(conflicts))
        #: as Kafka's Java producer (>= 3.0): on unless asked off or a setting conflicts with it
        self.enable_idempotence = not conflicts if enable_idempotence is None else enable_idempotence
        self.compression = Compression.from_name(compression_type)
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.max_request_size = max_request_size
        self.max_block = max_block_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retries = retries
        self.retry_backoff = retry_backoff_ms / 1000
        self.max_in_flight = max(1, max_in_flight_requests_per_connection)
        self.partitioner = partitioner
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self._cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                connect_timeout_ms=connect_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
                                retry_backoff_ms=retry_backoff_ms, allow_auto_create_topics=allow_auto_create_topics,
                                security=SecurityConfig(security_protocol, ssl_context, sasl_mechanism, sasl_plain_username,
                                  sasl_plain_password, sasl_oauth_token_provider))
        self._acc = RecordAccumulator(
            batch_size=batch_size, buffer_memory=buffer_memory, compression=self.compression, linger=self.linger,
            delivery_timeout=self.delivery_timeout, max_block=self.max_block, max_request_size=max_request_size,
            partitioner=partitioner)
        self._txn: TransactionManager | None = None
        self._txns: Transactions | None = None
        if self.enable_idempotence:
            self._txn = TransactionManager(self._cluster, max_block=self.max_block, retry_backoff=self.retry_backoff)
            self._acc.stamp = self._txn.stamp
            if transactional_id is not None:
                self._txns = Transactions(
                    self._cluster, self._txn, transactional_id=transactional_id,
                    transaction_timeout_ms=transaction_timeout_ms, max_block=self.max_block,
                    retry_backoff=self.retry_backoff, flush=self.flush, drop_waiting=self._acc.fail_waiting)
                self._txns.on_change = self._update_plain
                self._acc.opened = self._txns.batch_opened
        self._sender = Sender(self._cluster, self._acc, acks=self.acks, request_timeout_ms=request_timeout_ms,
                              retries=retries, retry_backoff=self.retry_backoff, max_in_flight=self.max_in_flight,
                              max_request_size=max_request_size, transaction_manager=self._txn,
                              transactions=self._txns)
        self._acc.sealed = self._sender.enqueue
        self._acc.wake = self._sender.wake
        self._acc.wake_at = self._sender.wake_at
        if self._txns is not None:
            self._txns.wake = self._sender.wake
        self._loop: asyncio.AbstractEventLoop | None = None
        self._metadata_tasks: dict[str, asyncio.Task[Any]] = {}
        self._refresher: asyncio.Future[None] | None = None
        self._started = False
        self._closed = False
        self._plain = False  # started, not closed, no serializers: send_nowait's fast path
        self._drain_yield_at = 0.0  # loop time after which drain() yields even without back-pressure

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect to a bootstrap server (KafkaConnectionError after ``connect_timeout_ms``)."""
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        self._acc.start(self._loop)
        self._sender.start(self._loop)
        await self._cluster.start()
        if self._txn is not None and self._txns is None:  # transactional: init_transactions() does it
            await self._txn.init_producer_id()
        self._started = True
        self._update_plain()
        self._refresher = asyncio.ensure_future(self._keep_metadata_fresh())

    def _update_plain(self) -> None:
        """``send_nowait``'s fast path skips ``_prepare`` (state checks, serializers) when on."""
        self._plain = (self._started and not self._closed and self.key_serializer is None
                       and self.value_serializer is None
                       and (self._txns is None or self._txns.state is TxnState.IN_TRANSACTION))

    async def _keep_metadata_fresh(self) -> None:
        """Kafka's ``metadata.max.age.ms``: refresh the metadata of the topics in use that
        often, so that partitions added to a topic get records (from the partitioner, and
        explicitly) without waiting for an error. One Metadata request per period."""
        period = self._cluster.metadata_max_age_ms / 1000
        while True:
            await asyncio.sleep(period)
            topics = list(self._acc.topics)
            if not topics:
                continue
            try:
                got = await self._cluster.refresh_metadata(topics)
            except KafkaError as e:
                logger.debug("periodic metadata refresh failed: %s", e)
                continue
            for name, tm in got.items():
                if tm.error_code == 0 and tm.partitions and name in self._acc.topics:
                    self._acc.add_topic(name, len(tm.partitions))

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Send every buffered record now (linger ignored) and wait until all records sent so
        far are answered (acknowledged or failed; failures are reported through their futures).
        KafkaTimeoutError if ``timeout`` (seconds) passes first."""
        self._check_started()
        self._acc.flushing += 1
        try:
            await asyncio.wait_for(self._wait_all(), timeout)
        except TimeoutError:
            raise KafkaTimeoutError(f"flush did not complete within {timeout} s") from None
        finally:
            self._acc.flushing -= 1

    async def _wait_all(self) -> None:
        # What is buffered now; records sent while flush waits are not waited for (as Kafka's
        # flush), but they are sent at once too (linger is ignored while a flush runs).
        batches, groups = self._acc.pending()
        self._sender.wake(0)
        if batches:
            await asyncio.wait(batches)
        for g in groups:  # records that waited: once placed, the batches they went to
            await asyncio.wait([g.future])  # (not `await g.future`: a timeout would cancel it)
            later = [b.future for b in g.batches if not b.future.done()]
            if later:
                await asyncio.wait(later)

    async def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout`` seconds), then close the connections. Records still
        unanswered after the timeout fail with KafkaTimeoutError. A transaction still open is
        aborted first (within the same timeout)."""
        if self._closed or not self._started:
            self._closed = True
            self._plain = False
            await self._cluster.close()
            return
        try:
            if self._txns is not None:
                try:
                    await asyncio.wait_for(self._txns.close(), timeout)
                except TimeoutError:
                    pass
            await self.flush(timeout)
        except KafkaTimeoutError:
            pass
        finally:
            self._closed = True
            self._plain = False
            err = KafkaTimeoutError("producer closed before the record was acknowledged")
            self._acc.fail_waiting(err)
            for b in list(self._acc.incomplete):
                self._sender.fail(b, err)
            self._sender.close()
            for t in list(self._metadata_tasks.values()):
                t.cancel()
            if self._refresher is not None:
                self._refresher.cancel()
            await self._cluster.close()

    def _check_started(self) -> None:
        if not self._started:
            raise KafkaError("the producer is not started: use 'async with Producer(...)' or 'await producer.start()'")

    # ------------------------------------------------------------------ sending

    async def send(self, topic: str, value: Any = None, key: Any = None, headers: Sequence[Header] | None = None,
                   partition: int | None = None, timestamp_ms: int | None = None) -> RecordMetadata:
        """Send one record and return its metadata once the broker acknowledged it; raises the
        KafkaError that failed it. Waits for buffer memory like ``send_nowait``.

        This is aiokafka's ``send_and_wait`` (also available under that name) and Kafka's Java
        ``send(record).get()``; aiokafka's ``send()``, which returns a future, is our
        ``send_nowait`` (a future without awaiting anything).

        No linger for a record someone waits on while the sender is idle: if no sealed batch
        waits to be sent, the record's batch is sealed at once, since lingering would only
        delay this caller (records of other tasks sent meanwhile still batch up behind it:
        while a batch waits for a request slot, new ones linger as usual).
        """
        return await self._send_now(topic, value, key, headers, partition, timestamp_ms)

    send_and_wait = send

    def _send_now(self, topic: str, value: Any = None, key: Any = None, headers: Sequence[Header] | None = None,
                  partition: int | None = None, timestamp_ms: int | None = None) -> RecordFuture:
        """``send_nowait`` for a record the caller will wait on: its batch is sealed at once if
        the sender is idle (see ``send``)."""
        rf = self.send_nowait(topic, value, key, headers, partition, timestamp_ms)
        b = rf._batch
        if type(b) is ProducerBatch:
            self._seal_if_idle(b)
        elif type(b) is WaitGroup:  # waits for metadata or memory: once placed
            b.future.add_done_callback(lambda _f: self._seal_if_idle(rf._batch))
        return rf

    def _seal_if_idle(self, b: Any) -> None:
        if type(b) is ProducerBatch and b.data is None and not self._sender.backlog and not b.future.done():
            self._acc.seal(b)
            self._sender.run_due()  # the request leaves in this turn, not the next

    def send_nowait(self, topic: str, value: Any = None, key: Any = None, headers: Sequence[Header] | None = None,
                    partition: int | None = None, timestamp_ms: int | None = None) -> RecordFuture:
        """Buffer one record; return a future of its RecordMetadata without waiting.

        ``value``/``key``: bytes-like or None (or anything the configured serializers take);
        ``headers``: ``(str, bytes | None)`` pairs; ``timestamp_ms``: CreateTime, now by default.
        Raises at once for what can never succeed (closed producer, bad types, a record larger
        than ``max_request_size`` or ``buffer_memory``: MessageTooLargeError); everything else
        is reported through the future.
        """
        if not self._plain:  # not started, closed, or serializers to apply
            key, value = self._prepare(key, value)
        if timestamp_ms is None:
            timestamp_ms = _time_ns() // 1000000
        acc = self._acc
        topic_state = acc.topics.get(topic)
        if topic_state is None or acc.waiting:
            if topic_state is None and key is None and headers is None and type(value) is bytes:
                # A burst before the topic's metadata arrives (send_nowait right after start):
                # what _enqueue and RecordAccumulator.park do for a plain record whose topic
                # already has a queue and a metadata fetch under way, without their two calls.
                g = acc._group
                q = acc.topic_waiting.get(topic)
                if q is not None and g is not None and g.pending < _GROUP_MAX and topic in self._metadata_tasks \
                        and len(value) + _PLAIN_OVERHEAD <= acc.max_record_bound and not g.future.done():
                    g.pending += 1
                    rf = new_waiting_record(g, topic, value, None, None, partition, timestamp_ms,
                                       self._loop.time() + self.max_block)  # type: ignore[union-attr]
                    q.append(rf)
                    return rf
            return self._enqueue(topic, value, key, headers, partition, timestamp_ms)
        b = acc.append(topic_state, value, key, headers, partition, timestamp_ms)
        if b is None:  # buffer memory is short: the record waits
            return self._enqueue(topic, value, key, headers, partition, timestamp_ms, metadata_known=True)
        return new_record_future(b, b.count - 1, timestamp_ms)

    def _prepare(self, key: Any, value: Any) -> tuple[Any, Any]:
        """The slow prelude of send_nowait: state checks and serializers."""
        if not self._started:
            self._check_started()
        if self._closed:
            raise KafkaError("the producer is closed")
        if self._txns is not None:
            self._txns.check_send()
        if self.key_serializer is not None:
            key = self.key_serializer(key)
        if self.value_serializer is not None:
            value = self.value_serializer(value)
        return key, value

    def _enqueue(self, topic: str, value: Any, key: Any, headers: Sequence[Header] | None, partition: int | None,
                 timestamp_ms: int, metadata_known: bool = False) -> RecordFuture:
        """The record waits for metadata or for buffer memory, in order (``RecordAccumulator.park``)."""
        loop = self._loop
        assert loop is not None
        acc = self._acc
        if key is None and headers is None and type(value) is bytes:
            # the common case, checked inline (a burst before metadata takes this path per record)
            if len(value) + _PLAIN_OVERHEAD > acc.max_record_bound:
                acc.check_size(key, value, headers)
        else:
            if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
                raise TypeError(TYPE_HELP)
            if key is not None and not isinstance(key, (bytes, bytearray, memoryview)):
                raise TypeError(TYPE_HELP)
            acc.check_size(key, value, headers)
        rf, fetch = self._acc.park(topic, value, key, headers, partition, timestamp_ms, loop.time() + self.max_block,
                                   metadata_known)
        if fetch and topic not in self._metadata_tasks:
            self._spawn_metadata(topic)
        return rf

    async def drain(self) -> None:
        """Back-pressure for loops of ``send_nowait`` (as ``StreamWriter.drain``): yield to the
        event loop, wait while more sealed batches wait to be sent than fit in the request
        slots (``max_in_flight_requests_per_connection`` per broker), then while records wait
        for buffer memory or metadata.

        Why the first wait: the sender and the answers only run while the caller awaits. A
        loop that seals batches faster than it lets answers in would fill ``buffer_memory``
        with batches waiting for a slot (measured: 16 KiB batches, 5 slots, ``drain`` every
        1024 records: 250k records/s, most of it waiting; with this wait, 3x that).

        Like ``StreamWriter.drain`` it returns without yielding when there is no back-pressure:
        no sealed batch waits to be sent, no record waits, and the last yield was less than
        1 ms ago (so linger timers and answers still run about every millisecond). A yield
        costs ~5-10 µs, more than a record's send; yielding on every call halved the
        throughput of a loop that drains after every record.
        """
        sender, acc = self._sender, self._acc
        loop = self._loop
        if loop is None:
            raise KafkaError("the producer is not started: use 'async with Producer(...)' or 'await producer.start()'")
        if not (sender.backlog or acc.waiting or acc.topic_waiting) and loop.time() < self._drain_yield_at:
            return
        await asyncio.sleep(0)
        self._drain_yield_at = loop.time() + _DRAIN_YIELD_EVERY
        await sender.wait_backlog(self.max_in_flight * max(1, len(self._cluster.brokers)))
        await acc.wait_for_space()

    # ------------------------------------------------------------------ metadata

    def _spawn_metadata(self, topic: str) -> None:
        t = asyncio.ensure_future(self._fetch_metadata(topic))
        self._metadata_tasks[topic] = t

    async def _fetch_metadata(self, topic: str) -> None:
        try:
            tm = await self._cluster.topic(topic, timeout_ms=int(self.max_block * 1000))
        except KafkaError as e:
            err: KafkaError = e
            if err.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                err = type(e)(f"topic {topic!r} not present in metadata after {int(self.max_block * 1000)} ms "
                              "(it does not exist and was not auto-created)")
            self._acc.fail_topic_waiting(topic, err)
            return
        except BaseException as e:  # cancelled or a bug: fail the records, do not hang them
            self._acc.fail_topic_waiting(topic, e if isinstance(e, Exception) else KafkaError("producer closed"))
            raise
        finally:
            self._metadata_tasks.pop(topic, None)
        self._acc.add_topic(topic, len(tm.partitions))

    # ------------------------------------------------------------------ introspection

    @property
    def waiting_for_memory(self) -> bool:
        """Records wait for buffer memory (``drain`` would block)."""
        return bool(self._acc.waiting)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of ``buffer_memory`` reserved by open and unacknowledged batches."""
        return self._acc.used

    async def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (fetching metadata, and so maybe auto-creating it)."""
        self._check_started()
        tm = await self._cluster.topic(topic, timeout_ms=int(self.max_block * 1000))
        if topic in self._acc.topics:
            self._acc.add_topic(topic, len(tm.partitions))  # partitions may have been added
        return sorted(tm.partitions)

    # ------------------------------------------------------------------ transactions

    def _transactions(self) -> Transactions:
        self._check_started()
        if self._txns is None:
            raise IllegalStateError("this producer has no transactional_id: Producer(transactional_id=...)")
        return self._txns

    @property
    def transactional_id(self) -> str | None:
        return self._txns.transactional_id if self._txns is not None else None

    async def init_transactions(self) -> None:
        """Register the transactional id with its coordinator and get its producer id with a
        new epoch: an older producer with the same id is fenced and its open transaction
        aborted. Call once, before the first transaction (KafkaTimeoutError after
        ``max_block_ms``; calling it again then resumes)."""
        await self._transactions().init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now on belong to it (no request is sent)."""
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata],
            group: str | ConsumerGroupMetadata) -> None:
        """Commit consumer offsets (partition -> the next offset to read) for ``group`` as part
        of the transaction: the group's committed offsets change only if it commits. ``group``
        is a group id or, better, ``consumer.group_metadata()``: its generation and member id
        let the group coordinator refuse the commit of a member the group has replaced."""
        txns = self._transactions()
        meta = group if isinstance(group, ConsumerGroupMetadata) else ConsumerGroupMetadata(group)
        await txns.send_offsets(offsets_and_metadata(offsets), meta)

    async def commit_transaction(self) -> None:
        """Send every buffered record, wait for their acknowledgements, then commit (EndTxn).
        TransactionAbortableError if a record of the transaction failed (abort then);
        ProducerFencedError if fenced; KafkaTimeoutError after ``max_block_ms`` (call it again)."""
        await self._transactions().commit()

    async def abort_transaction(self) -> None:
        """Abort the transaction: records not sent yet fail with TransactionAbortedError, those
        in flight are waited for, then EndTxn(abort). read_committed consumers never see the
        transaction's records, and offsets sent with it are dropped."""
        await self._transactions().abort()
