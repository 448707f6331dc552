"""RegistryState without a broker: the MAX_ID record a permanent delete writes, and a replay of
the topic as compaction leaves it (only each key's last record, tombstones gone)."""

from __future__ import annotations

import json

from broker.schema_registry.records import decode
from broker.schema_registry.state import Plan, RegistryState

ENUM = json.dumps({"type": "enum", "name": "E", "symbols": ["A"]})
FIXED = json.dumps({"type": "fixed", "name": "F", "size": 4})


def write(state: RegistryState, log: Plan, plan: Plan) -> None:
    for key, value in plan:
        log.append((key, value))
        rec = decode(key, value)
        assert rec is not None
        state.apply(rec)


def compacted(log: Plan) -> RegistryState:
    """A registry replaying ``log`` after the cleaner: last value per key, no tombstones."""
    last = dict(log)
    state = RegistryState()
    for key, value in last.items():
        rec = decode(key, value)
        if value is not None and rec is not None:
            state.apply(rec)
    return state


def register(state: RegistryState, log: Plan, subject: str, text: str) -> int:
    plan, schema_id = state.register(subject, state.parse(text, "AVRO", (), False), ())
    write(state, log, plan)
    return schema_id


def test_permanent_delete_of_the_largest_id_survives_compaction() -> None:
    state, log = RegistryState(), []
    assert register(state, log, "a", ENUM) == 1
    assert register(state, log, "b", FIXED) == 2
    write(state, log, state.delete_subject("b", permanent=False)[0])
    plan = state.delete_subject("b", permanent=True)[0]
    assert [json.loads(k)["keytype"] for k, _ in plan] == ["MAX_ID", "SCHEMA"]
    write(state, log, plan)
    replayed = compacted(log)
    assert 2 not in replayed.id_holders and replayed.max_id == 2
    assert register(replayed, log, "c", FIXED) == 3  # the same bytes again: a new id


def test_no_max_id_record_while_another_holder_keeps_the_id() -> None:
    state, log = RegistryState(), []
    register(state, log, "a", ENUM)
    register(state, log, "b", FIXED)
    register(state, log, "c", FIXED)  # same schema, same id 2
    write(state, log, state.delete_subject("b", permanent=False)[0])
    assert [json.loads(k)["keytype"] for k, _ in state.delete_subject("b", permanent=True)[0]] == ["SCHEMA"]
    # a smaller id deleted: the largest is still in the topic
    write(state, log, state.delete_subject("a", permanent=False)[0])
    assert [json.loads(k)["keytype"] for k, _ in state.delete_version("a", "1", permanent=True)[0]] == ["SCHEMA"]
