"""SharePartition: one partition of a topic as one share group consumes it (KIP-932), sans-IO.

The share-partition start offset (SPSO) is the first offset not yet done with; every offset
below it is acknowledged or archived. The in-flight window ``[start_offset, end_offset)`` holds
each offset's state, and ``end_offset`` (SPEO) is the next offset never handed out yet:

- AVAILABLE: may be acquired (never delivered, released, or its lock expired);
- ACQUIRED: handed to one member, locked until ``lock_deadline`` (``record.lock.duration``);
- ACKNOWLEDGED: processed (Accept);
- ARCHIVED: given up (Reject, a Gap, or delivered ``delivery_count_limit`` times).

Transitions: ``acquire`` takes AVAILABLE records (redeliveries first, in offset order, then new
offsets from ``end_offset``), raising their delivery count; ``acknowledge`` applies a member's
Accept / Release / Reject / Gap / Renew to records *it* holds (INVALID_RECORD_STATE otherwise);
``release_member`` (the member left or was fenced) and ``expire_locks`` return ACQUIRED records
to AVAILABLE, or to ARCHIVED once they reached the delivery-count limit. After each change the
start offset moves past the leading ACKNOWLEDGED/ARCHIVED offsets and those leave the window.
At most ``max_in_flight`` (``group.share.partition.max.record.locks``) offsets are in the window:
acquisition stops there until the start offset moves.

``state_batches()`` is what ``__share_group_state`` stores: the window as ranges of equal
(delivery state, delivery count), ACQUIRED stored as AVAILABLE (a restarted broker hands them
out again, counted). ``load`` rebuilds a partition from them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from client.protocol.api import ErrorCode

__all__ = ["RecordState", "AckType", "SharePartition", "AckError"]


class RecordState(enum.IntEnum):
    """Kafka's record states (their bytes in ``__share_group_state``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AckError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = code


@dataclass(slots=True)
class _Record:
    state: RecordState
    delivery_count: int
    member: str = ""
    lock_deadline: int = 0


#: a persisted range: (first offset, last offset, delivery state, delivery count)
StateBatch = tuple[int, int, int, int]


