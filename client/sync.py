"""A small synchronous facade for scripts, built on the asyncio clients (not a second client).

Each facade object owns one event loop running in a daemon thread (``LoopThread``); its methods
submit coroutines to that loop with ``asyncio.run_coroutine_threadsafe`` and block for the
result. ::

    with SyncProducer(bootstrap_servers="127.0.0.1:9092") as p:
        md = p.send("events", b"hello", key=b"k")          # RecordMetadata once acknowledged
        fut = p.send_nowait("events", b"more")             # concurrent.futures.Future
        p.flush()

    with SyncProducer(transactional_id="job-1") as p:      # the same transactional methods
        p.init_transactions()
        p.begin_transaction()
        p.send_nowait("events", b"in a transaction")
        p.commit_transaction()

    with SyncAdmin(bootstrap_servers="127.0.0.1:9092") as admin:
        admin.create_topic("events", num_partitions=3)

    with SyncConsumer(bootstrap_servers="127.0.0.1:9092", auto_offset_reset="earliest") as c:
        c.assign([("events", 0)])
        records = c.poll(timeout_ms=1000)                  # list of ConsumerRecord
        for record in c:                                   # blocks; ends when closed
            ...

Cost: a thread hop per call (tens of µs), fine for scripts; use the async clients where
throughput matters. ``SyncClient`` is the shared base.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Any, Self, TypeVar

from client.acl import AclBinding, AclBindingFilter
from client.admin import (
    Admin,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResourceType,
    GroupDescription,
    GroupListing,
    GroupOffset,
    LogDirDescription,
    NewTopic,
    TopicDescription,
)
from client.admin_quotas import ClientQuotaAlteration, ClientQuotaEntity, ClientQuotaFilter
from client.consumer import Consumer, ConsumerRebalanceListener
from client.consumer_records import ColumnBatch, ConsumerRecord
from client.producer import Producer, RecordMetadata
from client.producer_batch import ProducerBatch
from client.structs import ConsumerGroupMetadata, OffsetAndMetadata, OffsetAndTimestamp, OffsetSpec, TopicPartition

__all__ = ["LoopThread", "SyncClient", "SyncProducer", "SyncConsumer", "SyncAdmin"]

T = TypeVar("T")


class LoopThread:
    """An event loop (uvloop when installed) running forever in a daemon thread."""

    def __init__(self, name: str = "minibroker-client") -> None:
        try:
            import uvloop

            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
            self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (re-raising its exception)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a sync client method was called from its own event loop thread")
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


class SyncClient:
    """Base of the sync facades: owns a LoopThread and the wrapped async client's lifecycle."""

    def __init__(self, make_client: Callable[[], Any]) -> None:
        self._lt = LoopThread()
        self._closed = False

        async def create_and_start() -> Any:
            client = make_client()  # constructed on the loop's thread
            await client.start()
            return client

        try:
            self._client = self._lt.run(create_and_start())
        except BaseException:
            self._lt.stop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError(f"{type(self).__name__} is closed")
        return self._lt.run(coro, timeout)

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._lt.run(self._client.close())
        finally:
            self._closed = True
            self._lt.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncProducer(SyncClient):
    """Blocking wrapper of ``Producer``; takes the same arguments.

    Sends cross to the loop thread in bulk: ``send_nowait`` appends the record to an outbox
    (a deque, safe to append from one thread while another pops) and schedules one pump per
    burst (``call_soon_threadsafe`` writes to the loop's self-pipe: a syscall, too dear per
    record); the pump hands every record in the outbox to the producer in order. At most
    ``OUTBOX_MAX`` records sit in the outbox: beyond that, and while the producer's records
    wait for buffer memory, ``send_nowait`` blocks in ``drain``."""

    _client: Producer
    OUTBOX_MAX = 10000

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", **options: Any) -> None:
        super().__init__(lambda: Producer(bootstrap_servers, **options))
        self._outbox: collections.deque[RecordResult] = collections.deque()  # each carries its record
        self._pump_scheduled = False

    def _pump(self) -> None:
        """On the loop thread: hand the outbox to the producer, in order."""
        self._pump_scheduled = False  # before popping: a record appended after this schedules a new pump
        box, client = self._outbox, self._client
        while box:
            cf = box.popleft()
            args = (cf.topic, cf.value, cf.key, cf.headers, cf.partition, cf.timestamp_ms)
            cf.value = cf.key = cf.headers = None
            try:
                if cf.awaited:
                    f: Any = client._send_now(*args)
                else:
                    f = client.send_nowait(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's future
                cf._settle(None, e)
                continue
            cf._rf = f  # then read _watched: see RecordResult._watch
            if cf._watched:
                b = f._batch
                if type(b) is ProducerBatch and not b.future.done():
                    b.future.add_settle_callback(cf, f)  # the caller wakes in the answer's turn
                else:
                    f.add_done_callback(cf)

    def _submit(self, awaited: bool, topic: str, value: Any, key: Any, headers: Sequence[tuple[str, bytes | None]] | None,
                partition: int | None, timestamp_ms: int | None) -> concurrent.futures.Future[RecordMetadata]:
        if self._closed:
            raise RuntimeError("SyncProducer is closed")
        if len(self._outbox) >= self.OUTBOX_MAX or self._client.waiting_for_memory:  # a benign racy read
            self._run(self._drain())
        cf = RecordResult(awaited, topic, value, key, headers, partition, timestamp_ms)
        self._outbox.append(cf)
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self._lt.call_soon(self._pump)
        return cf

    async def _drain(self) -> None:
        self._pump()
        await self._client.drain()

    def send(self, topic: str, value: Any = None, key: Any = None, headers: Sequence[tuple[str, bytes | None]] | None = None,
             partition: int | None = None, timestamp_ms: int | None = None, timeout: float | None = None) -> RecordMetadata:
        """Send one record and block until it is acknowledged (or raise its error), as
        ``Producer.send``; ``send_and_wait`` is the same method."""
        return self._submit(True, topic, value, key, headers, partition, timestamp_ms).result(timeout)

    send_and_wait = send

    def send_nowait(self, topic: str, value: Any = None, key: Any = None,
                    headers: Sequence[tuple[str, bytes | None]] | None = None, partition: int | None = None,
                    timestamp_ms: int | None = None) -> concurrent.futures.Future[RecordMetadata]:
        """Buffer one record; a ``concurrent.futures.Future`` of its RecordMetadata. Blocks
        only while the producer's buffer memory is full (back-pressure, as ``drain``)."""
        return self._submit(False, topic, value, key, headers, partition, timestamp_ms)

    def flush(self, timeout: float | None = None) -> None:
        async def pump_and_flush() -> None:
            self._pump()
            await self._client.flush(timeout)
        self._run(pump_and_flush())

    def partitions_for(self, topic: str) -> list[int]:
        return self._run(self._client.partitions_for(topic))

    # Transactions (``Producer(transactional_id=...)``): each call first hands the outbox to
    # the producer, so the records sent before it belong to what it applies to.

    def init_transactions(self) -> None:
        self._run(self._client.init_transactions())

    def begin_transaction(self) -> None:
        async def pump_and_begin() -> None:
            self._pump()
            self._client.begin_transaction()
        self._run(pump_and_begin())

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata],
                                    group: str | ConsumerGroupMetadata) -> None:
        async def pump_and_send() -> None:
            self._pump()
            await self._client.send_offsets_to_transaction(offsets, group)
        self._run(pump_and_send())

    def commit_transaction(self) -> None:
        async def pump_and_commit() -> None:
            self._pump()
            await self._client.commit_transaction()
        self._run(pump_and_commit())

    def abort_transaction(self) -> None:
        async def pump_and_abort() -> None:
            self._pump()
            await self._client.abort_transaction()
        self._run(pump_and_abort())

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        async def pump_and_close() -> None:
            self._pump()
            await self._client.close(timeout)
        try:
            self._lt.run(pump_and_close())
        finally:
            self._closed = True
            self._lt.stop()


