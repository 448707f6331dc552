"""The ACL file after a crash (issue 32): a broker process SIGKILLed while CreateAcls and
DeleteAcls keep changing the set restarts with the set of the last acknowledged change or of
the one in flight, never a mix or an empty set; and a leftover ``acls.json.tmp`` (the crash
points of ``atomic_write`` before its rename: a truncated temp file, or a complete one holding
a set that was never acknowledged) is ignored and removed at start-up. The file format and the
in-process cases are tests/authorizer/test_acl_store.py's."""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from broker.authorizer.acl_store import ACLS_FILE
from client import Admin, KafkaError
from client.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.slow

#: PLAINTEXT connections are User:ANONYMOUS, here a super user (the ACLs are only data)
OVERRIDES = ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
             "super.users=User:ANONYMOUS"]


def binding(i: int) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, f"t{i:04d}", PatternType.LITERAL),
                      AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW))


def of_topic(i: int) -> AclBindingFilter:
    return AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, f"t{i:04d}", PatternType.LITERAL))


async def stored(bootstrap: str) -> list[int]:
    async with Admin(bootstrap) as admin:
        return sorted(int(b.pattern.name[1:]) for b in await admin.describe_acls())


async def change_until_killed(b: BrokerProcess, indexes: list[int], create: bool, seed: int) -> int:
    """Create (or delete) the ACLs of ``indexes`` one request each until a SIGKILL at a random
    moment; returns how many changes were acknowledged."""
    acked = 0

    async def changes() -> None:
        nonlocal acked
        async with Admin(b.bootstrap, request_timeout_ms=5000) as admin:
            for i in indexes:
                if create:
                    await admin.create_acls([binding(i)])
                else:
                    await admin.delete_acls([of_topic(i)])
                acked += 1

    task = asyncio.ensure_future(changes())
    await asyncio.sleep(random.Random(seed).uniform(0.2, 0.6))
    assert not task.done(), "every change was made before the kill: give it more to do"
    b.kill()
    task.cancel()  # its request in flight would only time out
    try:
        await task
    except (asyncio.CancelledError, KafkaError, OSError):  # cancelled, or the connection dropped first
        pass
    return acked


async def test_sigkill_during_acl_changes_leaves_the_old_or_the_new_set(tmp_path) -> None:
    b = BrokerProcess(str(tmp_path / "data"), OVERRIDES).start()
    try:
        expected: list[int] = []
        for round_ in range(3):  # creates: the set is 0..n-1 with n the acked count or one more
            start = len(expected)
            acked = await change_until_killed(b, list(range(start, start + 5000)), True, round_)
            assert acked > 0
            b.start()
            got = await stored(b.bootstrap)
            assert got in (list(range(start + acked)), list(range(start + acked + 1))), (acked, got[-3:])
            expected = got
        # deletes, lowest first: what is left is a suffix of it
        acked = await change_until_killed(b, list(expected), False, 7)
        assert acked > 0
        b.start()
        got = await stored(b.bootstrap)
        assert got in (expected[acked:], expected[acked + 1:]), (acked, got[:3])
    finally:
        assert b.stop() == 0, b.log_text()


async def test_leftover_temp_file_after_sigkill_is_ignored(tmp_path) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data, OVERRIDES).start()
    try:
        async with Admin(b.bootstrap) as admin:
            await admin.create_acls([binding(0), binding(1)])
        with open(os.path.join(data, ACLS_FILE), "rb") as f:
            acknowledged = f.read()
        b.kill()
        tmp = os.path.join(data, ACLS_FILE + ".tmp")
        # the crash points of atomic_write before its rename: part of the temp file written,
        # or all of it (fsynced, not yet renamed) with a set no client was told of
        for torn in (acknowledged[:len(acknowledged) // 2],
                     acknowledged.replace(b'"t0001"', b'"t0002"').replace(b'"t0000"', b'"t0003"')):
            with open(tmp, "wb") as f:
                f.write(torn)
            b.start()
            assert await stored(b.bootstrap) == [0, 1]
            assert not os.path.exists(tmp)
            b.kill()
        b.start()
        async with Admin(b.bootstrap) as admin:  # and the store still takes changes
            await admin.create_acls([binding(2)])
        assert await stored(b.bootstrap) == [0, 1, 2]
    finally:
        assert b.stop() == 0, b.log_text()
