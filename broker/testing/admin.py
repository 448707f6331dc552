"""Blocking one-shot admin requests for fixtures: CreateTopics and DeleteTopics over a plain
socket with ``client.protocol``'s codec (no event loop, no client object: a few milliseconds
per topic, usable from any thread, also inside a running event loop's thread)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from typing import Any

from client.protocol.api import ApiKey, error_name
from client.protocol.header import encode_request_header
from client.protocol.messages import REQUESTS, RESPONSES
from client.protocol.primitives import Reader, Writer

__all__ = ["create_topic", "delete_topic", "AdminError"]

# Non-flexible versions every minibroker release answers (response header v0: correlation id).
_CREATE_TOPICS_VERSION = 2
_DELETE_TOPICS_VERSION = 1


class AdminError(RuntimeError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = code


def _roundtrip(bootstrap_servers: str, key: int, version: int, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    host, _, port = bootstrap_servers.split(",")[0].strip().rpartition(":")
    w = Writer(bytearray(4))
    encode_request_header(w, key, version, 1, "minibroker-testing")
    REQUESTS[key].encode(body, version, w)
    struct.pack_into(">i", w.buf, 0, len(w.buf) - 4)
    with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as s:
        s.sendall(w.buf)
        f = s.makefile("rb")
        head = f.read(4)
        if len(head) < 4:
            raise ConnectionError("the broker closed the connection")
        frame = f.read(struct.unpack(">i", head)[0])
    r = Reader(frame, 4)  # after the correlation id
    return RESPONSES[key].decode(r, version)


def create_topic(bootstrap_servers: str, name: str, partitions: int = 1,
                 configs: Mapping[str, Any] | None = None, timeout: float = 15.0) -> None:
    """Create ``name``; raises AdminError with Kafka's error code if the broker refuses."""
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": str(v).lower() if isinstance(v, bool) else str(v)}
                                    for k, v in (configs or {}).items()]}],
            "timeout_ms": int(timeout * 1000), "validate_only": False}
    resp = _roundtrip(bootstrap_servers, ApiKey.CREATE_TOPICS, _CREATE_TOPICS_VERSION, body, timeout)
    for t in resp["topics"]:
        if t["error_code"]:
            raise AdminError(t["error_code"], f"cannot create topic {t['name']!r}: {error_name(t['error_code'])}"
                             f" {t.get('error_message') or ''}".rstrip())


def delete_topic(bootstrap_servers: str, name: str, timeout: float = 15.0) -> None:
    body = {"topic_names": [name], "timeout_ms": int(timeout * 1000)}
    resp = _roundtrip(bootstrap_servers, ApiKey.DELETE_TOPICS, _DELETE_TOPICS_VERSION, body, timeout)
    for t in resp["responses"]:
        if t["error_code"]:
            raise AdminError(t["error_code"], f"cannot delete topic {t['name']!r}: {error_name(t['error_code'])}")
