"""client/spark/reader.py without Spark: the consumers' settings, the Arrow columns
``ArrowBatcher`` builds (constant columns, timestamps) and where it cuts batches."""

from __future__ import annotations

from array import array
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")  # client.spark.reader imports it

from client.consumer_records import ColumnBatch
from client.records.columnar import BinaryColumn
from client.spark import reader
from client.spark.options import parse_options
from client.spark.reader import (
    _MAX_MS,
    PARTITION_FETCH_BYTES,
    ArrowBatcher,
    constant_column,
    consumer_kwargs,
    ms_to_timestamp,
)

US = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", US),
                    ("timestampType", pa.int32())])


def cb(first: int, n: int, ts_type: int = 0, ts: int = 1_700_000_000_000) -> ColumnBatch:
    offsets = array("q", range(first, first + n))
    return ColumnBatch("t", 3, ts_type, first + n, offsets, array("q", [ts + i for i in range(n)]),
                       BinaryColumn.from_values([None] * n),
                       BinaryColumn.from_values([b"v%d" % o for o in offsets]), [()] * n)


def test_fetch_size_default_and_override() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    kw = consumer_kwargs(o)
    assert kw["max_partition_fetch_bytes"] == PARTITION_FETCH_BYTES == 8 << 20
    assert kw["client_id"] == "minibroker-spark"
    assert kw["auto_offset_reset"] == "none"
    o = parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                       "kafka.max.partition.fetch.bytes": "1048576", "kafka.client.id": "me"})
    kw = consumer_kwargs(o)
    assert (kw["max_partition_fetch_bytes"], kw["client_id"]) == (1048576, "me")


@pytest.mark.parametrize("value,typ", [("topic", pa.string()), (7, pa.int32()), (0, pa.int32())])
def test_constant_column(value: Any, typ: Any) -> None:
    for n in (0, 1, 10, reader._CONSTANT_ROWS, reader._CONSTANT_ROWS + 5, 3):
        got = constant_column(value, typ, n)
        assert got.equals(pa.repeat(pa.scalar(value, typ), n))
        assert got.offset == 0  # a slice from row 0: IPC writes it without rebasing offsets


def test_ms_to_timestamp() -> None:
    ms = [0, -1, 1_700_000_000_123, _MAX_MS, -_MAX_MS]
    got = ms_to_timestamp(pa.array(ms, pa.int64()), US)
    assert got.type == US
    assert got.view(pa.int64()).to_pylist() == [m * 1000 for m in ms]
    assert len(ms_to_timestamp(pa.array([], pa.int64()), US)) == 0
    for out_of_range in (_MAX_MS + 1, -_MAX_MS - 1):  # the checked cast's error, as before
        with pytest.raises(pa.ArrowInvalid, match="out of bounds timestamp"):
            ms_to_timestamp(pa.array([1, out_of_range], pa.int64()), US)


def test_batcher_columns() -> None:
    b = ArrowBatcher(SCHEMA, "t", 3)
    b.add(cb(10, 5))
    b.add(cb(15, 2, ts_type=1))
    rb = b.flush()
    assert rb.schema == SCHEMA and b.rows == 0
    assert rb.column("offset").to_pylist() == list(range(10, 17))
    assert rb.column("value").to_pylist() == [b"v%d" % o for o in range(10, 17)]
    assert rb.column("key").null_count == 7
    assert rb.column("topic").to_pylist() == ["t"] * 7
    assert rb.column("partition").to_pylist() == [3] * 7
    assert rb.column("timestampType").to_pylist() == [0] * 5 + [1] * 2
    assert rb.column("timestamp").view(pa.int64()).to_pylist() == \
        [(1_700_000_000_000 + i) * 1000 for i in range(5)] + [(1_700_000_000_000 + i) * 1000 for i in range(2)]


def test_a_long_run_is_one_batch_uncopied() -> None:
    b = ArrowBatcher(SCHEMA, "t", 3)
    big = cb(0, reader.ARROW_BATCH_ROWS * 3)
    b.add(big)
    rb = b.flush()
    assert rb.num_rows == reader.ARROW_BATCH_ROWS * 3
    assert rb.column("value").buffers()[2].address == pa.py_buffer(big.values.data).address
