"""Creating many topics or partitions at once (broker/handlers/topic_creation.py and the open
files budget of broker/storage/fd_budget.py), against broker processes:

- one Metadata request naming hundreds of new topics creates them off the event loop, chunk by
  chunk: another client's requests are answered meanwhile (before, the loop was held for the
  whole creation: 57 s for 8,000 topics);
- with a low open files limit (``prlimit``), creation past the budget is refused with
  POLICY_VIOLATION (CreateTopics, CreatePartitions) or leaves the topic uncreated (Metadata),
  and the broker restarts over what it accepted (before, it ran out of descriptors and could
  not start again: ``Too many open files``).
"""

from __future__ import annotations

import shutil

import pytest

from broker.testing import BrokerProcess
from broker.testing.wire import Conn, create_topic, pinger
from client.protocol.api import ApiKey
from client.protocol.api import ErrorCode as E

pytestmark = pytest.mark.slow


class LimitedBroker(BrokerProcess):
    """A broker whose open files limit (soft and hard) is ``nofile``."""

    def __init__(self, data_dir: str, nofile: int) -> None:
        super().__init__(data_dir)
        self.nofile = nofile

    def command(self) -> list[str]:
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", *super().command()]


def metadata(c: Conn, names: list[str]) -> dict[str, int]:
    resp = c.call(ApiKey.METADATA, 4, {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": True})
    return {t["name"]: t["error_code"] for t in resp["topics"]}


def test_a_metadata_request_for_many_new_topics_does_not_hold_up_others(tmp_path) -> None:
    names = [f"new-{i}" for i in range(600)]
    with BrokerProcess(str(tmp_path / "data")) as b:
        with pinger(b.port, interval=0.005) as pings, Conn(b.port, timeout=120) as c:
            assert metadata(c, names) == dict.fromkeys(names, 0)
        assert pings.answered > 3 and pings.worst < 1.0, (pings.answered, pings.worst)
        log = b.log_text()
    assert "created 2" in log or "created 1" in log  # one line per chunk, not one per topic
    with BrokerProcess(str(tmp_path / "data")) as b, Conn(b.port) as c:
        assert metadata(c, names[:3] + names[-3:]) == dict.fromkeys(names[:3] + names[-3:], 0)


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux's prlimit")
def test_creation_past_the_open_files_budget_is_refused_and_the_broker_restarts(tmp_path) -> None:
    data = str(tmp_path / "data")
    # 4096 descriptors: reserve 1024, LRU 1024, so (4096 - 2048) / 3 = 682 partitions
    with LimitedBroker(data, 4096) as b, Conn(b.port, timeout=120) as c:
        got = metadata(c, [f"m{i}" for i in range(800)])
        created = [n for n, code in got.items() if code == 0]
        assert len(created) == 682 and set(got.values()) == {0, E.UNKNOWN_TOPIC_OR_PARTITION}
        resp = c.call(ApiKey.CREATE_TOPICS, 4, create_topic("big", 10))
        assert resp["topics"][0]["error_code"] == E.POLICY_VIOLATION
        assert "open files limit" in resp["topics"][0]["error_message"]
        resp = c.call(ApiKey.CREATE_PARTITIONS, 1, {"topics": [{"name": "m0", "count": 5, "assignments": None}],
                                                    "timeout_ms": 10000, "validate_only": False})
        assert resp["results"][0]["error_code"] == E.POLICY_VIOLATION
    # what it accepted, it can reopen
    with LimitedBroker(data, 4096) as b, Conn(b.port) as c:
        assert set(metadata(c, created).values()) == {0}
        assert "Too many open files" not in b.log_text()


def test_create_partitions_in_chunks(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data")) as b, Conn(b.port, timeout=120) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic("grow", 1))["topics"][0]["error_code"] == 0
        resp = c.call(ApiKey.CREATE_PARTITIONS, 1, {"topics": [{"name": "grow", "count": 700, "assignments": None}],
                                                    "timeout_ms": 60000, "validate_only": False})
        assert resp["results"][0]["error_code"] == 0
        md = c.call(ApiKey.METADATA, 4, {"topics": [{"name": "grow"}], "allow_auto_topic_creation": False})
        assert len(md["topics"][0]["partitions"]) == 700
    with BrokerProcess(str(tmp_path / "data")) as b, Conn(b.port) as c:
        md = c.call(ApiKey.METADATA, 4, {"topics": [{"name": "grow"}], "allow_auto_topic_creation": False})
        assert [p["error_code"] for p in md["topics"][0]["partitions"]] == [0] * 700
