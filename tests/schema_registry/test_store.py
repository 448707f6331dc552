"""``_schemas`` as Confluent's registry writes it, read back by a plain Kafka consumer with an
independent JSON parse; and a registry restarted after SIGKILL on the same data directory."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from broker.testing import BrokerProcess

from .conftest import Registry

pytestmark = pytest.mark.slow

V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]})
OTHER = json.dumps({"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]})


def read_schemas_topic(bootstrap: str) -> list[tuple[dict, dict | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "schemas-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("_schemas", 0, 0)])
        _, high = consumer.get_watermark_offsets(TopicPartition("_schemas", 0), timeout=10)
        out, last = [], -1
        while last < high - 1:  # by offset: a compacted topic has gaps
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            last = msg.offset()
            out.append((json.loads(msg.key()), None if msg.value() is None else json.loads(msg.value())))
        return out
    finally:
        consumer.close()


def test_schemas_topic_in_confluents_format(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data"), schema_registry=True) as b:
        registry = Registry(b.schema_registry_url)
        one = registry.register("orders-value", V1)
        two = registry.register("orders-value", V2)
        registry.put("/config/orders-value", {"compatibility": "FULL"})
        registry.put("/mode", {"mode": "READWRITE"})
        registry.delete("/subjects/orders-value/versions/1")
        registry.delete("/subjects/orders-value/versions/1?permanent=true")
        records = read_schemas_topic(b.bootstrap)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "_schemas")]).values()
        assert future.result(10)["cleanup.policy"].value == "compact"
        assert len(admin.list_topics(timeout=10).topics["_schemas"].partitions) == 1
    canonical = json.dumps(json.loads(V1), separators=(",", ":"))
    assert records[0] == ({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1},
                          {"subject": "orders-value", "version": 1, "id": one, "references": [],
                           "schema": canonical, "deleted": False})
    assert records[1][0]["version"] == 2 and records[1][1]["id"] == two
    assert records[2] == ({"keytype": "CONFIG", "subject": "orders-value", "magic": 0}, {"compatibilityLevel": "FULL"})
    assert records[3] == ({"keytype": "MODE", "subject": None, "magic": 0}, {"mode": "READWRITE"})
    assert records[4][0] == records[0][0] and records[4][1] == {**records[0][1], "deleted": True}
    assert records[5] == (records[0][0], None)  # the permanent delete: a tombstone
    assert len(records) == 6


def test_restart_after_sigkill_restores_every_schema_and_id(tmp_path) -> None:
    data = str(tmp_path / "data")
    b = BrokerProcess(data, schema_registry=True).start()
    try:
        registry = Registry(b.schema_registry_url)
        ids = {("orders-value", 1): registry.register("orders-value", V1),
               ("orders-value", 2): registry.register("orders-value", V2),
               ("colours-value", 1): registry.register("colours-value", OTHER),
               ("copy-value", 1): registry.register("copy-value", V1)}
        registry.put("/config/orders-value", {"compatibility": "FULL_TRANSITIVE"})
        registry.delete("/subjects/copy-value")  # soft: the id stays
        before = {path: registry.get(path) for path in (
            "/subjects", "/subjects?deleted=true", "/subjects/orders-value/versions",
            "/subjects/orders-value/versions/2", "/config/orders-value", f"/schemas/ids/{ids['colours-value', 1]}")}
    finally:
        b.kill()  # SIGKILL: no clean shutdown, no checkpoint
    with BrokerProcess(data, schema_registry=True) as b:
        registry = Registry(b.schema_registry_url)
        for path, answer in before.items():
            assert registry.get(path) == answer, path
        for (subject, version), sid in ids.items():
            assert registry.get(f"/subjects/{subject}/versions/{version}?deleted=true")[1]["id"] == sid
        new = registry.register("new-value", json.dumps({"type": "fixed", "name": "F", "size": 16}))
        assert new == max(ids.values()) + 1


def test_ids_never_reused_after_permanent_delete_compaction_and_sigkill(tmp_path) -> None:
    """The largest id, permanently deleted, then its record and tombstone compacted away: a
    restart after SIGKILL still allocates above it (the MAX_ID record survives compaction)."""
    data = str(tmp_path / "data")
    cleaner = ["log.cleaner.backoff.ms=50"]
    b = BrokerProcess(data, cleaner, schema_registry=True).start()
    try:
        registry = Registry(b.schema_registry_url)
        keep = registry.register("keep-value", V1)
        doomed = registry.register("doomed-value", OTHER)
        assert doomed == keep + 1
        assert registry.delete("/subjects/doomed-value")[0] == 200
        assert registry.delete("/subjects/doomed-value?permanent=true")[0] == 200
        # Make the cleaner take everything but the active segment, and drop tombstones at once;
        # a later write rolls the segment (segment.ms) so the deletes become cleanable.
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        # (incremental: a plain AlterConfigs would replace the topic's configs, compact included)
        resource = ConfigResource(ConfigResource.Type.TOPIC, "_schemas", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in (
                ("segment.ms", "100"), ("min.cleanable.dirty.ratio", "0.01"), ("delete.retention.ms", "0"))])
        [future] = admin.incremental_alter_configs([resource]).values()
        future.result(10)
        deadline = time.monotonic() + 30
        while True:
            time.sleep(0.3)
            registry.put("/config/keep-value", {"compatibility": "NONE"})  # rolls the aged segment
            records = read_schemas_topic(b.bootstrap)
            doomed_left = [k for k, _ in records if k.get("subject") == "doomed-value"]
            if not doomed_left:
                break
            assert time.monotonic() < deadline, f"not compacted: {records}"
        assert ({"keytype": "MAX_ID", "magic": 0}, {"id": doomed}) in records
        assert all(v is None or v["id"] != doomed for k, v in records if k["keytype"] == "SCHEMA")  # no schema record left
    finally:
        b.kill()
    with BrokerProcess(data, cleaner, schema_registry=True) as b:
        registry = Registry(b.schema_registry_url)
        assert registry.get(f"/schemas/ids/{doomed}")[1]["error_code"] == 40403
        assert registry.get(f"/schemas/ids/{keep}")[0] == 200
        assert registry.register("new-value", json.dumps({"type": "fixed", "name": "F", "size": 16})) == doomed + 1
        # the same bytes as the deleted schema are a new schema too: a new id, not the old one
        assert registry.register("doomed-value", OTHER) == doomed + 2
