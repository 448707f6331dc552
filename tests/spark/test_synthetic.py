"""client/spark/synthetic.py without Spark: its batches (rows, sizes, offsets)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from client.spark.source import KAFKA_SCHEMA, typed_schema
from client.spark.synthetic import SyntheticReader


@pytest.mark.parametrize("batch_rows,sizes", [(None, [10000, 10000, 5000]), ("7000", [7000] * 3 + [4000])])
def test_batch_rows(batch_rows: str | None, sizes: list[int]) -> None:
    opts = {"rows": "50000", "partitions": "2", "recordSize": "10"}
    if batch_rows:
        opts["batchRows"] = batch_rows
    r = SyntheticReader(typed_schema(KAFKA_SCHEMA, {}, False), opts)
    parts = r.partitions()
    assert len(parts) == 2
    batches = list(r.read(parts[1]))
    assert [b.num_rows for b in batches] == sizes
    assert batches[-1].column("offset").to_pylist()[-1] == 24999
    assert {len(v) for b in batches for v in b.column("value").to_pylist()} == {10}


def test_batch_rows_positive() -> None:
    with pytest.raises(ValueError, match="batchRows must be positive"):
        SyntheticReader(typed_schema(KAFKA_SCHEMA, {}, False), {"rows": "1", "batchRows": "0"})