_COND_LOCK = threading.Lock()
_PENDING, _FINISHED = "PENDING", "FINISHED"  # concurrent.futures' state names


class RecordResult(concurrent.futures.Future[RecordMetadata]):
    """The ``concurrent.futures.Future`` of a record sent with ``SyncProducer.send_nowait``.

    A plain ``Future`` builds a ``threading.Condition`` (a lock, a deque, five bound methods)
    when created; with a million records in flight those objects, more than the records
    themselves, kept the garbage collector busy. This one makes its Condition on first use —
    when a thread waits, ``concurrent.futures.wait`` looks at it or a callback is added — under
    one module lock, and ``_settle`` takes the fast way only while it has none: nobody can be
    waiting then. Done futures answer ``done``/``result``/``exception`` without it.

    It learns its outcome lazily: the pump gives it the record's asyncio future (``_rf``), and
    ``done``/``result``/``exception`` read the answer from there when it is in (an answered
    record's future no longer changes, so any thread may read it). Only a future someone waits
    on (``send``, which waits at once; or whose Condition gets made) is called back by the loop
    thread when the record is answered: a burst of ``send_nowait`` then ``flush`` costs no
    callback per record. Everything else is the standard class.

    CPython internals: it skips ``Future.__init__`` and provides the attributes that sets
    (``_state``, ``_result``, ``_exception``, ``_waiters``, ``_done_callbacks``; ``_condition``
    as a property), which ``concurrent.futures.wait``/``as_completed`` and the base methods read
    directly. Wrapping a Future (composition) would keep the Condition per record or fail
    those functions, which take only real Futures; so the dependency stays, pinned instead:
    ``tests/client/test_sync.py::test_record_result_pins_the_concurrent_futures_internals_it_relies_on``
    names the CPython versions it was verified on (3.11) and fails on any other."""

    # Slots, not the base class's __dict__: one object per record. Until it is handed to the
    # producer it also carries the record (the SyncProducer's outbox holds these).
    __slots__ = ("_state", "_result", "_exception", "_waiters", "_done_callbacks", "_cond", "_rf", "_watched",
                 "awaited", "topic", "value", "key", "headers", "partition", "timestamp_ms")

    def __init__(self, awaited: bool, topic: str, value: Any, key: Any, headers: Any, partition: int | None,
                 timestamp_ms: int | None) -> None:  # no super().__init__(): the Condition comes later
        self._state = _PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        self._waiters: Any = ()  # lists once the Condition exists (only then can anyone add)
        self._done_callbacks: Any = ()
        self._cond: threading.Condition | None = None
        self._rf: Any = None  # the record's asyncio future, once the pump has handed it over
        self._watched = awaited  # the pump adds a done callback to _rf (send(): the caller waits)
        self.awaited, self.topic, self.value, self.key = awaited, topic, value, key
        self.headers, self.partition, self.timestamp_ms = headers, partition, timestamp_ms

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        c = self._cond
        if c is None:
            self._watch()  # whoever needs the Condition may wait: make sure an outcome arrives
            with _COND_LOCK:
                c = self._cond
                if c is None:
                    self._waiters, self._done_callbacks = [], []
                    c = self._cond = threading.Condition()
        return c

    def _watch(self) -> None:
        """Have the outcome delivered: settle now if the record is answered, else ask the loop
        thread to call back. Races with the pump, which sets ``_rf`` and then reads
        ``_watched``, while this sets ``_watched`` and then reads ``_rf`` (each a single
        operation under the GIL): at least one of the two sees the other's write, so the
        callback is added at least once (twice is harmless: ``_settle`` keeps the first)."""
        if self._watched:
            return
        self._watched = True
        rf = self._rf
        if rf is None:
            return  # the pump has not handed it over yet: it will add the callback
        if rf.done():
            self(rf)
        else:
            rf.get_loop().call_soon_threadsafe(rf.add_done_callback, self)

    def _poll(self) -> None:
        """Settle from the record's answer if it is in."""
        if self._state == _PENDING:
            rf = self._rf
            if rf is not None and rf.done():
                self(rf)

    def done(self) -> bool:
        self._poll()
        if self._cond is None:  # no Condition: nobody could cancel it, so only FINISHED is done
            return self._state == _FINISHED
        return super().done()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        if self._cond is None:
            self._poll()
            if self._state == _FINISHED:
                if self._exception is not None:
                    raise self._exception
                return self._result
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._cond is None:
            self._poll()
            if self._state == _FINISHED:
                return self._exception
        return super().exception(timeout)

    def __call__(self, rf: Any) -> None:
        """The record's asyncio future is done: copy its outcome (on the loop thread as a done
        callback, or on any thread from ``_poll``/``_watch``)."""
        exc = rf.exception()
        self._settle(None if exc is not None else rf.result(), exc)

    def _settle(self, result: Any, exc: BaseException | None) -> None:
        with _COND_LOCK:
            fast = self._cond is None
            if fast:
                if self._state != _PENDING:
                    return
                self._result, self._exception, self._state = result, exc, _FINISHED
                self._rf = None  # its batch is no longer needed
        if not fast:
            try:
                if exc is not None:
                    self.set_exception(exc)
                else:
                    self.set_result(result)
            except concurrent.futures.InvalidStateError:  # cancelled meanwhile
                pass


