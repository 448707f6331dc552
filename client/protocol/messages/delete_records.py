"""DeleteRecords (API key 21): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DeleteRecordsRequest = Message("DeleteRecordsRequest", 21, "0-2", "2+", [
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("offset", "int64"),
        ])),
    ])),
    F("timeout_ms", "int32"),
])
DeleteRecordsResponse = Message("DeleteRecordsResponse", 21, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("low_watermark", "int64"),
            F("error_code", "int16"),
        ])),
    ])),
])
