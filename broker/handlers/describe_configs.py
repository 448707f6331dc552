"""DescribeConfigs (32), v0-1, for topics (resource type 2) and this broker (type 4).

Config sources (Kafka's ConfigSource): 1 TOPIC_CONFIG for a topic override, 4
STATIC_BROKER_CONFIG for a value set in the broker's properties (file or ``--override``), 5
DEFAULT_CONFIG otherwise. A broker is described with every property it knows, the ``log.*``
topic defaults included; all are read-only (no dynamic broker configs)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..storage.config import TOPIC_CONFIGS

API_KEY = ApiKey.DESCRIBE_CONFIGS

TOPIC, BROKER = 2, 4
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def _entry(name: str, value: str | None, source: int, keys: list[str] | None, version: int) -> dict[str, Any] | None:
    if keys is not None and name not in keys:
        return None
    return {"name": name, "value": value, "read_only": False,
            "is_default": source == DEFAULT_CONFIG, "config_source": source, "is_sensitive": False,
            "synonyms": []}


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    results = []
    for r in request["resources"]:
        rtype, rname, keys = r["resource_type"], r["resource_name"], r["configuration_keys"]
        res = {"error_code": 0, "error_message": None, "resource_type": rtype, "resource_name": rname, "configs": []}
        if rtype == TOPIC:
            info = state.logs.topics().get(rname)
            if info is None:
                res["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                res["error_message"] = f"Topic {rname} does not exist"
            else:
                props = info.config.to_properties()
                broker_set = state.config.props
                for name, value in props.items():
                    if name in info.overrides:
                        source = TOPIC_CONFIG
                    elif TOPIC_CONFIGS[name].broker_name in broker_set:
                        source = STATIC_BROKER_CONFIG
                    else:
                        source = DEFAULT_CONFIG
                    e = _entry(name, value, source, keys, version)
                    if e:
                        res["configs"].append(e)
        elif rtype == BROKER:
            if rname not in ("", str(state.node_id)):
                res["error_code"] = ErrorCode.INVALID_REQUEST
                res["error_message"] = f"Unexpected broker id, expected {state.node_id} but received {rname}"
            else:
                explicit = state.config.explicit
                for name, value in state.config.describe().items():
                    e = _entry(name, value, STATIC_BROKER_CONFIG if name in explicit else DEFAULT_CONFIG, keys,
                               version)
                    if e:
                        e["read_only"] = True
                        res["configs"].append(e)
        else:
            res["error_code"] = ErrorCode.INVALID_REQUEST
            res["error_message"] = f"Unsupported resource type {rtype}"
        results.append(res)
    return {"throttle_time_ms": 0, "results": results}
