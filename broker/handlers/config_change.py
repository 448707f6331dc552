"""What AlterConfigs and IncrementalAlterConfigs share: checking the resources of a request and
applying a resource's new set of configs (a topic's overrides, or the broker's dynamic configs).

A resource is altered as a whole or not at all; resources are independent. Errors (Kafka's
codes and wording): INVALID_REQUEST for a resource named twice, a key named twice, a null value
where one is needed, an unknown resource type or operation, a broker id other than this one, a
broker property that cannot change at run time or a bad value for one that can;
INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_OR_PARTITION; INVALID_CONFIG for an unknown topic config
or a bad topic config value, and for a change that leaves ``__consumer_offsets`` or
``__transaction_state`` without ``cleanup.policy=compact`` or with ``delete`` (set explicitly, or
by dropping the override so the broker default applies; Kafka accepts these and then deletes
the coordinators' state).
``validate_only`` checks everything and changes nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from client.protocol.api import ErrorCode

from ..dynamic_config import DynamicConfigError
from ..errors import ApiError
from ..group.group_configs import GroupConfigError
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.errors import StorageError
from ..storage.log_manager import validate_topic_name
from .authz import AclOperation, config_denied
from .metadata import INTERNAL_TOPICS

logger = logging.getLogger("broker.handlers.configs")

TOPIC, BROKER, GROUP = 2, 4, 32

#: new configs of a resource from its current ones; raises RequestError
Change = Callable[[dict[str, str], int], dict[str, str]]


class RequestError(ApiError):
    """One resource of a configs request fails with ``error_code`` and ``message``."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message, error_code=error_code)


def alter(request: dict[str, Any], ctx: RequestContext,
          change_for: Callable[[dict[str, Any]], Change]) -> dict[str, Any]:
    """Apply every resource of an alter request; ``change_for(resource)`` gives the function
    that turns the resource's current configs into its new ones. A resource needs ALTER_CONFIGS
    on the topic (the cluster for the broker), else its error is Kafka's authorization one."""
    state = ctx.state
    keys = [(r["resource_type"], r["resource_name"]) for r in request["resources"]]
    responses = []
    for r in request["resources"]:
        rtype, rname = r["resource_type"], r["resource_name"]
        err, msg = 0, None
        try:
            if keys.count((rtype, rname)) > 1:
                raise RequestError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            denied = config_denied(ctx, AclOperation.ALTER_CONFIGS, rtype, rname)
            if denied is not None:
                raise RequestError(denied[0], denied[1])
            names = [c["name"] for c in r["configs"]]
            if len(set(names)) != len(names):
                raise RequestError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
            change = change_for(r)
            if rtype == TOPIC:
                _alter_topic(state, rname, change, request["validate_only"])
            elif rtype == BROKER:
                _alter_broker(state, rname, change, request["validate_only"])
            elif rtype == GROUP:
                _alter_group(state, rname, change, request["validate_only"])
            else:
                raise RequestError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
        except RequestError as e:
            err, msg = e.error_code, str(e)
        except StorageError as e:
            err, msg = e.error_code, str(e)
        if err:
            logger.info("altering configs of resource type %d %r failed: %s", rtype, rname, msg)
        responses.append({"error_code": err, "error_message": msg, "resource_type": rtype, "resource_name": rname})
    return {"throttle_time_ms": 0, "responses": responses}


def _alter_topic(state: BrokerState, name: str, change: Change, validate_only: bool) -> None:
    validate_topic_name(name)
    info = state.logs.topic(name)
    if info is None:
        raise RequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    new = change(dict(info.overrides), TOPIC)
    if name in INTERNAL_TOPICS:
        _check_internal(state, name, new)
    state.logs.alter_topic_config(name, new, validate_only=validate_only)


def _check_internal(state: BrokerState, name: str, overrides: dict[str, str]) -> None:
    """An internal topic's effective ``cleanup.policy`` must stay ``compact`` without ``delete``:
    retention would otherwise delete groups' offsets and transactions' states."""
    try:
        config = state.logs.default_config.with_overrides(overrides)
    except StorageError:
        return  # the invalid value itself is reported by alter_topic_config
    if config.delete_enabled or not config.compact:
        raise RequestError(ErrorCode.INVALID_CONFIG,
                           f"Internal topic {name} must keep cleanup.policy=compact (the change would make it"
                           f" {config.cleanup_policy!r}, whose retention.ms and retention.bytes delete committed"
                           " state).")


def _alter_group(state: BrokerState, name: str, change: Change, validate_only: bool) -> None:
    """A group's configs (broker/group/group_configs.py)."""
    if not name:
        raise RequestError(ErrorCode.INVALID_GROUP_ID, "The group id must not be empty.")
    store = state.group_configs
    try:
        store.set(name, change(store.overrides(name), GROUP), validate_only)
    except GroupConfigError as e:
        raise RequestError(e.error_code, str(e)) from None


def _alter_broker(state: BrokerState, name: str, change: Change, validate_only: bool) -> None:
    dynamic = state.dynamic
    try:
        per_broker = dynamic.check_resource(name)
        new = change(dynamic.current(per_broker), BROKER)
        if validate_only:
            dynamic.prepare(per_broker, new)
            return
        state.logs.set_default_config(dynamic.apply(per_broker, new))
    except DynamicConfigError as e:
        raise RequestError(e.error_code, str(e)) from None
