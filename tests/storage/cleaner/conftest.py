"""``cleaner_mode``: run a test module's cleanings in a cleaner thread and in a worker process
(``log.cleaner.mode``); modules opt in with ``pytestmark = pytest.mark.usefixtures("cleaner_mode")``
and build their cleaners with ``helpers.cleaner_config``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import helpers


@pytest.fixture(params=["thread", "process"])
def cleaner_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    helpers.CLEANER_MODE[0] = request.param
    try:
        yield request.param
    finally:
        helpers.CLEANER_MODE[0] = "thread"
