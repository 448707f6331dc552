"""Fixtures shared by the whole suite: a real broker process on a free port; and the markers by
axis, given by directory: every test under tests/compat/ is ``compat`` (other Kafka clients
against the broker), every test under tests/spark/ is ``spark`` (a local Spark). ``slow`` is set
by the modules themselves. ``scripts/test -m "not spark and not slow"`` is the quick loop
without a JVM."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.broker_process import BrokerProcess

# Property tests check results, not speed: no per-example deadline (Hypothesis' default, 200 ms,
# fails examples on a loaded machine: CI shares two cores with whatever else runs).
settings.register_profile("minibroker", deadline=None)
settings.load_profile("minibroker")

_AXES = {"compat": os.path.join("tests", "compat") + os.sep, "spark": os.path.join("tests", "spark") + os.sep}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = str(config.rootpath) + os.sep
    for item in items:
        path = str(item.path).removeprefix(root)
        for marker, prefix in _AXES.items():
            if path.startswith(prefix):
                item.add_marker(marker)


@pytest.fixture
def broker(tmp_path) -> Iterator[BrokerProcess]:
    """A fresh broker (empty data dir) for one test; stopped cleanly afterwards, and the test
    fails if it did not exit 0."""
    b = BrokerProcess(str(tmp_path / "data")).start()
    try:
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"


@pytest.fixture(scope="module")
def module_broker(request, tmp_path_factory) -> Iterator[BrokerProcess]:
    """One broker shared by a test module (tests use distinct topic names), with the module's
    ``BROKER_OVERRIDES`` (``key=value`` strings) if it has any."""
    overrides = getattr(request.module, "BROKER_OVERRIDES", ())
    b = BrokerProcess(str(tmp_path_factory.mktemp("broker") / "data"), overrides=overrides).start()
    try:
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"
