"""FindCoordinator (10), v0-6 (Kafka 3.9): this broker coordinates every group (key type 0)
and every transactional id (key type 1); looking one up creates ``__consumer_offsets`` or
``__transaction_state`` if it does not exist yet, as Kafka does. v4+ looks up several keys at
once. Key type 2 (share groups, v6+) gets COORDINATOR_NOT_AVAILABLE, as Kafka 3.9 answers it
(no share coordinator); before v6, and for key types Kafka does not define, INVALID_REQUEST.

librdkafka also gates LZ4 compression on this API (rdkafka_feature.c: LZ4 "depends" on
FindCoordinator v0, the 0.8.2 marker).
"""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..errors import error_code_of
from ..request_context import RequestContext

API_KEY = ApiKey.FIND_COORDINATOR
AUTHORIZATION = "DESCRIBE on the group or on the transactional id"

logger = logging.getLogger(__name__)

GROUP = 0
TRANSACTION = 1
SHARE = 2


def _lookup(key: str, key_type: int, ctx: RequestContext) -> dict[str, Any]:
    state, version, listener = ctx.state, ctx.api_version, ctx.session.listener_name

    def error(code: int, message: str) -> dict[str, Any]:
        return {"key": key, "error_code": int(code), "error_message": message, "node_id": -1, "host": "", "port": -1}

    if key_type == GROUP and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return error(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if key_type == TRANSACTION and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                     "Transactional Id authorization failed.")

    if key_type > SHARE or key_type < 0 or (key_type == SHARE and version < 6):
        return error(ErrorCode.INVALID_REQUEST, f"coordinator key type {key_type} is not valid in version {version}")
    if key_type == SHARE:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "share groups are not supported")
    what = "group id" if key_type == GROUP else "transactional id"
    if not key:
        return error(ErrorCode.INVALID_REQUEST, f"the {what} is empty")
    coordinator = state.groups if key_type == GROUP else state.txn
    try:
        coordinator.ensure_topic()
    except Exception as e:  # noqa: BLE001 - the client retries a retriable answer
        topic = "__consumer_offsets" if key_type == GROUP else "__transaction_state"
        logger.error("cannot create %s: %s", topic, e)
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot create {topic}: {error_code_of(e)}")
    host, port = state.advertised_endpoint(listener)
    return {"key": key, "error_code": 0, "error_message": None, "node_id": state.node_id, "host": host,
            "port": port}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    version = ctx.api_version
    key_type = request.get("key_type", GROUP)
    if version >= 4:
        return {"throttle_time_ms": 0,
                "coordinators": [_lookup(k, key_type, ctx) for k in request["coordinator_keys"]]}
    found = _lookup(request["key"], key_type, ctx)
    if version == 0 and found["error_code"] == ErrorCode.INVALID_REQUEST:
        found["error_code"] = int(ErrorCode.INVALID_GROUP_ID)
    return {"throttle_time_ms": 0, **found}