class SyncAdmin(SyncClient):
    """Blocking wrapper of ``Admin``; same arguments and methods."""

    _client: Admin

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", **options: Any) -> None:
        super().__init__(lambda: Admin(bootstrap_servers, **options))

    def create_topics(self, topics: Iterable[NewTopic | str], *, validate_only: bool = False) -> None:
        self._run(self._client.create_topics(list(topics), validate_only=validate_only))

    def create_topic(self, name: str, num_partitions: int = 1, replication_factor: int = 1,
                     configs: Mapping[str, str] | None = None, *, validate_only: bool = False) -> None:
        self._run(self._client.create_topic(name, num_partitions, replication_factor, configs,
                                            validate_only=validate_only))

    def delete_topics(self, names: Iterable[str]) -> None:
        self._run(self._client.delete_topics(list(names)))

    def delete_topic(self, name: str) -> None:
        self._run(self._client.delete_topic(name))

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        return self._run(self._client.list_topics(include_internal=include_internal))

    def describe_topics(self, names: Iterable[str] | None = None, *,
                        include_configs: bool = True) -> dict[str, TopicDescription]:
        return self._run(self._client.describe_topics(None if names is None else list(names),
                                                      include_configs=include_configs))

    def describe_configs(self, resource_type: ConfigResourceType | int | str, name: str | int = "",
                         keys: Iterable[str] | None = None, *, include_synonyms: bool = False,
                         include_documentation: bool = False) -> dict[str, ConfigEntry]:
        return self._run(self._client.describe_configs(resource_type, name, None if keys is None else list(keys),
                                                       include_synonyms=include_synonyms,
                                                       include_documentation=include_documentation))

    def alter_configs(self, resource_type: ConfigResourceType | int | str, name: str | int,
                      configs: Mapping[str, str], *, validate_only: bool = False) -> None:
        self._run(self._client.alter_configs(resource_type, name, dict(configs), validate_only=validate_only))

    def incremental_alter_configs(self, resource_type: ConfigResourceType | int | str, name: str | int,
                                  ops: Iterable[AlterConfigOp] | Mapping[str, str | None], *,
                                  validate_only: bool = False) -> None:
        ops = dict(ops) if isinstance(ops, Mapping) else list(ops)
        self._run(self._client.incremental_alter_configs(resource_type, name, ops, validate_only=validate_only))

    def create_partitions(self, new_counts: Mapping[str, int], *, validate_only: bool = False) -> None:
        self._run(self._client.create_partitions(dict(new_counts), validate_only=validate_only))

    def delete_records(self, before: Mapping[TopicPartition | tuple[str, int], int]) -> dict[TopicPartition, int]:
        return self._run(self._client.delete_records(dict(before)))

    def describe_cluster(self, *, include_authorized_operations: bool = False) -> ClusterDescription:
        return self._run(self._client.describe_cluster(include_authorized_operations=include_authorized_operations))

    def describe_log_dirs(self, partitions: Iterable[TopicPartition | tuple[str, int]] | None = None
                          ) -> dict[int, list[LogDirDescription]]:
        return self._run(self._client.describe_log_dirs(None if partitions is None else list(partitions)))

    def list_offsets(self, specs: Mapping[TopicPartition | tuple[str, int], OffsetSpec | int]
                     ) -> dict[TopicPartition, OffsetAndTimestamp]:
        return self._run(self._client.list_offsets(dict(specs)))

    def topic_offsets(self, topic: str, spec: OffsetSpec | int = OffsetSpec.LATEST) -> dict[int, int]:
        return self._run(self._client.topic_offsets(topic, spec))

    def list_groups(self, states: Iterable[str] | None = None) -> list[GroupListing]:
        return self._run(self._client.list_groups(None if states is None else list(states)))

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        return self._run(self._client.describe_groups(list(group_ids)))

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        self._run(self._client.delete_groups(list(group_ids)))

    def list_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]] | None = None
                           ) -> dict[TopicPartition, GroupOffset]:
        return self._run(self._client.list_group_offsets(group, None if partitions is None else list(partitions)))

    def fetch_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]] | None = None, *,
                            require_stable: bool = False) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._run(self._client.fetch_group_offsets(
            group, None if partitions is None else [TopicPartition(*tp) for tp in partitions],
            require_stable=require_stable))

    def alter_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata]) -> None:
        self._run(self._client.alter_group_offsets(group, dict(offsets)))

    def reset_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]], **to: Any) -> dict[TopicPartition, int]:
        return self._run(self._client.reset_group_offsets(group, list(partitions), **to))

    def delete_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]]) -> None:
        self._run(self._client.delete_group_offsets(group, list(partitions)))

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        self._run(self._client.create_acls(list(bindings)))

    def describe_acls(self, binding_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        return self._run(self._client.describe_acls(binding_filter))

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> dict[AclBindingFilter, list[AclBinding]]:
        return self._run(self._client.delete_acls(list(filters)))

    def describe_client_quotas(self, quota_filter: ClientQuotaFilter | None = None
                               ) -> dict[ClientQuotaEntity, dict[str, float]]:
        return self._run(self._client.describe_client_quotas(quota_filter))

    def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *, validate_only: bool = False) -> None:
        self._run(self._client.alter_client_quotas(list(alterations), validate_only=validate_only))



