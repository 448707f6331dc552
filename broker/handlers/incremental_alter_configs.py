"""IncrementalAlterConfigs (44), v0-1: change some configs of a resource, keep the others.

Operations: 0 SET, 1 DELETE (back to the default), 2 APPEND and 3 SUBTRACT (list configs such
as ``cleanup.policy``: add or remove comma-separated items; a config not set starts from its
default). APPEND/SUBTRACT on a config that is not a list: INVALID_CONFIG. Resources: a topic or
this broker (resource name "" = the cluster-wide defaults); see config_change.py."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..dynamic_config import list_default
from ..request_context import RequestContext
from ..storage.config import BROKER_SYNONYMS, TOPIC_CONFIGS, ConfigDef
from .config_change import TOPIC, Change, RequestError, alter

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
AUTHORIZATION = "ALTER_CONFIGS on each topic (the cluster for the broker)"

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _list_default(name: str, rtype: int) -> str | None:
    """The default a LIST config starts from for APPEND and SUBTRACT; None: not a LIST."""
    d: ConfigDef | None = TOPIC_CONFIGS.get(name) if rtype == TOPIC else BROKER_SYNONYMS.get(name)
    if d is not None:
        return str(d.default) if d.kind == "list" else None
    return list_default(name) if rtype != TOPIC else None


def _change(resource: dict[str, Any]) -> Change:
    ops = []
    for c in resource["configs"]:
        op, name, value = c["config_operation"], c["name"], c["value"]
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            raise RequestError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
        if value is None and op != DELETE:
            raise RequestError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
        ops.append((op, name, value))

    def apply(current: dict[str, str], rtype: int) -> dict[str, str]:
        new = dict(current)
        for op, name, value in ops:
            if op == SET:
                new[name] = value
            elif op == DELETE:
                new.pop(name, None)
            else:
                default = _list_default(name, rtype)
                if default is None:
                    raise RequestError(ErrorCode.INVALID_CONFIG,
                                       f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
                base = new.get(name, default)
                items = [s.strip() for s in base.split(",") if s.strip()]
                for item in value.split(","):
                    if op == APPEND and item not in items:
                        items.append(item)
                    elif op == SUBTRACT and item in items:
                        items.remove(item)
                new[name] = ",".join(items)
        return new

    return apply


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return alter(request, ctx, _change)
