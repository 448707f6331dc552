"""Typed reads vs the binary read: the ``minibroker`` Spark source over one topic of
Confluent-framed Avro records, read as Kafka's bytes (the default) and with
``valueFormat=avro`` (typed columns decoded through the registry), in the same run.

It starts a private broker with its schema registry, registers an Avro record schema (a long,
a string, a nested record, an array of ints, a double, a timestamp-millis, a nullable string),
produces ``--records`` N (200,000) framed values into ``--partitions`` P (2) with our producer,
then times ``groupBy("partition").agg(count("value"), max("offset"))`` on ``local[--cores]``
for each format, median of ``--repeats`` (3) after one warm-up read each. Printed: rows/s of
each, the typed/binary ratio, and the command line. The Python Data Source API offers no
column pruning, so the typed read always decodes every value.

    python scripts/bench_spark_formats.py --records 200000
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import struct
import sys
import tempfile
import time
import urllib.request
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scripts._benchutil import command_line, machine_line

SCHEMA = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
    {"name": "where", "type": {"type": "record", "name": "Where", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": "int"}]}},
    {"name": "codes", "type": {"type": "array", "items": "int"}}, {"name": "amount", "type": "double"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None}]}


def register(url: str, subject: str) -> int:
    body = json.dumps({"schema": json.dumps(SCHEMA)}).encode()
    req = urllib.request.Request(f"{url}/subjects/{subject}/versions", data=body, method="POST",
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(json.loads(r.read())["id"])


def produce(bootstrap: str, topic: str, partitions: int, n: int, schema_id: int) -> int:
    import fastavro

    from client.sync import SyncAdmin, SyncProducer

    parsed = fastavro.parse_schema(SCHEMA)
    header = struct.pack(">bi", 0, schema_id)
    with SyncAdmin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=partitions)
    size = 0
    with SyncProducer(bootstrap, linger_ms=20, batch_size=256 * 1024) as prod:
        for i in range(n):
            buf = io.BytesIO()
            buf.write(header)
            fastavro.schemaless_writer(buf, parsed, {
                "id": i, "user": f"user-{i % 1000}", "where": {"city": "Lyon", "zip": 69000 + i % 10},
                "codes": [i % 7, i % 11], "amount": i * 0.25, "at": 1_700_000_000_000 + i,
                "note": None if i % 2 else "n"})
            value = buf.getvalue()
            size += len(value)
            prod.send_nowait(topic, value, partition=i % partitions)
            if i % 5000 == 4999:
                prod.flush()
        prod.flush()
    return size


def timed(spark: Any, options: dict[str, str]) -> tuple[float, int]:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    reader = spark.read.format("minibroker")
    for k, v in options.items():
        reader = reader.option(k, v)
    rows = reader.load().groupBy("partition").agg(F.count("value").alias("n"), F.max("offset")).collect()
    return time.perf_counter() - t0, sum(r["n"] for r in rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()

    from broker.testing import BrokerProcess
    from scripts.spark_consume import make_session

    print(command_line())
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="bench-spark-formats-") as data, \
            BrokerProcess(os.path.join(data, "data"), schema_registry=True, log_level="WARNING") as b:
        topic = "bench-avro"
        schema_id = register(b.schema_registry_url, f"{topic}-value")
        t0 = time.perf_counter()
        size = produce(b.bootstrap, topic, args.partitions, args.records, schema_id)
        print(f"produced {args.records} Avro records ({size / args.records:.0f} B framed on average) into"
              f" {args.partitions} partitions in {time.perf_counter() - t0:.1f} s")
        spark = make_session(f"local[{args.cores}]", verbose=False, app_name="bench-spark-formats")
        base = {"kafka.bootstrap.servers": b.bootstrap, "subscribe": topic}
        cases = {"binary": base, "avro": {**base, "valueFormat": "avro", "schema.registry.url": b.schema_registry_url}}
        results = {}
        for name, options in cases.items():
            _, n = timed(spark, options)  # warm-up: Python workers, connections, the writer schema cache
            assert n == args.records, (name, n)
            secs = statistics.median(timed(spark, options)[0] for _ in range(args.repeats))
            results[name] = args.records / secs
            print(f"{name:>7}: {results[name]:>12,.0f} rows/s  (median of {args.repeats}: {secs:.2f} s)")
        print(f"avro/binary: {results['avro'] / results['binary']:.2f}x")
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