class SharePartition:
    def __init__(self, start_offset: int, *, max_in_flight: int = 2000, delivery_count_limit: int = 5,
                 lock_duration_ms: int = 30_000) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.max_in_flight = max_in_flight
        self.delivery_count_limit = delivery_count_limit
        self.lock_duration_ms = lock_duration_ms
        self.records: dict[int, _Record] = {}  # offsets in [start_offset, end_offset) that are not plain-new
        self.state_epoch = 0
        #: how many times a change was made (persisted state moves with it)
        self.version = 0

    # -- loading --

    @classmethod
    def load(cls, start_offset: int, batches: Iterable[StateBatch], **limits: int) -> SharePartition:
        sp = cls(start_offset, **limits)
        for first, last, state, count in batches:
            for offset in range(max(first, start_offset), last + 1):
                st = RecordState(state) if state in RecordState._value2member_map_ else RecordState.AVAILABLE
                if st == RecordState.ACQUIRED:
                    st = RecordState.AVAILABLE
                sp.records[offset] = _Record(st, count)
            sp.end_offset = max(sp.end_offset, last + 1)
        sp._advance()
        return sp

    # -- acquisition --

    def acquire(self, member: str, max_records: int, log_end: int, now_ms: int,
                present: Iterable[int] | None = None) -> list[tuple[int, int, int]]:
        """Acquire up to ``max_records`` records for ``member``: (first, last, delivery count)
        ranges. ``log_end``: the offsets that may be handed out are below it. ``present``: if
        given, the offsets that hold records (others in the window are archived as gaps)."""
        got: list[int] = []
        deadline = now_ms + self.lock_duration_ms
        for offset in sorted(o for o, r in self.records.items() if r.state == RecordState.AVAILABLE):
            if len(got) >= max_records or offset >= log_end:
                break
            r = self.records[offset]
            if r.delivery_count >= self.delivery_count_limit:
                r.state = RecordState.ARCHIVED
                continue
            r.state, r.member, r.lock_deadline = RecordState.ACQUIRED, member, deadline
            r.delivery_count += 1
            got.append(offset)
        while len(got) < max_records and self.end_offset < log_end \
                and self.end_offset - self.start_offset < self.max_in_flight:
            offset = self.end_offset
            self.records[offset] = _Record(RecordState.ACQUIRED, 1, member, deadline)
            self.end_offset += 1
            got.append(offset)
        if got:
            self.version += 1
        self._advance()
        ranges: list[tuple[int, int, int]] = []
        for offset in sorted(got):
            count = self.records[offset].delivery_count
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
                ranges[-1] = (ranges[-1][0], offset, count)
            else:
                ranges.append((offset, offset, count))
        return ranges

    def has_available(self, log_end: int) -> bool:
        """Whether ``acquire`` would hand out anything now."""
        if any(r.state == RecordState.AVAILABLE and o < log_end for o, r in self.records.items()):
            return True
        return self.end_offset < log_end and self.end_offset - self.start_offset < self.max_in_flight

    # -- acknowledgement --

    def acknowledge(self, member: str, first: int, last: int, types: list[int], now_ms: int) -> None:
        """Apply one acknowledgement batch: ``types`` holds one type for the whole range or one
        per offset. AckError (INVALID_RECORD_STATE / INVALID_REQUEST) leaves everything as it was."""
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise AckError(ErrorCode.INVALID_REQUEST, f"invalid acknowledgement batch {first}-{last} with"
                           f" {len(types)} types")
        changes = []
        for i, offset in enumerate(range(first, last + 1)):
            t = types[0] if len(types) == 1 else types[i]
            if t not in AckType._value2member_map_:
                raise AckError(ErrorCode.INVALID_REQUEST, f"unknown acknowledge type {t}")
            r = self.records.get(offset)
            if r is None or r.state != RecordState.ACQUIRED or r.member != member:
                if offset < self.start_offset:
                    continue  # already done with (a retried acknowledgement): nothing to change
                raise AckError(ErrorCode.INVALID_RECORD_STATE, f"offset {offset} is not acquired by this member")
            changes.append((r, AckType(t)))
        for r, t in changes:
            if t == AckType.ACCEPT:
                r.state = RecordState.ACKNOWLEDGED
            elif t in (AckType.REJECT, AckType.GAP):
                r.state = RecordState.ARCHIVED
            elif t == AckType.RELEASE:
                self._release(r)
            else:  # RENEW: the lock starts again
                r.lock_deadline = now_ms + self.lock_duration_ms
            if t != AckType.RENEW:
                r.member = ""
        self.version += 1
        self._advance()

    def _release(self, r: _Record) -> None:
        r.member = ""
        r.state = RecordState.ARCHIVED if r.delivery_count >= self.delivery_count_limit else RecordState.AVAILABLE

    def archive(self, member: str, offsets: Iterable[int]) -> None:
        """Offsets ``member`` just acquired that are not records to deliver (transaction markers,
        records of aborted transactions under read_committed): archived at once."""
        for offset in offsets:
            r = self.records.get(offset)
            if r is not None and r.state == RecordState.ACQUIRED and r.member == member:
                r.state, r.member = RecordState.ARCHIVED, ""
        self.version += 1
        self._advance()

    def release_member(self, member: str) -> int:
        """The member is gone: what it held is available again (or archived at the limit)."""
        n = 0
        for r in self.records.values():
            if r.state == RecordState.ACQUIRED and r.member == member:
                self._release(r)
                n += 1
        if n:
            self.version += 1
            self._advance()
        return n

    def expire_locks(self, now_ms: int) -> int:
        n = 0
        for r in self.records.values():
            if r.state == RecordState.ACQUIRED and r.lock_deadline <= now_ms:
                self._release(r)
                n += 1
        if n:
            self.version += 1
            self._advance()
        return n

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline for r in self.records.values() if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def _advance(self) -> None:
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is None or r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1

    # -- admin --

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets / log truncation: start again at ``start_offset``, nothing in flight."""
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1
        self.version += 1

    def acquired_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state == RecordState.ACQUIRED)

    # -- persistence --

    def state_batches(self) -> list[StateBatch]:
        out: list[StateBatch] = []
        for offset in sorted(self.records):
            r = self.records[offset]
            st = RecordState.AVAILABLE if r.state == RecordState.ACQUIRED else r.state
            if out and out[-1][1] == offset - 1 and out[-1][2] == st and out[-1][3] == r.delivery_count:
                out[-1] = (out[-1][0], offset, st, r.delivery_count)
            else:
                out.append((offset, offset, int(st), r.delivery_count))
        return out
