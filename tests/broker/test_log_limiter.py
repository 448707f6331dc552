"""broker/log_limiter.py: the log lines a remote peer can trigger are rate-limited per peer
host and cause, with a count; memory stays bounded."""

from __future__ import annotations

import logging

from broker.log_limiter import LogLimiter
from client.protocol.api import ApiKey
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, batch, create_topic, metadata, partition_response, produce


def test_a_client_retrying_an_unsupported_version_logs_a_handful_of_lines(tmp_path) -> None:
    """500 connections that each send a Produce v99 (what pykafka did in a loop: 1,089 WARNING
    lines in a few seconds), then 200 with an unknown API key: one line of each cause at once,
    the rest counted, and the count logged once (at the latest at shutdown). The broker keeps
    answering another client."""
    with BrokerProcess(str(tmp_path / "d")) as b:
        for key, version, n in ((int(ApiKey.PRODUCE), 99, 500), (9999, 0, 200)):
            for _ in range(n):
                with Conn(b.port) as c:
                    c.send(key, version, b"")
                    assert c.is_closed_by_peer()
        with Conn(b.port) as c:
            assert c.call(ApiKey.METADATA, 4, metadata(None))["topics"] == []
        assert b.stop() == 0
        lines = b.log_text().splitlines()
    unsupported = [line for line in lines if "unsupported version 99 of API PRODUCE" in line]
    unknown = [line for line in lines if "unknown API key 9999" in line]
    assert 1 <= len(unsupported) <= 3 and 1 <= len(unknown) <= 3, "\n".join(unsupported + unknown)
    counted = [line for line in unsupported if "more like this from 127.0.0.1 in the last" in line]
    assert counted, "\n".join(unsupported)
    # every one of the 500 is accounted for: the lines logged at once, and the counts (each of
    # which includes the line that carries it)
    at_once = len(unsupported) - len(counted)
    assert at_once + sum(int(line.split("(")[-1].split()[0]) for line in counted) == 500
    assert any("more like this from 127.0.0.1" in line for line in unknown)


def test_a_producer_retrying_a_rejected_produce_logs_a_handful_of_lines(tmp_path) -> None:
    """An acks=all producer retrying against min.insync.replicas=2 (NOT_ENOUGH_REPLICAS, a line
    per request before): the rejections of one partition are counted, not each logged."""
    with BrokerProcess(str(tmp_path / "d")) as b:
        with Conn(b.port) as c:
            made = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("strict", 1, {"min.insync.replicas": "2"}))
            assert made["topics"][0]["error_code"] == 0
            for _ in range(300):
                got = partition_response(c.call(ApiKey.PRODUCE, 7, produce("strict", 0, batch(1), acks=-1)))
                assert got["error_code"] == 19  # NOT_ENOUGH_REPLICAS
        assert b.stop() == 0
        rejected = [line for line in b.log_text().splitlines() if "produce to strict-0 rejected" in line]
    assert 1 <= len(rejected) <= 3, "\n".join(rejected)
    assert any("more like this from producers to strict-0" in line for line in rejected), "\n".join(rejected)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_keys_are_bounded_and_no_count_is_lost(caplog) -> None:
    """Without an event loop (no timer), a count goes out with the key's next line after the
    window, or when the key is evicted to keep at most max_keys."""
    log = logging.getLogger("test.log_limiter")
    clock = _Clock()
    limiter = LogLimiter(log, interval=10.0, max_keys=2, clock=clock)
    with caplog.at_level(logging.INFO, logger="test.log_limiter"):
        for _ in range(5):
            limiter.warning("10.0.0.1", "bad", "bad thing from %s", "10.0.0.1:1")
        limiter.warning("10.0.0.2", "bad", "bad thing from %s", "10.0.0.2:1")
        limiter.info("10.0.0.2", "bad", "again from %s", "10.0.0.2:2")  # counted
        assert [r.getMessage() for r in caplog.records] == ["bad thing from 10.0.0.1:1", "bad thing from 10.0.0.2:1"]
        clock.now = 11.0
        limiter.warning("10.0.0.1", "bad", "bad thing from %s", "10.0.0.1:2")  # the window ended
        assert [r.getMessage() for r in caplog.records[2:]] == [
            "bad thing from 10.0.0.1:1 (4 more like this from 10.0.0.1 in the last 11 s)",
            "bad thing from 10.0.0.1:2"]
        limiter.warning("10.0.0.3", "bad", "bad thing from %s", "10.0.0.3:1")  # evicts 10.0.0.2, least recent
        assert len(limiter) == 2
        assert [r.getMessage() for r in caplog.records[4:]] == [
            "again from 10.0.0.2:2 (1 more like this from 10.0.0.2 in the last 11 s)", "bad thing from 10.0.0.3:1"]
        limiter.warning("10.0.0.1", "other", "another cause")  # another cause of the same host: a key of its own
        assert caplog.records[-1].getMessage() == "another cause"


def test_the_count_goes_out_when_the_window_ends_on_the_event_loop(caplog) -> None:
    """On an event loop, the end of a window with lines counted logs them without waiting for
    the key's next line."""
    import asyncio

    log = logging.getLogger("test.log_limiter.loop")

    async def main() -> None:
        limiter = LogLimiter(log, interval=0.05)
        for i in range(4):
            limiter.warning("10.0.0.9", "bad", "bad thing %d", i)
        for _ in range(200):  # up to ~2 s for the timer to fire
            if len(caplog.records) == 2:
                break
            await asyncio.sleep(0.01)

    with caplog.at_level(logging.WARNING, logger="test.log_limiter.loop"):
        asyncio.run(main())
    assert [r.getMessage() for r in caplog.records] == [
        "bad thing 0", "bad thing 3 (3 more like this from 10.0.0.9 in the last 1 s)"]
