#!/usr/bin/env python3
"""A Spark batch job that reads minibroker (or Kafka) topics with the ``minibroker`` data source.

By default it prints, per topic-partition, the number of rows read and their lowest and highest
offsets; with ``--parquet OUT_DIR`` it writes the rows (key, value, topic, partition, offset,
timestamp, timestampType [, headers]) as Parquet instead. Either way it ends with the elapsed
time of the read and the rows per second.

Examples (from the repository root, with the ``spark`` extra installed and Java 17+)::

    python scripts/spark_consume.py --topic events
    python scripts/spark_consume.py --pattern 'events-.*' --min-partitions 8
    python scripts/spark_consume.py --topic events --starting-offsets '{"events":{"0":100,"1":-2}}'
    python scripts/spark_consume.py --topic events --parquet /tmp/events.parquet

Exit status: 0 on success, 2 for a usage error, 1 for any other error (a one-line message on
stderr, e.g. when the broker cannot be reached).
"""

from __future__ import annotations

import argparse
import atexit
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

EPILOG = """\
offsets:
  --starting-offsets: "earliest" (default) or JSON such as '{"t":{"0":23,"1":-2}}' (-2 = earliest;
  "latest"/-1 are refused in a batch read, as by Spark's Kafka source). --ending-offsets:
  "latest" (default) or JSON (-1 = latest). JSON must name every partition read. End offsets
  are exclusive. --starting-timestamp T (ms since the epoch) starts each partition at its first
  record with timestamp >= T and takes precedence over --starting-offsets.

output:
  without --parquet: a table "topic partition rows min_offset max_offset" sorted by topic and
  partition, a "total" line, then "elapsed S s, R rows/s" (the read and the aggregation).
  With --parquet OUT_DIR: the rows are written to OUT_DIR (replaced if it exists; one file per
  Spark task), then "wrote OUT_DIR", the same table computed from the written files, and the
  elapsed line (the read and the write only).

environment:
  PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON default to this interpreter (the workers need pyarrow
  and this repository's client package); SPARK_LOCAL_IP defaults to 127.0.0.1 for local masters.

exit status: 0 ok, 2 usage error, 1 error (one line on stderr).
"""


LOG4J2_QUIET = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
# PySpark counts as a shell: Spark prints "Setting default log level to ..." unless the
# logger of the class that sets logging up has a configuration of its own at the root's level
# (that class is not the repl's Main under PySpark: configure all of org.apache.spark).
logger.spark.name = org.apache.spark
logger.spark.level = error
"""


class UsageError(Exception):
    pass


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="spark_consume.py",
        description="Read Kafka topics from minibroker with PySpark (the 'minibroker' Python data "
                    "source, client/spark) and print per-partition counts or write Parquet.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT[,...]",
                   help="broker(s) to bootstrap from (default: %(default)s); becomes the "
                        "kafka.bootstrap.servers option")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--topic", metavar="T[,T...]",
                      help="topic(s) to read, comma-separated (option subscribe); topics that do not "
                           "exist are skipped, as by Spark's Kafka source")
    what.add_argument("--pattern", metavar="REGEX",
                      help="read every topic whose whole name matches REGEX (option subscribePattern)")
    p.add_argument("--starting-offsets", metavar="earliest|JSON",
                   help="where to start (option startingOffsets; default earliest)")
    p.add_argument("--ending-offsets", metavar="latest|JSON",
                   help="where to stop, exclusive (option endingOffsets; default latest)")
    p.add_argument("--starting-timestamp", type=int, metavar="MS",
                   help="start each partition at its first record with timestamp >= MS "
                        "(option startingTimestamp; wins over --starting-offsets)")
    p.add_argument("--min-partitions", type=int, metavar="N",
                   help="split the offset ranges into at least N Spark tasks (option minPartitions)")
    p.add_argument("--max-records-per-partition", type=int, metavar="N",
                   help="at most N records per Spark task (option maxRecordsPerPartition)")
    p.add_argument("--include-headers", action="store_true",
                   help="add the headers column (option includeHeaders=true)")
    p.add_argument("--master", default="local[2]",
                   help="Spark master URL (default: %(default)s)")
    p.add_argument("--parquet", metavar="OUT_DIR",
                   help="write the rows as Parquet to OUT_DIR (replacing it) instead of printing counts")
    p.add_argument("--verbose", action="store_true",
                   help="let Spark's logging, progress bars and UI through (default: log level "
                        "ERROR, no progress bars, no UI)")
    args = p.parse_args(argv)
    for name in ("min_partitions", "max_records_per_partition"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            p.error(f"--{name.replace('_', '-')} must be a positive integer")
    return args


def source_options(args: argparse.Namespace) -> dict[str, str]:
    opts = {"kafka.bootstrap.servers": args.bootstrap_server}
    if args.topic is not None:
        opts["subscribe"] = args.topic
    else:
        opts["subscribePattern"] = args.pattern
    if args.starting_offsets is not None:
        opts["startingOffsets"] = args.starting_offsets
    if args.ending_offsets is not None:
        opts["endingOffsets"] = args.ending_offsets
    if args.starting_timestamp is not None:
        opts["startingTimestamp"] = str(args.starting_timestamp)
    if args.min_partitions is not None:
        opts["minPartitions"] = str(args.min_partitions)
    if args.max_records_per_partition is not None:
        opts["maxRecordsPerPartition"] = str(args.max_records_per_partition)
    if args.include_headers:
        opts["includeHeaders"] = "true"
    return opts


def check_reachable(servers: str, timeout: float = 5.0) -> None:
    """Fail fast (before a JVM starts) when no bootstrap server accepts a TCP connection."""
    errors = []
    for hp in (s.strip() for s in servers.split(",") if s.strip()):
        host, sep, port = hp.rpartition(":")
        if not sep or not port.isdigit():
            raise UsageError(f"bad bootstrap server {hp!r} (expected HOST:PORT)")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            return
        except OSError as e:
            errors.append(f"{hp}: {e.strerror or e}")
    raise RuntimeError("cannot reach the broker (" + "; ".join(errors) + ")")


def check_options(opts: dict[str, str]) -> None:
    """Spark's option errors (e.g. startingOffsets=latest), before the JVM starts: exit 2."""
    sys.path.insert(0, str(REPO))
    from client.spark.options import parse_options

    try:
        parse_options(opts)
    except ValueError as e:
        raise UsageError(str(e)) from None


