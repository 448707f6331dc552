"""DescribeClientQuotas and AlterClientQuotas from a second, independent client: the Node.js
client @platformatic/kafka (tests/compat/node), whose Admin has describeClientQuotas and
alterClientQuotas; no Python Kafka client has them (confluent-kafka, kafka-python and aiokafka
do not). Our own Admin and the raw wire are in tests/broker/test_client_quotas.py."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.compat._clients import NODE_DIR, PK_MISSING, pk_admin_calls

pytestmark = pytest.mark.skipif(PK_MISSING is not None, reason=PK_MISSING or "")


def _refused(bootstrap: str, call: tuple[str, list[Any]]) -> str:
    """The client's error for a call the broker refuses (it raises the broker's code and message)."""
    r = subprocess.run(["node", os.path.join(NODE_DIR, "admin_calls.mjs"), bootstrap, json.dumps([call])],
                       capture_output=True, text=True, timeout=60, cwd=NODE_DIR, check=False)
    assert r.returncode != 0
    return r.stderr


def test_platformatic_kafka_alters_and_describes_client_quotas(module_broker) -> None:
    alice = [{"entityType": "user", "entityName": "pk-alice"}, {"entityType": "client-id", "entityName": None}]
    altered, described, removed, after = pk_admin_calls(module_broker.bootstrap, [
        ("alterClientQuotas", [{"entries": [{"entities": alice, "ops": [
            {"key": "producer_byte_rate", "value": 1048576, "remove": False},
            {"key": "request_percentage", "value": 12.5, "remove": False}]}]}]),
        ("describeClientQuotas", [{"components": [{"entityType": "user", "matchType": 0, "match": "pk-alice"}],
                                   "strict": False}]),
        ("alterClientQuotas", [{"entries": [{"entities": alice, "ops": [
            {"key": "producer_byte_rate", "remove": True}, {"key": "request_percentage", "remove": True}]}]}]),
        ("describeClientQuotas", [{"components": [{"entityType": "user", "matchType": 0, "match": "pk-alice"}]}]),
    ])
    assert altered == [{"errorCode": 0, "errorMessage": None, "entity": [
        {"entityType": "client-id", "entityName": None}, {"entityType": "user", "entityName": "pk-alice"}]}]
    (entry,) = described
    assert entry["entity"] == altered[0]["entity"]
    assert sorted((v["key"], v["value"]) for v in entry["values"]) == [("producer_byte_rate", 1048576),
                                                                       ("request_percentage", 12.5)]
    assert removed[0]["errorCode"] == 0 and after == []

    err = _refused(module_broker.bootstrap, ("alterClientQuotas", [{"entries": [{"entities": [
        {"entityType": "user", "entityName": "pk-bob"}], "ops": [
        {"key": "consumer_byte_rate", "value": 0.5, "remove": False}]}]}]))
    assert "apiCode: 42" in err and "consumer_byte_rate cannot be a fractional value." in err
    err = _refused(module_broker.bootstrap, ("describeClientQuotas", [{"components": [
        {"entityType": "ip", "matchType": 2}, {"entityType": "user", "matchType": 2}]}]))
    assert "apiCode: 42" in err and "IP filter component should not be used with user or clientId" in err
