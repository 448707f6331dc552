"""An independent decoder of ``__consumer_offsets`` records, written from Kafka's record
schemas (OffsetCommitKey/Value, GroupMetadataKey/Value) with ``struct`` only: the tests read
the broker's segment files with it, so a mistake shared with broker/group/records.py (which is
built on the protocol schema tables) would not go unnoticed."""

from __future__ import annotations

import struct
from typing import Any


class _R:
    def __init__(self, b: bytes) -> None:
        self.b, self.p = b, 0

    def take(self, fmt: str) -> Any:
        v = struct.unpack_from(">" + fmt, self.b, self.p)[0]
        self.p += struct.calcsize(">" + fmt)
        return v

    def string(self, nullable: bool = False) -> str | None:
        n = self.take("h")
        if n < 0:
            assert nullable, "null in a non-nullable string"
            return None
        s = self.b[self.p:self.p + n].decode()
        self.p += n
        return s

    def blob(self) -> bytes:
        n = self.take("i")
        out = self.b[self.p:self.p + n]
        self.p += n
        return out


def decode(key: bytes, value: bytes | None) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """("offset" | "group", key fields, value fields or None for a tombstone)."""
    k = _R(key)
    kind = k.take("h")
    if kind in (0, 1):
        kf = {"group": k.string(), "topic": k.string(), "partition": k.take("i")}
        assert k.p == len(key)
        if value is None:
            return "offset", kf, None
        v = _R(value)
        version = v.take("h")
        vf: dict[str, Any] = {"version": version, "offset": v.take("q")}
        if version >= 3:
            vf["leader_epoch"] = v.take("i")
        vf["metadata"] = v.string()
        vf["commit_timestamp"] = v.take("q")
        if version == 1:
            vf["expire_timestamp"] = v.take("q")
        assert v.p == len(value) and version <= 3
        return "offset", kf, vf
    assert kind == 2, f"record type {kind}"
    kf = {"group": k.string()}
    assert k.p == len(key)
    if value is None:
        return "group", kf, None
    v = _R(value)
    version = v.take("h")
    vf = {"version": version, "protocol_type": v.string(), "generation": v.take("i"),
          "protocol": v.string(True), "leader": v.string(True)}
    if version >= 2:
        vf["current_state_timestamp"] = v.take("q")
    members = []
    for _ in range(v.take("i")):
        m: dict[str, Any] = {"member_id": v.string()}
        if version >= 3:
            m["group_instance_id"] = v.string(True)
        m["client_id"] = v.string()
        m["client_host"] = v.string()
        if version >= 1:
            m["rebalance_timeout"] = v.take("i")
        m["session_timeout"] = v.take("i")
        m["subscription"] = v.blob()
        m["assignment"] = v.blob()
        members.append(m)
    vf["members"] = members
    assert v.p == len(value) and version <= 3
    return "group", kf, vf


def read_partition_dir(path: str) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """Every record of every segment of one ``__consumer_offsets-N`` directory, in offset order
    (uncompressed magic-v2 batches, as the coordinator writes them)."""
    import os

    from client.records.record import iter_records

    out = []
    for name in sorted(os.listdir(path)):
        if not name.endswith(".log"):
            continue
        data = open(os.path.join(path, name), "rb").read()
        pos = 0
        while pos + 12 <= len(data):
            length = struct.unpack_from(">i", data, pos + 8)[0]
            for r in iter_records(data[pos:pos + 12 + length]):
                assert r.key is not None
                out.append(decode(bytes(r.key), None if r.value is None else bytes(r.value)))
            pos += 12 + length
    return out
