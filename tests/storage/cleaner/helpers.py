"""Helpers shared by the cleaner tests: read every record of a log as a consumer would (whole
batches from the log start, CRC checked, empty batches allowed), build keyed batches."""

from __future__ import annotations

import struct
from typing import NamedTuple

from broker.storage.log import Log
from client.records import RecordBatchBuilder, iter_records


class Rec(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def read_all(log: Log) -> list[Rec]:
    """Every record from the log start to the LEO, checking that batches and records come in
    strictly increasing offset order and that each batch's CRC holds."""
    out: list[Rec] = []
    offset = log.log_start_offset
    last = -1
    while offset < log.log_end_offset:
        data = log.read_bytes(offset, 1 << 20)
        assert data, f"no data at {offset} below the LEO {log.log_end_offset}"
        pos = 0
        nxt = offset
        while len(data) - pos >= 61:
            size = struct.unpack_from(">i", data, pos + 8)[0] + 12
            if pos + size > len(data):
                break
            base, = struct.unpack_from(">q", data, pos)
            last_delta, = struct.unpack_from(">i", data, pos + 23)
            assert base > last or base == last == -1 or base >= offset, (base, last)
            for r in iter_records(data[pos:pos + size]):
                assert r.offset > last and base <= r.offset <= base + last_delta
                last = r.offset
                if r.offset >= offset:
                    out.append(Rec(r.offset, r.key, r.value, r.headers, r.timestamp))
            last = max(last, base + last_delta)
            nxt = base + last_delta + 1
            pos += size
        assert nxt > offset
        offset = nxt
    return out


def keyed_batch(records: list[tuple[bytes | None, bytes | None]], *, codec: str | None = None, ts: int = 1_000,
                headers: tuple[tuple[str, bytes | None], ...] = (), **kwargs: object) -> bytearray:
    b = RecordBatchBuilder(codec, **kwargs)  # type: ignore[arg-type]
    for i, (k, v) in enumerate(records):
        b.append(v, key=k, headers=headers, timestamp=ts + i)
    return b.build()
