"""Authorization in the handlers (issue 32): every handler names its checks, and each group of
handlers answers Kafka's error codes over the wire. The broker runs in-process with the
StandardAuthorizer; the test's connections are PLAINTEXT, so their principal is
``User:ANONYMOUS``; the ACLs are set on the broker's store directly (the ACL APIs themselves
are tested as a super user in tests/compat/test_acl_matrix.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import broker.handlers as handlers_pkg
from broker.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.handlers import HANDLERS
from broker.testing.inprocess import InProcessBroker
from broker.testing.wire import Conn, batch, create_topic, fetch, list_offsets, metadata, partition_response, produce
from client.protocol.api import ApiKey, ErrorCode

ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
      "super.users": "User:admin"}
ME = "User:ANONYMOUS"
T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
#: the helpers of broker/handlers/authz.py and the context's own question
CHECKS = ("ctx.authorize(", "cluster_allows(", "may_read_topic(", "may_describe_topic(", "config_denied(",
          "authorize_by_resource_type(")


def acl(rtype: ResourceType, name: str, op: AclOperation, perm: AclPermissionType = ALLOW,
        pattern: PatternType = LIT, principal: str = ME) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, "*", op, perm))


def test_every_handler_names_and_makes_its_authorization_checks() -> None:
    seen = {}
    for info in pkgutil.iter_modules(handlers_pkg.__path__):
        module = importlib.import_module(f"broker.handlers.{info.name}")
        if getattr(module, "API_KEY", None) is None:
            continue
        seen[int(module.API_KEY)] = module
        rule = getattr(module, "AUTHORIZATION", None)
        assert isinstance(rule, str) and rule, f"{info.name} does not name its authorization checks"
        source = inspect.getsource(module)
        if int(module.API_KEY) in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            assert rule.startswith("none")
            continue
        assert not rule.startswith("none"), info.name
        uses = source
        if "alter(request, ctx" in source:  # the alter-configs APIs check in config_change.alter
            uses += inspect.getsource(importlib.import_module("broker.handlers.config_change"))
        assert any(c in uses for c in CHECKS), f"{info.name} never asks the authorizer"
    assert set(seen) == set(HANDLERS)


@pytest.fixture(scope="module")
def ib(tmp_path_factory) -> Iterator[InProcessBroker]:
    b = InProcessBroker(str(tmp_path_factory.mktemp("authz") / "data"), ON).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture()
def acls(ib: InProcessBroker) -> Iterator[Any]:
    """``acls(binding, ...)`` sets the ACLs for one test; all are removed after it."""
    state = ib.broker.state

    def set_acls(*bindings: AclBinding) -> None:
        ib.call(lambda: state.acls.create(list(bindings)))

    yield set_acls
    ib.call(lambda: state.acls.delete([AclBindingFilter()]))


def _topic(ib: InProcessBroker, name: str, partitions: int = 1) -> None:
    state = ib.broker.state
    if ib.call(lambda: state.logs.topic(name)) is None:
        ib.call(lambda: state.logs.create_topic(name, partitions))


def test_produce_denied_writes_nothing_and_allowed_by_prefix_writes(ib, acls) -> None:
    _topic(ib, "orders")
    acls(acl(T, "ord", Op.WRITE, pattern=PRE), acl(T, "orders", Op.WRITE, DENY, principal="User:*"))
    with Conn(ib.port) as c:
        p = partition_response(c.call(ApiKey.PRODUCE, 9, produce("orders", 0, batch())), "partition_responses")
        assert p["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # the Deny wins over the prefixed Allow
        assert ib.call(lambda: ib.broker.state.logs.get_log("orders", 0).log_end_offset) == 0
    ib.call(lambda: ib.broker.state.acls.delete([AclBindingFilter.of(
        acl(T, "orders", Op.WRITE, DENY, principal="User:*"))]))
    with Conn(ib.port) as c:
        p = partition_response(c.call(ApiKey.PRODUCE, 9, produce("orders", 0, batch())), "partition_responses")
        assert p["error_code"] == 0
        # an unknown topic the principal may not write: 29, not "unknown"
        p = partition_response(c.call(ApiKey.PRODUCE, 9, produce("nowhere", 0, batch())), "partition_responses")
        assert p["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_produce_v13_by_topic_id_authorizes_the_name(ib, acls) -> None:
    """v13 names topics by id: a known id is authorized by its topic's name (WRITE), an id
    that names no topic is UNKNOWN_TOPIC_ID whatever the ACLs, as Kafka 4.1+ answers."""
    _topic(ib, "by-id")
    state = ib.broker.state
    topic_id = ib.call(lambda: state.logs.topic("by-id")).topic_id

    def send(tid: Any) -> int:
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
                "topic_data": [{"topic_id": tid, "partition_data": [{"index": 0, "records": batch()}]}]}
        r = c.call(ApiKey.PRODUCE, 13, body)
        assert r["responses"][0]["topic_id"] == tid
        return int(partition_response(r)["error_code"])

    with Conn(ib.port) as c:
        assert send(topic_id) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert send(uuid.uuid4()) == ErrorCode.UNKNOWN_TOPIC_ID
        assert ib.call(lambda: state.logs.get_log("by-id", 0).log_end_offset) == 0
        acls(acl(T, "by-id", Op.WRITE))
        assert send(topic_id) == 0
        assert send(uuid.uuid4()) == ErrorCode.UNKNOWN_TOPIC_ID
        assert ib.call(lambda: state.logs.get_log("by-id", 0).log_end_offset) == 3


def test_fetch_and_list_offsets(ib, acls) -> None:
    _topic(ib, "reads")
    with Conn(ib.port) as c:
        p = partition_response(c.call(ApiKey.FETCH, 11, fetch("reads", 0, 0)), "partitions")
        assert p["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        p = partition_response(c.call(ApiKey.LIST_OFFSETS, 5, list_offsets("reads", 0, -1)), "partitions")
        assert p["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        acls(acl(T, "reads", Op.READ))
        assert partition_response(c.call(ApiKey.FETCH, 11, fetch("reads", 0, 0)), "partitions")["error_code"] == 0
        # READ implies DESCRIBE
        assert partition_response(c.call(ApiKey.LIST_OFFSETS, 5, list_offsets("reads", 0, -1)),
                                  "partitions")["error_code"] == 0
        # a follower's fetch needs CLUSTER_ACTION
        body = fetch("reads", 0, 0)
        body["replica_id"] = 1
        assert partition_response(c.call(ApiKey.FETCH, 11, body), "partitions")["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_fetch_v15_plus_without_replica_state_is_a_consumers(ib, acls) -> None:
    """v15+ carries the replica id in the tagged replica_state, which consumers leave out
    (librdkafka 2.12's Fetch v16 did, and the broker closed the connection)."""
    _topic(ib, "reads16")
    state = ib.broker.state
    topic_id = ib.call(lambda: state.logs.topic("reads16")).topic_id
    body = fetch("reads16", 0, 0)
    del body["replica_id"]
    body["topics"][0]["topic_id"] = topic_id
    with Conn(ib.port) as c:
        resp = c.call(ApiKey.FETCH, 16, body)
        assert resp["responses"][0]["partitions"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        acls(acl(T, "reads16", Op.READ))
        assert c.call(ApiKey.FETCH, 16, body)["responses"][0]["partitions"][0]["error_code"] == 0
        body["replica_state"] = {"replica_id": 1, "replica_epoch": -1}  # a follower: CLUSTER_ACTION
        assert c.call(ApiKey.FETCH, 16, body)["responses"][0]["partitions"][0]["error_code"] == \
            ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_internal_topics_need_cluster_action_not_a_read_acl(ib, acls) -> None:
    acls(acl(T, "*", Op.READ), acl(G, "*", Op.ALL))
    with Conn(ib.port) as c:
        assert c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})["error_code"] == 0
        p = partition_response(c.call(ApiKey.FETCH, 11, fetch("__consumer_offsets", 0, 0)), "partitions")
        assert p["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    acls(acl(C, "kafka-cluster", Op.CLUSTER_ACTION))
    with Conn(ib.port) as c:
        assert partition_response(c.call(ApiKey.FETCH, 11, fetch("__consumer_offsets", 0, 0)), "partitions")["error_code"] == 0


def test_metadata_hides_and_refuses_topics_it_may_not_describe(ib, acls) -> None:
    _topic(ib, "visible")
    _topic(ib, "hidden")
    acls(acl(T, "visible", Op.DESCRIBE))
    with Conn(ib.port) as c:
        r = c.call(ApiKey.METADATA, 12, {**metadata(None), "include_topic_authorized_operations": True})
        assert [t["name"] for t in r["topics"]] == ["visible"]
        assert r["topics"][0]["topic_authorized_operations"] == 1 << Op.DESCRIBE
        r = c.call(ApiKey.METADATA, 9, metadata(["hidden", "never-made", "visible"]))
        codes = {t["name"]: t["error_code"] for t in r["topics"]}
        assert codes == {"hidden": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         "never-made": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "visible": 0}
        assert ib.call(lambda: ib.broker.state.logs.topic("never-made")) is None
        # DESCRIBE but no CREATE: not auto-created
        acls(acl(T, "auto-", Op.DESCRIBE, pattern=PRE))
        r = c.call(ApiKey.METADATA, 9, metadata(["auto-1"]))
        assert r["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        acls(acl(T, "auto-", Op.CREATE, pattern=PRE))
        r = c.call(ApiKey.METADATA, 9, metadata(["auto-1"]))
        assert r["topics"][0]["error_code"] in (0, ErrorCode.LEADER_NOT_AVAILABLE)
        assert ib.call(lambda: ib.broker.state.logs.topic("auto-1")) is not None
        r = c.call(ApiKey.METADATA, 9, {**metadata([]), "include_cluster_authorized_operations": True})
        assert r["cluster_authorized_operations"] == 0


def _commit_body(group: str, topic: str) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}


def test_group_apis(ib, acls) -> None:
    _topic(ib, "commits")
    with Conn(ib.port) as c:
        r = c.call(ApiKey.OFFSET_COMMIT, 8, _commit_body("billing", "commits"))
        assert partition_response(r, "partitions")["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "billing", "key_type": 0})
        assert r["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = c.call(ApiKey.JOIN_GROUP, 5, {"group_id": "billing", "session_timeout_ms": 10000,
                                          "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
                                          "protocol_type": "consumer", "protocols": [{"name": "range",
                                                                                       "metadata": b""}]})
        assert r["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = c.call(ApiKey.HEARTBEAT, 3, {"group_id": "billing", "generation_id": 1, "member_id": "m",
                                         "group_instance_id": None})
        assert r["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        acls(acl(G, "billing", Op.READ))
        r = c.call(ApiKey.OFFSET_COMMIT, 8, _commit_body("billing", "commits"))
        assert partition_response(r, "partitions")["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        acls(acl(T, "commits", Op.READ))
        r = c.call(ApiKey.OFFSET_COMMIT, 8, _commit_body("billing", "commits"))
        assert partition_response(r, "partitions")["error_code"] == 0
        r = c.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "billing", "topics": None, "require_stable": False})
        assert [t["name"] for t in r["topics"]] == ["commits"]
        r = c.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["billing", "other"], "include_authorized_operations": True})
        assert [(g["group_id"], g["error_code"]) for g in r["groups"]] == [
            ("billing", 0), ("other", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
        assert r["groups"][0]["authorized_operations"] == (1 << Op.READ) | (1 << Op.DESCRIBE)
        r = c.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["billing"]})
        assert r["results"][0]["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = c.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
        assert {g["group_id"] for g in r["groups"]} <= {"billing"}


def test_consumer_group_heartbeat_needs_describe_on_every_subscribed_topic(ib, acls) -> None:
    """As Kafka 4's KafkaApis: READ on the group, then DESCRIBE on each SubscribedTopicNames
    entry; one topic refused refuses the whole heartbeat with TOPIC_AUTHORIZATION_FAILED
    (librdkafka's 0109 with group.protocol=consumer waits for it on every heartbeat)."""
    _topic(ib, "kip848-open")
    _topic(ib, "kip848-secret")

    def hb(*topics: str) -> dict[str, Any]:
        with Conn(ib.port) as c:
            return c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
                "group_id": "kip848", "member_id": uuid.uuid4().hex, "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": list(topics),
                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})

    assert hb("kip848-open")["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    acls(acl(G, "kip848", Op.READ), acl(T, "kip848-", Op.DESCRIBE, pattern=PRE),
         acl(T, "kip848-secret", Op.ALL, DENY))
    r = hb("kip848-open", "kip848-secret")
    assert (r["error_code"], r["member_epoch"], r["assignment"]) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0, None)
    r = hb("kip848-open")
    assert r["error_code"] == 0 and r["member_epoch"] > 0


