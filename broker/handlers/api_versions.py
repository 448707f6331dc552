"""ApiVersions (18), v0-4: the APIs and version ranges this broker serves and, from v3 (tagged
fields), its features as a single combined Kafka 4.2 KRaft node reports them (broker/features.py):
``supported_features`` Kafka 4.2's ranges, ``finalized_features`` the data directory's levels
(min = max = the level; features at level 0 left out, as Kafka's
``ApiVersionsResponse.createFinalizedFeatureKeys``), ``finalized_features_epoch`` their epoch,
``zk_migration_ready`` false. v3 leaves out the supported features whose minimum is 0
(KAFKA-17492: older clients cannot read them; only ``metadata.version`` remains), v4 lists them
all, as Kafka's ``alterFeatureLevel0`` does.

ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) are listed only while
``group.version`` is finalized at 1 or more and ``group.coordinator.rebalance.protocols``
names ``consumer``, as Kafka 4 lists them (clients choose the protocol from this list); the
share-group APIs (KIP-932) while ``share.version`` is finalized at 1 or more.

A request for a version above 4 never reaches this handler: the server answers it with a v0
body carrying UNSUPPORTED_VERSION and our ApiVersions range (the KIP-511 fallback)."""

from __future__ import annotations

from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey

from ..features import GROUP_VERSION, SHARE_VERSION
from ..request_context import RequestContext

API_KEY = ApiKey.API_VERSIONS
AUTHORIZATION = "none (answered before or without authorization, as in Kafka)"

_KEYS = [{"api_key": int(k), "min_version": lo, "max_version": hi}
         for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())]
_CONSUMER_GROUP_APIS = {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
_SHARE_GROUP_APIS = {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
                     ApiKey.SHARE_ACKNOWLEDGE, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                     ApiKey.DELETE_SHARE_GROUP_OFFSETS}
#: by (consumer groups served, share groups served)
_LISTS = {(c, sh): [k for k in _KEYS if (c or k["api_key"] not in _CONSUMER_GROUP_APIS)
                    and (sh or k["api_key"] not in _SHARE_GROUP_APIS)]
          for c in (False, True) for sh in (False, True)}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    consumer_groups = state.groups.coordinator.config.consumer_protocol and state.features.level(GROUP_VERSION) >= 1
    share_groups = state.features.level(SHARE_VERSION) >= 1
    body: dict[str, Any] = {"error_code": 0, "api_keys": _LISTS[(consumer_groups, share_groups)],
                            "throttle_time_ms": 0}
    if ctx.api_version < 3:  # no tagged fields
        return body
    features = ctx.state.features
    body["supported_features"] = [{"name": name, "min_version": lo, "max_version": hi}
                                  for name, (lo, hi) in features.supported().items()
                                  if lo > 0 or ctx.api_version >= 4]
    body["finalized_features"] = [{"name": name, "max_version_level": level, "min_version_level": level}
                                  for name, level in features.finalized().items()]
    body["finalized_features_epoch"] = features.epoch
    return body
