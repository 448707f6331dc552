"""SharePartitionManager: ShareFetch and ShareAcknowledge over the broker's logs — the share
sessions, the share-partitions of every share group (``partition.py``), their acquisition
locks on the event loop, and their durable state (``__share_group_state``, through a
``StatePersister``).

**Share sessions** (``share_session_epoch``), per (group, member): 0 opens one (the request names
its partitions; one the member already had is replaced, its acquired records released), then
each request carries the next epoch (INVALID_SHARE_SESSION_EPOCH otherwise, which drops the
session; SHARE_SESSION_NOT_FOUND without one) and may add partitions (``topics``) or remove them
(``forgotten_topics_data``); -1 closes it after its acknowledgements (its acquired records are
released). At most ``group.share.max.share.sessions`` sessions (SHARE_SESSION_LIMIT_REACHED).

**A fetch** applies its piggy-backed acknowledgements first, then acquires up to
``max_records`` records over the session's partitions (at least one batch's worth per partition
with records), waiting up to ``max_wait_ms`` for records when none is available. The response
carries the log batches that hold the acquired offsets (read from the ``.log`` file) and the
acquired ranges; a client delivers only the records in those ranges.

**Durability**: an acknowledgement (or a release) changes the share-partition's state; the
new state is written (``StatePersister.write``) and the request is answered only once that is
durable. Acquisitions are not written: after a crash, records that were only acquired are
handed out again. A share-partition's first use reads its stored state, else starts at the log
end (``share.auto.offset.reset`` latest, the default) or the log start (earliest).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from client.protocol.api import ErrorCode

from ..errors import error_code_of
from ..group.group_configs import duration_ms
from ..storage.log_manager import LogManager
from .partition import AckError, SharePartition
from .partition import StateBatch as Batch
from .persister import ShareStateError
from .runtime import ShareStateRuntime
from .state_records import SharePartitionKey, StateBatch

__all__ = ["SharePartitionManager", "StatePersister", "ShareKey", "StoredState"]

logger = logging.getLogger("broker.share")

E = ErrorCode

#: (group id, topic id, partition)
ShareKey = tuple[str, uuid.UUID, int]


@dataclass
class StoredState:
    state_epoch: int
    start_offset: int
    batches: list[Batch]


class StatePersister(Protocol):
    """Where share-partitions' states are kept (``__share_group_state``)."""

    def read(self, key: ShareKey) -> StoredState | None: ...

    def write(self, key: ShareKey, state: StoredState) -> Awaitable[None]:
        """Complete once the state is durable."""

    def delete_group(self, group_id: str) -> Awaitable[None]: ...


class ShareHost(Protocol):
    """What the manager uses of the broker (``BrokerState`` is one)."""

    node_id: int

    @property
    def logs(self) -> LogManager: ...

    def notify_append(self, topic: str, partition: int) -> None: ...

    def add_waiter(self, keys: list[tuple[str, int]], fut: asyncio.Future[None]) -> None: ...

    def remove_waiter(self, keys: list[tuple[str, int]], fut: asyncio.Future[None]) -> None: ...


class MemoryPersister:
    """A StatePersister that forgets on restart (tests of the state machine only)."""

    def __init__(self) -> None:
        self.states: dict[ShareKey, StoredState] = {}

    def read(self, key: ShareKey) -> StoredState | None:
        return self.states.get(key)

    async def write(self, key: ShareKey, state: StoredState) -> None:
        self.states[key] = state

    async def delete_group(self, group_id: str) -> None:
        for k in [k for k in self.states if k[0] == group_id]:
            del self.states[k]


@dataclass
class ShareSession:
    epoch: int = 0
    partitions: set[tuple[uuid.UUID, int]] = field(default_factory=set)


