"""broker/http_listener.py on a real broker: routes, bounds, bad requests answered or closed
without harming the listener; idle and slow connections closed, and never in the way of
/healthz; listener syntax."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

import broker.testing as bt
from broker.http_listener import MAX_BODY, MAX_CONNECTIONS, parse_http_listener


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bt.BrokerProcess]:
    p = bt.BrokerProcess(str(tmp_path_factory.mktemp("http") / "data"), faults=True, metrics=True).start()
    try:
        yield p
    finally:
        assert p.stop() == 0, p.log_text()


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_routes(b: bt.BrokerProcess) -> None:
    m, f = b.http_ports["metrics"], b.http_ports["fault injection"]
    assert raw(m, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
    assert raw(m, b"GET /nope HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 ")
    assert raw(m, b"GET /faults HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 "), "no fault control on the metrics port"
    assert raw(f, b"GET /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 "), "no metrics on the control port"
    assert raw(f, b"PUT /faults HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
    reply = raw(m, b"GET /metrics?x=1 HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\nConnection: close\r\n" in reply
    assert b"kafka_brokers 1.0" in reply


def test_bad_requests(b: bt.BrokerProcess) -> None:
    f = b.http_ports["fault injection"]
    assert raw(f, b"BANANA\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw(f, b"POST /faults HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1)).startswith(b"HTTP/1.1 413 ")
    assert raw(f, b"POST /faults HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope").startswith(b"HTTP/1.1 400 ")
    assert raw(f, b"GET /" + b"x" * 20000 + b" HTTP/1.1\r\n\r\n") == b""  # head over 8 KiB: closed
    assert raw(f, b"GET /faults HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200 ")  # still serving
    assert b.faults.rules() == []


def test_healthz_is_served_while_idle_and_slow_connections_hold_every_slot(b: bt.BrokerProcess) -> None:
    """A container health check must not fail because others hold sockets open: with the
    connection cap reached by connections that sent nothing or half a request, a newcomer that
    sends its request at once is served (the oldest of those is closed to make room)."""
    m = b.http_ports["metrics"]
    held = [socket.create_connection(("127.0.0.1", m), timeout=10) for _ in range(MAX_CONNECTIONS)]
    try:
        for s in held[::2]:
            s.sendall(b"GET /metrics HTTP/1.1\r\n")  # half a request head
        time.sleep(0.2)  # all accepted
        for _ in range(3):
            assert raw(m, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
        assert raw(m, b"GET /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
        held[0].settimeout(10)
        assert held[0].recv(1) == b""  # the oldest, closed to make room for the first (its slot then free)
    finally:
        for s in held:
            s.close()


def test_idle_and_slow_connections_are_closed(tmp_path: Any) -> None:
    """A connection that sends nothing is closed after ``metrics.connections.max.idle.ms``; one
    that has begun a request is given ``metrics.request.timeout.ms`` from its connect to end it."""
    p = bt.BrokerProcess(str(tmp_path / "d"), ["metrics.connections.max.idle.ms=200", "metrics.request.timeout.ms=3000"],
                         metrics=True).start()
    try:
        m = p.http_ports["metrics"]
        with socket.create_connection(("127.0.0.1", m), timeout=10) as idle, \
                socket.create_connection(("127.0.0.1", m), timeout=10) as slow:
            slow.sendall(b"G")
            t0 = time.monotonic()
            assert idle.recv(1) == b""  # closed by the broker (the timeout raises instead)
            assert time.monotonic() - t0 < 4  # well before the request timeout (the old fixed 10 s)
            slow.settimeout(0.5)
            with pytest.raises(TimeoutError):
                slow.recv(1)  # past the idle timeout, still open: it has sent something
            slow.sendall(b"ET /heal")
            slow.settimeout(10)
            assert slow.recv(1) == b""  # the request not complete 3 s after the connect: closed
        assert raw(m, b"GET /healthz HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        assert p.stop() == 0, p.log_text()


def test_parse_http_listener() -> None:
    assert parse_http_listener("http://127.0.0.1:9404", "x") == ("127.0.0.1", 9404)
    assert parse_http_listener("127.0.0.1:0,http://other:1", "x") == ("127.0.0.1", 0)
    assert parse_http_listener("http://:9404", "x") == ("127.0.0.1", 9404)
    for bad in ("https://127.0.0.1:1", "http://127.0.0.1", "http://127.0.0.1:port"):
        with pytest.raises(ValueError):
            parse_http_listener(bad, "x")


def test_unused(tmp_path: Any) -> None:
    """Nothing listens for HTTP unless configured."""
    with bt.run("process", data_dir=str(tmp_path / "d"), faults=False) as p:
        assert isinstance(p, bt.BrokerProcess) and p.http_ports == {}


def test_metrics_port_in_use_fails_the_start_cleanly(tmp_path: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = bt.BrokerProcess(str(tmp_path / "d"), [f"metrics.listeners=http://127.0.0.1:{port}"])
        with pytest.raises(bt.BrokerStartError, match="(?s)exit status 1.*cannot start.*stopped cleanly"):
            p.start()
