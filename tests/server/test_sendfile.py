"""Fetch record bytes leave by ``os.sendfile`` from the partition's ``.log`` (zero-copy:
the index lookup finds the position, the kernel copies the bytes), on uvloop and on the stock asyncio loop.

The broker runs in this process (in a thread with its own event loop) so the test can read
``broker.socket_server.SENDFILE_STATS`` and observe every ``os.sendfile`` call through a recording
wrapper that calls straight through to the real function.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest

from broker.broker import Broker
from broker.config import BrokerConfig
from broker.socket_server import SENDFILE_STATS
from client.protocol.api import ApiKey
from client.records import iter_batch_headers

from .wire import Conn, batch, create_topic, fetch, log_file, partition_response, produce, request_bytes


def _runners() -> list[Any]:
    out = [pytest.param(asyncio.run, id="asyncio")]
    try:
        import uvloop
    except ImportError:
        out.append(pytest.param(None, id="uvloop", marks=pytest.mark.skip(reason="uvloop is not installed")))
    else:
        out.append(pytest.param(uvloop.run, id="uvloop"))
    return out


class InProcessBroker:
    """``Broker`` on its own event loop in a daemon thread."""

    def __init__(self, data_dir: str, runner: Callable[..., Any]) -> None:
        self.cfg = BrokerConfig.load(extra={"log.dirs": data_dir, "listeners": "PLAINTEXT://127.0.0.1:0"})
        self.cfg.validate()
        self.runner = runner
        self.port = 0
        self.loop_name = ""
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            broker = Broker(self.cfg)
            self._loop = asyncio.get_running_loop()
            self.loop_name = type(self._loop).__module__
            self._stop = asyncio.Event()
            await broker.start()
            self.port = broker.port
            self._ready.set()
            await self._stop.wait()
            await broker.stop()

        try:
            self.runner(main())
        except BaseException as e:  # noqa: BLE001 - reported to the test thread
            self._error = e
            self._ready.set()

    def start(self) -> InProcessBroker:
        self._thread.start()
        assert self._ready.wait(20), "broker did not start"
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)
        assert not self._thread.is_alive(), "broker did not stop"
        if self._error is not None:
            raise self._error


@pytest.fixture(params=_runners())
def inproc(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[InProcessBroker]:
    b = InProcessBroker(str(tmp_path / "data"), request.param).start()
    try:
        yield b
    finally:
        b.stop()


class Call(NamedTuple):
    out_fd: int
    in_fd: int
    offset: int
    count: int
    sent: int  # what the real call returned (0 when it raised, e.g. EAGAIN)
    path: str  # the file behind in_fd


@pytest.fixture
def sendfile_calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every os.sendfile call, observed only: the real os.sendfile does the work."""
    real = os.sendfile
    calls: list[Call] = []

    def recording_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        try:
            path = os.readlink(f"/proc/self/fd/{in_fd}")
        except OSError:
            path = "?"
        sent = 0
        try:
            sent = real(out_fd, in_fd, offset, count)
            return sent
        finally:
            calls.append(Call(out_fd, in_fd, -1 if offset is None else offset, count, sent, path))

    monkeypatch.setattr(os, "sendfile", recording_sendfile)
    return calls


@pytest.mark.parametrize("version", [4, 11, 12, 13, 17])  # 12+: flexible; 13+: topics by id
def test_fetch_records_go_through_sendfile(inproc: InProcessBroker, tmp_path: Any,
                                           sendfile_calls: list[Call], version: int) -> None:
    if inproc.runner is not asyncio.run:
        assert inproc.loop_name.startswith("uvloop")
    with Conn(inproc.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("sf", 2))["topics"][0]["error_code"] == 0
        for i in range(6):
            p = partition_response(c.call(ApiKey.PRODUCE, 7, produce("sf", i % 2, batch(2 + i, value_size=300 + i))))
            assert p["error_code"] == 0
        path = log_file(str(tmp_path / "data"), "sf", 0)
        with open(path, "rb") as f:
            on_disk = f.read()
        headers = list(iter_batch_headers(on_disk))
        assert [h.base_offset for h in headers] == [0, 2, 6]
        topic_id = c.call(ApiKey.METADATA, 12, {"topics": [{"name": "sf"}]})["topics"][0]["topic_id"]

        def request(offset: int) -> dict[str, Any]:
            body = fetch("sf", 0, offset)
            body["topics"][0]["topic_id"] = topic_id  # what v13+ send instead of the name
            return body

        for start_batch in range(3):
            sendfile_calls.clear()
            before = dict(SENDFILE_STATS)
            fetch_offset = headers[start_batch].base_offset + 1  # inside the batch
            resp = c.call(ApiKey.FETCH, version, request(fetch_offset))
            assert resp["responses"][0]["topic_id" if version >= 13 else "topic"] == (
                topic_id if version >= 13 else "sf")
            p = partition_response(resp, "partitions")
            pos = sum(h.size_in_bytes for h in headers[:start_batch])
            expected = on_disk[pos:]
            assert p["error_code"] == 0
            assert p["records"] == expected  # the stored .log bytes, from the batch holding the offset
            # The last bytes of the reply left by sendfile, but the broker's thread counts them
            # after the call returns: a reply on the same connection is the barrier.
            c.call(ApiKey.API_VERSIONS, 0, {})
            # the counters moved by exactly the record bytes fetched
            assert SENDFILE_STATS["bytes"] - before["bytes"] == len(expected)
            assert SENDFILE_STATS["calls"] - before["calls"] >= 1
            # and every byte came from this partition's .log, at the batch positions
            assert sendfile_calls and all(cl.path == path for cl in sendfile_calls)
            assert len({cl.in_fd for cl in sendfile_calls}) == 1  # the segment's open file
            covered = pos
            for cl in sendfile_calls:
                assert cl.offset == covered  # contiguous; a retry after EAGAIN continues where it left
                assert cl.count == len(on_disk) - covered
                covered += cl.sent
            assert covered == len(on_disk)

        # a fetch with no records sends nothing by sendfile
        sendfile_calls.clear()
        before = dict(SENDFILE_STATS)
        p = partition_response(c.call(ApiKey.FETCH, 11, fetch("sf", 0, 12)), "partitions")  # the log end
        assert p["records"] == b"" and p["error_code"] == 0
        c.call(ApiKey.API_VERSIONS, 0, {})
        assert SENDFILE_STATS == before and sendfile_calls == []


