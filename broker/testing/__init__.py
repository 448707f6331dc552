"""minibroker in your tests: a real Kafka-protocol broker on a free port of 127.0.0.1, with
its data in a temporary directory, started in well under a second.

Two kinds, the same surface (``bootstrap_servers``, ``port``, ``faults``, ``stop()``,
``scrape()`` with metrics on):

- ``kind="process"`` (the default): ``python -m broker serve`` in a child process
  (process.BrokerProcess). Isolated from the test: its own GIL, killable, restartable, its CPU
  measurable. Pick it for load, crash and restart tests, and whenever unsure. Fault rules go
  through a loopback control listener that only this harness opens.
- ``kind="inprocess"``: the broker on its own event loop in a thread of the test process
  (inprocess.InProcessBroker). Starts faster (no interpreter start-up), its state is in reach
  (``.broker``, ``.call(fn)``) and fault rules are plain method calls; but it shares the GIL
  with the test, so a CPU-bound test slows it down.

Both start the broker with the test defaults of defaults.py under the test's own settings:
``group.initial.rebalance.delay.ms=0`` (the broker's and Kafka's default is 3000), so a fresh
group forms as soon as its first member joins.

For unittest and scripts::

    import broker.testing
    with broker.testing.run() as b:
        producer = Producer({"bootstrap.servers": b.bootstrap_servers})
        b.faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=2)

For pytest, the plugin (``broker.testing.plugin``, registered through the ``pytest11`` entry
point, so installing minibroker is enough) provides the ``minibroker``, ``minibroker_topic``
and ``minibroker_factory`` fixtures.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .admin import AdminError, create_topic, delete_topic
from .faults import Fault, FaultControl, FaultInjector
from .inprocess import InProcessBroker
from .process import BrokerProcess, BrokerStartError
from .remote import RemoteFaults, parse_metrics

__all__ = ["run", "BrokerProcess", "InProcessBroker", "BrokerStartError", "Fault", "FaultControl",
           "FaultInjector", "RemoteFaults", "parse_metrics", "start", "create_topic", "delete_topic", "AdminError"]

KINDS = ("process", "inprocess")


def _overrides(overrides: Sequence[str] | Mapping[str, Any] | None) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]
    return list(overrides)


def start(kind: str = "process", data_dir: str | None = None,
          overrides: Sequence[str] | Mapping[str, Any] | None = None, *, faults: bool = True,
          metrics: bool = False, timeout: float = 20.0) -> BrokerProcess | InProcessBroker:
    """A started broker (the caller stops it). ``overrides``: broker properties by Kafka's
    names, as ``["num.partitions=3"]`` or ``{"num.partitions": 3}``. ``faults``: open the fault
    injection control (always available in-process). ``metrics``: serve /metrics on a free
    loopback port."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if data_dir is None:
        raise ValueError("data_dir is required (run() makes a temporary one)")
    props = _overrides(overrides)
    b: BrokerProcess | InProcessBroker
    if kind == "process":
        b = BrokerProcess(data_dir, props, faults=faults, metrics=metrics)
    else:
        b = InProcessBroker(data_dir, props, metrics=metrics)
    return b.start(timeout)


@contextlib.contextmanager
def run(kind: str = "process", overrides: Sequence[str] | Mapping[str, Any] | None = None, *,
        data_dir: str | None = None, faults: bool = True, metrics: bool = False,
        timeout: float = 20.0) -> Iterator[BrokerProcess | InProcessBroker]:
    """``with run() as b:`` a broker for the block, on a free port of 127.0.0.1, with its data
    in a temporary directory removed afterwards (unless ``data_dir`` is given). Raises
    RuntimeError at exit if the broker did not shut down cleanly."""
    tmp = None
    if data_dir is None:
        tmp = data_dir = tempfile.mkdtemp(prefix="minibroker-")
    try:
        b = start(kind, data_dir, overrides, faults=faults, metrics=metrics, timeout=timeout)
        try:
            yield b
        finally:
            rc = b.stop()
            if rc != 0:
                log = b.log_text() if isinstance(b, BrokerProcess) else ""
                raise RuntimeError(f"broker exited with status {rc}:\n{log}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
