"""broker/build_info.py: what the C fast paths' choosers picked, why a path is on the fallback,
the event loop, and the lines people read (``summary``, ``fallback_warning``)."""

from __future__ import annotations

import asyncio
import importlib.machinery
import os
import subprocess
import sys

import pytest

from broker import build_info
from broker.build_info import BuildInfo, FastPath
from client import record_future
from client.records import codec
from tests.broker_process import REPO

PURE_PYTHON = os.environ.get("MINIBROKER_PURE_PYTHON", "") not in ("", "0")


def _info(codec_path: FastPath, future_path: FastPath) -> BuildInfo:
    return BuildInfo("1.2.3", "3.11.7", "uvloop", codec_path, future_path)


C_CODEC = FastPath("codec", "record codec", "c")
C_FUTURES = FastPath("record_future", "record futures", "c")


def test_detect_reports_what_the_choosers_picked() -> None:
    info = build_info.detect()
    assert info.codec.impl == ("c" if codec.C_CODEC else "python")
    assert info.record_future.impl == ("c" if record_future.C_RECORD_FUTURES else "python")
    assert info.python == ".".join(map(str, sys.version_info[:3]))
    assert set(info.labels()) == {"version", "python", "event_loop", "codec", "record_future"}
    if PURE_PYTHON:  # the extensions are built by scripts/test, so only the opt-out leaves them out
        assert info.codec.reason == info.record_future.reason == "requested"
    else:
        assert info.all_c and info.fallback_warning() is None


def test_event_loop_is_the_running_loops_kind() -> None:
    assert asyncio.run(_in_loop()) == "asyncio"
    uvloop = pytest.importorskip("uvloop")
    assert uvloop.run(_in_loop()) == "uvloop"
    assert build_info.detect().event_loop == "uvloop"  # outside a loop: what serve would run


async def _in_loop() -> str:
    return build_info.detect().event_loop


def test_a_missing_or_unloadable_extension_is_told_apart(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "fakeext"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / f"_broken{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"not an ELF file")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert build_info._fast_path("codec", "record codec", "fakeext._absent", False).reason == "not built"
    broken = build_info._fast_path("codec", "record codec", "fakeext._broken", False)
    assert broken.impl == "python" and broken.reason is not None and broken.reason.startswith("does not load: ")
    # built and importable but not selected: only MINIBROKER_PURE_PYTHON makes a chooser do that
    assert build_info._fast_path("codec", "record codec", "fakeext", False).reason == "requested"
    assert build_info._fast_path("codec", "record codec", "fakeext._absent", True) == C_CODEC


def test_summary_and_warnings() -> None:
    info = _info(C_CODEC, C_FUTURES)
    assert info.summary() == "minibroker 1.2.3 (python=3.11.7 event_loop=uvloop codec=c record_future=c)"
    assert info.fallback_warning() is None

    requested = _info(FastPath("codec", "record codec", "python", "requested"),
                      FastPath("record_future", "record futures", "python", "requested"))
    assert requested.summary().endswith("codec=python record_future=python)")
    text = requested.fallback_warning()
    assert text is not None and text.startswith("MINIBROKER_PURE_PYTHON is set")
    assert "record codec and record futures were requested" in text

    not_built = _info(FastPath("codec", "record codec", "python", "not built"), C_FUTURES)
    text = not_built.fallback_warning()
    assert text is not None and "(record codec: not built)" in text
    assert "record futures" not in text  # only the slow path is named
    assert "pip install dist/minibroker-*.whl" in text and "C compiler" in text and "--no-cache-dir" in text
    assert "\n" not in text


def test_module_command_and_require_c() -> None:
    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "broker.build_info", *args], cwd=REPO, text=True,
                              capture_output=True, timeout=60, env={**os.environ, **env})

    proc = run("--require-c", MINIBROKER_PURE_PYTHON="1")
    assert proc.returncode == 1
    first, second = proc.stdout.splitlines()
    assert first.startswith("minibroker ") and first.endswith("codec=python record_future=python)")
    assert second.startswith("WARNING: MINIBROKER_PURE_PYTHON is set")
    assert run(MINIBROKER_PURE_PYTHON="1").returncode == 0  # without --require-c it only says it
    if not PURE_PYTHON:
        proc = run("--require-c", MINIBROKER_PURE_PYTHON="0")
        assert proc.returncode == 0 and proc.stdout.strip().endswith("codec=c record_future=c)"), proc.stdout
