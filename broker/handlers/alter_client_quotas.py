"""AlterClientQuotas (49), v0-1 (KIP-546; ``kafka-configs.sh --alter --entity-type
users|clients|ips``): set or remove quota configs of entities, as Kafka's KRaft controller does
(broker/quota/store.py has the checks and messages): one result per distinct entity, the
accepted changes written to ``client-quotas.json`` together, then enforced at once
(broker/quota/manager.py); ``validate_only`` changes nothing. An ip entity that is not an
address is looked up (off the event loop, at most ``_RESOLVE_TIMEOUT`` s) as Kafka's
``InetAddress.getByName`` does: a host that does not resolve is INVALID_REQUEST "x is not a
valid IP or resolvable host.", one that does applies to the addresses it resolved to.

Authorization: ALTER_CONFIGS on the cluster, else every entry CLUSTER_AUTHORIZATION_FAILED
"Cluster authorization failed." (Kafka's error response). A file that cannot be written answers
every entry KAFKA_STORAGE_ERROR and changes nothing."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..errors import error_code_of
from ..quota.store import IP, is_ip_literal
from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS
AUTHORIZATION = "ALTER_CONFIGS on the cluster"

#: the longest a host name of an ip entity is looked up for
_RESOLVE_TIMEOUT = 5.0

logger = logging.getLogger(__name__)


def _error_response(request: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": message,
         "entity": [{"entity_type": e["entity_type"], "entity_name": e["entity_name"]} for e in entry["entity"]]}
        for entry in request["entries"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    if not cluster_allows(ctx, AclOperation.ALTER_CONFIGS):
        return _error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    hosts = {e["entity_name"] for entry in request["entries"] for e in entry["entity"]
             if e["entity_type"] == IP and e["entity_name"] and not is_ip_literal(e["entity_name"])}
    if hosts:
        return _alter_after_lookup(ctx, request, sorted(hosts))
    return _alter(ctx, request, {})


async def _alter_after_lookup(ctx: RequestContext, request: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()

    async def lookup(host: str) -> list[str]:
        try:
            infos = await asyncio.wait_for(loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), _RESOLVE_TIMEOUT)
        except (TimeoutError, OSError, UnicodeError):
            return []
        return sorted({str(info[4][0]) for info in infos})

    found = await asyncio.gather(*(lookup(h) for h in hosts))
    return _alter(ctx, request, {h: a for h, a in zip(hosts, found, strict=True) if a})


def _alter(ctx: RequestContext, request: dict[str, Any], resolved: dict[str, list[str]]) -> dict[str, Any]:
    state = ctx.state
    for host, addresses in resolved.items():
        state.quotas.connections.resolved(host, addresses)
    try:
        results = state.client_quotas.alter(request["entries"], request["validate_only"],
                                            lambda host: host in resolved)
    except OSError as e:
        logger.error("cannot write %s: %s", state.client_quotas.path, e)
        return _error_response(request, error_code_of(e), f"cannot write the client quotas: {e}")
    entries = []
    for listed, code, message in results:
        if code:
            logger.info("AlterClientQuotas of %s refused: %s", dict(listed), message)
        entries.append({"error_code": code, "error_message": message,
                        "entity": [{"entity_type": t, "entity_name": n} for t, n in listed]})
    if not request["validate_only"] and any(not code for _, code, _ in results):
        logger.info("client quotas altered by %s: %s", ctx.principal,
                    "; ".join(f"{dict(listed)}" for listed, code, _ in results if not code))
    return {"throttle_time_ms": 0, "entries": entries}
