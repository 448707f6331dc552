"""Control records: the COMMIT and ABORT markers a transaction coordinator writes to every
partition of a transaction (Kafka's ControlRecordType and EndTransactionMarker).

A control batch has the transactional (0x10) and control (0x20) attribute bits set, the
producer id and epoch of the transaction, baseSequence -1, and exactly one record::

    key   = int16 version (0) | int16 type        ABORT = 0, COMMIT = 1
    value = int16 version (0) | int32 coordinator_epoch

Readers skip control batches (they hold no application data); a read_committed consumer uses
them, with the fetch response's aborted transactions, to drop aborted records.
"""

from __future__ import annotations

import struct

from ..clock import now_ms
from .record import RecordBatchBuilder

__all__ = ["ABORT", "COMMIT", "ControlRecord", "build_control_batch", "parse_control_key", "parse_control_value"]

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecord:
    """A parsed control record key: ``type`` 0 (ABORT), 1 (COMMIT) or an unknown type."""

    __slots__ = ("version", "type")

    def __init__(self, version: int, type_: int) -> None:
        self.version = version
        self.type = type_

    @property
    def name(self) -> str:
        return {ABORT: "ABORT", COMMIT: "COMMIT"}.get(self.type, f"UNKNOWN({self.type})")


def parse_control_key(key: bytes | memoryview | None) -> ControlRecord:
    """The control record type of a control record's key; ValueError if it is too short."""
    if key is None or len(key) < _KEY.size:
        raise ValueError(f"a control record key needs {_KEY.size} bytes")
    version, type_ = _KEY.unpack_from(key, 0)
    return ControlRecord(version, type_)


def parse_control_value(value: bytes | memoryview | None) -> int:
    """The coordinator epoch of an end-transaction marker's value; ValueError if too short."""
    if value is None or len(value) < _VALUE.size:
        raise ValueError(f"an end-transaction marker value needs {_VALUE.size} bytes")
    return int(_VALUE.unpack_from(value, 0)[1])


def build_control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int = 0,
                        timestamp_ms: int | None = None, leader_epoch: int = 0) -> bytearray:
    """One control batch holding a COMMIT or ABORT marker, offsets relative to 0, stamped with
    the partition's leader epoch (0: the only one a partition has on one broker) as Kafka's
    leader stamps the markers it writes."""
    b = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=-1,
                           is_transactional=True, is_control=True, partition_leader_epoch=leader_epoch)
    key = _KEY.pack(CONTROL_KEY_VERSION, COMMIT if commit else ABORT)
    value = _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    b.append(value, key, (), timestamp_ms if timestamp_ms is not None else now_ms())
    return b.build()
