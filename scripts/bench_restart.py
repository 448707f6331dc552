#!/usr/bin/env python3
"""Shutdown and restart of a broker with many partitions: a real ``python -m broker serve``
process with P partitions (3 records each), then

- the clean shutdown (SIGTERM to exit: flush, close, trim, checkpoints, marker),
- a clean start (to "listening"),
- a start after SIGKILL (recovery of every active segment),

plus the open files per partition (``/proc/PID/fd``). Medians of ``--repeats`` runs.

    .venv/bin/python scripts/bench_restart.py --partitions 2000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from broker.testing import BrokerProcess, create_topic
from client.sync import SyncProducer


def one_run(partitions: int) -> dict[str, float]:
    data = tempfile.mkdtemp(prefix="minibroker-restart-")
    b = BrokerProcess(os.path.join(data, "d")).start()
    topics = max(1, partitions // 100)
    for t in range(topics):
        create_topic(b.bootstrap_servers, f"t{t}", partitions // topics)
    with SyncProducer(b.bootstrap_servers, linger_ms=1) as producer:
        for t in range(topics):
            for p in range(partitions // topics):
                for _ in range(3):
                    producer.send_nowait(f"t{t}", b"x" * 10, partition=p)
        producer.flush()
    fds = len(os.listdir(f"/proc/{b.pid}/fd"))
    t0 = time.monotonic()
    assert b.stop() == 0
    shutdown = time.monotonic() - t0
    t0 = time.monotonic()
    b.start(timeout=300)
    clean_start = time.monotonic() - t0
    b.kill()
    t0 = time.monotonic()
    b.start(timeout=300)
    unclean_start = time.monotonic() - t0
    b.stop()
    shutil.rmtree(data, ignore_errors=True)
    return {"open files per partition": fds / partitions, "clean shutdown s": shutdown,
            "clean start s": clean_start, "start after SIGKILL s": unclean_start}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    runs = [one_run(args.partitions) for _ in range(args.repeats)]
    print(f"{args.partitions} partitions, median of {args.repeats} (target: shutdown and restarts < 2 s)")
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:28} {statistics.median(values):8.2f}   runs: {' '.join(f'{v:.2f}' for v in values)}")
    print(f"reproduce: .venv/bin/python scripts/bench_restart.py --partitions {args.partitions} --repeats {args.repeats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