class RuntimePersister:
    """The StatePersister of ``__share_group_state`` (runtime.py)."""

    def __init__(self, runtime: ShareStateRuntime) -> None:
        self.runtime = runtime

    def read(self, key: ShareKey) -> StoredState | None:
        st = self.runtime.read_state(SharePartitionKey(key[0], key[1].bytes, key[2]))
        if st is None:
            return None
        return StoredState(st.state_epoch, st.start_offset, [tuple(b) for b in st.batches])  # type: ignore[misc]

    async def write(self, key: ShareKey, state: StoredState) -> None:
        await self.runtime.write_state(SharePartitionKey(key[0], key[1].bytes, key[2]), state.state_epoch, 0,
                                       state.start_offset, [StateBatch(*b) for b in state.batches])

    async def delete_group(self, group_id: str) -> None:
        await self.runtime.delete_group(group_id)


class SharePartitionManager:
    def __init__(self, state: ShareHost, persister: StatePersister, *, lock_duration_ms: int = 30_000,
                 delivery_count_limit: int = 5, max_in_flight: int = 2000, max_sessions: int = 2000,
                 is_member: Callable[[str, str], bool] = lambda g, m: True,
                 group_config: Callable[[str, str], str] | None = None) -> None:
        self.state = state
        self.persister = persister
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.max_sessions = max_sessions
        self.is_member = is_member
        #: (group, key) -> the group's config (broker/group/group_configs.py): share.auto.offset.reset,
        #: share.record.lock.duration.ms, share.isolation.level
        self.group_config = group_config
        self.partitions: dict[ShareKey, SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._lock_timers: dict[ShareKey, asyncio.TimerHandle] = {}
        self._changed: asyncio.Event | None = None

    # -- share-partitions --

    def _topic(self, topic_id: uuid.UUID) -> str | None:
        return self.state.logs.topic_name(topic_id)

    def share_partition(self, key: ShareKey) -> SharePartition | None:
        """The share-partition of ``key`` (loaded or created on first use); None when the
        topic-partition does not exist."""
        sp = self.partitions.get(key)
        if sp is not None:
            return sp
        topic = self._topic(key[1])
        log = None if topic is None else self.state.logs.logs.get((topic, key[2]))
        if log is None:
            return None
        limits = {"max_in_flight": self.max_in_flight, "delivery_count_limit": self.delivery_count_limit,
                  "lock_duration_ms": self._lock_duration(key[0])}
        stored = self.persister.read(key)
        if stored is not None:
            sp = SharePartition.load(max(stored.start_offset, log.log_start_offset), stored.batches, **limits)
            sp.state_epoch = stored.state_epoch
        else:
            sp = SharePartition(self._initial_offset(key[0], log), **limits)
        self.partitions[key] = sp
        return sp

    def _config(self, group_id: str, key: str, default: str) -> str:
        return default if self.group_config is None else self.group_config(group_id, key)

    def _lock_duration(self, group_id: str) -> int:
        return int(self._config(group_id, "share.record.lock.duration.ms", str(self.lock_duration_ms)))

    def _initial_offset(self, group_id: str, log: Any) -> int:
        """Where a share-partition starts (``share.auto.offset.reset``): the log end (latest),
        the log start (earliest), or the first record at or after now minus a duration."""
        reset = self._config(group_id, "share.auto.offset.reset", "latest")
        if reset == "earliest":
            return int(log.log_start_offset)
        ms = duration_ms(reset)
        if ms is not None:
            found = log.offset_for_timestamp(self.state_clock() - ms)
            return int(log.log_end_offset) if found is None else int(found.offset)
        return int(log.log_end_offset)

    def _upper_bound(self, group_id: str, log: Any) -> int:
        """Records are handed out below the high watermark, or the last stable offset with
        ``share.isolation.level=read_committed``."""
        if self._config(group_id, "share.isolation.level", "read_uncommitted") == "read_committed":
            return int(log.last_stable_offset)
        return int(log.high_watermark)

    def _stored(self, sp: SharePartition) -> StoredState:
        return StoredState(sp.state_epoch, sp.start_offset, sp.state_batches())

    async def _persist(self, keys: Iterable[ShareKey]) -> None:
        writes = [self.persister.write(k, self._stored(self.partitions[k])) for k in set(keys) if k in self.partitions]
        if writes:
            await asyncio.gather(*writes)

    async def _persist_acks(self, changed: list[ShareKey],
                            acks: dict[tuple[uuid.UUID, int], tuple[int, str | None]]) -> None:
        """Persist, answering the acknowledgements of the partitions with the failure if any."""
        if not changed:
            return
        try:
            await self._persist(changed)
        except Exception as e:  # noqa: BLE001 - the client is told, the state stays in memory
            code = error_code_of(e)
            logger.error("share group state not stored: %s", e)
            for key in changed:
                tp = (key[1], key[2])
                if tp in acks and not acks[tp][0]:
                    acks[tp] = (code, f"the acknowledgement could not be stored: {e}")

    def _arm_lock_timer(self, key: ShareKey) -> None:
        sp = self.partitions.get(key)
        old = self._lock_timers.pop(key, None)
        if old is not None:
            old.cancel()
        deadline = None if sp is None else sp.next_lock_deadline()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, (deadline - self.state_clock()) / 1000)
        self._lock_timers[key] = loop.call_later(delay, self._locks_due, key)

    def state_clock(self) -> int:
        from client.clock import now_ms
        return now_ms()

    def _locks_due(self, key: ShareKey) -> None:
        self._lock_timers.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            return
        if sp.expire_locks(self.state_clock()):
            logger.debug("share-partition %s: acquisition locks expired", key)
            self._wake(key)
            task = asyncio.ensure_future(self._persist([key]))
            task.add_done_callback(_log_failure)
        self._arm_lock_timer(key)

    def _wake(self, key: ShareKey) -> None:
        topic = self._topic(key[1])
        if topic is not None:
            self.state.notify_append(topic, key[2])

    def release_member(self, group_id: str, member_id: str) -> None:
        """A member left the group or was removed: its records go back, unless its share session
        is still open (a consumer leaves the group, then closes its session with its last
        acknowledgements: the close releases what is left; a member that never closes it has
        its records back when their locks expire)."""
        if (group_id, member_id) in self.sessions:
            return
        changed = [k for k, sp in self.partitions.items() if k[0] == group_id and sp.release_member(member_id)]
        for k in changed:
            self._arm_lock_timer(k)
            self._wake(k)
        if changed:
            task = asyncio.ensure_future(self._persist(changed))
            task.add_done_callback(_log_failure)

    # -- sessions --

    def _session(self, group_id: str, member_id: str, epoch: int) -> tuple[int, ShareSession | None]:
        key = (group_id, member_id)
        session = self.sessions.get(key)
        if epoch == 0:
            if session is not None:
                self._release_session(group_id, member_id)
            elif len(self.sessions) >= self.max_sessions:
                return int(E.SHARE_SESSION_LIMIT_REACHED), None
            session = self.sessions[key] = ShareSession()
            return 0, session
        if session is None:
            return int(E.SHARE_SESSION_NOT_FOUND), None
        if epoch == -1:
            return 0, session
        if epoch != session.epoch:
            self._release_session(group_id, member_id)
            self.sessions.pop(key, None)
            return int(E.INVALID_SHARE_SESSION_EPOCH), None
        return 0, session

    def _release_session(self, group_id: str, member_id: str) -> None:
        for k, sp in self.partitions.items():
            if k[0] == group_id and sp.release_member(member_id):
                self._arm_lock_timer(k)
                self._wake(k)

    # -- acknowledgements --

    def _acknowledge(self, group_id: str, member_id: str, topics: list[dict[str, Any]]
                     ) -> tuple[dict[tuple[uuid.UUID, int], tuple[int, str | None]], list[ShareKey]]:
        """Apply acknowledgement batches: per partition (error code, message), and the keys changed."""
        now = self.state_clock()
        results: dict[tuple[uuid.UUID, int], tuple[int, str | None]] = {}
        changed: list[ShareKey] = []
        for t in topics:
            for p in t["partitions"]:
                batches = p.get("acknowledgement_batches") or []
                if not batches:
                    continue
                tp = (t["topic_id"], p["partition_index"])
                key = (group_id, *tp)
                try:
                    sp = self.share_partition(key)
                except ShareStateError as e:
                    results[tp] = (e.error_code, str(e))
                    continue
                if sp is None:
                    results[tp] = (int(E.UNKNOWN_TOPIC_OR_PARTITION), None)
                    continue
                code, message = 0, None
                for b in batches:
                    try:
                        sp.acknowledge(member_id, b["first_offset"], b["last_offset"], list(b["acknowledge_types"]),
                                       now)
                    except AckError as e:
                        code, message = e.error_code, str(e)
                results[tp] = (code, message)
                changed.append(key)
                self._arm_lock_timer(key)
                self._wake(key)
        return results, changed

    # -- the APIs --

    async def share_fetch(self, req: dict[str, Any], version: int) -> dict[str, Any]:
        group_id, member_id, epoch = req["group_id"] or "", req["member_id"] or "", req["share_session_epoch"]
        base: dict[str, Any] = {"error_code": 0, "error_message": None, "responses": [], "node_endpoints": [],
                                "acquisition_lock_timeout_ms": self._lock_duration(group_id)}
        if not group_id or not member_id:
            return {**base, "error_code": int(E.INVALID_REQUEST), "error_message": "GroupId and MemberId are required."}
        has_acks = any(p.get("acknowledgement_batches") for t in req["topics"] for p in t["partitions"])
        if epoch == 0 and has_acks:
            return {**base, "error_code": int(E.INVALID_REQUEST),
                    "error_message": "Acknowledgements are not allowed in a request that opens a share session."}
        if epoch != -1 and not self.is_member(group_id, member_id):
            return {**base, "error_code": int(E.UNKNOWN_MEMBER_ID)}
        code, session = self._session(group_id, member_id, epoch)
        if code or session is None:
            return {**base, "error_code": code}
        requested = {(t["topic_id"], p["partition_index"]) for t in req["topics"] for p in t["partitions"]}
        acks, changed = self._acknowledge(group_id, member_id, req["topics"])
        if epoch == -1:
            self._release_session(group_id, member_id)
            self.sessions.pop((group_id, member_id), None)
            await self._persist_acks(changed + [k for k in self.partitions if k[0] == group_id], acks)
            return {**base, "responses": _responses(acks, {}, self.state.node_id)}
        session.partitions |= requested
        for f in req["forgotten_topics_data"]:
            for p in f["partitions"]:
                session.partitions.discard((f["topic_id"], p))
        session.epoch = (session.epoch + 1) if epoch else 1
        if session.epoch > 2**31 - 1:
            session.epoch = 1
        await self._persist_acks(changed, acks)
        max_records = max(1, req.get("max_records") or 500)
        got = self._acquire(group_id, member_id, session, max_records)
        if not any(r for r, _, _ in got.values()) and req["max_wait_ms"] > 0:
            got = await self._wait_and_acquire(group_id, member_id, session, max_records, req["max_wait_ms"])
        return {**base, "responses": _responses(acks, got, self.state.node_id)}

    def _acquire(self, group_id: str, member_id: str, session: ShareSession, max_records: int
                 ) -> dict[tuple[uuid.UUID, int], tuple[list[tuple[int, int, int]], bytes, int]]:
        """Per session partition: (acquired ranges, the log bytes holding them, error code)."""
        out: dict[tuple[uuid.UUID, int], tuple[list[tuple[int, int, int]], bytes, int]] = {}
        left = max_records
        now = self.state_clock()
        for tp in sorted(session.partitions):
            key = (group_id, *tp)
            try:
                sp = self.share_partition(key)
            except ShareStateError as e:
                out[tp] = ([], b"", e.error_code)
                continue
            topic = self._topic(tp[0])
            log = None if topic is None else self.state.logs.logs.get((topic, tp[1]))
            if sp is None or log is None:
                out[tp] = ([], b"", int(E.UNKNOWN_TOPIC_ID if topic is None else E.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if sp.start_offset < log.log_start_offset:  # records deleted under the window
                sp.reset(log.log_start_offset)
            if left <= 0:
                out[tp] = ([], b"", 0)
                continue
            ranges = sp.acquire(member_id, left, self._upper_bound(group_id, log), now)
            if not ranges:
                out[tp] = ([], b"", 0)
                continue
            first = min(r[0] for r in ranges)
            last = max(r[1] for r in ranges)
            data = _read_range(log, first, last)
            read_committed = self._config(group_id, "share.isolation.level", "read_uncommitted") == "read_committed"
            skip = _not_delivered(data, log.collect_aborted_transactions(first, last + 1) if read_committed else [])
            if skip:
                sp.archive(member_id, skip)
                ranges = _without(ranges, skip)
            left -= sum(la - f + 1 for f, la, _ in ranges)
            out[tp] = (ranges, data if ranges else b"", 0)
            self._arm_lock_timer(key)
        return out

    async def _wait_and_acquire(self, group_id: str, member_id: str, session: ShareSession, max_records: int,
                                max_wait_ms: int) -> dict[tuple[uuid.UUID, int], tuple[list[tuple[int, int, int]],
                                                                                      bytes, int]]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        keys = []
        for topic_id, p in session.partitions:
            topic = self._topic(topic_id)
            if topic is not None:
                keys.append((topic, p))
        got: dict[tuple[uuid.UUID, int], tuple[list[tuple[int, int, int]], bytes, int]] = {}
        while True:
            fut: asyncio.Future[None] = loop.create_future()
            self.state.add_waiter(keys, fut)
            try:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return got
                try:
                    await asyncio.wait_for(asyncio.shield(fut), remaining)
                except TimeoutError:
                    pass
            finally:
                self.state.remove_waiter(keys, fut)
            got = self._acquire(group_id, member_id, session, max_records)
            if any(r for r, _, _ in got.values()) or loop.time() >= deadline:
                return got

    async def share_acknowledge(self, req: dict[str, Any], version: int) -> dict[str, Any]:
        group_id, member_id, epoch = req["group_id"] or "", req["member_id"] or "", req["share_session_epoch"]
        base: dict[str, Any] = {"error_code": 0, "error_message": None, "responses": [], "node_endpoints": [],
                                "acquisition_lock_timeout_ms": self.lock_duration_ms}
        if not group_id or not member_id:
            return {**base, "error_code": int(E.INVALID_REQUEST), "error_message": "GroupId and MemberId are required."}
        if epoch == 0:
            return {**base, "error_code": int(E.INVALID_SHARE_SESSION_EPOCH),
                    "error_message": "ShareAcknowledge cannot open a share session."}
        code, session = self._session(group_id, member_id, epoch)
        if code or session is None:
            return {**base, "error_code": code}
        acks, changed = self._acknowledge(group_id, member_id, req["topics"])
        if epoch == -1:
            self._release_session(group_id, member_id)
            self.sessions.pop((group_id, member_id), None)
            changed += [k for k in self.partitions if k[0] == group_id]
        else:
            session.epoch += 1
        await self._persist_acks(changed, acks)
        out = []
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for (tid, p), (c, msg) in sorted(acks.items()):
            by_topic.setdefault(tid, []).append({"partition_index": p, "error_code": c, "error_message": msg,
                                                 "current_leader": {"leader_id": self.state.node_id, "leader_epoch": 0}})
        for tid, parts in by_topic.items():
            out.append({"topic_id": tid, "partitions": parts})
        return {**base, "responses": out}

    # -- admin --

    def start_offsets(self, group_id: str) -> dict[ShareKey, int]:
        out = {k: sp.start_offset for k, sp in self.partitions.items() if k[0] == group_id}
        return out

    def forget_group(self, group_id: str) -> None:
        for k in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[k]
            timer = self._lock_timers.pop(k, None)
            if timer is not None:
                timer.cancel()

    def drop_share_partitions(self, keys: Iterable[ShareKey]) -> None:
        """Forget these share-partitions (AlterShareGroupOffsets, DeleteShareGroupOffsets changed
        their stored state); the next use loads them again from the store."""
        for k in keys:
            self.partitions.pop(k, None)
            timer = self._lock_timers.pop(k, None)
            if timer is not None:
                timer.cancel()


def _read_range(log: Any, first: int, last: int) -> bytes:
    """The log batches holding offsets ``first``..``last``: whole batches only, as a fetch
    returns them (a read stops at its byte budget, possibly inside a batch: that partial batch
    is left out and read whole by the next read)."""
    out = bytearray()
    offset = first
    while offset <= last:
        chunk = log.read_bytes(offset, 1 << 20, True)  # the first batch always whole
        pos, end_offset = 0, offset
        while pos + 61 <= len(chunk):
            length = int.from_bytes(chunk[pos + 8:pos + 12], "big", signed=True)
            if length < 49 or pos + 12 + length > len(chunk):
                break
            base = int.from_bytes(chunk[pos:pos + 8], "big", signed=True)
            end_offset = base + int.from_bytes(chunk[pos + 23:pos + 27], "big", signed=True) + 1
            pos += 12 + length
            if end_offset > last:
                break
        if pos == 0 or end_offset <= offset:
            break
        out += chunk[:pos]
        offset = end_offset
    return bytes(out)


def _not_delivered(data: bytes, aborted: list[Any]) -> set[int]:
    """Offsets of ``data``'s batches that are not records to deliver: control batches
    (transaction markers), and batches of transactions in ``aborted`` (AbortedTxn: producer id,
    first offset, the marker's offset)."""
    out: set[int] = set()
    pos = 0
    while pos + 61 <= len(data):
        base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < 49 or pos + 12 + length > len(data):
            break  # whole batches only (_read_range): nothing else to look at
        attributes = int.from_bytes(data[pos + 21:pos + 23], "big")
        last = base + int.from_bytes(data[pos + 23:pos + 27], "big", signed=True)
        producer_id = int.from_bytes(data[pos + 43:pos + 51], "big", signed=True)
        if attributes & 0x20 or (attributes & 0x10 and any(
                a.producer_id == producer_id and a.first_offset <= base <= a.last_offset for a in aborted)):
            out.update(range(base, last + 1))
        pos += 12 + length
    return out


def _without(ranges: list[tuple[int, int, int]], skip: set[int]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for first, last, count in ranges:
        run: int | None = None
        for o in range(first, last + 1):
            if o in skip:
                if run is not None:
                    out.append((run, o - 1, count))
                    run = None
            elif run is None:
                run = o
        if run is not None:
            out.append((run, last, count))
    return out


def _responses(acks: dict[tuple[uuid.UUID, int], tuple[int, str | None]],
               got: dict[tuple[uuid.UUID, int], tuple[list[tuple[int, int, int]], bytes, int]],
               node_id: int) -> list[dict[str, Any]]:
    by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for tp in sorted(set(acks) | set(got)):
        ranges, data, code = got.get(tp, ([], b"", 0))
        ack_code, ack_msg = acks.get(tp, (0, None))
        by_topic.setdefault(tp[0], []).append({
            "partition_index": tp[1], "error_code": code, "error_message": None,
            "acknowledge_error_code": ack_code, "acknowledge_error_message": ack_msg,
            "current_leader": {"leader_id": node_id, "leader_epoch": 0}, "records": data,
            "acquired_records": [{"first_offset": f, "last_offset": la, "delivery_count": c} for f, la, c in ranges]})
    return [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("storing share-partition state failed: %s", task.exception())

