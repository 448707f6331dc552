"""A broker in a child process: ``python -m broker serve`` on a free port of 127.0.0.1.

The child is the same code as the parent (its ``PYTHONPATH`` starts with the directory this
package was imported from) and the same interpreter. Ready when ``start()`` returns: the child
prints ``minibroker listening on HOST:PORT`` on stderr once its listener is bound, and the
parent waits for that line (with ``port=0`` the kernel picks the port, so no race for a port).
If the child exits or stays silent past ``timeout``, ``start()`` raises BrokerStartError with the
child's stderr. It is always stopped at the end: SIGTERM (clean shutdown, exit status 0), then
SIGKILL after ``stop(timeout)``.

Fault injection (``faults=True``): the child also opens ``fault.injection.listener`` on a free
loopback port and ``.faults`` talks to it (``RemoteFaults``: the same methods as the in-process
injector). Metrics (``metrics=True``): ``metrics.listeners`` on a free loopback port,
``.metrics_url`` and ``.scrape()``.

Schema registry (``schema_registry=True``): ``schema.registry.listeners`` on a free loopback
port, ``.schema_registry_url``.

Settings: ``overrides`` (``key=value``) over the test defaults of defaults.py
(``group.initial.rebalance.delay.ms=0``), over the broker's own defaults.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

from .defaults import with_test_defaults
from .remote import RemoteFaults, http_get

__all__ = ["BrokerProcess", "BrokerStartError"]

#: the directory holding the ``broker`` package the child must import
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LISTENING = re.compile(r"^minibroker listening on ([\d.]+):(\d+)")
_LISTENER = re.compile(r"^minibroker listener (\S+) \((\w+)\) on ([\d.]+):(\d+)")
_HTTP_LISTENING = re.compile(r"minibroker (metrics|fault injection|schema registry) listening on http://([\d.]+):(\d+)")


class BrokerStartError(RuntimeError):
    """The broker did not start; the message ends with its log."""


class BrokerProcess:
    def __init__(self, data_dir: str, overrides: Sequence[str] = (), port: int = 0,
                 log_level: str = "INFO", *, faults: bool = False, metrics: bool = False,
                 schema_registry: bool = False, extra_args: Sequence[str] = ()) -> None:
        self.data_dir = data_dir
        self.overrides = with_test_defaults(overrides)
        if faults:
            self.overrides.append("fault.injection.listener=http://127.0.0.1:0")
        if metrics:
            self.overrides.append("metrics.listeners=http://127.0.0.1:0")
        if schema_registry:
            self.overrides.append("schema.registry.listeners=http://127.0.0.1:0")
        self.requested_port = port
        self.log_level = log_level
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen[str] | None = None
        self.port = -1
        self.http_ports: dict[str, int] = {}
        #: with several listeners, each one's port by listener name
        self.listener_ports: dict[str, int] = {}
        self.output: list[str] = []
        self._reader: threading.Thread | None = None
        self._faults: RemoteFaults | None = None
        self._faults_used = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    bootstrap_servers = bootstrap

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not running"
        return self.proc.pid

    @property
    def metrics_url(self) -> str:
        if "metrics" not in self.http_ports:
            raise RuntimeError("this broker has no metrics listener (BrokerProcess(metrics=True))")
        return f"http://127.0.0.1:{self.http_ports['metrics']}/metrics"

    @property
    def schema_registry_url(self) -> str:
        if "schema registry" not in self.http_ports:
            raise RuntimeError("this broker has no schema registry (BrokerProcess(schema_registry=True))")
        return f"http://127.0.0.1:{self.http_ports['schema registry']}"

    def scrape(self) -> str:
        """The metrics endpoint's text (Prometheus exposition format)."""
        return http_get(self.metrics_url)

    @property
    def faults(self) -> RemoteFaults:
        if "fault injection" not in self.http_ports:
            raise RuntimeError("this broker has no fault injection listener (BrokerProcess(faults=True))")
        self._faults_used = True  # the pytest plugin clears the rules after a test that set any
        if self._faults is None or self._faults.url != f"http://127.0.0.1:{self.http_ports['fault injection']}/faults":
            self._faults = RemoteFaults("127.0.0.1", self.http_ports["fault injection"])
        return self._faults

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "broker", "serve", "--host", "127.0.0.1", "--port", str(self.requested_port),
               "--data-dir", self.data_dir, "--log-level", self.log_level]
        for o in self.overrides:
            cmd += ["--override", o]
        return cmd + self.extra_args

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.output = []
        self.http_ports = {}
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        done = threading.Event()  # the listening line, or the end of stderr (the child exited)

        def read() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                self.output.append(line)
                if done.is_set():
                    continue
                m = _HTTP_LISTENING.search(line)
                if m:
                    self.http_ports[m.group(1)] = int(m.group(3))
                m = _LISTENER.search(line)
                if m:
                    self.listener_ports[m.group(1)] = int(m.group(4))
                m = _LISTENING.search(line)
                if m:
                    self.port = int(m.group(2))
                    done.set()
            done.set()

        self._reader = threading.Thread(target=read, name="minibroker-stderr", daemon=True)
        self._reader.start()
        if not done.wait(timeout) or self.port < 0:
            rc = None
            if done.is_set():  # stderr ended: the child is exiting
                try:
                    rc = self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            self.kill()
            status = "" if rc is None else f" (exit status {rc})"
            raise BrokerStartError(f"broker did not start{status}; its log:\n" + self.log_text())
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
        """Starts the broker, unless it runs already (``with BrokerProcess(...).start() as b``:
        starting it again would leave the first process running, unstopped)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
