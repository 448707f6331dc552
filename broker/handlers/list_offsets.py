"""ListOffsets (2), v0-11: -2 = log start offset, -1 = log end offset (= high
watermark; with ``isolation_level`` 1, read_committed (v2+), the last stable offset), -3 (v7+) = the first offset holding the largest
timestamp, -4 (v8+, earliest local) = the log start offset and -5 (v9+, latest tiered) and -6
(v11+, earliest pending upload) = offset -1, as Kafka answers without tiered storage (v10's
``timeout_ms`` bounds remote reads: there are none here); otherwise the first offset whose record timestamp
>= the target (timestamp and offset -1 when there is none).

``leader_epoch`` (v4+): 0, the only epoch a partition has here, for any offset found in a log
that has held records (-1 otherwise, as Kafka's empty epoch cache answers). A
``current_leader_epoch`` above 0 is UNKNOWN_LEADER_EPOCH (the client knows a newer leader than
this broker; cannot happen with one broker).
As in Kafka, an offset found by timestamp at or past the last fetchable offset (the LSO for
read_committed, else the high watermark) is not answered (offset -1).

v0 answers the old style (Kafka's legacyFetchOffsetsBefore, see ``Log.legacy_offsets_before``):
up to ``max_num_offsets`` offsets in descending order — for -1 the log end offset first, then
segment base offsets; for -2 the log start offset; for a timestamp, the segments whose files
were last modified at or before it. The high watermark is the log end offset here, so no
offset needs capping to it."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..errors import error_code_of
from ..request_context import RequestContext
from ..state import BrokerState
from ..storage.log import LATEST_TIMESTAMP
from .authz import may_describe_topic

API_KEY = ApiKey.LIST_OFFSETS
AUTHORIZATION = "DESCRIBE on each topic"

LEADER_EPOCH = 0


def _answer(state: BrokerState, name: str, p: dict[str, Any], read_committed: bool) -> dict[str, Any]:
    resp = {"partition_index": p["partition_index"], "error_code": 0, "timestamp": -1, "offset": -1,
            "leader_epoch": -1}
    log = state.logs.get_log(name, p["partition_index"])
    if log is None:
        resp["error_code"] = state.logs.missing_partition_error(name, p["partition_index"])
    elif p["current_leader_epoch"] > LEADER_EPOCH:
        resp["error_code"] = ErrorCode.UNKNOWN_LEADER_EPOCH
    else:
        try:
            target = p["timestamp"]
            found = log.offset_for_timestamp(target)
            if read_committed and found is not None:  # read_uncommitted: the high watermark is the LEO
                lso = log.last_stable_offset
                if target == LATEST_TIMESTAMP:
                    found = found._replace(offset=lso)
                elif target >= 0 and found.offset >= lso:
                    found = None
        except Exception as e:  # noqa: BLE001
            resp["error_code"] = error_code_of(e)
        else:
            if found is not None:
                resp["timestamp"], resp["offset"] = found.timestamp, found.offset
                if found.offset >= 0 and log.log_end_offset > 0:
                    resp["leader_epoch"] = LEADER_EPOCH
    return resp


def _answer_v0(state: BrokerState, name: str, p: dict[str, Any]) -> dict[str, Any]:
    resp: dict[str, Any] = {"partition_index": p["partition_index"], "error_code": 0, "old_style_offsets": []}
    log = state.logs.get_log(name, p["partition_index"])
    if log is None:
        resp["error_code"] = state.logs.missing_partition_error(name, p["partition_index"])
        return resp
    try:
        resp["old_style_offsets"] = log.legacy_offsets_before(p["timestamp"], p["max_num_offsets"])
    except Exception as e:  # noqa: BLE001 - the partition's error code (a closed log, a file gone)
        resp["error_code"] = error_code_of(e)
    return resp


def _denied(ctx: RequestContext, t: dict[str, Any]) -> dict[str, Any]:
    """A topic the principal may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED for each partition."""
    code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if ctx.api_version == 0:
        return {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code,
                                                   "old_style_offsets": []} for p in t["partitions"]]}
    return {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code,
                                               "timestamp": -1, "offset": -1, "leader_epoch": -1}
                                              for p in t["partitions"]]}


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    if ctx.api_version == 0:
        return {"topics": [{"name": t["name"], "partitions": [_answer_v0(state, t["name"], p) for p in t["partitions"]]}
                           if may_describe_topic(ctx, t["name"]) else _denied(ctx, t) for t in request["topics"]]}
    read_committed = request.get("isolation_level", 0) == 1
    topics = [{"name": t["name"], "partitions": [_answer(state, t["name"], p, read_committed)
                                                 for p in t["partitions"]]}
              if may_describe_topic(ctx, t["name"]) else _denied(ctx, t)
              for t in request["topics"]]
    return {"throttle_time_ms": 0, "topics": topics}