def test_offset_commit_and_fetch_v10_by_topic_id(ib, acls) -> None:
    """v10 names topics by id: an id that names no topic is UNKNOWN_TOPIC_ID whatever the
    ACLs; a known one is authorized by its name (OffsetCommit: READ; OffsetFetch: DESCRIBE),
    as Kafka 4.1+ answers; a fetch of every topic leaves out those it may not describe."""
    _topic(ib, "c10")
    _topic(ib, "c10-hidden")
    state = ib.broker.state
    tid = ib.call(lambda: state.logs.topic("c10")).topic_id
    hidden = ib.call(lambda: state.logs.topic("c10-hidden")).topic_id
    unknown = uuid.uuid4()

    def commit(*ids: Any) -> list[int]:
        r = c.call(ApiKey.OFFSET_COMMIT, 10, {
            "group_id": "g10", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"topic_id": i, "partitions": [{"partition_index": 0, "committed_offset": 4,
                                                       "committed_leader_epoch": -1, "committed_metadata": ""}]}
                       for i in ids]})
        assert [t["topic_id"] for t in r["topics"]] == list(ids)
        return [p["error_code"] for t in r["topics"] for p in t["partitions"]]

    def fetch(ids: Any) -> list[tuple[Any, int, int]]:
        topics = None if ids is None else [{"topic_id": i, "partition_indexes": [0]} for i in ids]
        r = c.call(ApiKey.OFFSET_FETCH, 10, {"groups": [{"group_id": "g10", "member_id": None, "member_epoch": -1,
                                                         "topics": topics}], "require_stable": False})
        (g,) = r["groups"]
        if g["error_code"]:
            return [(None, -1, g["error_code"])]
        return [(t["topic_id"], p["committed_offset"], p["error_code"]) for t in g["topics"] for p in t["partitions"]]

    with Conn(ib.port) as c:
        assert commit(tid) == [ErrorCode.GROUP_AUTHORIZATION_FAILED]
        assert fetch([tid]) == [(None, -1, ErrorCode.GROUP_AUTHORIZATION_FAILED)]
        acls(acl(G, "g10", Op.READ))
        assert commit(tid, unknown, hidden) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID,
                                                ErrorCode.TOPIC_AUTHORIZATION_FAILED]
        acls(acl(T, "c10", Op.READ), acl(T, "c10-hidden", Op.READ))
        assert commit(tid, unknown, hidden) == [0, ErrorCode.UNKNOWN_TOPIC_ID, 0]
        ib.call(lambda: state.acls.delete([AclBindingFilter.of(acl(T, "c10-hidden", Op.READ))]))
        assert fetch([tid, unknown, hidden]) == [(tid, 4, 0), (hidden, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                                 (unknown, -1, ErrorCode.UNKNOWN_TOPIC_ID)]
        assert fetch(None) == [(tid, 4, 0)]


def test_transactional_apis(ib, acls) -> None:
    with Conn(ib.port) as c:
        r = c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": "tx", "transaction_timeout_ms": 60000,
                                                "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = c.call(ApiKey.FIND_COORDINATOR, 3, {"key": "tx", "key_type": 1})
        assert r["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = c.call(ApiKey.END_TXN, 3, {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
                                       "committed": True})
        assert r["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # an idempotent producer: WRITE on some topic is enough
        acls(acl(T, "some-", Op.WRITE, pattern=PRE))
        r = c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == 0
        acls(acl(X, "tx", Op.WRITE))
        r = c.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": "tx", "transaction_timeout_ms": 60000,
                                                "producer_id": -1, "producer_epoch": -1})
        assert r["error_code"] == 0


