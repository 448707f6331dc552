#!/usr/bin/env python3
"""The C fast paths against the pure-Python fallback, in one run, for one installation of
minibroker: as installed (a wheel: the C paths) and with ``MINIBROKER_PURE_PYTHON=1`` (the
fallback an install without a compiler gets), alternating run by run.

- ``W1 produce``: scripts/bench.py's W1 at acks=1 (confluent-kafka in this process, 100-byte
  values, 1 partition, ``linger.ms=5``, ``batch.size=65536``; ``produce_records``), against a
  broker of each mode. What differs is the broker's record codec: it walks the records of every
  produced batch before writing it (``client.records.validate.check_records``).
- ``client burst``: scripts/_bench_idioms.py's burst idiom (start a Producer, ``send_nowait`` N
  times, ``flush``, ``gather``), our client in a child process of each mode (record codec and
  record futures), both against the C broker, so the ratio is the client's alone.

``--python``: the interpreter of the installation to measure, e.g. a venv into which
``scripts/build_wheel``'s wheel was installed (default: this one). Its brokers (``python -m
broker serve``) and client children run in a scratch directory without ``PYTHONPATH``, so they
import the installed package, not this checkout; their first log line (``broker.build_info``)
is checked to say the expected paths. Median of ``--repeats`` runs per mode; the ratio is C /
fallback. Data in a scratch directory under ``--dir`` (default: the repository), removed at the
end.

    .venv/bin/python scripts/bench_fastpath.py --python /tmp/wheel-venv/bin/python
    .venv/bin/python scripts/bench_fastpath.py --quick --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from types import SimpleNamespace

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(SCRIPTS)

from _benchutil import command_line, machine_line  # noqa: E402
from bench import produce_records  # noqa: E402

_LISTENING = re.compile(r"^minibroker listening on ([\d.]+):(\d+)")
MODES = ("c", "python")

# Run by the measured interpreter: the burst idiom, its figures as JSON on stdout. scripts/ goes
# on sys.path for the benchmark helpers only; broker and client come from the installation.
BURST_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from _bench_clients import _run_async
from _bench_idioms import _ours_burst
import client
from broker.build_info import detect
seconds = _run_async(_ours_burst(sys.argv[2], sys.argv[3], int(sys.argv[4])))
print(json.dumps({"seconds": seconds, "client": client.__file__, "build": detect().labels()}))
"""


def mode_env(mode: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MINIBROKER_PURE_PYTHON")}
    if mode == "python":
        env["MINIBROKER_PURE_PYTHON"] = "1"
    return env


class Broker:
    """``python -m broker serve`` of the measured installation, in one mode."""

    def __init__(self, python: str, mode: str, scratch: str) -> None:
        self.mode = mode
        data = os.path.join(scratch, f"data-{mode}")
        self.proc = subprocess.Popen([python, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", "0",
                                      "--data-dir", data], cwd=scratch, env=mode_env(mode), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: list[str] = []
        ready = threading.Event()
        self.port = -1

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = _LISTENING.match(line)
                if m:
                    self.port = int(m.group(2))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or self.port < 0:
            self.stop()
            raise RuntimeError(f"{mode} broker did not start:\n" + "\n".join(self.lines))
        self.summary = self.lines[0].split(" INFO broker: ", 1)[-1]
        want = "codec=c record_future=c)" if mode == "c" else "codec=python record_future=python)"
        if not self.summary.endswith(want):
            self.stop()
            raise RuntimeError(f"the {mode} broker runs {self.summary!r}, not {want}")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the futures resolve
    for f in admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=10).values():
        f.result(15)


def w1_run(broker: Broker, run: int, n: int) -> float:
    topic = f"w1-{broker.mode}-{run}"
    create_topic(broker.bootstrap, topic)
    # produce_records reads only ctx.broker.bootstrap (for its client configuration)
    seconds, _ = produce_records(SimpleNamespace(broker=broker), topic, n, "1")
    return n / seconds


def burst_run(python: str, mode: str, broker: Broker, scratch: str, run: int, n: int) -> float:
    topic = f"burst-{mode}-{run}"
    create_topic(broker.bootstrap, topic)
    proc = subprocess.run([python, "-c", BURST_CHILD, SCRIPTS, broker.bootstrap, topic, str(n)], cwd=scratch,
                          env=mode_env(mode), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"burst ({mode}) failed:\n{proc.stderr}")
    out = json.loads(proc.stdout.splitlines()[-1])
    if out["build"]["codec"] != mode or out["build"]["record_future"] != mode:
        raise RuntimeError(f"the {mode} client ran {out['build']}")
    if mode == "c" and out["client"].startswith(REPO + os.sep) and python != sys.executable:
        raise RuntimeError(f"the client came from this checkout ({out['client']}), not the installation")
    return n / out["seconds"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--python", default=sys.executable, help="interpreter of the installation to measure")
    ap.add_argument("--quick", action="store_true", help="200,000 records per run")
    ap.add_argument("--records", type=int, help="records per W1 run (default 2,000,000; --quick 200,000)")
    ap.add_argument("--burst-records", type=int, help="records per burst (default 1,000,000; --quick 200,000)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per figure and mode; medians reported (default 3)")
    ap.add_argument("--dir", default=REPO, help="parent of the scratch directory (default: the repository)")
    args = ap.parse_args(argv)
    w1_n = args.records or (200_000 if args.quick else 2_000_000)
    burst_n = args.burst_records or (200_000 if args.quick else 1_000_000)
    python = os.path.abspath(args.python) if os.sep in args.python else args.python

    scratch = tempfile.mkdtemp(prefix=".bench-fastpath-", dir=args.dir)
    brokers: dict[str, Broker] = {}
    w1: dict[str, list[float]] = {m: [] for m in MODES}
    burst: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        for mode in MODES:
            brokers[mode] = Broker(python, mode, scratch)
            print(f"{mode:>6} broker: {brokers[mode].summary}", flush=True)
        for run in range(args.repeats):
            for mode in MODES:
                w1[mode].append(w1_run(brokers[mode], run, w1_n))
                print(f"  run {run + 1} W1 {mode}: {w1[mode][-1]:,.0f} records/s", flush=True)
            for mode in MODES:
                burst[mode].append(burst_run(python, mode, brokers["c"], scratch, run, burst_n))
                print(f"  run {run + 1} burst {mode}: {burst[mode][-1]:,.0f} records/s", flush=True)
                time.sleep(0.5)
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    print()
    print(f"{'figure':<40} {'C (as installed)':>17} {'pure Python':>13} {'ratio':>6}")
    for name, n, runs in ((f"W1 produce acks=1, {w1_n:,} records", w1_n, w1),
                          (f"client burst, {burst_n:,} records", burst_n, burst)):
        c, py = statistics.median(runs["c"]), statistics.median(runs["python"])
        print(f"{name + ' (rec/s)':<40} {c:>17,.0f} {py:>13,.0f} {c / py:>5.2f}x")
        for mode in MODES:
            print(f"{'':<4}runs {mode}: " + " ".join(f"{x:,.0f}" for x in runs[mode]))
    print(f"\nmeasured: {python} ({brokers['c'].summary})")
    print(machine_line())
    print(command_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
