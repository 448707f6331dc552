"""The wheel and the sdist, built and installed as a user would, on a machine without a C compiler.

``scripts/build_wheel`` builds both (in its own throwaway venv, with this machine's compiler);
each is then installed with ``pip install --no-cache-dir`` into a fresh venv whose ``PATH`` is
that venv's ``bin`` alone, so nothing on it can compile (``CC`` and friends are unset too):

- the wheel: the C record codec and record futures are the ones in use (the extension modules
  import from the venv's site-packages and are what ``client.records.codec`` and
  ``client.record_future`` selected), ``minibroker --version`` says so, the broker logs no
  WARNING, and the installed client produces and consumes through the installed broker;
- the sdist: it installs all the same, without the extensions (pip skips optional ones it cannot
  compile), ``--version`` and the broker's log say so with one WARNING, and the pure-Python
  paths produce and consume.

Once per supported Python found here (3.11-3.13: ``python3.X`` on PATH that runs, or the paths in
``MINIBROKER_TEST_PYTHONS``); the others skip. Needs a compiler for the build and pip's index
(the dependencies are installed into each venv). About 40 s per Python.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.broker_process import REPO as _REPO

pytestmark = pytest.mark.slow

REPO = Path(_REPO)

SUPPORTED = ("3.11", "3.12", "3.13")
_LISTENING = re.compile(r"^minibroker listening on ([\d.]+):(\d+)")
#: variables through which a build could find a compiler without PATH
_COMPILER_VARS = ("CC", "CXX", "CPP", "LDSHARED", "LDCXXSHARED")

# Run by the venv's Python, outside the repository: fails unless both C paths are in use and
# their modules come from the venv.
CHECK_C_PATHS = """
import sys, sysconfig
import client, client._record_future as future_ext, client.records._codec as codec_ext
from client import record_future
from client.records import codec, columnar
site = sysconfig.get_paths()["purelib"]
for m in (client, future_ext, codec_ext):
    assert m.__file__.startswith(site), (m.__file__, site)
assert codec.C_CODEC and codec.append_record is codec_ext.append_record
assert codec.decode_lists is codec_ext.decode_lists and columnar.decode_records is codec_ext.decode_records
assert record_future.C_RECORD_FUTURES and record_future.RecordFuture is future_ext.RecordFuture
assert record_future.new_record_future is future_ext.new_record_future
print(codec_ext.__file__)
print(future_ext.__file__)
"""

# Our client from the venv: the README's first example, against the venv's broker.
ROUND_TRIP = """
import asyncio, sys
from client import Consumer, Producer

async def main(bootstrap):
    async with Producer(bootstrap) as producer:
        futs = [producer.send_nowait("packaging", b"v%d" % i, key=b"k") for i in range(1000)]
        await producer.flush()
        mds = await asyncio.gather(*futs)
    assert [m.offset for m in mds] == list(range(1000)), mds[:3]
    async with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([("packaging", 0)])
        got = []
        while len(got) < 1000:
            batch = await consumer.getmany(timeout_ms=5000)
            got += [r.value for records in batch.values() for r in records]
    assert got == [b"v%d" % i for i in range(1000)]
    print("round trip ok")

