"""Tests for ``client/cli/groups.py`` and ``minibroker consume --group``: real subprocesses
against a broker process, as a user would run them."""

from __future__ import annotations

import re

import pytest

from client.sync import SyncConsumer, SyncProducer
from tests.client.cli.test_cli import mb, ok


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_consume_group_describe_reset_delete(module_broker, name):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", name, "--partitions", "2", *bs)
    with SyncProducer(module_broker.bootstrap) as p:
        for i in range(10):
            p.send(name, f"v{i}".encode(), partition=i % 2, timestamp_ms=1_700_000_000_000 + i * 1000)
    group = f"g-{name}"
    first = ok("consume", name, "--group", group, "--from-beginning", "--max-messages", "6", *bs).split()
    assert len(first) == 6
    assert group in ok("groups", "list", *bs).splitlines()
    assert [group, "Empty"] in rows(ok("groups", "list", "--state", *bs))
    desc = ok("groups", "describe", group, *bs)
    assert f"Consumer group '{group}' has no active members." in desc
    table = rows(desc)[1:]
    assert table[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                        "HOST", "CLIENT-ID"]
    assert sum(int(r[3]) for r in table[1:]) == 6 and sum(int(r[5]) for r in table[1:]) == 4
    assert all(r[4] == "5" and r[6:] == ["-", "-", "-"] for r in table[1:])

    # the rest, from the committed offsets: nothing printed twice
    second = ok("consume", name, "--group", group, "--max-messages", "4", *bs).split()
    assert sorted(first + second) == sorted(f"v{i}" for i in range(10))

    r = mb("groups", "reset-offsets", group, "--topic", name, "--to-earliest", *bs)
    assert r.returncode == 0 and b"--execute option is missing" in r.stderr
    assert rows(r.stdout.decode()) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                       [group, name, "0", "0"], [group, name, "1", "0"]]
    assert all(r[3] == "5" for r in rows(ok("groups", "describe", group, *bs))[2:])  # a dry run
    out = ok("groups", "reset-offsets", group, "--topic", f"{name}:1", "--to-datetime", "2023-11-14T22:13:26+00:00",
             "--execute", *bs)
    assert rows(out)[1] == [group, name, "1", "3"]  # partition 1 holds v1 v3 v5 v7 v9: v7 is the first at +6 s
    ok("groups", "reset-offsets", group, "--topic", f"{name}:0", "--to-offset", "1", "--execute", *bs)
    again = ok("consume", name, "--group", group, "--max-messages", "6", *bs).split()
    assert sorted(again) == ["v2", "v4", "v6", "v7", "v8", "v9"]

    with SyncConsumer(module_broker.bootstrap, group_id=group, client_id="cli-member",
                      heartbeat_interval_ms=500) as c:
        c.subscribe([name])
        while len(c.assignment()) < 2:
            c.poll(timeout_ms=100)
        members = rows(ok("groups", "describe", group, "--members", *bs))
        assert members[1][0] == group and members[1][2:] == ["-", members[1][3], "cli-member", "2",
                                                              f"{name}-0,{name}-1"]
        state = rows(ok("groups", "describe", group, "--state", *bs))
        assert state[0] == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert state[1] == [group, module_broker.bootstrap, "(0)", "range", "Stable", "1"]
        r = mb("groups", "reset-offsets", group, "--topic", name, "--to-latest", "--execute", *bs)
        assert r.returncode == 1 and b"active members" in r.stderr
        r = mb("groups", "delete", group, *bs)
        assert r.returncode == 1 and b"NON_EMPTY_GROUP" in r.stderr

    assert ok("groups", "delete", group, *bs) == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    r = mb("groups", "describe", group, *bs)
    assert r.returncode == 1 and b"does not exist" in r.stderr
    r = mb("consume", name, "--group", group, "--partition", "0", *bs)
    assert r.returncode == 1 and b"--partition cannot be used with --group" in r.stderr
    r = mb("groups", "reset-offsets", group, "--topic", name, "--to-datetime", "yesterday", *bs)
    assert r.returncode == 1 and b"not an ISO 8601" in r.stderr
