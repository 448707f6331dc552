"""Crash helper: load a data directory and run one log cleaning that stops at a step.

Run as a subprocess by ``test_crash_cleaner.py`` (working directory: the repository root)::

    python -m tests.storage.cleaner.crash_cleaner DIR STEP [MODE]

It starts a LogManager on DIR (recovery after an unclean stop if need be), runs
``LogCleaner.clean_once()`` with ``log.cleaner.mode`` MODE (``thread``, the default: in this
process; ``process``: in a worker process it starts; the swap inline in this process either
way), and when the cleaner reaches STEP (``cleaned-writing``, ``swap-renamed``,
``old-renamed``, ``swapped``, ``before-checkpoint``) writes ``AT <STEP>`` on stdout (followed
by `` worker <pid>`` in process mode) and sleeps until it is killed. It prints ``DONE`` and
exits 0 if the cleaning never reached STEP.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from broker.storage.cleaner import CleanerConfig, LogCleaner
from broker.storage.log_manager import LogManager


def main() -> int:
    directory, target = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "thread"
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    manager = LogManager(directory)
    manager.startup()

    def pause_at(step: str) -> None:
        if step == target:
            worker = f" worker {cleaner.worker_pids[0]}" if mode == "process" else ""
            os.write(1, f"AT {step}{worker}\n".encode())
            while True:
                time.sleep(60)

    cleaner = LogCleaner(CleanerConfig(mode=mode), manager.log_dir, lambda: manager.logs, pause_at=pause_at)
    cleaner.clean_once()
    os.write(1, b"DONE\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