class SyncConsumer(SyncClient):
    """Blocking wrapper of ``Consumer``; takes the same arguments. ``poll`` returns a flat list
    of records (at most ``max_records``, default ``max_poll_records``) from every assigned
    partition; iterating blocks for the next record and stops once the consumer is closed.

    Cost: one thread hop per ``poll`` (not per record: iteration polls a list at a time and
    hands it out from this thread). Records handed to the iterator's buffer have moved the
    position already, so ``position()`` may be ahead of what iteration has yielded; call
    ``seek`` (which drops that buffer) to go back."""

    _client: Consumer

    def __init__(self, bootstrap_servers: str | Iterable[str] = "127.0.0.1:9092", **options: Any) -> None:
        super().__init__(lambda: Consumer(bootstrap_servers, **options))
        self._buffered: list[ConsumerRecord] = []
        self._i = 0

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a plain method of the consumer on its loop (its state belongs to that thread)."""
        async def call() -> T:
            return fn(*args)
        return self._run(call())

    def assign(self, partitions: Iterable[tuple[str, int]]) -> None:
        self._drop_buffer()
        self._call(self._client.assign, list(partitions))

    def assignment(self) -> set[TopicPartition]:
        return self._call(self._client.assignment)

    def subscribe(self, topics: Iterable[str] = (), *, pattern: str | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """As ``Consumer.subscribe``; the listener runs on the client's loop thread."""
        self._drop_buffer()
        self._call(lambda: self._client.subscribe(list(topics), pattern=pattern, listener=listener))

    def unsubscribe(self) -> None:
        self._drop_buffer()
        self._run(self._client.unsubscribe())

    def commit(self, offsets: Mapping[tuple[str, int], int | tuple[int, str] | OffsetAndMetadata] | None = None) -> None:
        """As ``Consumer.commit``. Positions include records handed to the iterator's buffer
        and not yet yielded: commit explicit offsets when iterating."""
        self._run(self._client.commit(None if offsets is None else dict(offsets)))

    def committed(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return self._run(self._client.committed(list(partitions)))

    def seek(self, partition: tuple[str, int], offset: int) -> None:
        self._drop_buffer()
        self._call(self._client.seek, partition, offset)

    def seek_to_beginning(self, *partitions: tuple[str, int]) -> None:
        self._drop_buffer()
        self._run(self._client.seek_to_beginning(*partitions))

    def seek_to_end(self, *partitions: tuple[str, int]) -> None:
        self._drop_buffer()
        self._run(self._client.seek_to_end(*partitions))

    def seek_to_timestamp(self, timestamp_ms: int, *partitions: tuple[str, int]) -> None:
        self._drop_buffer()
        self._run(self._client.seek_to_timestamp(timestamp_ms, *partitions))

    def position(self, partition: tuple[str, int]) -> int:
        return self._run(self._client.position(partition))

    def group_metadata(self) -> ConsumerGroupMetadata:
        """For ``SyncProducer.send_offsets_to_transaction``."""
        return self._call(self._client.group_metadata)

    def highwater(self, partition: tuple[str, int]) -> int | None:
        return self._call(self._client.highwater, partition)

    def beginning_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, int]:
        return self._run(self._client.beginning_offsets(list(partitions)))

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[TopicPartition, int]:
        return self._run(self._client.end_offsets(list(partitions)))

    def offsets_for_times(self, timestamps: Mapping[tuple[str, int], int]
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._run(self._client.offsets_for_times(dict(timestamps)))

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self._run(self._client.partitions_for_topic(topic))

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """The records buffered (waiting up to ``timeout_ms`` for some), at most ``max_records``;
        partition errors are raised as ``Consumer.getmany`` raises them."""
        out: list[ConsumerRecord] = []
        if self._i < len(self._buffered):  # left over from iteration: hand those out first
            limit = max_records if max_records is not None else len(self._buffered)
            out = self._buffered[self._i:self._i + limit]
            self._i += len(out)
            return out
        got = self._run(self._client.getmany(timeout_ms=timeout_ms, max_records=max_records))
        for rows in got.values():
            out.extend(rows)
        return out

    def getbatches(self, timeout_ms: int = 0, max_records: int | None = None,
                   max_batches: int | None = None) -> list[ColumnBatch]:
        """Bulk mode (``Consumer.getbatches``): ColumnBatches, no object per record."""
        self._drop_buffer()
        return self._run(self._client.getbatches(timeout_ms=timeout_ms, max_records=max_records,
                                                 max_batches=max_batches))

    def _drop_buffer(self) -> None:
        if self._i < len(self._buffered):
            # Records already taken from the consumer but not yet yielded: rewind their
            # partitions so nothing is skipped (seek and assign overwrite this anyway).
            first: dict[tuple[str, int], int] = {}
            for r in self._buffered[self._i:]:
                first.setdefault((r.topic, r.partition), r.offset)
            self._buffered, self._i = [], 0
            for tp, off in first.items():
                if not self._closed and TopicPartition(*tp) in self._call(self._client.assignment):
                    self._call(self._client.seek, tp, off)
        self._buffered, self._i = [], 0

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return self

    def __next__(self) -> ConsumerRecord:
        while self._i >= len(self._buffered):
            if self._closed:
                raise StopIteration
            self._buffered = self.poll(timeout_ms=self._client.request_timeout_ms)
            self._i = 0
        r = self._buffered[self._i]
        self._i += 1
        return r