asyncio.run(main(sys.argv[1]))
"""


def _interpreter(version: str) -> str | None:
    """An interpreter of ``version``: from MINIBROKER_TEST_PYTHONS, this one, or python3.X on
    PATH (pyenv's shims exist for versions they will not run: each candidate is run)."""
    listed = os.environ.get("MINIBROKER_TEST_PYTHONS", "").split()
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [*listed, *([sys.executable] if here == version else []), *filter(None, [shutil.which(f"python{version}")])]
    for exe in candidates:
        try:
            out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return exe
    return None


@dataclass
class Dist:
    python: str
    wheel: Path
    sdist: Path


@pytest.fixture(scope="module", params=SUPPORTED)
def dist(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Dist:
    python = _interpreter(request.param)
    if python is None:
        pytest.skip(f"no Python {request.param} here (MINIBROKER_TEST_PYTHONS lists interpreters to use)")
    out = tmp_path_factory.mktemp(f"dist-{request.param}")
    proc = subprocess.run([str(REPO / "scripts" / "build_wheel"), str(out)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHON": python})
    assert proc.returncode == 0, proc.stderr[-4000:]
    [wheel] = out.glob("minibroker-*.whl")
    [sdist] = out.glob("minibroker-*.tar.gz")
    assert proc.stdout.split() == [str(wheel), str(sdist)] or proc.stdout.split() == [str(sdist), str(wheel)]
    return Dist(python, wheel, sdist)


class Venv:
    """A fresh venv; ``env`` runs its commands with PATH = its bin directory alone."""

    def __init__(self, python: str, path: Path) -> None:
        self.path = path
        self.bin = path / "bin"
        self.env = {k: v for k, v in os.environ.items() if k not in _COMPILER_VARS and k != "PYTHONPATH"}
        self.env["PATH"] = str(self.bin)
        subprocess.run([python, "-m", "venv", str(path)], check=True, env=self.env, timeout=120)
        compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
        for cc in {compiler, "cc", "gcc", "clang"}:
            assert shutil.which(cc, path=self.env["PATH"]) is None, cc

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=self.path, env=self.env, capture_output=True, text=True, timeout=timeout)

    def install(self, target: Path) -> subprocess.CompletedProcess[str]:
        proc = self.run(str(self.bin / "python"), "-m", "pip", "install", "--no-cache-dir", str(target), timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc


@dataclass
class Served:
    log: list[str]
    round_trip: subprocess.CompletedProcess[str]


def serve_and_round_trip(venv: Venv) -> Served:
    """The venv's ``minibroker serve``, our client (from the venv) producing and consuming 1,000
    records through it, then SIGTERM; its log lines up to then."""
    proc = subprocess.Popen([str(venv.bin / "minibroker"), "serve", "--port", "0", "--data-dir", str(venv.path / "data")],
                            cwd=venv.path, env=venv.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    log: list[str] = []
    port: list[int] = []
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line.rstrip("\n"))
            m = _LISTENING.match(line)
            if m:
                port.append(int(m.group(2)))
                listening.set()
        listening.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert listening.wait(60) and port, "\n".join(log)
        round_trip = venv.run(str(venv.bin / "python"), "-c", ROUND_TRIP, f"127.0.0.1:{port[0]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(10)
    assert proc.returncode == 0, "\n".join(log)
    return Served(log, round_trip)


@pytest.fixture
def venv(tmp_path: Path, dist: Dist) -> Iterator[Venv]:
    yield Venv(dist.python, tmp_path / "venv")


def test_the_wheel_runs_the_c_paths_without_a_compiler(dist: Dist, venv: Venv) -> None:
    venv.install(dist.wheel)
    proc = venv.run(str(venv.bin / "python"), "-c", CHECK_C_PATHS)
    assert proc.returncode == 0, proc.stderr
    assert [Path(p).name.split(".")[0] for p in proc.stdout.split()] == ["_codec", "_record_future"]

    proc = venv.run(str(venv.bin / "minibroker"), "--version")
    assert proc.returncode == 0
    [line] = proc.stdout.splitlines()
    assert re.fullmatch(r"minibroker \S+ \(python=3\.1\d\.\d+ event_loop=uvloop codec=c record_future=c\)", line), line
    assert venv.run(str(venv.bin / "python"), "-m", "broker.build_info", "--require-c").returncode == 0

    served = serve_and_round_trip(venv)
    assert served.log[0].endswith(f" INFO broker: {line}"), served.log[:3]
    assert not [x for x in served.log if " WARNING " in x], served.log
    assert served.round_trip.stdout == "round trip ok\n", served.round_trip.stderr


def test_the_sdist_installs_without_a_compiler_and_the_broker_warns(dist: Dist, venv: Venv) -> None:
    venv.install(dist.sdist)
    proc = venv.run(str(venv.bin / "minibroker"), "--version")
    assert proc.returncode == 0
    summary, warning = proc.stdout.splitlines()
    assert summary.endswith(" codec=python record_future=python)"), summary
    assert warning.startswith("WARNING: the C fast paths are not in use (record codec: not built; record futures:"
                              " not built)"), warning
    assert venv.run(str(venv.bin / "python"), "-m", "broker.build_info", "--require-c").returncode == 1

    served = serve_and_round_trip(venv)
    assert served.log[0].endswith(f" INFO broker: {summary}"), served.log[:3]
    warnings = [x for x in served.log if " WARNING " in x]
    assert len(warnings) == 1 and warnings[0] == served.log[1], served.log
    assert warnings[0].endswith(" WARNING broker: " + warning.removeprefix("WARNING: "))
    assert "pip install dist/minibroker-*.whl" in warnings[0] and "C compiler" in warnings[0]
    assert served.round_trip.stdout == "round trip ok\n", served.round_trip.stderr


def test_build_wheel_refuses_a_wheel_without_the_extensions(tmp_path: Path) -> None:
    """With a compiler that fails (CC=false), setuptools skips the optional extensions and the
    build succeeds; scripts/build_wheel must then fail rather than hand out a slow wheel."""
    proc = subprocess.run([str(REPO / "scripts" / "build_wheel"), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "CC": "false", "PYTHON": sys.executable})
    assert proc.returncode != 0
    assert "lacks the C extensions ['client/records/_codec', 'client/_record_future']" in proc.stderr, proc.stderr[-3000:]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
