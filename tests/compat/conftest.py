"""Fixtures for the real-client tests: a topic name per test (each module shares one broker,
``module_broker`` from tests/conftest.py)."""

from __future__ import annotations

import re

import pytest


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name unique within the module: the test's name, made legal."""
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python 3.0 loads its JSON schemas with importlib.resources' deprecated helpers
    for what in ("read_text", "open_text"):
        config.addinivalue_line("filterwarnings", f"ignore:{what} is deprecated:DeprecationWarning")
