"""A Spark application as a user submits it to a cluster (run by tests/spark/test_cluster.py with
``spark-submit --master local-cluster[2,1,1024] --py-files minibroker-client.zip``).

Arguments: BOOTSTRAP SOURCE_TOPIC SINK_TOPIC CHECKPOINT_DIR STREAM_OUT_DIR. It imports ``client``
only from what ``--py-files`` shipped, then:

1. batch read of SOURCE_TOPIC (``includeHeaders``), rows collected;
2. streaming read of SOURCE_TOPIC with a checkpoint into Parquet (``availableNow``,
   ``maxOffsetsPerTrigger`` so that there are several micro-batches), rows read back;
3. the batch rows written to SINK_TOPIC with the sink (values upper-cased);

and prints one JSON line: the rows of 1 and 2, how many micro-batches 2 took, where ``client``
came from, the executors that ran tasks (Spark's REST status) and the process ids of the JVMs
that ran the Python workers, next to the driver's.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any


def _jvm_pid(_: Any) -> int:
    """The pid of the JVM that runs this task's Python worker (worker -> pyspark daemon -> JVM)."""
    daemon = os.getppid()
    with open(f"/proc/{daemon}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _row(r: Any) -> list[Any]:
    return [r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key).decode(),
            bytes(r.value).decode(), [[h.key, bytes(h.value).decode()] for h in r.headers or ()]]


def main() -> None:
    bootstrap, source, sink, checkpoint, stream_out = sys.argv[1:6]
    from pyspark.sql import SparkSession

    import client
    from client.spark import register

    spark = SparkSession.builder.appName("minibroker-cluster-test").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    sc = spark.sparkContext

    def read() -> Any:
        return (spark.read.format("minibroker").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source).option("includeHeaders", "true").load())

    batch = [_row(r) for r in read().collect()]

    q = (spark.readStream.format("minibroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", source).option("startingOffsets", "earliest").option("includeHeaders", "true")
         .option("maxOffsetsPerTrigger", "100").load()
         .writeStream.format("parquet").option("path", stream_out).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    micro_batches = len([p for p in q.recentProgress if p.numInputRows])
    stream = [_row(r) for r in spark.read.parquet(stream_out).collect()]

    (read().selectExpr("key", "upper(cast(value as string)) as value", "partition", "headers")
     .write.format("minibroker").mode("append").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink).save())

    jvms = sorted(set(sc.parallelize(range(8), 8).map(_jvm_pid).collect()))
    executor_client = sorted(set(sc.parallelize(range(8), 8).map(lambda _: __import__("client").__file__).collect()))
    driver_jvm = sc._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors") as resp:
        executors = [{"id": e["id"], "totalTasks": e["totalTasks"]} for e in json.load(resp)]
    print("RESULT " + json.dumps({
        "batch": batch, "stream": stream, "micro_batches": micro_batches, "client_from": client.__file__, "executor_client_from": executor_client,
        "master": sc.master, "executors": executors, "worker_jvms": jvms, "driver_jvm": driver_jvm}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
