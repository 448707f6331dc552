"""Every (API, version) the broker advertises, derived from the schema tables and sent to a live
broker over a raw socket: each answers (same correlation id) with a response that decodes with
that version's table and uses every byte of its frame. Requests are built field by field from
the tables, so a version added to a table is covered without touching this test; the few
values that must be chosen (acks=1 so Produce answers, a topic to delete that does not exist)
are overridden per API."""

from __future__ import annotations

import uuid
from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey
from client.protocol.messages import REQUESTS
from client.protocol.schema import NULL, Array, Field, Struct, _in, parse_versions
from tests.server.wire import Conn, batch, create_topic, partition_response, produce

TOPIC = "every-version"

#: values for fields whose zero value would make the request not answer, or act on the topic
OVERRIDES: dict[ApiKey, dict[str, Any]] = {
    ApiKey.PRODUCE: {"acks": 1},
    ApiKey.DELETE_TOPICS: {"name": "not-there", "topic_names": ["not-there"]},
    ApiKey.DELETE_RECORDS: {"offset": 0},
    ApiKey.FETCH: {"partition_max_bytes": 1 << 20},  # v0-2 have a hard limit: 0 would return nothing
}


def _present(f: Field, version: int, flexible: bool) -> bool:
    if f.tag is not None:
        return flexible and _in(parse_versions(f.tagged_versions or f.versions), version)
    return _in(f._versions, version)


def _leaf(f: Field, t: str, version: int, key: ApiKey, topic_id: uuid.UUID) -> Any:
    if f.name in OVERRIDES.get(key, {}):
        return OVERRIDES[key][f.name]
    if t == "string":
        if f.name in ("name", "topic", "topic_name", "resource_name"):
            return TOPIC
        return None if _in(f._nullable, version) else "x"
    if t == "uuid":
        return topic_id if f.name == "topic_id" else None
    if t in ("bytes", "records"):
        return None if _in(f._nullable, version) and t == "bytes" else b""
    default = f.default
    if default is None or default is NULL:
        return False if t == "bool" else 0
    return default


def build(fields: list[Field], version: int, flexible: bool, key: ApiKey, topic_id: uuid.UUID) -> dict[str, Any]:
    """One value of every field ``version`` carries (the rest take their defaults when encoded)."""
    out: dict[str, Any] = {}
    for f in fields:
        if not _present(f, version, flexible):
            continue
        t = f.type
        if f.name in OVERRIDES.get(key, {}):
            out[f.name] = OVERRIDES[key][f.name]
        elif isinstance(t, Array):
            if isinstance(t.of, str):
                out[f.name] = [_leaf(f, t.of, version, key, topic_id)] if t.of != "string" else [TOPIC]
                if t.of == "int32":
                    out[f.name] = [0]
            else:
                out[f.name] = [build(list(t.of), version, flexible, key, topic_id)]
        elif isinstance(t, Struct):
            out[f.name] = build(list(t.fields), version, flexible, key, topic_id)
        else:
            out[f.name] = _leaf(f, t, version, key, topic_id)
    return out


def check(key: ApiKey, version: int, resp: dict[str, Any], topic_id: uuid.UUID) -> None:
    """What the data-path APIs must answer for the request ``build`` makes."""
    if key == ApiKey.FETCH:
        (t,) = resp["responses"]
        assert t["topic_id" if version >= 13 else "topic"] == (topic_id if version >= 13 else TOPIC)
        (p,) = t["partitions"]
        assert (p["error_code"], p["high_watermark"]) == (0, 3) and len(p["records"]) > 0
        # v0-3: magic 0 (v0-1) or magic 1 (v2-3) messages, down-converted; v4+: RecordBatch v2
        assert p["records"][16] == (0 if version <= 1 else 1 if version <= 3 else 2)
    elif key == ApiKey.METADATA:
        (t,) = resp["topics"]
        if version in (10, 11):  # names are required there; an id is INVALID_REQUEST, as in Kafka
            assert t["error_code"] == 42
        else:
            assert t["error_code"] == 0 and t["name"] == TOPIC and len(t["partitions"]) == 1
            assert t["topic_id"] == (topic_id if version >= 10 else None)
    elif key == ApiKey.PRODUCE:  # an empty records blob
        assert partition_response(resp)["error_code"] == 2
        (t,) = resp["responses"]
        assert t["topic_id" if version >= 13 else "name"] == (topic_id if version >= 13 else TOPIC)
    elif key == ApiKey.OFFSET_COMMIT:  # the topic is known (by name, or by id from v10)
        (t,) = resp["topics"]
        assert t["topic_id" if version >= 10 else "name"] == (topic_id if version >= 10 else TOPIC)
        assert t["partitions"][0]["error_code"] not in (3, 100)  # UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID
    elif key == ApiKey.OFFSET_FETCH and version >= 8:
        (t,) = resp["groups"][0]["topics"]
        assert t["topic_id" if version >= 10 else "name"] == (topic_id if version >= 10 else TOPIC)
        assert t["partitions"][0]["error_code"] == 0
    elif key == ApiKey.LIST_OFFSETS:  # timestamp 0: the first record
        p = partition_response(resp, "partitions")
        if version == 0:  # the old style: no segment file was last modified before 1970
            assert (p["error_code"], p["old_style_offsets"]) == (0, [])
        else:
            assert (p["error_code"], p["offset"]) == (0, 0)


def test_every_advertised_version_answers_decodably(module_broker) -> None:
    with Conn(module_broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 4, create_topic(TOPIC))["topics"][0]["error_code"] == 0
        assert partition_response(c.call(ApiKey.PRODUCE, 7, produce(TOPIC, 0, batch(3))))["error_code"] == 0
        md = c.call(ApiKey.METADATA, 12, {"topics": [{"name": TOPIC, "topic_id": None}]})
        topic_id = md["topics"][0]["topic_id"]
        assert topic_id != uuid.UUID(int=0)
        done = 0
        for key, (lo, hi) in sorted(SUPPORTED_VERSIONS.items()):
            msg = REQUESTS[key]
            for version in range(lo, hi + 1):
                body = build(msg.fields, version, msg.is_flexible(version), key, topic_id)
                resp = c.call(key, version, body)  # asserts the correlation id and every byte decoded
                check(key, version, resp, topic_id)
                done += 1
        # the session still works after every one of them: nothing closed the connection
        assert c.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})[
            "error_code"] == 0
    assert done == sum(hi - lo + 1 for lo, hi in SUPPORTED_VERSIONS.values())
    assert done > 150
