"""DescribeUserScramCredentials (50), v0 (KIP-554): the mechanisms and iterations of users'
SCRAM credentials, never their salts or keys.

Kafka's answer (its ScramImage.describe): no users (null or an empty list) describes every user
with a credential; a user named twice gets DUPLICATE_RESOURCE ("Cannot describe SCRAM
credentials for the same user twice in a single request: <user>"), once; a user without any
credential gets RESOURCE_NOT_FOUND ("Attempt to describe a user credential that does not
exist: <user>"). Users are answered in the order first named (every user: sorted), each user's
credentials in mechanism-type order. Top-level error_code is 0: Kafka sets it only for
CLUSTER_AUTHORIZATION_FAILED (DESCRIBE on the cluster), and this broker has no authorizer yet.
"""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from client.security.scram import MECHANISM_TYPES

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
AUTHORIZATION = "DESCRIBE on the cluster"

DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not cluster_allows(ctx, AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "results": []}
    store = ctx.state.scram_credentials
    named = request["users"]
    duplicated: dict[str, bool] = {}  # user -> named more than once, in the order first named
    if named:
        for u in named:
            duplicated[u["name"]] = u["name"] in duplicated
    else:
        duplicated = dict.fromkeys(store.users(), False)
    found = store.describe([u for u, dup in duplicated.items() if not dup])
    results = []
    for user, dup in duplicated.items():
        result: dict[str, Any] = {"user": user, "error_code": 0, "error_message": None, "credential_infos": []}
        if dup:
            result.update(error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=DESCRIBE_DUPLICATE_USER + user)
        elif user not in found:
            result.update(error_code=ErrorCode.RESOURCE_NOT_FOUND,
                          error_message=DESCRIBE_USER_THAT_DOES_NOT_EXIST + user)
        else:
            result["credential_infos"] = [{"mechanism": MECHANISM_TYPES[m], "iterations": i} for m, i in found[user]]
        results.append(result)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
