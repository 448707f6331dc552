"""JoinGroup (11), v0-9: join or rejoin a group; answered when the join phase completes (see
broker/group/coordinator.py). v4+ with an empty member id gets MEMBER_ID_REQUIRED and a
member id to rejoin with (KIP-394); v5+ static membership (``group_instance_id``)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey

from .common import reply_when_ready

API_KEY = ApiKey.JOIN_GROUP


def handle(request: dict[str, Any], version: int, state: Any) -> Any:
    client_id = request.pop("_client_id", "")
    client_host = request.pop("_client_host", "")

    def start(respond: Any) -> None:
        def answer(body: dict[str, Any]) -> None:
            body["throttle_time_ms"] = 0
            if version < 7 and body.get("protocol_name") is None:
                body["protocol_name"] = ""
            respond(body)

        state.groups.coordinator.join_group(request, version, client_id, client_host, answer)

    return reply_when_ready(start)
