"""broker/http_listener.py on a real broker: routes, bounds, bad requests answered or closed
without harming the listener; listener syntax."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

import broker.testing as bt
from broker.http_listener import MAX_BODY, parse_http_listener


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
