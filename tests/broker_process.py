"""The project's tests use the broker harness users get (``broker.testing.BrokerProcess``);
``REPO`` is the repository root, for tests that run its scripts."""

import os

from broker.testing.process import BrokerProcess, BrokerStartError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

__all__ = ["REPO", "BrokerProcess", "BrokerStartError"]
