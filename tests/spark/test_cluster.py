"""The data source and the sink on a multi-process Spark cluster: ``spark-submit --master
local-cluster[2,1,1024]`` (a standalone master and two workers, each executor its own JVM, as on
a cluster) with ``client`` shipped as a user ships it, ``--py-files minibroker-client.zip``.

The Python processes (the driver's, and the executors' workers) run an interpreter that has
pyspark, pyarrow and the client's dependencies but not this project (``python -S`` with only
site-packages on ``PYTHONPATH``: the editable install's hook is not loaded), so ``client`` can only
come from the shipped zip. The job (``cluster_job.py``) reads a topic in batch and streaming
(with a checkpoint) and writes one with the sink; the rows must be the records produced, exactly
as a ``local[N]`` read gets them (``test_source.py``, ``test_stream.py``, ``test_writer.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from client.sync import SyncAdmin, SyncConsumer, SyncProducer
from tests.spark.conftest import _missing

pytestmark = pytest.mark.slow  # a standalone cluster: a master, two workers, two executor JVMs

REPO = Path(__file__).resolve().parents[2]
PARTS, N = 3, 150  # records per partition


def record(p: int, i: int) -> tuple[str | None, str, list[list[str]]]:
    return (None if i % 10 == 0 else f"k{p}-{i}", f"v{p}-{i}", [["h", str(i)]] if i % 2 == 0 else [])


def build_zip(dest: Path) -> Path:
    """``python -m zipfile -c minibroker-client.zip client`` without caches and built extensions."""
    out = dest / "minibroker-client.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted((REPO / "client").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".so", ".pyc"):
                z.write(path, path.relative_to(REPO))
    return out


def test_local_cluster_reads_streams_and_writes(module_broker: Any, tmp_path: Path) -> None:
    why = _missing()
    if why:
        pytest.skip(why)
    servers = module_broker.bootstrap
    with SyncAdmin(servers) as admin:
        admin.create_topic("cl-in", num_partitions=PARTS)
        admin.create_topic("cl-out", num_partitions=PARTS)
    with SyncProducer(servers) as prod:
        futs = []
        for p in range(PARTS):
            for i in range(N):
                k, v, h = record(p, i)
                futs.append(prod.send_nowait("cl-in", v.encode(), None if k is None else k.encode(),
                                             [(a, b.encode()) for a, b in h] or None, partition=p))
        prod.flush()
        for f in futs:
            f.result()

    # An interpreter without this project: site-packages on PYTHONPATH (after what Spark puts
    # there: pyspark.zip, py4j, the --py-files), no site processing (no editable-install hook).
    site = sysconfig.get_paths()["purelib"]
    python = tmp_path / "python-without-minibroker"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    shipped = build_zip(tmp_path)
    # The driver's streaming-source runner (a Python process the driver JVM starts) does not get
    # --py-files in pyspark 4.x: the zip goes on the driver's PYTHONPATH too (a copy, so that the
    # executors' import can be told apart: theirs comes from --py-files, in their work dirs).
    (tmp_path / "driver").mkdir()
    driver_zip = tmp_path / "driver" / shipped.name
    driver_zip.write_bytes(shipped.read_bytes())
    spark_submit = Path(sys.executable).parent / "spark-submit"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python), SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=str(driver_zip))
    cmd = [str(spark_submit), "--master", "local-cluster[2,1,1024]", "--py-files", str(shipped),
           "--conf", "spark.ui.enabled=true", "--conf", "spark.ui.port=0", "--conf", "spark.ui.showConsoleProgress=false",
           "--conf", "spark.sql.shuffle.partitions=2",
           str(REPO / "tests" / "spark" / "cluster_job.py"),
           servers, "cl-in", "cl-out", str(tmp_path / "ckpt"), str(tmp_path / "stream-out")]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    (tmp_path / "job.log").write_text(done.stdout + done.stderr)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    # The first error is what matters; Spark's shutdown adds pages after it.
    first = next((i for i, ln in enumerate(done.stderr.splitlines()) if " ERROR " in ln or "Traceback" in ln), 0)
    assert done.returncode == 0 and lines, "\n".join(done.stderr.splitlines()[first:first + 60])
    res = json.loads(lines[-1][len("RESULT "):])

    # It ran on the cluster, with client from the zip.
    assert res["master"] == "local-cluster[2,1,1024]"
    assert "minibroker-client.zip" in res["client_from"]
    for where in res["executor_client_from"]:  # the executors' copy of --py-files, not the driver's
        assert "minibroker-client.zip" in where and not where.startswith(str(tmp_path)), where
    busy = [e for e in res["executors"] if e["id"] != "driver" and e["totalTasks"] > 0]
    assert len(busy) == 2, res["executors"]                    # both executors ran tasks
    assert len(res["worker_jvms"]) == 2 and res["driver_jvm"] not in res["worker_jvms"]  # two JVMs, not the driver
    print(f"executors with tasks: {busy}; executor JVM pids {res['worker_jvms']}, driver JVM pid {res['driver_jvm']}")

    want = sorted(["cl-in", p, i, *record(p, i)] for p in range(PARTS) for i in range(N))
    assert sorted(res["batch"]) == want
    assert sorted(res["stream"]) == want
    assert res["micro_batches"] >= 4  # 450 records, at most 100 per micro-batch

    got = []
    with SyncConsumer(servers, auto_offset_reset="earliest") as c:
        c.assign([("cl-out", p) for p in range(PARTS)])
        while len(got) < PARTS * N:
            recs = c.poll(timeout_ms=2000)
            assert recs, f"only {len(got)} records in cl-out"
            got += recs
    assert sorted(((r.partition, r.key, r.value, list(r.headers or ())) for r in got), key=repr) == sorted(
        ((p, None if k is None else k.encode(), v.upper().encode(), [(a, b.encode()) for a, b in h])
         for p in range(PARTS) for i in range(N) for k, v, h in [record(p, i)]), key=repr)