def make_session(master: str, verbose: bool, app_name: str = "minibroker-spark-consume") -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The workers import client.spark from this checkout, wherever they are started from.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.sql.shuffle.partitions", "2"))
    if not verbose:
        # A log4j2 configuration at ERROR from the start: setLogLevel only acts once the
        # context is up, after the start-up warnings. (The JVM's own "Using incubator modules"
        # line cannot be turned off.)
        conf = tempfile.NamedTemporaryFile("w", prefix="spark-consume-log4j2-", suffix=".properties",
                                           delete=False)
        with conf:
            conf.write(LOG4J2_QUIET)
        atexit.register(os.unlink, conf.name)
        b = (b.config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{conf.name}"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    from client.spark import register

    register(spark)
    return spark


def print_table(rows: list[Any], out: Any = sys.stdout) -> int:
    header = ("topic", "partition", "rows", "min_offset", "max_offset")
    body = [(r["topic"], str(r["partition"]), str(r["rows"]), str(r["min_offset"]), str(r["max_offset"]))
            for r in rows]
    total = sum(int(r["rows"]) for r in rows)
    body.append(("total", "", str(total), "", ""))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    for line in [header, *body]:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]
        print("  ".join(cells).rstrip(), file=out)
    return total


def summary(df: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return (df.groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("rows"), F.min("offset").alias("min_offset"),
                 F.max("offset").alias("max_offset"))
            .orderBy("topic", "partition").collect())


def run(args: argparse.Namespace) -> None:
    opts = source_options(args)
    check_options(opts)
    check_reachable(args.bootstrap_server)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise RuntimeError("pyspark is not installed (pip install -e '.[spark]')") from None
    spark = make_session(args.master, args.verbose)
    try:
        reader = spark.read.format("minibroker")
        for k, v in opts.items():
            reader = reader.option(k, v)
        t0 = time.perf_counter()
        df = reader.load()
        if args.parquet:
            df.write.mode("overwrite").parquet(args.parquet)
            elapsed = time.perf_counter() - t0
            # The same table, from what was written (a cheap scan of two columns).
            print(f"wrote {args.parquet}")
            total = print_table(summary(spark.read.parquet(args.parquet)))
        else:
            rows = summary(df)
            elapsed = time.perf_counter() - t0
            total = print_table(rows)
        rate = total / elapsed if elapsed > 0 else 0.0
        print(f"elapsed {elapsed:.2f} s, {rate:,.0f} rows/s")
    finally:
        spark.stop()


def one_line(e: BaseException) -> str:
    """A one-line message for any error, Spark's included (their text runs to many lines)."""
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # A Python worker's error: the last "SomeError: message" line is the cause.
    for ln in reversed(lines):
        if ln.split(":", 1)[0].endswith(("Error", "Exception")) and not ln.startswith(("File ", "at ")):
            return ln[:500]
    return (lines[0] if lines else type(e).__name__)[:500]


def exit_status(prog: str, job: Callable[[], Any]) -> int:
    """Run ``job``: 0 when it returns, 2 after a UsageError, 1 after any other error, with the
    error in one line on stderr (shared with scripts/spark_loadtest.py)."""
    try:
        job()
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - reported in one line
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)  # exits 2 on a usage error
    return exit_status("spark_consume.py", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
