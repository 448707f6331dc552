"""The advertised version ranges against Kafka 4.2's: every client-facing API (one whose spec
lists the ``broker`` listener, in the JSON message specs kafka-python 3 ships in
kafka/protocol/schemas/resources) is served up to the maximum a Kafka 4.2 broker answers in
ApiVersions (kafka-python's ``BROKER_API_VERSIONS[(4, 2)]``; its specs are Kafka 4.3's, whose
DescribeLogDirs v5 a Kafka 4.2 does not serve, and a broker offering it is taken for a 4.3 by
kafka-python's version inference), and from Kafka 3.9's minimum or lower (Kafka 4 dropped versions that 3.9 served and old clients still send:
Produce 0-2, ListOffsets 0, OffsetCommit 0-1, ...; they stay).

``PENDING`` lists the APIs and versions not served yet, each reported as an expected failure;
``test_pending_is_not_stale`` fails when one catches up and stays listed, so the list shrinks
with the work. Each message's fields are compared with the same specs in test_messages.py, and every
advertised version answers a real request in tests/server/test_every_version.py."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from client.protocol.api import SUPPORTED_VERSIONS, ApiKey
from client.protocol.schema import parse_versions

try:
    import kafka as _kafka
    _SPECS_DIR: str | None = os.path.join(os.path.dirname(_kafka.__file__), "protocol", "schemas", "resources")
except ImportError:  # pragma: no cover - kafka-python is a test dependency
    _SPECS_DIR = None

#: API key -> what is missing (empty: every client-facing API of these specs is at Kafka's maximum)
PENDING: dict[int, str] = {}


def _client_facing_specs() -> dict[int, dict[str, Any]]:
    if _SPECS_DIR is None or not os.path.isdir(_SPECS_DIR):
        return {}
    out = {}
    for name in sorted(os.listdir(_SPECS_DIR)):
        if not name.endswith("Request.json"):
            continue
        with open(os.path.join(_SPECS_DIR, name)) as f:
            spec = json.loads(re.sub(r"^\s*//.*$", "", f.read(), flags=re.M))
        if "broker" in spec.get("listeners", []):
            out[spec["apiKey"]] = spec
    return out


SPECS = _client_facing_specs()

try:
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS, infer_broker_version_from_api_versions
    KAFKA_42: dict[int, tuple[int, int]] = BROKER_API_VERSIONS[(4, 2)]
except ImportError:  # pragma: no cover - kafka-python is a test dependency
    KAFKA_42 = {}


def _kafka_42_max(key: int) -> int:
    """Kafka 4.2's maximum version of ``key`` (the spec's for an API the table leaves out)."""
    if key in KAFKA_42:
        return KAFKA_42[key][1]
    return parse_versions(SPECS[key]["validVersions"])[1]


def test_the_specs_are_kafka_42s() -> None:
    """52 client-facing APIs in Kafka 4.2's specs as kafka-python 3 ships them (without the
    KIP-848 / share group / streams APIs, which it does not carry)."""
    if not SPECS:
        pytest.skip("Kafka's JSON specs (kafka-python 3) are not installed")
    assert len(SPECS) == 52
    assert parse_versions(SPECS[ApiKey.FETCH]["validVersions"]) == (4, 18)


@pytest.mark.parametrize("key", sorted(SPECS) or [0])
def test_served_at_kafka_42s_maximum(key: int) -> None:
    if not SPECS:
        pytest.skip("Kafka's JSON specs (kafka-python 3) are not installed")
    if key in PENDING:
        pytest.xfail(f"{SPECS[key]['name']}: not served yet: {PENDING[key]}")
    lo = parse_versions(SPECS[key]["validVersions"])[0]
    hi = _kafka_42_max(key)
    assert key in SUPPORTED_VERSIONS, f"{SPECS[key]['name']} is not served"
    ours = SUPPORTED_VERSIONS[ApiKey(key)]
    assert ours[1] == hi and ours[0] <= lo, f"{SPECS[key]['name']}: ours {ours}, Kafka 4.2's ({lo}, {hi})"


def test_pending_is_not_stale() -> None:
    """Every PENDING entry is still short of Kafka 4.2's maximum (an API that catches up must
    leave the list, or its test would be skipped as expected-to-fail for ever)."""
    if not SPECS:
        pytest.skip("Kafka's JSON specs (kafka-python 3) are not installed")
    caught_up = [SPECS[k]["name"] for k in PENDING
                 if SUPPORTED_VERSIONS.get(ApiKey(k), (0, -1))[1] == _kafka_42_max(k)]
    assert not caught_up


def test_kafka_python_infers_kafka_42() -> None:
    """kafka-python with ``api_version=None`` infers the broker's version from ApiVersions (the
    newest API version it knows a release for): minibroker is taken for the Kafka 4.2 it serves
    (its integration suite's test_kafka_version_infer). Offering DescribeLogDirs v5 made it 4.3."""
    if not KAFKA_42:
        pytest.skip("kafka-python 3 is not installed")
    ours = {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
    assert infer_broker_version_from_api_versions(ours) == (4, 2)
