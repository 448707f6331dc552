#!/usr/bin/env python3
"""A streaming Spark pipeline between two topics: read ``--source``, enrich, write ``--sink``.

Each record of the source topic becomes one record of the sink topic with the same key and
partition (so per-key order is kept when both topics have the same partition count), the value
upper-cased (``--transform upper``, default) or kept (``--transform copy``), and one header
``source`` = ``topic:partition:offset`` of the record it came from. The query reads with
``readStream.format("minibroker")`` and writes with ``writeStream.format("minibroker")``;
its progress (offsets read, micro-batches committed) is kept in ``--checkpoint``: a pipeline
stopped at any point (Ctrl-C, SIGKILL, a crash) and started again with the same checkpoint goes
on from its last committed micro-batch. Nothing is lost; the records of a micro-batch that was
being written when it stopped are written again (at-least-once, as Spark's Kafka sink), which
the ``source`` header lets a reader recognise — or, with ``--producer-option
transactional.id=<prefix>`` (the sink's exactly-once option), are recognised by the sink and
not written again: a ``read_committed`` reader sees each record once.

Examples (from the repository root, with the ``spark`` extra installed and Java 17+)::

    python scripts/spark_pipeline.py --source events --sink events-upper --checkpoint /tmp/ckpt
    python scripts/spark_pipeline.py --source events --sink events-upper --checkpoint /tmp/ckpt \\
        --available-now --max-offsets-per-trigger 10000

Without ``--available-now`` the query runs until interrupted, a micro-batch every
``--trigger-seconds`` (0: as soon as the previous one ends). With it, it processes what is in
the source topic when it starts (in micro-batches of ``--max-offsets-per-trigger``) and exits.
After each micro-batch it prints ``batch B: R rows`` on stdout.

Exit status: 0 on success, 2 for a usage error, 1 for any other error (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_consume import check_reachable, exit_status, make_session


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spark_pipeline.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT[,...]",
                   help="broker(s) of both topics (default: %(default)s)")
    p.add_argument("--source", required=True, help="topic to read")
    p.add_argument("--sink", required=True, help="topic to write (auto-created if the broker allows it)")
    p.add_argument("--checkpoint", required=True, metavar="DIR", help="the query's checkpoint directory")
    p.add_argument("--transform", choices=("upper", "copy"), default="upper",
                   help="what happens to the values (default: %(default)s)")
    p.add_argument("--starting-offsets", default="earliest",
                   help="where a new query (empty checkpoint) starts: earliest (default), latest or JSON")
    p.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="at most N records per micro-batch")
    p.add_argument("--available-now", action="store_true",
                   help="process what is there when the query starts, then exit")
    p.add_argument("--trigger-seconds", type=float, default=0.0, metavar="S",
                   help="seconds between micro-batches when running on (default: %(default)s)")
    p.add_argument("--producer-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a kafka.* producer setting for the sink, e.g. linger.ms=20 (repeatable)")
    p.add_argument("--master", default="local[2]", help="Spark master URL (default: %(default)s)")
    p.add_argument("--verbose", action="store_true", help="let Spark's logging through")
    args = p.parse_args(argv)
    if args.max_offsets_per_trigger is not None and args.max_offsets_per_trigger <= 0:
        p.error("--max-offsets-per-trigger must be a positive integer")
    for kv in args.producer_option:
        if "=" not in kv:
            p.error(f"--producer-option expects KEY=VALUE, not {kv!r}")
    return args


def build_query(spark: Any, args: argparse.Namespace) -> Any:
    """The pipeline's streaming query, started."""
    r = (spark.readStream.format("minibroker").option("kafka.bootstrap.servers", args.bootstrap_server)
         .option("subscribe", args.source).option("startingOffsets", args.starting_offsets))
    if args.max_offsets_per_trigger is not None:
        r = r.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    value = "upper(cast(value as string))" if args.transform == "upper" else "value"
    out = r.load().selectExpr(
        "key", f"{value} as value", "partition",
        "array(named_struct('key', 'source', 'value',"
        " cast(concat_ws(':', topic, cast(partition as string), cast(offset as string)) as binary))) as headers")
    w = (out.writeStream.format("minibroker").option("kafka.bootstrap.servers", args.bootstrap_server)
         .option("topic", args.sink).option("checkpointLocation", args.checkpoint))
    for kv in args.producer_option:
        k, v = kv.split("=", 1)
        w = w.option("kafka." + k.strip(), v.strip())
    w = w.trigger(availableNow=True) if args.available_now else w.trigger(processingTime=f"{args.trigger_seconds} seconds")
    return w.start()


def run(args: argparse.Namespace) -> None:
    check_reachable(args.bootstrap_server)
    spark = make_session(args.master, args.verbose, app_name="minibroker-spark-pipeline")
    q = build_query(spark, args)
    seen = -1
    try:
        while True:
            done = q.awaitTermination(0.5)
            for p in q.recentProgress:
                if p.batchId > seen:
                    seen = p.batchId
                    print(f"batch {p.batchId}: {p.numInputRows} rows", flush=True)
            if done:
                break
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
    finally:
        q.stop()
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return exit_status("spark_pipeline.py", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
