#!/usr/bin/env python3
"""The plain binary read against Spark's ceiling on a light query: the ``minibroker`` source
and ``minibroker_synthetic`` (``client/spark/synthetic.py``: a Python source yielding prebuilt
Arrow batches of the same schema, no broker) run
``groupBy("partition").agg(count("value"), max("offset"))``, alternated in one session.

It starts a private broker, produces ``--records`` N (2,000,000) random values of
``--record-size`` S (100) bytes, no key, round-robin into ``--partitions`` P (2) with our
producer (untimed), then on ``local[--cores]`` (2) runs ``--warmup`` W (2) untimed queries of
each source and ``--repeats`` R (7) rounds of (minibroker, synthetic). The synthetic source
plans the same input partitions (P ranges of N/P rows) and yields batches of
``--synthetic-batch-rows`` (10,000, Spark's ``maxRecordsPerBatch`` default); the reader yields
each run of plain producer batches of a Fetch whole (~70,000 rows of 100 bytes per 8 MiB
answer). Spark's per-batch costs fall with fewer batches for both sources: pass 70000 to
compare at equal sizes. Each run's row count is checked (N).

Printed: the median seconds and rows/s of each source, the ratio of the medians
(minibroker rows/s / synthetic rows/s; the issue's target is >= 0.85), the ratio's spread
over the rounds (each round's minibroker/synthetic), CPU seconds per run (median) of the
broker, of Spark's Python workers and of the JVM (from /proc, the processes' utime + stime),
and the command line. ``--bootstrap-server`` (with ``--topic`` and ``--broker-pid`` for the
broker's CPU) reads an existing topic instead of producing one.

    python scripts/bench_spark_ceiling.py                  # 2M x 100 B, P=2, local[2]
    python scripts/bench_spark_ceiling.py --partitions 4 --repeats 9
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from typing import Any

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(SCRIPTS)
for _p in (SCRIPTS, REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _benchutil import command_line, machine_line  # noqa: E402

TARGET = 0.85
_TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- CPU accounting (/proc)

def _procs() -> dict[int, tuple[int, str, float]]:
    """pid -> (ppid, command line, CPU seconds) of every process we can read."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        out[int(name)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def cpu_by_role(broker_pid: int) -> dict[str, float]:
    """CPU seconds so far of this process's descendants: the broker, the JVM, Spark's Python
    workers (the JVM's Python children)."""
    procs = _procs()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)

    def tree(root: int) -> list[int]:
        todo, seen = [root], []
        while todo:
            p = todo.pop()
            seen.append(p)
            todo.extend(children.get(p, ()))
        return seen

    roles = {"broker": 0.0, "jvm": 0.0, "workers": 0.0}
    broker = set(tree(broker_pid)) if broker_pid else set()
    roles["broker"] = sum(procs[pid][2] for pid in broker if pid in procs)
    for pid in tree(os.getpid()):
        if pid == os.getpid() or pid not in procs or pid in broker:
            continue
        _, cmd, cpu = procs[pid]
        if "java" in cmd.split(" ", 1)[0]:
            roles["jvm"] += cpu
        elif "python" in cmd:
            roles["workers"] += cpu  # pyspark.daemon, its forked workers, planner processes
    return roles


# ---------------------------------------------------------------- the two queries

def query(spark: Any, source: str, args: argparse.Namespace, bootstrap: str, topic: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    if source == "minibroker":
        df = (spark.read.format("minibroker").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).load())
    else:
        df = (spark.read.format("minibroker_synthetic").option("topic", topic).option("rows", str(args.records))
              .option("recordSize", str(args.record_size)).option("partitions", str(args.partitions))
              .option("batchRows", str(args.synthetic_batch_rows)).load())
    rows = df.groupBy("partition").agg(F.count("value").alias("n"), F.max("offset")).collect()
    seconds = time.perf_counter() - t0
    n = sum(r["n"] for r in rows)
    if n != args.records:
        raise RuntimeError(f"{source} counted {n:,} rows, expected {args.records:,}")
    return {"seconds": seconds}


