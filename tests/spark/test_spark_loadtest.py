"""scripts/spark_loadtest.py: its ``main`` runs in-process on the session-scoped ``spark``
fixture (local[2]) with tiny numbers and its own private broker, then the JSON and PNG it wrote
are checked; usage errors, an existing topic, an unreachable broker and ``--help`` need no
Spark (the last two run the script as a subprocess, without a JVM)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from client.sync import SyncAdmin

pytestmark = pytest.mark.slow  # a local Spark session (a JVM) per module

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "spark_loadtest.py"


@pytest.fixture(scope="module")
def loadtest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_loadtest", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=REPO, timeout=60, env={**os.environ, "PYSPARK_PYTHON": sys.executable})


def test_tiny_load_test_writes_json_and_png(loadtest: ModuleType, spark: Any, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    rc = loadtest.main(["--records", "2000", "--record-size", "50", "--partitions", "2", "--tasks", "1,2",
                        "--repeats", "1", "--warmup", "1", "--out", str(out),
                        # Tasks then skip the 500 ms long-poll fetch left at each range's end.
                        "--option", "kafka.fetch.max.wait.ms=5"], spark=spark)
    captured = capsys.readouterr()
    assert rc == 0, captured.err

    res = json.loads((out / "spark_loadtest.json").read_text())
    prm = res["parameters"]
    assert (prm["records"], prm["record_size"], prm["partitions"], prm["tasks"], prm["repeats"]) == \
        (2000, 50, 2, [1, 2], 1)
    assert prm["broker"] == "private" and prm["parquet"] is True and prm["write"] is True
    assert prm["master"] == "local[2]"
    assert prm["options"] == ["kafka.fetch.max.wait.ms=5"] and prm["query"] == "agg"
    assert res["environment"]["cpu_count"] == os.cpu_count()
    assert res["produce"]["end_offsets"] == {"0": 1000, "1": 1000}
    assert [e["tasks"] for e in res["results"]] == [1, 2]
    for e in res["results"]:
        for src in ("minibroker", "parquet"):
            (run,) = e[src]["runs"]
            assert (run["rows"], run["bytes"]) == (2000, 2000 * 50)
            assert run["read_tasks"] == e["tasks"]  # coalesce(K): exactly K tasks read
            assert run["rows_per_s"] > 0 and run["mb_per_s"] > 0 and run["seconds"] > 0
            assert e[src]["median"]["rows_per_s"] == run["rows_per_s"]
            (empty,) = e[src]["empty_runs"]  # the same query over zero rows (its fixed cost)
            assert e[src]["median"]["empty_seconds"] == empty["seconds"] > 0
        assert e["ratio"] == pytest.approx(e["minibroker"]["median"]["rows_per_s"]
                                           / e["parquet"]["median"]["rows_per_s"])
        (syn,) = e["synthetic"]["runs"]  # the ceiling: same query, same rows and bytes, no broker
        assert (syn["rows"], syn["bytes"]) == (2000, 2000 * 50) and syn["read_tasks"] == e["tasks"]
        assert e["ceiling_fraction"] == pytest.approx(e["minibroker"]["median"]["rows_per_s"] / syn["rows_per_s"])
        (w,) = e["write"]["runs"]  # the sink wrote every row (checked by the script from the end offsets)
        assert w["rows"] == 2000 and w["write_tasks"] == e["tasks"] and w["rows_per_s"] > 0

    assert (out / "spark_loadtest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The summary table (one row per K), the result paths and the command to reproduce it.
    lines = captured.out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["K", "read_tasks"])
    assert [ln.split()[0] for ln in lines[head + 1:head + 3]] == ["1", "2"]
    assert f"chart: {out / 'spark_loadtest.png'}" in captured.out
    assert "reproduce: cd " in captured.out
    # The session is the caller's: still usable afterwards.
    assert spark.range(3).count() == 3


def test_usage_errors_exit_2(loadtest: ModuleType, spark: Any, capsys: pytest.CaptureFixture[str],
                             module_broker: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        loadtest.main(["--tasks", "0"])
    assert exc.value.code == 2 and "--tasks: expected comma-separated positive integers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        loadtest.main(["--option", "fetch"])
    assert exc.value.code == 2 and "--option: expected KEY=VALUE, not 'fetch'" in capsys.readouterr().err
    # More tasks than the given session can run at once: refused before producing anything.
    assert loadtest.main(["--tasks", "1,4"], spark=spark) == 2
    assert capsys.readouterr().err == "spark_loadtest.py: error: the session runs 2 tasks at once, fewer than K=4\n"
    # The load test fills a new topic.
    with SyncAdmin(module_broker.bootstrap) as admin:
        admin.create_topic("loadtest-exists", num_partitions=1)
    assert loadtest.main(["--bootstrap-server", module_broker.bootstrap, "--topic", "loadtest-exists", "--tasks", "1"],
                         spark=spark) == 2
    assert "topic 'loadtest-exists' already exists" in capsys.readouterr().err


def test_unreachable_broker_exits_1_with_one_line() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run_script("--bootstrap-server", f"127.0.0.1:{port}")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("spark_loadtest.py: error: cannot reach the broker")


def test_help_describes_every_option() -> None:
    r = run_script("--help")
    assert r.returncode == 0
    for opt in ("--bootstrap-server", "--topic", "--records", "--record-size", "--partitions", "--batch-size",
                "--tasks", "--repeats", "--warmup", "--option", "--query", "--out", "--no-parquet", "--no-write", "--write-option", "--verbose", "rows/s", "MB/s",
                "exit status"):
        assert opt in r.stdout, opt
