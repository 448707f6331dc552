"""A real broker process for tests: ``python -m broker serve`` on a free port in a temp dir.

Used by the ``broker`` fixture (tests/conftest.py) and by tests that restart or kill brokers.
The process listens on 127.0.0.1 only and is always stopped (SIGTERM, then SIGKILL) at the end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LISTENING = re.compile(r"minibroker listening on ([\d.]+):(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: str, overrides: Sequence[str] = (), port: int = 0,
                 log_level: str = "INFO") -> None:
        self.data_dir = data_dir
        self.overrides = list(overrides)
        self.requested_port = port
        self.log_level = log_level
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1
        self.output: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(self.requested_port),
               "--data-dir", self.data_dir, "--log-level", self.log_level]
        for o in self.overrides:
            cmd += ["--override", o]
        self.output = []
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        found = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self.output.append(line)
                m = _LISTENING.search(line)
                if m and not found.is_set():
                    self.port = int(m.group(2))
                    found.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not found.wait(timeout):
            self.kill()
            raise RuntimeError("broker did not start:\n" + "".join(self.output))
        return self

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit status (SIGKILL after ``timeout``)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        self.proc = None

    def log_text(self) -> str:
        return "".join(self.output)

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
