"""Settings the test harnesses (BrokerProcess, InProcessBroker) start a broker with unless the
test sets them: the few where a test suite wants the opposite of a production default.

- ``group.initial.rebalance.delay.ms=0`` (the broker's default is Kafka's, 3000). A fresh
  group's first generation then forms as soon as its first member joins instead of 3 s later,
  so a suite that creates many groups does not wait 3 s for each. Container images of Kafka
  made for tests commonly set the same. A test that wants Kafka's behaviour (members that
  start together join one generation) passes ``group.initial.rebalance.delay.ms=3000``.
"""

from __future__ import annotations

from collections.abc import Iterable

TEST_DEFAULTS: dict[str, str] = {"group.initial.rebalance.delay.ms": "0"}


def with_test_defaults(overrides: Iterable[str]) -> list[str]:
    """``overrides`` (``key=value`` strings) preceded by the test defaults they do not set."""
    given = list(overrides)
    keys = {o.split("=", 1)[0] for o in given}
    return [f"{k}={v}" for k, v in TEST_DEFAULTS.items() if k not in keys] + given
