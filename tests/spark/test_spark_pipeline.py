"""scripts/spark_pipeline.py end to end: a streaming read -> transform -> write pipeline between
two topics of a real broker, run as a subprocess (its own Spark), SIGKILLed mid-run (the driver
and its JVM), and started again from its checkpoint: every source record reaches the sink
(at-least-once: the micro-batch being written when it died may be written twice); with the
sink's exactly-once option (``kafka.transactional.id``) a read_committed consumer sees every
source record exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncConsumer, SyncProducer
from tests.spark.conftest import _missing

pytestmark = pytest.mark.slow  # two Spark runs, each its own JVM

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "spark_pipeline.py"
N = 3000


def sink_size(servers: str, topic: str) -> int:
    with SyncAdmin(servers) as admin:
        return sum(admin.topic_offsets(topic).values())


def consume_all(servers: str, topic: str, parts: int, n: int, isolation: str = "read_uncommitted") -> list[Any]:
    got: list[Any] = []
    with SyncConsumer(servers, auto_offset_reset="earliest", isolation_level=isolation) as c:
        c.assign([(topic, p) for p in range(parts)])
        while True:
            recs = c.poll(timeout_ms=1000)
            if not recs and len(got) >= n:
                return got
            if not recs:
                raise AssertionError(f"only {len(got)} records in {topic}")
            got += recs


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_killed_pipeline_resumes_without_loss(module_broker: Any, tmp_path: Path, exactly_once: bool) -> None:
    why = _missing()
    if why:
        pytest.skip(why)
    servers = module_broker.bootstrap
    src, dst = ("e-in", "e-out") if exactly_once else ("p-in", "p-out")
    with SyncAdmin(servers) as admin:
        admin.create_topic(src, num_partitions=2)
        admin.create_topic(dst, num_partitions=2)
    with SyncProducer(servers) as prod:
        futs = [prod.send_nowait(src, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2) for i in range(N)]
        prod.flush()
        for f in futs:
            f.result()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    cmd = [sys.executable, str(SCRIPT), "--bootstrap-server", servers, "--source", src, "--sink", dst,
           "--checkpoint", str(tmp_path / "ckpt")]
    if exactly_once:
        cmd += ["--producer-option", "transactional.id=pipeline-eos"]
    # Its own process group: SIGKILL takes the driver and the JVM it started, as a crash would.
    proc = subprocess.Popen(cmd + ["--max-offsets-per-trigger", "200"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while sink_size(servers, dst) < 600:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the pipeline wrote nothing in 120 s"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    written_before = sink_size(servers, dst)
    assert written_before < N, "the pipeline finished before it was killed: nothing was tested"

    done = subprocess.run(cmd + ["--available-now"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "batch " in done.stdout

    got = consume_all(servers, dst, 2, N, "read_committed" if exactly_once else "read_uncommitted")
    sources = Counter(dict(r.headers)["source"].decode() for r in got)
    assert set(sources) == {f"{src}:{i % 2}:{i // 2}" for i in range(N)}  # nothing lost
    for r in got:  # each record is its source record, enriched, in the same partition
        topic, part, off = dict(r.headers)["source"].decode().split(":")
        i = int(off) * 2 + int(part)
        assert (r.key, r.value, r.partition) == (f"k{i}".encode(), f"V{i}".encode(), int(part))
    duplicates = sum(c - 1 for c in sources.values())
    if exactly_once:
        assert duplicates == 0, duplicates
    else:
        assert duplicates <= 200, duplicates  # at most the micro-batch in flight when killed
