"""DescribeConfigs (32), v0-4, for topics (resource type 2), this broker (type 4) and groups (32:
every group config, the group's own with source GROUP_CONFIG, the others DEFAULT_CONFIG).

Each config: its value, ``config_source`` (v1+) and, when asked for, its synonyms (v1+) and
documentation (v3+), and its type (v3+), by Kafka's rules (dynamic_config.py says them). A
topic lists every topic config; the broker resource ``"<node id>"`` lists every broker
property (the dynamic ones, the broker defaults of topic configs, are not read-only), ``""``
the cluster-wide dynamic configs. ``configuration_keys`` null or empty: every config.
Errors per resource: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST (a
broker id other than this one, another resource type)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..dynamic_config import ConfigSourceId, Entry
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import InvalidTopicError
from ..storage.log_manager import validate_topic_name
from .authz import AclOperation, config_denied
from .config_change import RequestError

API_KEY = ApiKey.DESCRIBE_CONFIGS
AUTHORIZATION = "DESCRIBE_CONFIGS on each topic (the cluster for the broker)"

TOPIC, BROKER, GROUP = 2, 4, 32
GROUP_CONFIG_SOURCE = 8  # Kafka's ConfigSource.GROUP_CONFIG
PASSWORD = 9  # config_type of Kafka's sensitive configs


def wire_entry(e: Entry, synonyms: bool, documentation: bool) -> dict[str, Any]:
    return {"name": e.name, "value": e.value, "read_only": e.read_only,
            "is_default": e.source == ConfigSourceId.DEFAULT, "config_source": e.source,
            "is_sensitive": e.config_type == PASSWORD,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms] if synonyms else [],
            "config_type": e.config_type, "documentation": e.documentation if documentation else None}


def _entries(state: BrokerState, rtype: int, rname: str) -> list[Entry]:
    if rtype == TOPIC:
        validate_topic_name(rname)
        info = state.logs.topic(rname)
        if info is None:
            raise RequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {rname} does not exist")
        return state.dynamic.describe_topic(info.overrides, info.config)
    if rtype == BROKER:
        if rname and not rname.lstrip("-").isdigit():
            raise RequestError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {rname}")
        if rname and int(rname) != state.node_id:
            raise RequestError(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {state.node_id} or empty string, but received {rname}")
        return state.dynamic.describe_broker(bool(rname))
    if rtype == GROUP:
        return [Entry(k, v, GROUP_CONFIG_SOURCE if own else ConfigSourceId.DEFAULT, False, [],
                      3 if k.endswith(".ms") else 2, "")
                for k, v, own in state.group_configs.describe(rname)]
    raise RequestError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    synonyms = bool(request.get("include_synonyms"))
    documentation = bool(request.get("include_documentation"))
    results = []
    for r in request["resources"]:
        rtype, rname, keys = r["resource_type"], r["resource_name"], r["configuration_keys"]
        res: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                               "resource_name": rname, "configs": []}
        denied = config_denied(ctx, AclOperation.DESCRIBE_CONFIGS, rtype, rname)
        if denied is not None:
            res["error_code"], res["error_message"] = denied
            results.append(res)
            continue
        try:
            entries = _entries(state, rtype, rname)
        except InvalidTopicError as e:
            res["error_code"], res["error_message"] = ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)
        except RequestError as e:
            res["error_code"], res["error_message"] = e.error_code, str(e)
        else:
            res["configs"] = [wire_entry(e, synonyms, documentation) for e in entries if not keys or e.name in keys]
        results.append(res)
    return {"throttle_time_ms": 0, "results": results}
