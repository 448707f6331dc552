"""A broker with Kafka's authorizer on (``StandardAuthorizer``, ``super.users=User:ANONYMOUS`` so
that a PLAINTEXT test client may manage ACLs, as Kafka's AclCommandTest runs), for the ACL
round trips of tests/client/test_admin_acls.py and tests/client/cli/test_acls.py.

Until the broker enforces ACLs it refuses ``authorizer.class.name`` at start-up, or answers the
ACL APIs SECURITY_DISABLED: those tests are then skipped, saying which, and nothing else is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from client import Admin
from client.errors import SecurityDisabledError
from tests.broker_process import BrokerProcess, BrokerStartError

AUTHORIZER_OVERRIDES = ("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        "super.users=User:ANONYMOUS")


def authorizer_broker(data_dir: str) -> Iterator[BrokerProcess]:
    """Yield a started broker with the authorizer on, or skip when this broker has none."""
    try:
        b = BrokerProcess(data_dir, overrides=AUTHORIZER_OVERRIDES).start()
    except BrokerStartError as e:
        if "authorizer.class.name" in str(e):
            pytest.skip("the broker refuses authorizer.class.name (no authorizer yet: issue 32's broker side)")
        raise

    async def answers_security_disabled() -> bool:
        async with Admin(b.bootstrap) as admin:
            try:
                await admin.describe_acls()
            except SecurityDisabledError:
                return True
        return False

    try:
        if asyncio.run(answers_security_disabled()):
            pytest.skip("the broker answers the ACL APIs SECURITY_DISABLED with authorizer.class.name set")
        yield b
    finally:
        rc = b.stop()
        assert rc == 0, f"broker exited with {rc}:\n{b.log_text()}"