def timed(spark: Any, source: str, args: argparse.Namespace, bootstrap: str, topic: str,
          broker_pid: int) -> dict[str, Any]:
    before = cpu_by_role(broker_pid)
    got = query(spark, source, args, bootstrap, topic)
    after = cpu_by_role(broker_pid)
    got.update({f"cpu_{k}": after[k] - before[k] for k in before})
    return got


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=2_000_000)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--synthetic-batch-rows", type=int, default=10000,
                   help="rows per Arrow batch of the synthetic source (default %(default)s)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="read an existing topic (--topic) of this broker instead of producing one; its pid"
                        " (--broker-pid) for the CPU figures")
    p.add_argument("--topic", default="bench-ceiling")
    p.add_argument("--broker-pid", type=int, default=0)
    args = p.parse_args()

    import uvloop
    from spark_consume import make_session
    from spark_loadtest import _produce

    from broker.testing import BrokerProcess
    from client.spark.synthetic import SyntheticKafkaSource

    print(command_line())
    print(machine_line())
    with ExitStack() as stack:
        if args.bootstrap_server:
            bootstrap, broker_pid = args.bootstrap_server, args.broker_pid
            from client.sync import SyncAdmin

            with SyncAdmin(bootstrap) as admin:
                ends = admin.topic_offsets(args.topic)
            args.records, args.partitions = sum(ends.values()), len(ends)
            print(f"reading {args.topic} of {bootstrap}: {args.records:,} records in {args.partitions} partitions")
        else:
            data = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-spark-ceiling-"))
            b = stack.enter_context(BrokerProcess(os.path.join(data, "data"), log_level="WARNING"))
            bootstrap, broker_pid = b.bootstrap, b.pid
            t0 = time.perf_counter()
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                ends = runner.run(_produce(bootstrap, args.topic, args.records, args.record_size, args.partitions,
                                           16384, lambda done: None))
            assert sum(ends.values()) == args.records, ends
            print(f"produced {args.records:,} x {args.record_size} B records into {args.partitions} partitions"
                  f" in {time.perf_counter() - t0:.1f} s")
        spark = make_session(f"local[{args.cores}]", verbose=False, app_name="bench-spark-ceiling")
        stack.callback(spark.stop)
        spark.dataSource.register(SyntheticKafkaSource)
        sources = ("minibroker", "synthetic")
        for _ in range(args.warmup):
            for src in sources:
                query(spark, src, args, bootstrap, args.topic)
        runs: dict[str, list[dict[str, Any]]] = {src: [] for src in sources}
        for _ in range(args.repeats):
            for src in sources:
                runs[src].append(timed(spark, src, args, bootstrap, args.topic, broker_pid))

    med = {src: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for src, rs in runs.items()}
    print(f"query: groupBy('partition').agg(count('value'), max('offset')), {args.records:,} rows,"
          f" {args.partitions} partitions, local[{args.cores}], median of {args.repeats} alternated rounds"
          f" after {args.warmup} warm-up rounds")
    print(f"{'source':>10} {'seconds':>8} {'rows/s':>12} {'min s':>6} {'max s':>6}"
          f" {'cpu broker':>10} {'cpu workers':>11} {'cpu jvm':>8}")
    for src in sources:
        m, rs = med[src], runs[src]
        print(f"{src:>10} {m['seconds']:>8.3f} {args.records / m['seconds']:>12,.0f}"
              f" {min(r['seconds'] for r in rs):>6.2f} {max(r['seconds'] for r in rs):>6.2f}"
              f" {m['cpu_broker']:>10.2f} {m['cpu_workers']:>11.2f} {m['cpu_jvm']:>8.2f}")
    ratio = med["synthetic"]["seconds"] / med["minibroker"]["seconds"]
    rounds = sorted(s["seconds"] / mb["seconds"] for mb, s in zip(runs["minibroker"], runs["synthetic"]))
    print(f"ratio minibroker/synthetic rows/s: {ratio:.2f}x (target >= {TARGET}: "
          f"{'met' if ratio >= TARGET else 'NOT met'}); per round: {', '.join(f'{r:.2f}' for r in rounds)}")
    print(f"reproduce: {command_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
