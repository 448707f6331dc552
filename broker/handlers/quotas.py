"""What client quotas do to a request's reply (Kafka's ``KafkaApis`` and ``RequestHandlerHelper``
around its quota managers, broker/quota/manager.py): ``throttle`` measures the request and
returns the reply to send and the throttle time; the socket server then mutes the connection
(reads nothing from it) for that long, and for versions that predate KIP-219 holds the reply
back as long (``client_throttles``).

Per API, as Kafka 3.9:

- **Produce**: the request's size (header and body, Kafka's ``request.sizeInBytes``) counts
  against ``producer_byte_rate``, its handling time against ``request_percentage`` (not for
  acks=0, which has no reply: its connection is still muted for the byte rate); the reply says
  the larger throttle time.
- **Fetch** (a consumer's; a follower's is exempt): the reply's size counts against
  ``consumer_byte_rate``, its handling time against ``request_percentage``. When either is
  exceeded the consumer gets an empty reply instead (no partitions, the error and session id
  kept: a full fetch that opened a session keeps it, where Kafka opens none) carrying the
  throttle time, and the bytes are not counted (Kafka's
  ``unrecordQuotaSensor``). The fetch handler bounds ``max_bytes`` by what the byte rate allows
  in one window (``bound_fetch``, Kafka's ``getMaxValueInQuotaWindow``), so one reply alone
  goes over the quota by its own few bytes besides the records at most (as in Kafka).
- **CreateTopics, CreatePartitions, DeleteTopics**: their handlers apply
  ``controller_mutation_rate`` per topic (``mutation_quota``) and set the reply's throttle time;
  the reply says the larger of that and the request-time throttle.
- **Every other API**: ``request_percentage``, except what Kafka exempts: WriteTxnMarkers
  (a cluster action), SaslHandshake and SaslAuthenticate, and requests before a SASL login
  completes (handled by the authenticator, not by the APIs).

Handling time is the time the request's handler ran on the event loop (decoding included),
not the time its reply waited (an fsync, a long poll); Kafka's is its request thread's time.
"""

from __future__ import annotations

import struct
from typing import Any

from client.protocol.api import ApiKey

from ..quota import MutationQuota
from ..request_context import RequestContext
from .common import NO_RESPONSE, FetchReply

__all__ = ["throttle", "client_throttles", "bound_fetch", "mutation_quota", "EXEMPT", "KIP219_FROM", "THROTTLED"]

