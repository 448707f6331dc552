"""Fetch (1), v4-11: index lookup, then the record bytes leave by ``os.sendfile``.

For each partition: ``Log.read`` gives file slices starting at the batch that holds
``fetch_offset``; the first non-empty partition's first batch is always whole (KIP-74), after
that ``min(partition_max_bytes, bytes left of max_bytes)`` (a slice may end mid-batch; clients
drop the partial tail). Errors: OFFSET_OUT_OF_RANGE below the log start or above the log end,
UNKNOWN_TOPIC_OR_PARTITION. high_watermark = last_stable_offset = log end offset (one replica,
no transactions); preferred_read_replica = -1; records are never null.

Long poll: with fewer than ``min_bytes`` available and no error, the request waits until an
append to one of its partitions or ``max_wait_ms``, then reads again.

Response layout (non-flexible, v4-11, Kafka's FetchResponse.json), after the frame size
and the v0 response header::

    int32 throttle_time_ms | int16 error_code [v7+] | int32 session_id [v7+] | int32 n_topics
      int16 len + topic | int32 n_partitions
        int32 partition_index | int16 error_code | int64 high_watermark
        int64 last_stable_offset | int64 log_start_offset [v5+]
        int32 aborted_transactions (-1 = null for read_uncommitted, 0 otherwise)
        int32 preferred_read_replica [v11+] | int32 records_size | records (sendfile)
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..storage.errors import OffsetOutOfRangeError
from ..storage.file_records import FileSlice
from .common import FetchReply, error_code_of

API_KEY = ApiKey.FETCH

_TOP = struct.Struct(">ihi")  # throttle, error_code, session_id (v7+)
_I32 = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error, high watermark, last stable offset
_I64 = struct.Struct(">q")


def _read_all(request: dict[str, Any], state: Any) -> tuple[list[tuple[str, list[tuple[int, int, int, int, list[FileSlice]]]]], int, bool]:
    """Read every partition: [(topic, [(partition, error, hw, log_start, slices)])], the total
    record bytes, and whether any partition had an error."""
    limit = request["max_bytes"]
    min_one = True
    total = 0
    errors = False
    out = []
    for t in request["topics"]:
        name = t["topic"]
        parts = []
        for p in t["partitions"]:
            idx = p["partition"]
            log = state.logs.get_log(name, idx)
            if log is None:
                parts.append((idx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, []))
                errors = True
                continue
            try:
                res = log.read(p["fetch_offset"], min(p["partition_max_bytes"], limit), min_one)
            except OffsetOutOfRangeError:
                parts.append((idx, ErrorCode.OFFSET_OUT_OF_RANGE, log.high_watermark, log.log_start_offset, []))
                errors = True
                continue
            except Exception as e:  # noqa: BLE001
                parts.append((idx, error_code_of(e), -1, -1, []))
                errors = True
                continue
            size = res.size
            if size > 0:
                min_one = False
            limit = max(0, limit - size)
            total += size
            parts.append((idx, 0, res.high_watermark, res.log_start_offset, res.slices))
        out.append((name, parts))
    return out, total, errors


def _encode(result: list[tuple[str, list[tuple[int, int, int, int, list[FileSlice]]]]], version: int,
            correlation_id: int, read_committed: bool) -> FetchReply:
    parts: list[bytes | FileSlice] = []
    buf = bytearray(_I32.pack(correlation_id))
    buf += _I32.pack(0)  # throttle_time_ms
    if version >= 7:
        buf += b"\x00\x00" + _I32.pack(0)  # error_code, session_id
    buf += _I32.pack(len(result))
    size = 0
    aborted = _I32.pack(0 if read_committed else -1)
    for name, plist in result:
        nb = name.encode()
        buf += struct.pack(">h", len(nb)) + nb + _I32.pack(len(plist))
        for idx, err, hw, start, slices in plist:
            buf += _PART.pack(idx, err, hw, hw)
            if version >= 5:
                buf += _I64.pack(start)
            buf += aborted
            if version >= 11:
                buf += _I32.pack(-1)
            n = sum(s.size for s in slices)
            buf += _I32.pack(n)
            if n:
                parts.append(bytes(buf))
                size += len(buf)
                buf = bytearray()
                parts.extend(s for s in slices if s.size)
                size += n
    if buf:
        parts.append(bytes(buf))
        size += len(buf)
    return FetchReply(parts, size)


def handle(request: dict[str, Any], version: int, state: Any, correlation_id: int = 0) -> Any:
    read_committed = request.get("isolation_level", 0) == 1
    result, total, errors = _read_all(request, state)
    max_wait = request["max_wait_ms"]
    if total >= request["min_bytes"] or max_wait <= 0 or errors or not request["topics"]:
        if state.metrics is not None:
            state.metrics.fetched(version, result)
        return _encode(result, version, correlation_id, read_committed)

    async def long_poll() -> FetchReply:
        loop = asyncio.get_running_loop()
        keys = [(t["topic"], p["partition"]) for t in request["topics"] for p in t["partitions"]]
        deadline = loop.time() + max_wait / 1000
        while True:
            fut: asyncio.Future[None] = loop.create_future()
            state.add_waiter(keys, fut)
            try:
                # (Re)read only once registered: an append dispatched after the read that decided
                # to wait but before this task first ran (the next request of the same recv, or
                # another connection in the same loop turn) notified no one and would be missed
                # until max_wait_ms. Costs one more index lookup per long poll.
                res, tot, errs = _read_all(request, state)
                remaining = deadline - loop.time()
                if tot >= request["min_bytes"] or errs or remaining <= 0:
                    break
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                pass
            finally:
                state.remove_waiter(keys, fut)
        if state.metrics is not None:
            state.metrics.fetched(version, res)
        return _encode(res, version, correlation_id, read_committed)

    return long_poll()
