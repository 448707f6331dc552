"""JoinGroup (11), v0-9: join or rejoin a group; answered when the join phase completes (see
broker/group/coordinator.py). v4+ with an empty member id gets MEMBER_ID_REQUIRED and a
member id to rejoin with (KIP-394); v5+ static membership (``group_instance_id``)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from .common import reply_when_ready

API_KEY = ApiKey.JOIN_GROUP
AUTHORIZATION = "READ on the group"


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
                "protocol_type": None, "protocol_name": None if version >= 7 else "", "leader": "",
                "skip_assignment": False, "member_id": "", "members": []}
    client_id, client_host = ctx.client_id, "/" + ctx.client_host  # Kafka's member host: "/" + the address

    def start(respond: Any) -> None:
        def answer(body: dict[str, Any]) -> None:
            body["throttle_time_ms"] = 0
            if version < 7 and body.get("protocol_name") is None:
                body["protocol_name"] = ""
            respond(body)

        state.groups.coordinator.join_group(request, version, client_id, client_host, answer)

    return reply_when_ready(start)