#: APIs no quota applies to (Kafka: cluster actions and the SASL exchange)
EXEMPT = frozenset({ApiKey.WRITE_TXN_MARKERS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

#: the first version of each API whose client throttles itself on a reply's throttle time
#: (KIP-219; Kafka's ``AbstractResponse.shouldClientThrottle``): the reply leaves at once and
#: the connection is muted. Older versions, and APIs not listed, get their reply held back.
KIP219_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 6, ApiKey.FETCH: 8, ApiKey.LIST_OFFSETS: 3, ApiKey.METADATA: 6, ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4, ApiKey.FIND_COORDINATOR: 2, ApiKey.JOIN_GROUP: 3, ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2, ApiKey.SYNC_GROUP: 2, ApiKey.DESCRIBE_GROUPS: 2, ApiKey.LIST_GROUPS: 2,
    ApiKey.API_VERSIONS: 2, ApiKey.CREATE_TOPICS: 3, ApiKey.DELETE_TOPICS: 2, ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1, ApiKey.ADD_PARTITIONS_TO_TXN: 1, ApiKey.ADD_OFFSETS_TO_TXN: 1, ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1, ApiKey.DESCRIBE_ACLS: 1, ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1,
    ApiKey.DESCRIBE_CONFIGS: 2, ApiKey.ALTER_CONFIGS: 1, ApiKey.ALTER_REPLICA_LOG_DIRS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1, ApiKey.CREATE_PARTITIONS: 1, ApiKey.DELETE_GROUPS: 1, ApiKey.ELECT_LEADERS: 0,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 0, ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0, ApiKey.OFFSET_DELETE: 0, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0, ApiKey.DESCRIBE_TOPIC_PARTITIONS: 0,
}
_NEVER = 1 << 30

#: the first version at which each mutation API's controller quota is strict (Kafka's
#: ControllerApis ``strictSinceVersion``): THROTTLING_QUOTA_EXCEEDED per topic over the quota
STRICT_FROM = {ApiKey.CREATE_TOPICS: 6, ApiKey.CREATE_PARTITIONS: 3, ApiKey.DELETE_TOPICS: 5}
#: ns of handling time -> percent of one thread over a second (Kafka's NanosToPercentagePerSecond)
_NS_TO_PERCENT = 100 / 1e9
#: a topic refused by a strict controller mutation quota (Kafka's Errors.THROTTLING_QUOTA_EXCEEDED message)
THROTTLED = "The throttling quota has been exceeded."
_I32 = struct.Struct(">i")


def client_throttles(key: int, version: int) -> bool:
    """Whether a client of this API version throttles itself (KIP-219): the reply can leave at once."""
    return version >= KIP219_FROM.get(key, _NEVER)


def _is_follower(request: dict[str, Any], version: int) -> bool:
    if version >= 15:
        rs = request.get("replica_state")
        return rs is not None and rs["replica_id"] >= 0
    return bool(request.get("replica_id", -1) >= 0)


def _with_throttle(result: Any, ms: int) -> Any:
    """A dict reply with ``throttle_time_ms`` set (a copy: a handler may keep its dict; a
    version without the field does not encode it)."""
    if type(result) is dict and result.get("throttle_time_ms", 0) != ms:
        return {**result, "throttle_time_ms": ms}
    return result


def _empty_fetch(reply: FetchReply, version: int, ms: int) -> FetchReply:
    """A throttled consumer's reply (Kafka's ``getThrottledResponse``): no partitions, the
    reply's error code and session id kept, the throttle time set."""
    first = reply.parts[0]
    assert type(first) is bytes
    head = 5 if version >= 12 else 4  # correlation id (+ the flexible header's tag buffer)
    out = bytearray(first[:head]) + _I32.pack(ms)
    if version >= 7:
        out += first[head + 4:head + 10]  # error_code, session_id
    out += b"\x01\x00" if version >= 12 else b"\x00\x00\x00\x00"  # no topics (+ the tag buffer)
    return FetchReply([bytes(out)], len(out))


def throttle(ctx: RequestContext, request: dict[str, Any], size: int, handler_ns: int, result: Any) -> tuple[Any, int]:
    """Measure a request against its client's quotas: (the reply to send, the throttle time in
    ms). ``size``: the request's bytes; ``handler_ns``: its handling time; ``result``: what
    its handler answered."""
    key = ctx.api_key
    if key in EXEMPT:
        return result, 0
    quotas = ctx.state.quotas
    user, client_id = ctx.session.principal.name, ctx.client_id
    if key == ApiKey.PRODUCE:
        ms = quotas.produce.record(user, client_id, size)
        if request["acks"] != 0:
            ms = max(ms, quotas.request.record(user, client_id, handler_ns * _NS_TO_PERCENT))
        return _with_throttle(result, ms), ms
    if key == ApiKey.FETCH:
        if _is_follower(request, ctx.api_version) or type(result) is not FetchReply:
            return result, 0
        bandwidth = quotas.fetch.record(user, client_id, result.size)
        ms = max(bandwidth, quotas.request.record(user, client_id, handler_ns * _NS_TO_PERCENT))
        if ms > 0:
            quotas.fetch.record_no_throttle(user, client_id, -result.size)
            result = _empty_fetch(result, ctx.api_version, ms)
        return result, ms
    ms = quotas.request.record(user, client_id, handler_ns * _NS_TO_PERCENT)
    if key in STRICT_FROM and type(result) is dict:  # the controller mutation throttle, set by the handler
        ms = max(ms, result.get("throttle_time_ms", 0))
    if result is NO_RESPONSE:
        return result, ms
    return _with_throttle(result, ms), ms


def bound_fetch(ctx: RequestContext, request: dict[str, Any]) -> None:
    """Bound a consumer's fetch (``max_bytes``, and ``min_bytes`` by it) by what its
    ``consumer_byte_rate`` allows in one quota window (Kafka's ``getMaxValueInQuotaWindow``)."""
    fetch = ctx.state.quotas.fetch
    if not fetch.quotas_enabled or _is_follower(request, ctx.api_version):
        return
    window = fetch.max_value_in_window(ctx.session.principal.name, ctx.client_id)
    if window < request["max_bytes"]:
        request["max_bytes"] = int(window)
        request["min_bytes"] = min(request["min_bytes"], request["max_bytes"])


def mutation_quota(ctx: RequestContext) -> MutationQuota:
    """The controller mutation quota of a CreateTopics, CreatePartitions or DeleteTopics
    request: strict from the versions of ``STRICT_FROM``, permissive before."""
    strict = ctx.api_version >= STRICT_FROM[ApiKey(ctx.api_key)]
    return ctx.state.quotas.controller_mutation.mutation_quota(ctx.session.principal.name, ctx.client_id, strict)
