"""Fixtures shared by the whole suite: a real broker process on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broker_process import BrokerProcess


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