def test_large_fetch_under_backpressure(inproc: InProcessBroker, tmp_path: Any,
                                        sendfile_calls: list[Call]) -> None:
    """Several MB through sendfile while the reader is slower than the writer: EAGAIN is
    handled, the bytes arrive complete and in order, the counters match."""
    with Conn(inproc.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("big"))["topics"][0]["error_code"] == 0
        for i in range(40):
            records = batch(10, value_size=20_000, tag=bytes([65 + i % 26]))
            assert partition_response(c.call(ApiKey.PRODUCE, 7, produce("big", 0, records)))["error_code"] == 0
        path = log_file(str(tmp_path / "data"), "big")
        with open(path, "rb") as f:
            on_disk = f.read()
        assert len(on_disk) > 7_000_000
        before = dict(SENDFILE_STATS)
        sendfile_calls.clear()
        req = fetch("big", 0, 0, partition_max_bytes=64 << 20)
        c.sock.sendall(b"".join(request_bytes(ApiKey.FETCH, 11, 100 + i, req) for i in range(3)))
        time.sleep(0.3)  # let the broker fill the socket buffers and hit EAGAIN
        for i in range(3):
            cid, r = c.recv(ApiKey.FETCH, 11)
            assert cid == 100 + i
            assert partition_response(r, "partitions")["records"] == on_disk
        c.call(ApiKey.API_VERSIONS, 0, {})  # barrier: see above
        assert SENDFILE_STATS["bytes"] - before["bytes"] == 3 * len(on_disk)
        assert all(cl.path == path for cl in sendfile_calls)
        assert sum(cl.sent for cl in sendfile_calls) == 3 * len(on_disk)
        # the socket was full at times: partial sends (or EAGAIN) were resumed at the right offset
        assert any(cl.sent < cl.count for cl in sendfile_calls)
        for prev, cl in zip(sendfile_calls, sendfile_calls[1:]):
            if prev.sent < prev.count:
                assert (cl.offset, cl.count) == (prev.offset + prev.sent, prev.count - prev.sent)


def test_pipelined_long_polls_in_order(inproc: InProcessBroker) -> None:
    """The ordering guarantees hold on both loops: long-polling Fetches woken by produces that
    arrive behind them in the same pipeline, replies in request order."""
    with Conn(inproc.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("order"))["topics"][0]["error_code"] == 0
        reqs = []
        for i in range(10):
            reqs.append((ApiKey.FETCH, 11, fetch("order", 0, i, max_wait_ms=5000, min_bytes=1)))
            reqs.append((ApiKey.PRODUCE, 7, produce("order", 0, batch(1), acks=-1 if i % 2 else 1)))
        c.sock.sendall(b"".join(request_bytes(k, v, 500 + i, body) for i, (k, v, body) in enumerate(reqs)))
        t0 = time.monotonic()
        for i, (k, v, _) in enumerate(reqs):
            cid, r = c.recv(k, v)
            assert cid == 500 + i
            if k == ApiKey.FETCH:
                assert partition_response(r, "partitions")["records"] != b""
            else:
                assert partition_response(r)["base_offset"] == i // 2
        assert time.monotonic() - t0 < 4  # a lost wake-up costs a whole max_wait_ms (5 s)
