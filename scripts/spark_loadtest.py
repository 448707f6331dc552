#!/usr/bin/env python3
"""Load test of the ``minibroker`` Spark data source: bulk-read throughput against K concurrent
Spark tasks, next to Spark reading the same records from Parquet.

Steps:

1. **Broker.** Without ``--bootstrap-server`` the script starts a private broker
   (``python -m broker serve`` on 127.0.0.1 and a free port, data in a temporary directory,
   stopped with SIGTERM and removed at exit; ``broker.testing.BrokerProcess``). With it,
   the given broker is used and the topic is left there afterwards.
2. **Produce** (untimed for the results): N records (``--records``, default 1,000,000) of
   S random bytes each (``--record-size``, default 100; random so that neither Parquet nor a
   codec can shrink them), no key, round-robin over P partitions (``--partitions``, default 4)
   of a new topic, with our asyncio ``client.Producer`` (acks=1, linger 5 ms,
   ``--batch-size`` bytes per producer batch, default 16384 as Kafka's; no compression). A
   progress line (records/s) goes to stderr. The end offsets must then sum to N.
3. **Parquet** (unless ``--no-parquet``; untimed): the same rows (the Kafka source's seven
   columns) are read once with the data source and written by Spark to a temporary directory,
   in max(P, max K) files of about equal size, so that every K has at least K files to read;
   the reads make each file an input partition of its own (``spark.sql.files.openCostInBytes``
   set to ``maxPartitionBytes`` while measuring: Spark would otherwise pack small files together).
4. **Timed reads.** One SparkSession, master ``local[max K]`` (at least max K task slots).
   For each K in ``--tasks`` (default 1,2,4) the query is
   ``df.coalesce(K).groupBy("topic", "partition").agg(...)`` ending in ``collect()``, where
   ``df`` is the source read with ``minPartitions=K`` (at least K input partitions) or the
   Parquet files. ``coalesce(K)`` (no shuffle) makes the read stage exactly K tasks, each
   reading its share of the input partitions one after the other, so K tasks run at once and
   never more. The stage's task count is read back from Spark's status tracker and recorded
   (``read_tasks``). The aggregation uses every column (rows, key + value bytes, min/max
   offset, max timestamp and timestampType per topic-partition), so Parquet cannot prune the
   value column away and both sources deliver all the data; only the few result rows reach
   the driver, and the totals are checked (N rows, N x S value bytes) on every run.
   Each run is followed by the same query over zero rows (``empty_s``: minibroker with
   ``endingOffsets`` = the start offsets, Parquet with a filter ``offset < 0`` that its row-group
   statistics answer): the per-query cost that does not grow with N (planning, the data source's
   planner process, scheduling, result), which weighs on small N.
   ``--option KEY=VALUE`` adds a data source option to every minibroker read (e.g.
   ``kafka.fetch.max.wait.ms=5``).
   ``--query noop`` times ``df.coalesce(K).write.format("noop")`` instead (every row becomes a
   Spark row, nothing is aggregated; no totals to check).
   Each source is warmed up with ``--warmup`` W full queries (default 3, untimed: the first
   queries in a session pay for the Python workers and the JVM's JIT, which keeps speeding the
   read up over the first few runs of 1M rows: 443k, 494k, 657k, 734k, 800k rows/s measured with
   one warm-up). Then ``--repeats`` R rounds (default 3) of minibroker run
   and Parquet run, interleaved so that drift on a shared machine hits both alike; medians are
   reported.

5. **The ceiling.** Each round also runs the same query on ``minibroker_synthetic``
   (``client.spark.synthetic``): a Python data source that plans the same input partitions and
   yields prebuilt Arrow batches of the same schema and sizes without any broker, i.e. Spark's
   own cost for a Python source. ``of_ceiling`` = minibroker rows/s / synthetic rows/s.
6. **Write path** (unless ``--no-write``). Each round also writes N values of S bytes (made in
   the JVM by ``spark.range(N, numPartitions=K)``: the id padded to S bytes) with the
   ``minibroker`` sink in K tasks to a new topic of P partitions, default producer settings (acks=1, linger
   5 ms, 16 KiB batches, idempotent), then checks its end offsets sum to N and deletes it.
   Timed from ``load()`` to the end of the write job (every record acknowledged).

Figures: elapsed = wall time from ``spark.read...load()`` to the result on the driver,
planning included (the data source's planner process and ListOffsets; Parquet's file listing).
rows/s = N / elapsed; MB/s = N x S / elapsed / 10^6, i.e. decimal megabytes of record
values only (no keys: they are null; not the topic, offsets, timestamps, Kafka batch headers or
Parquet framing). ratio = minibroker rows/s / Parquet rows/s at the same K (> 1: faster than
Parquet). empty_s = the median seconds of the zero-row query.

This machine has ``os.cpu_count()`` cores, shared by the broker, Spark's JVM and its Python
workers: a K above that runs K tasks on fewer cores (the broker included), and shows the cost
of oversubscription rather than more parallelism.

Output: a summary table on stdout, the command line that reproduces it, and in ``--out`` (default
./loadtest-results) ``spark_loadtest.json`` (parameters, environment, produce rate, every run
and the medians per K) and ``spark_loadtest.png`` (rows/s against K, both sources, with MB/s
on the right axis). The issue's target is printed when K=2 is measured: >= 1,000,000 rows/s on
local[2] (two task slots) with 100-byte records.

Run from the repository root (the ``spark`` extra installed, Java 17+)::

    .venv/bin/python scripts/spark_loadtest.py                          # 1M x 100 B, K = 1,2,4
    .venv/bin/python scripts/spark_loadtest.py --tasks 1,2,4,8 --repeats 5
    .venv/bin/python scripts/spark_loadtest.py --bootstrap-server 127.0.0.1:9092 --no-parquet

Exit status: 0 on success, 2 for a usage error, 1 for any other error (a one-line message on
stderr, e.g. when the broker cannot be reached).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
for _p in (str(SCRIPTS), str(REPO)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _benchutil import command_line, cpu_model, git_rev, machine_line  # noqa: E402
from spark_consume import UsageError, check_reachable, exit_status, make_session  # noqa: E402

PROG = "spark_loadtest.py"
MB = 1_000_000
TARGET_RPS = 1_000_000  # the target: local[2], broker on the same machine, 100-byte records
CHUNK = 10_000  # records between drains while producing (and per os.urandom call)

EPILOG = """\
what is timed:
  per K: df.coalesce(K).groupBy("topic","partition").agg(count, sum of key+value bytes,
  min/max offset, max timestamp, max timestampType).collect(), df being the minibroker read
  (minPartitions=K) or the Parquet copy; from load() to the result, planning included. One
  session, master local[max K]; coalesce(K) makes the read stage exactly K tasks. --warmup
  queries per source first (JIT), then --repeats rounds (minibroker, Parquet); medians reported.
  empty_s: the same query over zero rows (its fixed cost: planning, scheduling).
  --query noop: df.coalesce(K).write.format("noop") instead.
  synthetic: the same query on a Python source of prebuilt Arrow batches (Spark's ceiling);
  of_ceiling = minibroker rows/s / synthetic rows/s.
  write: the N values written by the minibroker sink in K tasks to a new topic (--no-write: skip).
  rows/s = N / elapsed; MB/s = N * S / elapsed / 1e6 (record value bytes only).

output:
  a table "K read_tasks minibroker rows/s MB/s empty_s synthetic rows/s of_ceiling parquet rows/s MB/s
  empty_s ratio write rows/s MB/s", the command line to reproduce it, OUT/spark_loadtest.json and OUT/spark_loadtest.png.

environment:
  PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON default to this interpreter; SPARK_LOCAL_IP defaults
  to 127.0.0.1.

exit status: 0 ok, 2 usage error, 1 error (one line on stderr).
"""


# ---------------------------------------------------------------- arguments


def _tasks(text: str) -> list[int]:
    try:
        ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, not {text!r}") from None
    if not ks or min(ks) <= 0:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, not {text!r}")
    return sorted(set(ks))


def _positive(text: str) -> int:
    try:
        v = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return v


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Produce N records into a topic, then time Spark's bulk read of them with the\n"
                    "'minibroker' data source at K = 1, 2, 4, ... concurrent tasks, next to Spark reading\n"
                    "the same records from Parquet; write JSON and a PNG chart.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                   help="use this broker (default: start a private one on 127.0.0.1, a free port "
                        "and a temporary data directory, stopped at exit)")
    p.add_argument("--topic", help="topic to create and fill; must not exist (default: "
                                   "spark-loadtest-<time>)")
    p.add_argument("--records", type=_positive, default=1_000_000, metavar="N",
                   help="records to produce (default: %(default)s)")
    p.add_argument("--record-size", type=_positive, default=100, metavar="S",
                   help="bytes of random value per record, no key (default: %(default)s)")
    p.add_argument("--partitions", type=_positive, default=4, metavar="P",
                   help="partitions of the topic, filled round-robin (default: %(default)s)")
    p.add_argument("--batch-size", type=_positive, default=16384, metavar="BYTES",
                   help="producer batch size (default: %(default)s, Kafka's)")
    p.add_argument("--tasks", type=_tasks, default=[1, 2, 4], metavar="K[,K...]",
                   help="concurrent Spark tasks to measure (default: 1,2,4)")
    p.add_argument("--repeats", type=_positive, default=3, metavar="R",
                   help="timed runs per K and source; medians reported (default: %(default)s)")
    p.add_argument("--warmup", type=_positive, default=3, metavar="W",
                   help="untimed warm-up queries per source before the timed ones (default: %(default)s)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", dest="options",
                   help="one more option for every minibroker read, e.g. kafka.fetch.max.wait.ms=5 "
                        "(repeatable)")
    p.add_argument("--query", choices=("agg", "noop"), default="agg",
                   help="agg: per-partition aggregation over every column (default); noop: "
                        "write.format('noop')")
    p.add_argument("--out", default="loadtest-results", metavar="DIR",
                   help="directory for spark_loadtest.json and spark_loadtest.png (default: %(default)s)")
    p.add_argument("--no-parquet", action="store_true",
                   help="skip the Parquet copy and its reads (no ratio)")
    p.add_argument("--no-write", action="store_true",
                   help="skip the write path (the minibroker sink)")
    p.add_argument("--write-option", action="append", default=[], metavar="KEY=VALUE", dest="write_options",
                   help="a sink option for the write path, e.g. kafka.linger.ms=20 (repeatable)")
    p.add_argument("--verbose", action="store_true",
                   help="let Spark's logging, progress bars and UI through")
    args = p.parse_args(argv)
    for kv in args.options:
        if "=" not in kv or not kv.split("=", 1)[0]:
            p.error(f"--option: expected KEY=VALUE, not {kv!r}")
    for kv in args.write_options:
        if "=" not in kv or not kv.split("=", 1)[0]:
            p.error(f"--write-option: expected KEY=VALUE, not {kv!r}")
    return args


# ---------------------------------------------------------------- producing


async def _produce(bootstrap: str, topic: str, n: int, size: int, partitions: int, batch_size: int,
                   progress: Callable[[int], None]) -> dict[int, int]:
    from client import Admin, Producer
    from client.errors import TopicAlreadyExistsError  # type: ignore[attr-defined]

    async with Admin(bootstrap) as admin:
        try:
            await admin.create_topic(topic, partitions)
        except TopicAlreadyExistsError:
            raise UsageError(f"topic {topic!r} already exists (the load test fills a new topic; "
                             "give another --topic)") from None
    async with Producer(bootstrap, batch_size=batch_size, linger_ms=5, acks=1) as prod:
        await prod.partitions_for(topic)
        send, drain = prod.send_nowait, prod.drain
        for lo in range(0, n, CHUNK):
            hi = min(lo + CHUNK, n)
            block = os.urandom((hi - lo) * size)  # one call per chunk; a bytes slice per record
            for i in range(hi - lo):
                send(topic, block[i * size:(i + 1) * size], partition=(lo + i) % partitions)
            await drain()
            progress(hi)
        await prod.flush()
    async with Admin(bootstrap) as admin:
        return await admin.topic_offsets(topic)


class Progress:
    """``producing [####   ]  45% 450,000/1,000,000 records, 512,000 records/s`` on stderr:
    rewritten in place (at most 5 times a second) on a terminal, else one line every 10%."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.t0 = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.shown = -1.0  # seconds (terminal) or tenths (file) at the last line

    def __call__(self, done: int) -> None:
        dt = time.perf_counter() - self.t0
        frac = done / self.total
        last = done >= self.total
        mark = dt if self.tty else float(int(frac * 10))
        if not last and (mark - self.shown < 0.2 if self.tty else mark <= self.shown):
            return
        self.shown = mark
        line = (f"producing [{'#' * int(frac * 30):<30}] {frac:4.0%} {done:,}/{self.total:,} records, "
                f"{done / dt if dt else 0:,.0f} records/s")
        if self.tty:
            print("\r" + line, end="\n" if last else "", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)


def produce(args: argparse.Namespace, bootstrap: str, topic: str) -> dict[str, Any]:
    import uvloop

    progress = Progress(args.records)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        ends = runner.run(_produce(bootstrap, topic, args.records, args.record_size, args.partitions,
                                   args.batch_size, progress))
    seconds = time.perf_counter() - progress.t0
    if sum(ends.values()) != args.records:
        raise RuntimeError(f"the end offsets of {topic} sum to {sum(ends.values()):,}, not {args.records:,}")
    return {"seconds": seconds, "records_per_s": args.records / seconds, "end_offsets": ends}


# ---------------------------------------------------------------- Spark


def task_slots(spark: Any) -> int:
    """How many tasks the session runs at once (``local[n]`` -> n, ``local[*]`` -> cores)."""
    sc = spark.sparkContext
    master = sc.master
    if master == "local":
        return 1
    if master.startswith("local["):
        n = master[6:].split(",")[0].rstrip("]")
        return (os.cpu_count() or 1) if n == "*" else int(n)
    return int(sc.defaultParallelism)


def _aggregate(df: Any) -> list[Any]:
    from pyspark.sql import functions as F

    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    return (df.groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("rows"), F.sum(size).alias("bytes"),
                 F.min("offset").alias("min_offset"), F.max("offset").alias("max_offset"),
                 F.max("timestamp").alias("max_ts"), F.max("timestampType").alias("ts_type"))
            .collect())


class Runner:
    """Times one query per (source, K) on one session."""

    def __init__(self, spark: Any, args: argparse.Namespace, bootstrap: str, topic: str) -> None:
        self.spark, self.args, self.bootstrap, self.topic = spark, args, bootstrap, topic
        self.parquet: str | None = None
        self._group = 0

    def load(self, source: str, k: int, empty: bool = False) -> Any:
        """The records, or with ``empty`` the same read planned over zero rows."""
        if source == "parquet":
            df = self.spark.read.parquet(self.parquet)
            return df.where("offset < 0") if empty else df  # answered by row-group statistics
        if source == "synthetic":
            return (self.spark.read.format("minibroker_synthetic").option("topic", self.topic)
                    .option("rows", "0" if empty else str(self.args.records))
                    .option("recordSize", str(self.args.record_size)).option("partitions", str(self.args.partitions))
                    .option("minPartitions", str(k)).load())
        r = (self.spark.read.format("minibroker").option("kafka.bootstrap.servers", self.bootstrap)
             .option("subscribe", self.topic).option("minPartitions", str(k)))
        r = r.options(**dict(kv.split("=", 1) for kv in self.args.options))
        if empty:  # the topic is new: every partition starts at 0
            r = r.option("endingOffsets", json.dumps({self.topic: {str(p): 0 for p in range(self.args.partitions)}}))
        return r.load()

    def write_parquet(self, path: str, files: int) -> None:
        self.load("minibroker", files).write.mode("overwrite").parquet(path)
        self.parquet = path

    def run(self, source: str, k: int, empty: bool = False) -> dict[str, Any]:
        sc = self.spark.sparkContext
        self._group += 1
        group = f"spark-loadtest-{self._group}"
        t0 = time.perf_counter()
        df = self.load(source, k, empty).coalesce(k)
        # The group starts after load(): Parquet's schema inference runs a one-task job of its own.
        sc.setJobGroup(group, f"{source} K={k}")
        try:
            if self.args.query == "noop":
                df.write.format("noop").mode("overwrite").save()
                rows = nbytes = None
            else:
                result = _aggregate(df)
                rows, nbytes = sum(r["rows"] for r in result), sum(r["bytes"] for r in result)
            elapsed = time.perf_counter() - t0
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        n, s = (0 if empty else self.args.records), self.args.record_size
        if rows is not None and (rows, nbytes or 0) != (n, n * s):
            raise RuntimeError(f"{source} read {rows:,} rows of {nbytes or 0:,} bytes, expected {n:,} of {n * s:,}")
        if empty:
            return {"seconds": elapsed}
        return {"seconds": elapsed, "rows_per_s": n / elapsed, "mb_per_s": n * s / elapsed / MB,
                "read_tasks": self._read_tasks(group), "rows": rows, "bytes": nbytes}

    def write(self, k: int) -> dict[str, Any]:
        """Time writing N values of S bytes (made by ``spark.range``: no read cost worth counting)
        with the minibroker sink in K tasks to a new topic of P partitions; check its end offsets."""
        from client.sync import SyncAdmin

        self._group += 1
        topic = f"{self.topic}-write-{self._group}"
        with SyncAdmin(self.bootstrap) as admin:
            admin.create_topic(topic, self.args.partitions)
        sc = self.spark.sparkContext
        group = f"spark-loadtest-{self._group}"
        t0 = time.perf_counter()
        # Values made in the JVM (no second Python process competing for the cores): the id
        # padded to S bytes; no compression, so their content does not matter.
        s = self.args.record_size
        df = self.spark.range(0, self.args.records, 1, k).selectExpr(
            f"cast(rpad(cast(id as string), {s}, 'x') as binary) as value")
        sc.setJobGroup(group, f"write K={k}")
        try:
            (df.write.format("minibroker").mode("append").option("kafka.bootstrap.servers", self.bootstrap)
             .option("topic", topic).options(**dict(kv.split("=", 1) for kv in self.args.write_options)).save())
            elapsed = time.perf_counter() - t0
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        with SyncAdmin(self.bootstrap) as admin:
            written = sum(admin.topic_offsets(topic).values())
            admin.delete_topic(topic)
        n, s = self.args.records, self.args.record_size
        # The exactly-once option (kafka.transactional.id) ends each task's transaction with a
        # COMMIT marker in every partition it wrote: offsets, not records.
        markers = k * self.args.partitions if any(
            kv.split("=", 1)[0].strip().lower() == "kafka.transactional.id" for kv in self.args.write_options) else 0
        if not n <= written <= n + markers:
            raise RuntimeError(f"the sink wrote {written:,} offsets, expected {n:,}"
                               + (f" plus at most {markers} transaction markers" if markers else ""))
        return {"seconds": elapsed, "rows_per_s": n / elapsed, "mb_per_s": n * s / elapsed / MB,
                "write_tasks": self._read_tasks(group), "rows": written}

    def _read_tasks(self, group: str) -> int | None:
        """Tasks of the query's first stage (the read), from Spark's status tracker."""
        st = self.spark.sparkContext.statusTracker()
        stages = [sid for jid in st.getJobIdsForGroup(group) if (j := st.getJobInfo(jid)) is not None
                  for sid in j.stageIds]
        info = st.getStageInfo(min(stages)) if stages else None
        return info.numTasks if info is not None else None


def _medians(runs: list[dict[str, Any]], empty: list[dict[str, Any]]) -> dict[str, Any]:
    med = {key: statistics.median(r[key] for r in runs) for key in ("seconds", "rows_per_s", "mb_per_s")}
    return {**med, "read_tasks": runs[0]["read_tasks"], "empty_seconds": statistics.median(r["seconds"] for r in empty)}


@contextmanager
def _sql_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """``key`` set to ``value`` for the block, then as it was (the session may be the caller's)."""
    old = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def measure(spark: Any, args: argparse.Namespace, bootstrap: str, topic: str, scratch: str) -> list[dict[str, Any]]:
    # One Parquet input partition per file: Spark packs files smaller than about
    # total / parallelism (at least openCostInBytes, 4 MiB) together, which would leave small
    # runs with fewer Parquet tasks than K. An open cost of maxPartitionBytes stops the packing;
    # files larger than that (128 MiB) are still split.
    with _sql_conf(spark, "spark.sql.files.openCostInBytes", spark.conf.get("spark.sql.files.maxPartitionBytes")):
        return _measure(spark, args, bootstrap, topic, scratch)


def _measure(spark: Any, args: argparse.Namespace, bootstrap: str, topic: str, scratch: str) -> list[dict[str, Any]]:
    runner = Runner(spark, args, bootstrap, topic)
    sources = ["minibroker", "synthetic"]
    kmax = max(args.tasks)
    if not args.no_parquet:
        print(f"writing the same records to Parquet ({max(args.partitions, kmax)} files, untimed)",
              file=sys.stderr)
        runner.write_parquet(os.path.join(scratch, "records.parquet"), max(args.partitions, kmax))
        sources.append("parquet")
    for _ in range(args.warmup):  # Python workers, the JVM's JIT, connections
        for src in sources:
            runner.run(src, kmax)
        if not args.no_write:
            runner.write(kmax)
    results = []
    for k in args.tasks:
        runs: dict[str, list[dict[str, Any]]] = {src: [] for src in sources}
        empty: dict[str, list[dict[str, Any]]] = {src: [] for src in sources}
        writes: list[dict[str, Any]] = []
        for _ in range(args.repeats):
            for src in sources:
                runs[src].append(runner.run(src, k))
                empty[src].append(runner.run(src, k, empty=True))
            if not args.no_write:
                writes.append(runner.write(k))
        entry: dict[str, Any] = {"tasks": k}
        for src in sources:
            entry[src] = {"runs": runs[src], "empty_runs": empty[src], "median": _medians(runs[src], empty[src])}
        if "parquet" in entry:
            entry["ratio"] = entry["minibroker"]["median"]["rows_per_s"] / entry["parquet"]["median"]["rows_per_s"]
        entry["ceiling_fraction"] = (entry["minibroker"]["median"]["rows_per_s"]
                                     / entry["synthetic"]["median"]["rows_per_s"])
        if writes:
            entry["write"] = {"runs": writes, "median": {key: statistics.median(r[key] for r in writes)
                                                         for key in ("seconds", "rows_per_s", "mb_per_s")}}
        results.append(entry)
        mb = entry["minibroker"]["median"]
        print(f"K={k}: minibroker {mb['rows_per_s']:,.0f} rows/s"
              f" ({entry['ceiling_fraction']:.0%} of synthetic)"
              + (f", parquet {entry['parquet']['median']['rows_per_s']:,.0f} rows/s" if "parquet" in entry else "")
              + (f", write {entry['write']['median']['rows_per_s']:,.0f} rows/s" if "write" in entry else ""),
              file=sys.stderr)
    return results


# ---------------------------------------------------------------- output


def table(results: list[dict[str, Any]]) -> str:
    header = ["K", "read_tasks", "minibroker rows/s", "MB/s", "empty_s", "synthetic rows/s", "of_ceiling"]
    with_pq = any("parquet" in e for e in results)
    with_write = any("write" in e for e in results)
    if with_pq:
        header += ["parquet rows/s", "MB/s", "empty_s", "ratio"]
    if with_write:
        header += ["write rows/s", "MB/s"]
    body = []
    for e in results:
        row = [str(e["tasks"]), str(e["minibroker"]["median"]["read_tasks"])]
        m = e["minibroker"]["median"]
        row += [f"{m['rows_per_s']:,.0f}", f"{m['mb_per_s']:,.1f}", f"{m['empty_seconds']:.2f}",
                f"{e['synthetic']['median']['rows_per_s']:,.0f}", f"{e['ceiling_fraction']:.2f}"]
        if with_pq:
            m = e["parquet"]["median"]
            row += [f"{m['rows_per_s']:,.0f}", f"{m['mb_per_s']:,.1f}", f"{m['empty_seconds']:.2f}",
                    f"{e['ratio']:.2f}"]
        if with_write:
            w = e["write"]["median"]
            row += [f"{w['rows_per_s']:,.0f}", f"{w['mb_per_s']:,.1f}"]
        body.append(row)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [header, *body])


