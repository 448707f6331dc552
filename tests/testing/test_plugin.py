"""broker/testing/plugin.py as users get it: the sample project in sample_project/ (one test
file per client library, fault injection, a broker of its own, unittest) is copied to a
temporary directory and run by a pytest of its own, from there, with nothing of this
repository on its path: the fixtures come from the ``pytest11`` entry point of the installed
package (with ``-p no:minibroker`` they are missing). It runs with both broker kinds."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parent / "sample_project"
TESTING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "pages" / "testing.md"
#: tests in the sample project (test_kafka_python.py runs twice: two partition counts)
SAMPLE_TESTS = 11


def run_sample(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)


def test_entry_point_is_installed() -> None:
    [ep] = [ep for ep in importlib.metadata.entry_points(group="pytest11") if ep.name == "minibroker"]
    assert ep.value == "broker.testing.plugin"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["process", "inprocess"])
def test_sample_project_passes(tmp_path: Path, kind: str) -> None:
    proc = run_sample(tmp_path, f"--minibroker-kind={kind}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(rf"\b{SAMPLE_TESTS} passed\b", proc.stdout), proc.stdout


@pytest.mark.slow
def test_without_the_plugin_the_fixtures_are_missing(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "-p", "no:minibroker", "test_ours.py")
    assert proc.returncode != 0
    assert "fixture 'minibroker' not found" in proc.stdout


def test_documented_examples_are_the_sample_project() -> None:
    """Each ```python block of docs/pages/testing.md that starts with ``# test_x.py`` is that
    file of the sample project, verbatim."""
    text = TESTING_PAGE.read_text()
    blocks = re.findall(r"^```python\n(# (test_\w+\.py).*?)^```", text, re.S | re.M)
    assert {name for _, name in blocks} >= {"test_ours.py", "test_confluent.py", "test_kafka_python.py",
                                            "test_aiokafka.py", "test_faults.py"}
    for code, name in blocks:
        assert code == (SAMPLE / name).read_text(), f"docs/pages/testing.md's {name} differs from tests/testing/sample_project/{name}"
