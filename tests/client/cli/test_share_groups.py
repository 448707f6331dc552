"""Tests for ``client/cli/share_groups.py``: ``minibroker share-groups`` in real subprocesses
against a broker process, as a user would run it."""

from __future__ import annotations

import asyncio
import re

import pytest

from client.share_consumer import ShareConsumer
from client.sync import SyncProducer
from tests.client.cli.test_cli import mb, ok


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_reset_describe_delete(module_broker, name):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", name, "--partitions", "2", *bs)
    with SyncProducer(module_broker.bootstrap) as p:
        for i in range(10):
            p.send(name, f"v{i}".encode(), partition=i % 2)
    g = f"sg-{name}"
    dry = mb("share-groups", "--reset-offsets", "--group", g, "--topic", name, "--to-earliest", *bs)
    assert dry.returncode == 0 and b"--execute option is missing" in dry.stderr
    assert rows(dry.stdout.decode()) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                         [g, name, "0", "0"], [g, name, "1", "0"]]
    missing = mb("share-groups", "--describe", "--group", g, *bs)
    assert missing.returncode == 1 and b"does not exist" in missing.stderr
    ok("share-groups", "--reset-offsets", "--group", g, "--topic", f"{name}:0", "--to-offset", "2", "--execute", *bs)
    ok("share-groups", "--reset-offsets", "--group", g, "--topic", f"{name}:1", "--to-latest", "--execute", *bs)
    desc = ok("share-groups", "--describe", "--group", g, *bs)
    assert f"Share group '{g}' has no active members." in desc
    assert rows(desc)[1:] == [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
                              [g, name, "0", "2", "3"], [g, name, "1", "5", "0"]]

    async def member_running() -> None:
        async with ShareConsumer(module_broker.bootstrap, group_id=g, fetch_max_wait_ms=100) as c:
            c.subscribe([name])
            got = []
            for _ in range(40):
                got += await c.poll(timeout_ms=200)
                if len(got) >= 3:
                    break
            assert sorted(r.offset for r in got) == [2, 3, 4]
            await asyncio.to_thread(check_with_member, c.member_id)

    def check_with_member(member_id: str) -> None:
        assert g in ok("share-groups", "--list", *bs).split()
        assert [g, "Stable"] in rows(ok("share-groups", "--list", "--state", *bs))
        members = rows(ok("share-groups", "--describe", "--group", g, "--members", *bs))
        assert members[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert members[1][1] == member_id and members[1][4] == "2"
        state = rows(ok("share-groups", "--describe", "--group", g, "--state", *bs))
        assert state[1][0] == g and state[1][-2:] == ["Stable", "1"]
        busy = mb("share-groups", "--delete", "--group", g, *bs)
        assert busy.returncode == 1 and b"NON_EMPTY_GROUP" in busy.stderr.upper().replace(b" ", b"_")

    asyncio.run(member_running())
    desc = ok("share-groups", "--describe", "--group", g, "--offsets", *bs)
    assert rows(desc)[-2:] == [[g, name, "0", "5", "0"], [g, name, "1", "5", "0"]]
    out = ok("share-groups", "--delete-offsets", "--group", g, "--topic", name, *bs)
    assert rows(out) == [["TOPIC", "STATUS"], [name, "Successful"]]
    assert ok("share-groups", "--delete", "--group", g, *bs).strip() == \
        f"Deletion of requested share groups ('{g}') was successful."
    assert g not in ok("share-groups", "--list", *bs).split()
