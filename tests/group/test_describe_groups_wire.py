"""DescribeGroups over the wire (broker/handlers/describe_groups.py): a group that does not
exist is "Dead" without an error up to v5 and GROUP_ID_NOT_FOUND with Kafka's message from v6
(KIP-1043); a group with committed offsets and no members is "Empty" in every version; our
Admin reads v6's answer as Kafka 3.9's "Dead"."""

from __future__ import annotations

import asyncio

from broker.testing import BrokerProcess, create_topic
from client import Admin
from client.protocol.api import ApiKey, ErrorCode
from tests.group.test_offset_fetch_groups import commit
from tests.server.wire import Conn


def test_unknown_group_by_version(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap_servers, "described", 1)
    with Conn(broker.port) as c:
        commit(c, "described-empty", {("described", 0): (5, -1, "")})
        for version in range(0, 7):
            missing, empty = c.call(ApiKey.DESCRIBE_GROUPS, version, {
                "groups": ["described-never", "described-empty"], "include_authorized_operations": False})["groups"]
            assert (empty["error_code"], empty["group_state"]) == (0, "Empty"), version
            if version < 6:
                assert (missing["error_code"], missing["group_state"]) == (0, "Dead"), version
            else:
                assert (missing["group_id"], missing["error_code"], missing["error_message"], missing["members"]) == \
                    ("described-never", ErrorCode.GROUP_ID_NOT_FOUND, "Group described-never not found.", [])
                assert empty["error_message"] is None


def test_our_admin_describes_a_missing_group_as_dead(broker: BrokerProcess) -> None:
    async def go() -> str:
        async with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
            return (await admin.describe_groups(["described-nobody"]))["described-nobody"].state
    assert asyncio.run(go()) == "Dead"