def chart(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prm, results = result["parameters"], result["results"]
    ks = [e["tasks"] for e in results]
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for src, label, style in (("minibroker", "minibroker data source", "o-"), ("parquet", "Parquet (same records)", "s--"),
                              ("synthetic", "synthetic Python source (ceiling)", "^:"),
                              ("write", "minibroker sink (write)", "d-.")):
        if src not in results[0]:
            continue
        med = [e[src]["median"]["rows_per_s"] / 1e6 for e in results]
        lo = [m - min(r["rows_per_s"] for r in e[src]["runs"]) / 1e6 for m, e in zip(med, results)]
        hi = [max(r["rows_per_s"] for r in e[src]["runs"]) / 1e6 - m for m, e in zip(med, results)]
        ax.errorbar(ks, med, yerr=[lo, hi], fmt=style, capsize=4, label=label)
    if prm["record_size"] == 100:
        ax.axhline(TARGET_RPS / 1e6, color="grey", linestyle=":", label="target at K=2: 1M rows/s")
    cores = result["environment"]["cpu_count"]
    if cores and cores < max(ks):
        ax.axvspan(cores, max(ks) * 1.25, color="grey", alpha=0.12, linewidth=0,
                   label=f"K > {cores} cores (oversubscribed)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlim(min(ks) / 1.25, max(ks) * 1.25)
    ax.set_xlabel("K = concurrent Spark tasks (master local[max K], coalesce(K))")
    ax.set_ylabel("million rows/s (median)")
    ax.set_ylim(bottom=0)
    size = prm["record_size"]
    sec = ax.secondary_yaxis("right", functions=(lambda y: y * size, lambda m: m / size))
    sec.set_ylabel(f"MB/s of record values ({size}-byte values)")
    query = "groupBy(topic, partition).agg over all 7 columns" if prm["query"] == "agg" else "noop write"
    ax.set_title(f"Spark bulk read: {prm['records']:,} x {size} B records, {prm['partitions']} partitions\n"
                 f"{query}; median of {prm['repeats']}, bars min-max; {cores} cores, broker on the same host"
                 + "".join(f"\noption {kv}" for kv in prm["options"]),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def environment() -> dict[str, Any]:
    import pyspark

    try:
        import pyarrow

        pa_version = pyarrow.__version__
    except ImportError:
        pa_version = None
    return {"cpu_count": os.cpu_count(), "cpu_model": cpu_model(), "python": platform.python_version(),
            "pyspark": pyspark.__version__, "pyarrow": pa_version, "platform": platform.platform(),
            "git": git_rev()}


# ---------------------------------------------------------------- main


def run(args: argparse.Namespace, spark: Any = None) -> dict[str, Any]:
    """The whole load test; ``spark``: an existing session to use (not stopped; it must have
    at least max K task slots and the ``minibroker`` format registered), else one is made."""
    kmax = max(args.tasks)
    if spark is not None and task_slots(spark) < kmax:
        raise UsageError(f"the session runs {task_slots(spark)} tasks at once, fewer than K={kmax}")
    if args.bootstrap_server:
        check_reachable(args.bootstrap_server)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise RuntimeError("pyspark is not installed (pip install -e '.[spark]')") from None
    topic = args.topic or f"spark-loadtest-{int(time.time())}"
    with ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="spark-loadtest-"))
        bootstrap = args.bootstrap_server
        if not bootstrap:
            from broker.testing import BrokerProcess

            broker = stack.enter_context(BrokerProcess(os.path.join(scratch, "broker")))
            bootstrap = broker.bootstrap
        print(f"broker {bootstrap}{'' if args.bootstrap_server else ' (private)'}, topic {topic}: "
              f"{args.records:,} x {args.record_size} B records into {args.partitions} partitions",
              file=sys.stderr)
        produced = produce(args, bootstrap, topic)
        if spark is None:
            spark = make_session(f"local[{kmax}]", args.verbose, app_name="minibroker-spark-loadtest")
            stack.callback(spark.stop)
        from client.spark.synthetic import SyntheticKafkaSource

        spark.dataSource.register(SyntheticKafkaSource)
        results = measure(spark, args, bootstrap, topic, scratch)
        spark_master = spark.sparkContext.master
    result = {
        "parameters": {"records": args.records, "record_size": args.record_size, "partitions": args.partitions,
                       "batch_size": args.batch_size, "tasks": args.tasks, "repeats": args.repeats,
                       "warmup": args.warmup,
                       "query": args.query, "options": args.options, "parquet": not args.no_parquet,
                       "write": not args.no_write, "write_options": args.write_options, "topic": topic,
                       "broker": args.bootstrap_server or "private", "master": spark_master},
        "environment": environment(),
        "command": command_line(),
        "produce": {"seconds": produced["seconds"], "records_per_s": produced["records_per_s"],
                    "end_offsets": {str(p): o for p, o in produced["end_offsets"].items()}},
        "results": results,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out / "spark_loadtest.json", out / "spark_loadtest.png"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    chart(result, str(png_path))
    report(result, str(json_path), str(png_path))
    return result


def report(result: dict[str, Any], json_path: str, png_path: str) -> None:
    prm = result["parameters"]
    print(f"Spark bulk read, {prm['records']:,} x {prm['record_size']} B records, {prm['partitions']} partitions, "
          f"master {prm['master']}, query {prm['query']}, median of {prm['repeats']}"
          + "".join(f", option {kv}" for kv in prm["options"]))
    print(f"produced at {result['produce']['records_per_s']:,.0f} records/s (our Producer, acks=1)")
    print(table(result["results"]))
    k2 = next((e for e in result["results"] if e["tasks"] == 2), None)
    if k2 is not None and prm["record_size"] == 100:
        rps = k2["minibroker"]["median"]["rows_per_s"]
        print(f"target K=2 (local[2]): >= {TARGET_RPS:,} rows/s: {rps:,.0f} -> "
              f"{'met' if rps >= TARGET_RPS else 'NOT met'}")
    for e in result["results"]:
        print(f"K={e['tasks']}: the minibroker reader runs at {e['ceiling_fraction']:.0%} of the synthetic Python"
              " source's rows/s (Spark's own ceiling for a Python data source; target >= 90%)")
    cores = result["environment"]["cpu_count"]
    if cores and max(prm["tasks"]) > cores:
        print(f"note: this machine has {cores} cores (os.cpu_count()), shared with the broker: "
              f"K > {cores} runs more tasks than cores")
    print(f"machine: {machine_line()}")
    print(f"results: {json_path}, chart: {png_path}")
    print(f"reproduce: {result['command']}")


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    """The script; ``spark``: an existing session to run on (see ``run``)."""
    args = parse_args(argv)  # exits 2 on a usage error
    return exit_status(PROG, lambda: run(args, spark))


if __name__ == "__main__":
    sys.exit(main())
