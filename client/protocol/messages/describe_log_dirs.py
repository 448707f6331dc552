"""DescribeLogDirs (API key 35): request and response schemas, v0-4 (Kafka 4 drops v0, which
Kafka 3.9 served).

v1+: answered before throttling; v2+: flexible; v3+: a top-level error code; v4+: each
directory's total and usable bytes. v5 (KIP-1066's is_cordoned) is Kafka 4.3's: a broker that
offered it would be taken for a Kafka 4.3 by clients that infer the version (kafka-python)."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DescribeLogDirsRequest = Message("DescribeLogDirsRequest", 35, "0-4", "2+", [
    F("topics", Array([
        F("topic", "string"),
        F("partitions", Array("int32")),
    ]), nullable="0+"),
])
DescribeLogDirsResponse = Message("DescribeLogDirsResponse", 35, "0-4", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "3+"),
    F("results", Array([
        F("error_code", "int16"),
        F("log_dir", "string"),
        F("topics", Array([
            F("name", "string"),
            F("partitions", Array([
                F("partition_index", "int32"),
                F("partition_size", "int64"),
                F("offset_lag", "int64"),
                F("is_future_key", "bool"),
            ])),
        ])),
        F("total_bytes", "int64", "4+", default=-1),
        F("usable_bytes", "int64", "4+", default=-1),
    ])),
])
