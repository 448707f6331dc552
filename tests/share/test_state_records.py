"""``__share_group_state`` records (broker/share/state_records.py): round trips, hand-derived
bytes per record type, and every field checked by an independent ``struct`` decoder written
from Kafka 4.2's ShareSnapshot*/ShareUpdate* JSON schemas (not client/protocol/schema.py)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.share.state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    SharePartitionKey,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    coordinator_key,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
    topic_id_str,
)
from client.protocol.primitives import DecodeError

TOPIC_ID = bytes(range(16))
KEY = SharePartitionKey("g", TOPIC_ID, 3)

# -- the independent decoder --


class _R:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def tags(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return out

    def done(self) -> bool:
        return self.pos == len(self.data)


def ind_key(data: bytes) -> tuple[int, str, bytes, int]:
    r = _R(data)
    kind = r.take(">h")
    n = r.take(">h")
    group = r.data[r.pos:r.pos + n].decode()
    r.pos += n
    tid = r.data[r.pos:r.pos + 16]
    r.pos += 16
    part = r.take(">i")
    assert r.done()
    return kind, group, tid, part


def ind_batches(r: _R) -> list[tuple[int, int, int, int]]:
    n = r.uvarint() - 1  # compact array: length + 1
    out = []
    for _ in range(n):
        b = (r.take(">q"), r.take(">q"), r.take(">b"), r.take(">h"))
        assert r.tags() == {}  # each StateBatch has its own (empty) tag buffer
        out.append(b)
    return out


def ind_snapshot(data: bytes) -> dict[str, Any]:
    r = _R(data)
    d: dict[str, Any] = {"version": r.take(">h"), "snapshot_epoch": r.take(">i"), "state_epoch": r.take(">i"),
                         "leader_epoch": r.take(">i"), "start_offset": r.take(">q"),
                         "create_timestamp": r.take(">q"), "write_timestamp": r.take(">q")}
    d["batches"] = ind_batches(r)
    tags = r.tags()
    d["delivery_complete_count"] = struct.unpack(">i", tags.pop(0))[0] if 0 in tags else -1
    assert tags == {} and r.done()
    return d


def ind_update(data: bytes) -> dict[str, Any]:
    r = _R(data)
    d: dict[str, Any] = {"version": r.take(">h"), "snapshot_epoch": r.take(">i"), "leader_epoch": r.take(">i"),
                         "start_offset": r.take(">q")}
    d["batches"] = ind_batches(r)
    tags = r.tags()
    d["delivery_complete_count"] = struct.unpack(">i", tags.pop(0))[0] if 0 in tags else -1
    assert tags == {} and r.done()
    return d


# -- hand-derived bytes --


def test_key_bytes() -> None:
    want = (b"\x00\x00"            # record type 0: ShareSnapshot
            + b"\x00\x01g"         # group id: int16 length + UTF-8
            + TOPIC_ID             # uuid: 16 raw bytes
            + b"\x00\x00\x00\x03")  # partition int32
    assert encode_key(SHARE_SNAPSHOT, KEY) == want
    assert encode_key(SHARE_UPDATE, KEY) == b"\x00\x01" + want[2:]
    assert decode_key(want) == (SHARE_SNAPSHOT, KEY)
    assert decode_key(b"\x00\x01" + want[2:]) == (SHARE_UPDATE, KEY)
    assert decode_key(b"\x00\x07" + want[2:]) is None  # a later Kafka's record type
    with pytest.raises(ValueError):
        encode_key(2, KEY)


def test_snapshot_bytes() -> None:
    v = ShareSnapshotValue(1, 2, 3, 10, 100, 200, [StateBatch(10, 12, 0, 1)])
    want = bytes.fromhex(
        "0000"                  # value version 0
        "00000001"              # snapshot epoch
        "00000002"              # state epoch
        "00000003"              # leader epoch
        "000000000000000a"      # start offset 10
        "0000000000000064"      # create timestamp 100
        "00000000000000c8"      # write timestamp 200
        "02"                    # compact array: 1 batch
        "000000000000000a" "000000000000000c" "00" "0001" "00"  # first, last, state, count, tags
        "00")                   # tag buffer: no tagged field (delivery complete count -1)
    assert encode_value(v) == want
    assert decode_value(SHARE_SNAPSHOT, want) == v


def test_snapshot_bytes_with_delivery_complete_count() -> None:
    v = ShareSnapshotValue(0, 0, 0, 0, 0, 0, [], delivery_complete_count=5)
    want = bytes.fromhex("0000" + "00000000" * 3 + "0000000000000000" * 3 + "01"  # empty compact array
                         + "01" "00" "04" "00000005")  # 1 tagged field: tag 0, 4 bytes, 5
    assert encode_value(v) == want
    assert decode_value(SHARE_SNAPSHOT, want) == v


def test_update_bytes() -> None:
    v = ShareUpdateValue(4, -1, -1, [StateBatch(7, 7, 2, 3), StateBatch(8, 9, 4, 5)])
    want = bytes.fromhex(
        "0000" "00000004" "ffffffff" "ffffffffffffffff"
        "03"
        "0000000000000007" "0000000000000007" "02" "0003" "00"
        "0000000000000008" "0000000000000009" "04" "0005" "00"
        "00")
    assert encode_value(v) == want
    assert decode_value(SHARE_UPDATE, want) == v


def test_unknown_tags_are_skipped_and_bad_versions_refused() -> None:
    base = encode_value(ShareUpdateValue(0, 0, 0, []))
    with_tag = base[:-1] + bytes.fromhex("01" "05" "02" "abcd")  # tag 5, 2 bytes
    assert decode_value(SHARE_UPDATE, with_tag) == ShareUpdateValue(0, 0, 0, [])
    with pytest.raises(DecodeError):
        decode_value(SHARE_UPDATE, b"\x00\x01" + base[2:])
    with pytest.raises(DecodeError):
        decode_value(SHARE_SNAPSHOT, base)  # too short for a snapshot


# -- partitioning --


def test_coordinator_key_and_partition() -> None:
    assert topic_id_str(TOPIC_ID) == "AAECAwQFBgcICQoLDA0ODw"
    assert coordinator_key(KEY) == "g:AAECAwQFBgcICQoLDA0ODw:3"
    # Java: "g:AAECAwQFBgcICQoLDA0ODw:3".hashCode(), computed by hand with h = 31 * h + c
    h = 0
    for c in "g:AAECAwQFBgcICQoLDA0ODw:3":
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    assert partition_for(KEY, 50) == abs(h) % 50
    uid = uuid.UUID("4bd2b4c0-52e2-4d0b-8c4e-2b4a5f6c3a1e").bytes
    assert coordinator_key(SharePartitionKey("grp", uid, 0)).split(":")[1] == "S9K0wFLiTQuMTitKX2w6Hg"


# -- property tests --

_i32 = st.integers(-(1 << 31), (1 << 31) - 1)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_batch = st.builds(StateBatch, _i64, _i64, st.integers(-128, 127), st.integers(-(1 << 15), (1 << 15) - 1))


@given(st.text(max_size=20), st.binary(min_size=16, max_size=16), _i32, st.sampled_from([SHARE_SNAPSHOT, SHARE_UPDATE]))
def test_key_round_trip(group: str, tid: bytes, part: int, kind: int) -> None:
    key = SharePartitionKey(group, tid, part)
    data = encode_key(kind, key)
    assert decode_key(data) == (kind, key)
    assert ind_key(data) == (kind, group, tid, part)


@given(_i32, _i32, _i32, _i64, _i64, _i64, st.lists(_batch, max_size=5), _i32)
def test_snapshot_round_trip(se: int, st_e: int, le: int, so: int, ct: int, wt: int,
                             batches: list[StateBatch], dcc: int) -> None:
    v = ShareSnapshotValue(se, st_e, le, so, ct, wt, batches, dcc)
    data = encode_value(v)
    assert decode_value(SHARE_SNAPSHOT, data) == v
    assert ind_snapshot(data) == {"version": 0, "snapshot_epoch": se, "state_epoch": st_e, "leader_epoch": le,
                                  "start_offset": so, "create_timestamp": ct, "write_timestamp": wt,
                                  "batches": [tuple(b) for b in batches], "delivery_complete_count": dcc}


@given(_i32, _i32, _i64, st.lists(_batch, max_size=5), _i32)
def test_update_round_trip(se: int, le: int, so: int, batches: list[StateBatch], dcc: int) -> None:
    v = ShareUpdateValue(se, le, so, batches, dcc)
    data = encode_value(v)
    assert decode_value(SHARE_UPDATE, data) == v
    assert ind_update(data) == {"version": 0, "snapshot_epoch": se, "leader_epoch": le, "start_offset": so,
                                "batches": [tuple(b) for b in batches], "delivery_complete_count": dcc}


@given(st.binary(max_size=80), st.sampled_from([SHARE_SNAPSHOT, SHARE_UPDATE]))
def test_random_bytes_never_crash(data: bytes, kind: int) -> None:
    for fn in (lambda: decode_key(data), lambda: decode_value(kind, data)):
        try:
            fn()
        except (DecodeError, ValueError):
            pass