def test_admin_apis(ib, acls) -> None:
    _topic(ib, "admin-t")
    with Conn(ib.port) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, create_topic("made"))
        assert r["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        r = c.call(ApiKey.DELETE_TOPICS, 5, {"topic_names": ["admin-t"], "timeout_ms": 1000})
        assert r["responses"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        r = c.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": [{"name": "admin-t", "count": 2, "assignments": None}],
                                                 "timeout_ms": 1000, "validate_only": True})
        assert r["results"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        r = c.call(ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": "admin-t", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "", "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        assert [x["error_code"] for x in r["results"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                            ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [
            {"resource_type": 2, "resource_name": "admin-t", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": True})
        assert r["responses"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        r = c.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert r["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = c.call(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": True})
        assert r["cluster_authorized_operations"] == 0
        r = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert r["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = c.call(ApiKey.DESCRIBE_ACLS, 1, {"resource_type_filter": 1, "resource_name_filter": None,
                                             "pattern_type_filter": 1, "principal_filter": None,
                                             "host_filter": None, "operation": 1, "permission_type": 1})
        assert r["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        acls(acl(C, "kafka-cluster", Op.ALL))  # everything on the cluster: the cluster APIs, topic creation
        r = c.call(ApiKey.CREATE_TOPICS, 7, create_topic("made"))
        assert r["topics"][0]["error_code"] == 0
        assert c.call(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})["error_code"] == 0
        r = c.call(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": True})
        assert r["cluster_authorized_operations"] == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
        r = c.call(ApiKey.DESCRIBE_ACLS, 1, {"resource_type_filter": 1, "resource_name_filter": None,
                                             "pattern_type_filter": 1, "principal_filter": None,
                                             "host_filter": None, "operation": 1, "permission_type": 1})
        assert r["error_code"] == 0 and r["resources"][0]["resource_name"] == "kafka-cluster"


def test_delete_topics_as_kraft_answers(ib, acls) -> None:
    """Kafka's controller (ControllerApis.deleteTopics): DELETE on the cluster deletes any topic;
    a name the principal may DESCRIBE but not DELETE answers UNKNOWN_TOPIC_OR_PARTITION when no
    such topic exists, TOPIC_AUTHORIZATION_FAILED when it does; one it may not DESCRIBE answers
    TOPIC_AUTHORIZATION_FAILED either way."""
    for name in ("seen-t", "unseen-t", "by-cluster-t"):
        _topic(ib, name)

    def delete(c: Conn, *names: str) -> dict[str, int]:
        r = c.call(ApiKey.DELETE_TOPICS, 5, {"topic_names": list(names), "timeout_ms": 1000})
        return {x["name"]: x["error_code"] for x in r["responses"]}

    acls(acl(T, "seen-", Op.DESCRIBE, pattern=PRE))
    with Conn(ib.port) as c:
        assert delete(c, "seen-t", "seen-ghost", "unseen-t", "unseen-ghost") == {
            "seen-t": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "seen-ghost": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "unseen-t": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "unseen-ghost": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        acls(acl(C, "kafka-cluster", Op.DELETE))
        assert delete(c, "by-cluster-t", "unseen-ghost") == {
            "by-cluster-t": 0, "unseen-ghost": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert ib.call(lambda: ib.broker.state.logs.topic("by-cluster-t")) is None
    assert ib.call(lambda: ib.broker.state.logs.topic("seen-t")) is not None


def test_acl_apis_create_describe_delete(ib, acls) -> None:
    acls(acl(C, "kafka-cluster", Op.ALTER), acl(C, "kafka-cluster", Op.DESCRIBE))
    with Conn(ib.port) as c:
        creations = [{"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 4,
                      "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3},
                     {"resource_type": 4, "resource_name": "not-the-cluster", "resource_pattern_type": 3,
                      "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3},
                     {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3,
                      "principal": "alice", "host": "*", "operation": 3, "permission_type": 3}]
        r = c.call(ApiKey.CREATE_ACLS, 2, {"creations": creations})
        assert [x["error_code"] for x in r["results"]] == [0, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
        assert r["results"][1]["error_message"] == "The only valid name for the CLUSTER resource is kafka-cluster"
        f = {"resource_type_filter": 2, "resource_name_filter": "orders-eu", "pattern_type_filter": 2,
             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        r = c.call(ApiKey.DESCRIBE_ACLS, 2, f)
        assert [(x["resource_name"], x["pattern_type"]) for x in r["resources"]] == [("orders", 4)]
        r = c.call(ApiKey.DELETE_ACLS, 2, {"filters": [f, {**f, "pattern_type_filter": 0}]})
        assert len(r["filter_results"][0]["matching_acls"]) == 1
        assert r["filter_results"][1]["error_code"] == ErrorCode.INVALID_REQUEST
        assert c.call(ApiKey.DESCRIBE_ACLS, 2, f)["resources"] == []


def test_update_features_needs_alter_on_the_cluster(ib, acls) -> None:
    body = {"timeout_ms": 1000, "validate_only": False, "feature_updates": [
        {"feature": "eligible.leader.replicas.version", "max_version_level": 0, "upgrade_type": 2}]}
    with Conn(ib.port) as c:
        acls(acl(C, "kafka-cluster", Op.DESCRIBE))
        r = c.call(ApiKey.UPDATE_FEATURES, 1, body)
        assert (r["error_code"], r["error_message"], r["results"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])
        assert ib.call(lambda: ib.broker.state.features.level("eligible.leader.replicas.version")) == 1
        acls(acl(C, "kafka-cluster", Op.ALTER))
        r = c.call(ApiKey.UPDATE_FEATURES, 1, {**body, "validate_only": True})
        assert (r["error_code"], r["results"][0]["error_code"]) == (0, 0)


def test_describe_quorum_needs_describe_on_the_cluster(ib, acls) -> None:
    body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
    with Conn(ib.port) as c:
        r = c.call(ApiKey.DESCRIBE_QUORUM, 2, body)
        assert (r["error_code"], r["error_message"], r["topics"], r["nodes"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [], [])
        acls(acl(C, "kafka-cluster", Op.DESCRIBE))
        r = c.call(ApiKey.DESCRIBE_QUORUM, 2, body)
        assert r["error_code"] == 0 and r["topics"][0]["partitions"][0]["leader_id"] == 0


def test_describe_topic_partitions_as_kafka_pages_authorization(ib, acls) -> None:
    """DESCRIBE on each topic; named topics not allowed are refused after the others, and only
    those looked at before the page ended (Kafka filters the sorted topics lazily)."""
    for name in ("z-1", "z-2", "z-3"):
        _topic(ib, name)
    acls(acl(T, "z-1", Op.DESCRIBE), acl(T, "z-3", Op.DESCRIBE))

    def dtp(c: Conn, names: list[str], cursor: str | None = None) -> tuple[list[tuple[str, int]], Any]:
        r = c.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
            "topics": [{"name": n} for n in names], "response_partition_limit": 1,
            "cursor": None if cursor is None else {"topic_name": cursor, "partition_index": 0}})
        for t in r["topics"]:
            if t["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                assert (t["topic_id"], t["partitions"], t["topic_authorized_operations"]) == (
                    uuid.UUID(int=0), [], -2147483648)
            else:
                assert t["topic_authorized_operations"] == 1 << Op.DESCRIBE
        cursor_out = r["next_cursor"] and (r["next_cursor"]["topic_name"], r["next_cursor"]["partition_index"])
        return [(t["name"], t["error_code"]) for t in r["topics"]], cursor_out

    named = ["z-3", "z-ghost", "z-2", "z-1"]
    with Conn(ib.port) as c:
        assert dtp(c, named) == ([("z-1", 0), ("z-2", ErrorCode.TOPIC_AUTHORIZATION_FAILED)], ("z-3", 0))
        assert dtp(c, named, cursor="z-3") == ([("z-3", 0), ("z-ghost", ErrorCode.TOPIC_AUTHORIZATION_FAILED)], None)
        assert dtp(c, []) == ([("z-1", 0)], ("z-3", 0))  # every topic: those not allowed are left out
        assert dtp(c, [], cursor="z-3") == ([("z-3", 0)], None)


def test_list_config_resources_needs_describe_configs_on_the_cluster(ib, acls) -> None:
    _topic(ib, "lcr-t")
    with Conn(ib.port) as c:
        acls(acl(C, "kafka-cluster", Op.DESCRIBE), acl(T, "*", Op.ALL))  # not DESCRIBE_CONFIGS on the cluster
        for version in (0, 1):
            r = c.call(ApiKey.LIST_CONFIG_RESOURCES, version, {"resource_types": [2]} if version else {})
            assert (r["error_code"], r["config_resources"]) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
        acls(acl(C, "kafka-cluster", Op.DESCRIBE_CONFIGS))
        r = c.call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [2]})
        assert r["error_code"] == 0 and {"resource_name": "lcr-t", "resource_type": 2} in r["config_resources"]


def test_allow_everyone_if_no_acl_found(tmp_path) -> None:
    with InProcessBroker(str(tmp_path / "d"), {**ON, "allow.everyone.if.no.acl.found": "true"}) as b:
        b.call(lambda: b.broker.state.logs.create_topic("open", 1))
        b.call(lambda: b.broker.state.logs.create_topic("closed", 1))
        b.call(lambda: b.broker.state.acls.create([acl(T, "closed", Op.READ, principal="User:bob")]))
        with Conn(b.port) as c:
            assert partition_response(c.call(ApiKey.PRODUCE, 9, produce("open", 0, batch())),
                                      "partition_responses")["error_code"] == 0
            # an ACL applies to "closed" (bob's), none matches ANONYMOUS: denied
            assert partition_response(c.call(ApiKey.PRODUCE, 9, produce("closed", 0, batch())),
                                      "partition_responses")["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_without_an_authorizer_the_context_allows_everything(tmp_path) -> None:
    with InProcessBroker(str(tmp_path / "d")) as b:
        assert b.broker.state.authorizer is None and b.broker.state.acls is None
        with Conn(b.port) as c:
            r = c.call(ApiKey.METADATA, 9, {**metadata(["free"], auto_create=False),
                                            "include_cluster_authorized_operations": True})
            assert r["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert r["cluster_authorized_operations"] == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
            r = c.call(ApiKey.DESCRIBE_ACLS, 1, {"resource_type_filter": 1, "resource_name_filter": None,
                                                 "pattern_type_filter": 1, "principal_filter": None,
                                                 "host_filter": None, "operation": 1, "permission_type": 1})
            assert r["error_code"] == ErrorCode.SECURITY_DISABLED


def test_a_group_has_the_configs_operations_as_in_kafka_4() -> None:
    """Kafka 4 (group configs, KIP-848) reports READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS and
    ALTER_CONFIGS as a group's operations; librdkafka's 0081 expects the five from 4.0."""
    from broker.authorizer.acl import SUPPORTED_OPERATIONS
    assert set(SUPPORTED_OPERATIONS[G]) == {Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
