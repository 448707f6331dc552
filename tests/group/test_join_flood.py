"""10,000 members joining one group (JoinGroup v2, pipelined on 20 connections) against a broker
process: every join is answered, within a generous 30 s in all (each join used to walk every
member twice: about a minute for 10,000 here; now seconds), and another client's requests are answered
meanwhile, each within a second (the join phase's completion answers its parked requests a
slice per loop iteration)."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from broker.testing import BrokerProcess
from broker.testing.wire import pinger, request_bytes
from client.protocol.api import ApiKey

pytestmark = pytest.mark.slow

MEMBERS, CONNECTIONS = 10_000, 20


def test_ten_thousand_members_join_one_group_without_holding_up_others(tmp_path) -> None:
    body = {"group_id": "flood", "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}
    with BrokerProcess(str(tmp_path / "data"), ["group.initial.rebalance.delay.ms=3000"]) as b:
        socks = [socket.create_connection(("127.0.0.1", b.port)) for _ in range(CONNECTIONS)]
        answered = 0
        try:
            with pinger(b.port) as pings:
                deadline = time.monotonic() + 30
                for i in range(MEMBERS):
                    socks[i % CONNECTIONS].sendall(request_bytes(ApiKey.JOIN_GROUP, 2, i + 1, body))
                for s in socks:
                    buf, got = b"", 0
                    while got < MEMBERS // CONNECTIONS:
                        s.settimeout(max(deadline - time.monotonic(), 0.001))
                        chunk = s.recv(1 << 20)
                        assert chunk, "the broker closed a connection"
                        buf += chunk
                        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                            size = struct.unpack_from(">i", buf)[0]
                            assert struct.unpack_from(">h", buf, 12)[0] == 0  # size, correlation id, throttle, error code
                            buf = buf[4 + size:]
                            got += 1
                    answered += got
        finally:
            for s in socks:
                s.close()
        assert answered == MEMBERS
        assert pings.worst < 1.0, pings.worst
