"""scripts/spark_consume.py end to end: the script runs as a subprocess (its own Spark) against
a real broker; records produced with our SyncProducer. Two Spark runs in all (each ~10-20 s):
the printed table with offset options, and the Parquet output read back with pyarrow. The
usage and unreachable-broker errors exit before a JVM starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncProducer
from tests.spark.conftest import _missing

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "spark_consume.py"
TOPIC = "consume-job"
COUNTS = {0: 120, 1: 75, 2: 15}  # records per partition
BASE_TS = 1_700_000_000_000


def record(p: int, i: int) -> tuple[bytes | None, bytes, list[tuple[str, bytes | None]] | None]:
    key = None if i % 7 == 0 else f"k{p}-{i}".encode()
    headers = [("h", str(i).encode())] if i % 2 == 0 else None
    return key, f"value-{p}-{i}".encode() * (1 + i % 3), headers


@pytest.fixture(scope="module")
def servers(module_broker: Any) -> Iterator[str]:
    bs = module_broker.bootstrap
    with SyncAdmin(bs) as admin:
        admin.create_topic(TOPIC, num_partitions=len(COUNTS))
    with SyncProducer(bs, linger_ms=5) as prod:
        futs = []
        for p, n in COUNTS.items():
            for i in range(n):
                key, value, headers = record(p, i)
                futs.append(prod.send_nowait(TOPIC, value, key, headers, partition=p,
                                             timestamp_ms=BASE_TS + i * 1000))
        prod.flush()
        for f in futs:
            f.result()
    yield bs


def run(*args: str, spark: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if spark:
        why = _missing()
        if why:
            pytest.skip(why)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1",
           # C1 only and the serial GC: a faster JVM start for these tiny reads.
           "SPARK_SUBMIT_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=timeout)


def table(stdout: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """The printed rows: (topic, partition) -> (rows, min_offset, max_offset)."""
    out = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", line.strip())
        if m:
            out[(m[1], int(m[2]))] = (int(m[3]), int(m[4]), int(m[5]))
    return out


def check_summary(stdout: str, total: int) -> None:
    assert re.search(rf"^total\s+{total}$", stdout, re.M), stdout
    assert re.search(r"^elapsed \d+\.\d\d s, [\d,]+ rows/s$", stdout, re.M), stdout


def test_prints_counts_and_offset_ranges(servers: str) -> None:
    # Start partition 0 at 20, stop partition 1 at 50 (exclusive), read nothing of partition 2;
    # 3 tasks for partition 0.
    r = run("--bootstrap-server", servers, "--topic", TOPIC,
            "--starting-offsets", f'{{"{TOPIC}":{{"0":20,"1":-2,"2":-2}}}}',
            "--ending-offsets", f'{{"{TOPIC}":{{"0":-1,"1":50,"2":0}}}}',
            "--max-records-per-partition", "40")
    assert r.returncode == 0, r.stderr
    # The empty range has no rows, so no line (a groupBy of nothing).
    assert table(r.stdout) == {(TOPIC, 0): (100, 20, 119), (TOPIC, 1): (50, 0, 49)}, r.stdout
    check_summary(r.stdout, 150)
    # Quiet by default: no Spark log lines below ERROR, no progress bars.
    assert not re.search(r"^\d\d/\d\d/\d\d \S+ (INFO|WARN) |Stage \d+", r.stderr, re.M), r.stderr
    assert "Setting default log level" not in r.stderr, r.stderr


def test_writes_parquet(servers: str, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "out.parquet"
    r = run("--bootstrap-server", servers, "--pattern", "consume-j.*", "--include-headers",
            "--starting-timestamp", str(BASE_TS + 10_000), "--parquet", str(out))
    assert r.returncode == 0, r.stderr
    assert table(r.stdout) == {(TOPIC, 0): (110, 10, 119), (TOPIC, 1): (65, 10, 74),
                               (TOPIC, 2): (5, 10, 14)}, r.stdout
    check_summary(r.stdout, 180)

    t = pq.read_table(out)
    assert t.column_names == ["key", "value", "topic", "partition", "offset", "timestamp",
                              "timestampType", "headers"]
    got = sorted(
        (row["topic"], row["partition"], row["offset"], row["key"], row["value"],
         int(row["timestamp"].timestamp() * 1000), row["timestampType"],
         None if row["headers"] is None else [(h["key"], h["value"]) for h in row["headers"]])
        for row in t.to_pylist())
    want = []
    for p, n in COUNTS.items():
        for i in range(10, n):
            key, value, headers = record(p, i)
            want.append((TOPIC, p, i, key, value, BASE_TS + i * 1000, 0, headers))
    assert got == sorted(want)


def test_usage_errors_exit_2(servers: str) -> None:
    r = run("--bootstrap-server", servers, spark=False)  # neither --topic nor --pattern
    assert r.returncode == 2 and "one of the arguments --topic --pattern is required" in r.stderr
    r = run("--bootstrap-server", servers, "--topic", TOPIC, "--starting-offsets", "latest", spark=False)
    assert r.returncode == 2
    assert r.stderr.strip() == ("spark_consume.py: error: starting offset can't be latest for batch "
                                "queries on Kafka")
    r = run("--topic", TOPIC, "--min-partitions", "0", spark=False)
    assert r.returncode == 2 and "--min-partitions must be a positive integer" in r.stderr


def test_unreachable_broker_exits_1_with_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run("--bootstrap-server", f"127.0.0.1:{port}", "--topic", TOPIC, spark=False, timeout=30)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("spark_consume.py: error: cannot reach the broker")
    assert r.stdout == ""


def test_help_describes_every_option() -> None:
    r = run("--help", spark=False)
    assert r.returncode == 0
    for opt in ("--bootstrap-server", "--topic", "--pattern", "--starting-offsets", "--ending-offsets",
                "--starting-timestamp", "--min-partitions", "--max-records-per-partition",
                "--include-headers", "--master", "--parquet", "--verbose", "exit status"):
        assert opt in r.stdout, opt
