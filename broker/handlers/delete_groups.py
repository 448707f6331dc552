"""DeleteGroups (42), v0-2: delete Empty groups and their committed offsets (NON_EMPTY_GROUP
while members remain, GROUP_ID_NOT_FOUND for an unknown group). Answered once the tombstones
are durable. Each group needs DELETE (else GROUP_AUTHORIZATION_FAILED for it). A share group
(KIP-932) is deleted with every share-partition state it has in ``__share_group_state``
(broker/share/offsets.py)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..request_context import RequestContext
from ..share.offsets import delete_share_group, is_share_group

API_KEY = ApiKey.DELETE_GROUPS
AUTHORIZATION = "DELETE on each group"


async def _answer(results: list[dict[str, Any]], waits: list[asyncio.Future[int]]) -> dict[str, Any]:
    codes = await asyncio.gather(*waits)
    for r, code in zip([r for r in results if r["error_code"] == 0], codes, strict=True):
        r["error_code"] = code
    return {"throttle_time_ms": 0, "results": results}


def _settle(fut: asyncio.Future[int], code: int) -> None:
    if not fut.done():
        fut.set_result(code)


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state = ctx.state
    coordinator = state.groups.coordinator
    loop = asyncio.get_running_loop()
    results = []
    waits: list[asyncio.Future[int]] = []
    for group_id in request["groups_names"]:
        if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group_id):
            results.append({"group_id": group_id, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
            continue
        if is_share_group(state, group_id):
            task = asyncio.ensure_future(delete_share_group(state, group_id))
            waits.append(task)
            results.append({"group_id": group_id, "error_code": 0})
            continue
        fut: asyncio.Future[int] = loop.create_future()
        code = coordinator.delete_group(group_id, functools.partial(_settle, fut))
        if code == 0:
            waits.append(fut)
        results.append({"group_id": group_id, "error_code": code})
    if not waits:
        return {"throttle_time_ms": 0, "results": results}
    return _answer(results, waits)
