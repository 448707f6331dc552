"""ACLs of every API group against a broker process with real clients (issue 32), beyond the
produce / fetch / commit / ACL-admin cases of test_acl_matrix.py: topic admin, configs, metadata
and offsets, groups, transactions and idempotence, the cluster APIs and the authorized
operations. Each API runs the five cases of ``five_cases`` as ``alice`` (whose ACLs decide) and
``admin`` (a super user), over SASL_PLAINTEXT with SCRAM-SHA-256, and asserts Kafka's error
code of each: allowed by a literal ACL, denied (no ACL), allowed by a PREFIXED ACL, denied by a
Deny (for ``User:*``) that overrides the Allow, and the super user allowed; and, where the API
changes something, that the refused calls changed nothing.

The client families are spread over the APIs: confluent-kafka (AdminClient, Producer),
kafka-python (KafkaAdminClient, KafkaConsumer, KafkaProducer), aiokafka (AIOKafkaAdminClient,
AIOKafkaConsumer, AIOKafkaProducer) and ours (client.Admin, Producer, Consumer). Where a
library cannot tell a refusal's code, another family makes the call, and the test's docstring
says why (confluent-kafka's Consumer, for one, never shows it: refused a topic's metadata or a
group's coordinator it answers local errors or times out).

One broker serves the module; every case names its own topic / group / transactional id, and
ACLs on the cluster resource (which would open other cases) are removed after each case."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from client.errors import KafkaError as OurKafkaError
from tests.compat._acl import Cluster, acl_cluster, unique_name
from tests.compat._clients import stored_batches

ck = pytest.importorskip("confluent_kafka")
kafka_errors = pytest.importorskip("kafka.errors")
aiokafka_errors = pytest.importorskip("aiokafka.errors")

from confluent_kafka import KafkaError as CkError
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

TOPIC, GROUP, TXN, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.BROKER
CLUSTER_NAME = "kafka-cluster"
Op = AclOperation
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
CASES = ("literal", "denied", "prefixed", "deny_overrides", "super_user")
#: short client timeouts: a refusal must show in seconds, not after the clients' defaults
KP = {"request_timeout_ms": 10000, "bootstrap_timeout_ms": 10000}
RDK = {"socket.timeout.ms": 10000}


#: the base classes of each family's errors
CLIENT_ERRORS: tuple[type[Exception], ...] = (ck.KafkaException, kafka_errors.KafkaError, aiokafka_errors.KafkaError,
                                              OurKafkaError)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from acl_cluster(tmp_path_factory)


def refused(code: int) -> dict[str, int]:
    """What the five cases answer when the denied ones get ``code``."""
    return {"literal": 0, "denied": code, "prefixed": 0, "deny_overrides": code, "super_user": 0}


def error_code(e: BaseException) -> int:
    """Kafka's error code of a client's exception (each family carries it its own way)."""
    if isinstance(e, ck.KafkaException):
        return int(e.args[0].code())
    for attr in ("errno", "code"):  # kafka-python, aiokafka / ours
        value = getattr(e, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    if e.__cause__ is not None:
        return error_code(e.__cause__)
    raise e


async def outcome(call: Callable[[], Any]) -> int:
    """0 if ``call()`` (awaited if it is a coroutine) succeeds, else its Kafka error code."""
    try:
        result = call()
        if inspect.isawaitable(result):
            await result
        return 0
    except CLIENT_ERRORS as e:
        return error_code(e)


async def expect(awaitable: Awaitable[Any], value: Any) -> None:
    assert await awaitable == value


def kafka_python_code(error: str) -> int:
    """The code of an error kafka-python gives as text: "[Error 30] GroupAuthorizationFailedError: ..."."""
    m = re.match(r"\[Error (-?\d+)\] ", error)
    assert m is not None, error
    return int(m.group(1))


def ck_outcome(future: Any) -> int:
    """0 or the Kafka error code of a confluent-kafka admin future."""
    return 0 if future.exception(timeout=20) is None else int(future.exception().args[0].code())


async def five_cases(cluster: Cluster, rtype: ResourceType, op: AclOperation,
                     call: Callable[[str, str], Any], *, tag: str,
                     make: Callable[[str], Any] | None = None, user: str = "alice",
                     deny_op: AclOperation | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Run ``call(user, name)`` (awaited if a coroutine) for each of ``CASES`` on a resource of
    its own (``make(name)`` creates it, as the super user; on the cluster the name is
    ``kafka-cluster``) with the ACLs of the case for ``user`` on ``op``:

    - literal: Allow ``op`` on the name;
    - denied: nothing;
    - prefixed: Allow ``op`` on a PREFIXED pattern, the name less its last 4 characters (on the
      cluster: the PREFIXED pattern ``kafka-cluster``);
    - deny_overrides: Allow ``op`` on the name and Deny ``op`` (or ``deny_op``) for ``User:*``;
    - super_user: nothing, ``call("admin", name)``.

    Returns the answers and the names, by case. Cluster ACLs are deleted after their case."""
    got: dict[str, Any] = {}
    names: dict[str, str] = {}
    principal = f"User:{user}"
    for case in CASES:
        name = CLUSTER_NAME if rtype == CLUSTER else unique_name(f"{tag}-{case[:3]}")
        if make is not None:
            made = make(name)
            if inspect.isawaitable(made):
                await made
        names[case] = name
        acls = {
            "literal": [Cluster.binding(rtype, name, op, principal=principal)],
            "denied": [],
            "prefixed": [Cluster.binding(rtype, name if rtype == CLUSTER else name[:-4], op,
                                         ResourcePatternType.PREFIXED, principal=principal)],
            "deny_overrides": [Cluster.binding(rtype, name, op, principal=principal),
                               Cluster.binding(rtype, name, deny_op or op, perm=AclPermissionType.DENY,
                                               principal="User:*")],
            "super_user": [],
        }[case]
        cluster.create_acls(acls)
        try:
            answer = call("admin" if case == "super_user" else user, name)
            got[case] = await answer if inspect.isawaitable(answer) else answer
        finally:
            if rtype == CLUSTER:
                cluster.delete_acls(acls)
    return got, names


class Clients:
    """Clients kept per user for a test (a client per call would make each case pay a SASL
    login); ``close()`` them at its end."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._made: dict[tuple[str, str], Any] = {}
        self._async_close: list[Any] = []

    def confluent(self, user: str) -> AdminClient:
        if user == "admin":
            return self.cluster.admin()
        key = ("ck", user)
        if key not in self._made:
            self._made[key] = AdminClient({**self.cluster.rdk(user), **RDK})
        return self._made[key]

    def kafka_python(self, user: str) -> Any:
        from kafka.admin import KafkaAdminClient

        key = ("kp", user)
        if key not in self._made:
            self._made[key] = KafkaAdminClient(**self.cluster.kafka_python(user), **KP)
        return self._made[key]

    async def aiokafka(self, user: str) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        key = ("aio", user)
        if key not in self._made:
            a = AIOKafkaAdminClient(**self.cluster.ours(user), request_timeout_ms=10000)
            await a.start()
            self._made[key] = a
            self._async_close.append(a.close)
        return self._made[key]

    async def ours(self, user: str) -> Any:
        from client import Admin

        key = ("ours", user)
        if key not in self._made:
            a = Admin(**self.cluster.ours(user), request_timeout_ms=10000)
            await a.start()
            self._made[key] = a
            self._async_close.append(a.close)
        return self._made[key]

    async def close(self) -> None:
        for close in self._async_close:
            await close()
        for (family, _), c in self._made.items():
            if family == "kp":
                c.close()


@pytest.fixture
async def clients(cluster: Cluster) -> Any:
    c = Clients(cluster)
    try:
        yield c
    finally:
        await c.close()


def topic_names(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=20).topics)


# ---------------------------------------------------------------- 1. topic admin


async def test_create_topics_with_confluent_kafka(cluster: Cluster, clients: Clients) -> None:
    def create(user: str, name: str) -> int:
        return ck_outcome(clients.confluent(user).create_topics([NewTopic(name, 1, 1)], request_timeout=15)[name])

    got, names = await five_cases(cluster, TOPIC, Op.CREATE, create, tag="ct")
    assert got == refused(TOPIC_DENIED)
    made = topic_names(cluster.admin())
    assert {case for case, name in names.items() if name in made} == {"literal", "prefixed", "super_user"}
    # Create on the cluster: any topic
    got, _ = await five_cases(cluster, CLUSTER, Op.CREATE, lambda user, _: create(user, unique_name("ctc")),
                              tag="ctc")
    assert got == refused(TOPIC_DENIED)


async def test_delete_topics_with_kafka_python(cluster: Cluster, clients: Clients) -> None:
    def delete(user: str, name: str) -> Awaitable[int]:
        return outcome(lambda: clients.kafka_python(user).delete_topics([name], timeout_ms=10000))

    got, names = await five_cases(cluster, TOPIC, Op.DELETE, delete, tag="dt", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    left = topic_names(cluster.admin())
    assert {case for case, name in names.items() if name in left} == {"denied", "deny_overrides"}
    # Delete on the cluster: any topic (as Kafka's controller; the broker answered 29 before)
    made: list[str] = []

    def delete_any(user: str, _: str) -> Awaitable[int]:
        made.append(cluster.topic(unique_name("dtc")))
        return delete(user, made[-1])

    got, _ = await five_cases(cluster, CLUSTER, Op.DELETE, delete_any, tag="dtc")
    assert got == refused(TOPIC_DENIED)
    left = topic_names(cluster.admin())
    assert [name in left for name in made] == [False, True, False, True, False]


async def test_create_partitions_with_aiokafka(cluster: Cluster, clients: Clients) -> None:
    from aiokafka.admin import NewPartitions

    async def grow(user: str, name: str) -> int:
        admin = await clients.aiokafka(user)
        return await outcome(lambda: admin.create_partitions({name: NewPartitions(2)}))

    got, names = await five_cases(cluster, TOPIC, Op.ALTER, grow, tag="cp", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    topics = cluster.admin().list_topics(timeout=20).topics
    assert {case: len(topics[name].partitions) for case, name in names.items()} == {
        "literal": 2, "denied": 1, "prefixed": 2, "deny_overrides": 1, "super_user": 2}


async def test_delete_records_with_our_admin(cluster: Cluster, clients: Clients) -> None:
    def make(name: str) -> None:
        cluster.topic(name)
        assert cluster.produce("admin", name) == 0

    async def delete(user: str, name: str) -> int:
        admin = await clients.ours(user)
        return await outcome(lambda: admin.delete_records({(name, 0): -1}))

    got, names = await five_cases(cluster, TOPIC, Op.DELETE, delete, tag="dr", make=make)
    assert got == refused(TOPIC_DENIED)
    from client import OffsetSpec

    admin = await clients.ours("admin")
    starts = {case: (await admin.topic_offsets(name, OffsetSpec.EARLIEST))[0] for case, name in names.items()}
    assert starts == {"literal": 1, "denied": 0, "prefixed": 1, "deny_overrides": 0, "super_user": 1}


# ---------------------------------------------------------------- 2. configs


async def test_describe_configs_of_a_topic_with_aiokafka(cluster: Cluster, clients: Clients) -> None:
    """aiokafka, not kafka-python: kafka-python 3's describe_configs drops each resource's error
    code (a refused topic reads as one without modified configs)."""
    from aiokafka.admin.config_resource import ConfigResource as AConfigResource
    from aiokafka.admin.config_resource import ConfigResourceType as AConfigResourceType

    async def describe(user: str, name: str) -> int:
        admin = await clients.aiokafka(user)
        responses = await admin.describe_configs([AConfigResource(AConfigResourceType.TOPIC, name)])
        return max(r[0] for resp in responses for r in resp.resources)

    got, _ = await five_cases(cluster, TOPIC, Op.DESCRIBE_CONFIGS, describe, tag="dc", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)


async def test_describe_configs_of_the_broker_with_confluent_kafka(cluster: Cluster, clients: Clients) -> None:
    broker_id = str(node_id(cluster))

    def describe(user: str, _: str) -> int:
        fs = clients.confluent(user).describe_configs([ConfigResource(ResourceType.BROKER, broker_id)],
                                                      request_timeout=15)
        return ck_outcome(next(iter(fs.values())))

    got, _ = await five_cases(cluster, CLUSTER, Op.DESCRIBE_CONFIGS, describe, tag="dcb")
    assert got == refused(CLUSTER_DENIED)


async def test_alter_configs_with_aiokafka(cluster: Cluster, clients: Clients) -> None:
    from aiokafka.admin.config_resource import ConfigResource as AConfigResource
    from aiokafka.admin.config_resource import ConfigResourceType as AConfigResourceType

    async def alter(user: str, name: str) -> int:
        admin = await clients.aiokafka(user)
        responses = await admin.alter_configs([AConfigResource(AConfigResourceType.TOPIC, name,
                                                               {"retention.ms": "3600000"})])
        return max(r[0] for resp in responses for r in resp.resources)

    got, names = await five_cases(cluster, TOPIC, Op.ALTER_CONFIGS, alter, tag="ac", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    await assert_retention(clients, names)


async def assert_retention(clients: Clients, names: dict[str, str]) -> None:
    """The altered topics have retention.ms 3600000; the refused ones kept the default."""
    admin = await clients.ours("admin")
    retention = {case: (await admin.describe_configs("topic", name, ["retention.ms"]))["retention.ms"].value
                 for case, name in names.items()}
    assert retention == {"literal": "3600000", "denied": "604800000", "prefixed": "3600000",
                         "deny_overrides": "604800000", "super_user": "3600000"}


async def test_incremental_alter_configs_with_confluent_kafka(cluster: Cluster, clients: Clients) -> None:
    def alter(user: str, name: str) -> int:
        fs = clients.confluent(user).incremental_alter_configs([ConfigResource(
            ResourceType.TOPIC, name, incremental_configs=[
                ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])],
            request_timeout=15)
        return ck_outcome(next(iter(fs.values())))

    got, names = await five_cases(cluster, TOPIC, Op.ALTER_CONFIGS, alter, tag="iac", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    await assert_retention(clients, names)

    # the broker's configs: AlterConfigs on the cluster (validate_only: nothing changes)
    broker_id = str(node_id(cluster))

    def alter_broker(user: str, _: str) -> int:
        fs = clients.confluent(user).incremental_alter_configs([ConfigResource(
            ResourceType.BROKER, broker_id, incremental_configs=[
                ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])],
            validate_only=True, request_timeout=15)
        return ck_outcome(next(iter(fs.values())))

    got, _ = await five_cases(cluster, CLUSTER, Op.ALTER_CONFIGS, alter_broker, tag="iacb")
    assert got == refused(CLUSTER_DENIED)


async def test_alter_configs_implies_describe_configs_with_our_admin(cluster: Cluster, clients: Clients) -> None:
    async def describe(user: str, name: str) -> int:
        admin = await clients.ours(user)
        return await outcome(lambda: admin.describe_configs("topic", name))

    # a Deny of AlterConfigs does not deny DescribeConfigs (a Deny applies to its own operation)
    got, _ = await five_cases(cluster, TOPIC, Op.ALTER_CONFIGS, describe, tag="aid", make=cluster.topic,
                              deny_op=Op.DESCRIBE_CONFIGS)
    assert got == refused(TOPIC_DENIED)


# ---------------------------------------------------------------- 3. metadata, offsets


async def test_metadata_of_named_topics_with_kafka_python(cluster: Cluster, clients: Clients) -> None:
    def describe(user: str, name: str) -> int:
        try:
            (topic,) = clients.kafka_python(user).describe_topics([name])
        except CLIENT_ERRORS as e:
            return error_code(e)
        return int(topic["error_code"])

    got, names = await five_cases(cluster, TOPIC, Op.DESCRIBE, describe, tag="md", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    # a name that does not exist: TOPIC_AUTHORIZATION_FAILED too without Describe (whether a
    # topic exists is not told), UNKNOWN_TOPIC_OR_PARTITION with it; never auto-created
    ghost, seen_ghost = unique_name("md-ghost"), unique_name("md-seen")
    cluster.allow(TOPIC, seen_ghost, Op.DESCRIBE)
    assert describe("alice", ghost) == TOPIC_DENIED
    assert describe("alice", seen_ghost) == CkError.UNKNOWN_TOPIC_OR_PART
    assert describe("admin", ghost) == CkError.UNKNOWN_TOPIC_OR_PART
    assert not {ghost, seen_ghost} & topic_names(cluster.admin())

    # the topics alice may not describe are left out of an all-topics answer
    ours = await clients.ours("alice")
    for listed in (topic_names(clients.confluent("alice")), set(await ours.list_topics())):
        assert {case for case, name in names.items() if name in listed} == {"literal", "prefixed"}
    assert set(names.values()) <= topic_names(cluster.admin())


async def test_list_offsets_with_kafka_python_and_our_consumers(cluster: Cluster) -> None:
    """kafka-python's KafkaConsumer and our Consumer (end_offsets). Not confluent-kafka: its
    Consumer.get_watermark_offsets answers its local _UNKNOWN_PARTITION (-190) and its
    AdminClient.list_offsets _NOENT (-156) for a topic whose metadata is refused; nor aiokafka:
    AIOKafkaConsumer.end_offsets retries the leader lookup until its timeout."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    from client import Consumer

    def make(name: str) -> None:
        cluster.topic(name)
        assert cluster.produce("admin", name) == 0

    async def list_offsets(user: str, name: str) -> tuple[int, int]:
        k = KafkaConsumer(**cluster.kafka_python(user), **KP)
        try:
            tp = KTopicPartition(name, 0)
            kp = await outcome(lambda: k.end_offsets([tp]) == {tp: 1} or pytest.fail("end offsets"))
        finally:
            k.close()
        async with Consumer(**cluster.ours(user), request_timeout_ms=10000) as c:
            async def ours() -> None:
                assert list((await c.end_offsets([(name, 0)])).values()) == [1]
            return kp, await outcome(ours)

    got, _ = await five_cases(cluster, TOPIC, Op.DESCRIBE, list_offsets, tag="lo", make=make)
    assert got == {case: (code, code) for case, code in refused(TOPIC_DENIED).items()}


# ---------------------------------------------------------------- 4. groups


async def commit_as_admin(clients: Clients, group: str, *topics: str) -> None:
    """Make ``group`` (offset 1 committed on partition 0 of each topic), as the super user."""
    admin = await clients.ours("admin")
    await admin.alter_group_offsets(group, {(t, 0): 1 for t in topics})


def node_id(cluster: Cluster) -> int:
    """The broker's node id (the coordinator of every group)."""
    return int(next(iter(cluster.admin().list_topics(timeout=20).brokers)))


async def test_describe_groups_with_confluent_kafka_and_kafka_python(cluster: Cluster, clients: Clients) -> None:
    """confluent-kafka asks FindCoordinator first (which needs Describe on the group too);
    kafka-python is told the coordinator (group_coordinator_id), so its DescribeGroups itself
    answers the refusals (kafka-python 3.0 gives each group's error as text, "[Error 30] ...")."""
    topic = cluster.topic(unique_name("dg"))
    coordinator = node_id(cluster)

    def describe(user: str, name: str) -> tuple[int, int]:
        fs = clients.confluent(user).describe_consumer_groups([name], request_timeout=15)
        error = clients.kafka_python(user).describe_groups([name], group_coordinator_id=coordinator)[name]["error"]
        return ck_outcome(fs[name]), 0 if error is None else kafka_python_code(error)

    got, _ = await five_cases(cluster, GROUP, Op.DESCRIBE, describe, tag="dg",
                              make=lambda g: commit_as_admin(clients, g, topic))
    assert got == {case: (code, code) for case, code in refused(GROUP_DENIED).items()}


async def test_list_groups_with_kafka_python(cluster: Cluster, clients: Clients) -> None:
    """ListGroups refuses no one: without Describe on the cluster it answers the groups the
    principal may Describe."""
    topic = cluster.topic(unique_name("lg"))

    def listed(user: str, name: str) -> bool:
        return name in {g["group_id"] for g in clients.kafka_python(user).list_groups()}

    got, names = await five_cases(cluster, GROUP, Op.DESCRIBE, listed, tag="lg",
                                  make=lambda g: commit_as_admin(clients, g, topic))
    assert got == {"literal": True, "denied": False, "prefixed": True, "deny_overrides": False, "super_user": True}
    # Describe on the cluster: every group (a Deny on the group's Describe does not hide it then)
    on_cluster = [Cluster.binding(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)]
    cluster.create_acls(on_cluster)
    try:
        assert all(listed("alice", name) for name in names.values())
    finally:
        cluster.delete_acls(on_cluster)


async def test_delete_groups_with_our_admin(cluster: Cluster, clients: Clients) -> None:
    topic = cluster.topic(unique_name("dlg"))

    async def delete(user: str, name: str) -> int:
        admin = await clients.ours(user)
        return await outcome(lambda: admin.delete_groups([name]))

    got, names = await five_cases(cluster, GROUP, Op.DELETE, delete, tag="dlg",
                                  make=lambda g: commit_as_admin(clients, g, topic))
    assert got == refused(GROUP_DENIED)
    left = {g.group_id for g in await (await clients.ours("admin")).list_groups()}
    assert {case for case, name in names.items() if name in left} == {"denied", "deny_overrides"}


async def test_offset_fetch_with_kafka_python_and_aiokafka(cluster: Cluster, clients: Clients) -> None:
    """OffsetFetch needs Describe on the group (kafka-python's KafkaConsumer.committed, aiokafka's
    AIOKafkaConsumer.committed); the topics alice may not Describe are left out of a fetch of all
    the group's offsets (aiokafka's AIOKafkaAdminClient.list_consumer_group_offsets), and
    answer TOPIC_AUTHORIZATION_FAILED when named (our Admin: aiokafka 0.14's
    list_consumer_group_offsets raises NoError, the response's top-level code, for them).
    Each client asks FindCoordinator first, which refuses the group already (aiokafka's admin,
    told the coordinator, would read the OffsetFetch refusal, GROUP_AUTHORIZATION_FAILED with no
    topics, as an empty answer: it reads only the partitions' codes). Not confluent-kafka's
    Consumer.committed: refused its coordinator, librdkafka retries the lookup and committed()
    ends in its local _TIMED_OUT."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    seen, hidden = cluster.topic(unique_name("of-seen")), cluster.topic(unique_name("of-hidden"))
    cluster.allow(TOPIC, seen, Op.DESCRIBE)

    async def fetch(user: str, name: str) -> tuple[int, int, Any]:
        c = KafkaConsumer(**cluster.kafka_python(user), **KP, group_id=name, enable_auto_commit=False)
        try:
            kp = await outcome(lambda: c.committed(KTopicPartition(seen, 0)) == 1 or pytest.fail("offset"))
        finally:
            c.close()
        a = AIOKafkaConsumer(**cluster.ours(user), group_id=name, enable_auto_commit=False, request_timeout_ms=10000)
        await a.start()
        try:
            tp = ATopicPartition(seen, 0)
            aio = await outcome(lambda: expect(a.committed(tp), 1))
        finally:
            await a.stop()
        try:
            every = await (await clients.aiokafka(user)).list_consumer_group_offsets(name)
        except CLIENT_ERRORS as e:
            return kp, aio, error_code(e)
        return kp, aio, sorted((tp.topic, om.offset) for tp, om in every.items())

    got, names = await five_cases(cluster, GROUP, Op.DESCRIBE, fetch, tag="of",
                                  make=lambda g: commit_as_admin(clients, g, seen, hidden))
    only_seen, refusal = [(seen, 1)], (GROUP_DENIED,) * 3
    assert got == {"literal": (0, 0, only_seen), "denied": refusal, "prefixed": (0, 0, only_seen),
                   "deny_overrides": refusal, "super_user": (0, 0, sorted([(seen, 1), (hidden, 1)]))}
    # a topic named that alice may not Describe
    from client import TopicPartition

    alice = await clients.ours("alice")
    with pytest.raises(CLIENT_ERRORS) as e:
        await alice.fetch_group_offsets(names["literal"], [TopicPartition(hidden, 0)])
    assert error_code(e.value) == TOPIC_DENIED


async def test_offset_delete_with_kafka_python(cluster: Cluster, clients: Clients) -> None:
    """OffsetDelete needs Delete on the group and Read on each topic."""
    from kafka import TopicPartition as KTopicPartition

    readable, unreadable = cluster.topic(unique_name("od-r")), cluster.topic(unique_name("od-u"))
    cluster.allow(TOPIC, readable, Op.READ)

    def delete(user: str, name: str) -> Awaitable[int]:
        def call() -> None:
            result = clients.kafka_python(user).delete_group_offsets(name, [KTopicPartition(readable, 0)])
            for error in result.values():
                if error is not None and getattr(error, "errno", 0):
                    raise error if isinstance(error, BaseException) else error()
        return outcome(call)

    got, names = await five_cases(cluster, GROUP, Op.DELETE, delete, tag="od",
                                  make=lambda g: commit_as_admin(clients, g, readable, unreadable))
    assert got == refused(GROUP_DENIED)
    admin = await clients.ours("admin")
    kept = {case: sorted(tp.topic for tp in await admin.fetch_group_offsets(name, None))
            for case, name in names.items()}
    both, one = sorted([readable, unreadable]), [unreadable]
    assert kept == {"literal": one, "denied": both, "prefixed": one, "deny_overrides": both, "super_user": one}
    # Delete on the group, no Read on the topic: that partition is refused
    alice = await clients.ours("alice")
    with pytest.raises(CLIENT_ERRORS) as e:
        await alice.delete_group_offsets(names["literal"], [(unreadable, 0)])
    assert error_code(e.value) == TOPIC_DENIED


# ---------------------------------------------------------------- 5. transactions, idempotence


async def test_init_producer_id_of_a_transactional_id_with_confluent_kafka(cluster: Cluster) -> None:
    def init(user: str, name: str) -> Awaitable[int]:
        p = CkProducer({**cluster.rdk(user), **RDK, "transactional.id": name, "transaction.timeout.ms": 10000})
        return outcome(lambda: p.init_transactions(15))

    got, _ = await five_cases(cluster, TXN, Op.WRITE, init, tag="tx")
    assert got == refused(TXN_DENIED)


async def test_transactional_produce_needs_write_on_the_topic_with_our_producer(cluster: Cluster) -> None:
    """alice may use the transactional ids ``otx-*``; each case's topic decides: refused its
    metadata (no ACL), the send fails; refused by AddPartitionsToTxn (Describe is allowed, Write
    denied), the transaction must abort (TransactionAbortableError, caused by the refusal, as
    Java's producer raises it)."""
    from client import Producer
    from client.errors import KafkaError, TransactionAbortableError

    cluster.allow(TXN, "otx-", Op.WRITE, ResourcePatternType.PREFIXED)

    async def produce(user: str, name: str) -> int:
        async with Producer(**cluster.ours(user), transactional_id=unique_name("otx"), request_timeout_ms=10000,
                            max_block_ms=10000, delivery_timeout_ms=15000) as p:
            await p.init_transactions()

            async def transaction() -> None:
                p.begin_transaction()
                try:
                    await p.send(name, b"v", partition=0)
                    await p.commit_transaction()
                except TransactionAbortableError as e:
                    assert isinstance(e.__cause__, KafkaError)
                    raise e.__cause__ from None
            code = await outcome(transaction)
            if code:
                await p.abort_transaction()
            return code

    got, names = await five_cases(cluster, TOPIC, Op.WRITE, produce, tag="otp", make=cluster.topic)
    assert got == refused(TOPIC_DENIED)
    # a committed transaction: the record and its commit marker; a refused one wrote nothing
    assert {case: cluster.end_offset(name) for case, name in names.items()} == {
        "literal": 2, "denied": 0, "prefixed": 2, "deny_overrides": 0, "super_user": 2}


async def test_send_offsets_to_transaction_needs_read_on_the_group_with_aiokafka(cluster: Cluster,
                                                                                 clients: Clients) -> None:
    """alice may use the transactional ids ``atx-*`` and read the topic; each case's group
    decides (AddOffsetsToTxn)."""
    from aiokafka import AIOKafkaProducer
    from aiokafka import TopicPartition as ATopicPartition

    topic = cluster.topic(unique_name("atx-in"))
    cluster.allow(TXN, "atx-", Op.WRITE, ResourcePatternType.PREFIXED)
    cluster.allow(TOPIC, topic, Op.READ)

    async def send_offsets(user: str, name: str) -> int:
        p = AIOKafkaProducer(**cluster.ours(user), transactional_id=unique_name("atx"), request_timeout_ms=10000)
        await p.start()
        try:
            async def transaction() -> None:
                async with p.transaction():
                    await p.send_offsets_to_transaction({ATopicPartition(topic, 0): 5}, name)
            return await outcome(transaction)
        finally:
            await p.stop()

    got, names = await five_cases(cluster, GROUP, Op.READ, send_offsets, tag="sot")
    assert got == refused(GROUP_DENIED)
    from client import TopicPartition

    admin = await clients.ours("admin")
    committed = {case: [om.offset for om in (await admin.fetch_group_offsets(name, [TopicPartition(topic, 0)],
                                                                              require_stable=True)).values()]
                 for case, name in names.items()}
    assert committed == {"literal": [5], "denied": [], "prefixed": [5], "deny_overrides": [], "super_user": [5]}
    # Read on the group, not on the topic: TxnOffsetCommit refuses the topic's partition (with
    # our Producer: aiokafka 0.14's sender task dies of it, "Unexpected error during batch delivery")
    from client import Producer
    from client.errors import KafkaError, TransactionAbortableError
    from client.structs import ConsumerGroupMetadata

    unread, group = cluster.topic(unique_name("atx-unread")), unique_name("sot-unread")
    cluster.allow(GROUP, group, Op.READ)
    async with Producer(**cluster.ours("alice"), transactional_id=unique_name("atx"), request_timeout_ms=10000,
                        max_block_ms=10000) as p:
        await p.init_transactions()
        p.begin_transaction()
        with pytest.raises(KafkaError) as e:
            await p.send_offsets_to_transaction({(unread, 0): 5}, ConsumerGroupMetadata(group))
            await p.commit_transaction()
        cause = e.value.__cause__ if isinstance(e.value, TransactionAbortableError) else e.value
        assert error_code(cause) == TOPIC_DENIED, repr(e.value)
        await p.abort_transaction()
    assert (await admin.fetch_group_offsets(group, None)) == {}


async def test_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(cluster: Cluster) -> None:
    """A producer id without a transactional id: IdempotentWrite on the cluster, or Write on any
    topic. A new user with no other ACL (alice's Write ACLs of the other tests would grant it)
    produces with our idempotent Producer to a topic it may Describe, not Write: InitProducerId
    refused answers CLUSTER_AUTHORIZATION_FAILED; allowed, the producer gets to the Produce,
    refused with TOPIC_AUTHORIZATION_FAILED. Our Producer, because kafka-python 3.0 raises a
    plain KafkaError("Unexpected error in InitProducerIdResponse: [Error 31] ...") without the
    code, and librdkafka makes the refusal a fatal error that purges the message (_PURGE_QUEUE).
    Then a user with Write on one topic gets its producer id with kafka-python and confluent-kafka,
    and the records stored are idempotent ones."""
    from kafka import KafkaProducer

    from client import Producer

    carol = cluster.add_user("carol")
    closed = cluster.topic(unique_name("idem-closed"))
    cluster.allow(TOPIC, closed, Op.DESCRIBE, principal=f"User:{carol}")

    async def produce(user: str, _: str) -> int:
        async def send() -> None:
            async with Producer(**cluster.ours(user), request_timeout_ms=10000, max_block_ms=10000,
                                delivery_timeout_ms=15000, enable_idempotence=True) as p:
                await p.send(closed, b"v", partition=0)
        return await outcome(send)

    got, _ = await five_cases(cluster, CLUSTER, Op.IDEMPOTENT_WRITE, produce, tag="idem", user=carol)
    assert got == {"literal": TOPIC_DENIED, "denied": CLUSTER_DENIED, "prefixed": TOPIC_DENIED,
                   "deny_overrides": CLUSTER_DENIED, "super_user": 0}

    dave = cluster.add_user("dave")
    writable = cluster.topic(unique_name("idem-open"))
    cluster.allow(TOPIC, writable, Op.WRITE, principal=f"User:{dave}")
    p = KafkaProducer(**cluster.kafka_python(dave), **KP, enable_idempotence=True, acks="all", max_block_ms=10000)
    try:
        p.send(writable, b"kafka-python", partition=0).get(timeout=15)
    finally:
        p.close(timeout=5)
    out: list[int] = []
    ckp = CkProducer({**cluster.rdk(dave), **RDK, "enable.idempotence": True, "message.timeout.ms": 10000})
    ckp.produce(writable, b"confluent", partition=0, callback=lambda err, msg: out.append(0 if err is None else
                                                                                         err.code()))
    ckp.flush(15)
    assert out == [0]
    batches = stored_batches(cluster.broker.data_dir, writable, 0)
    assert len(batches) == 2 and all(producer_id >= 0 for _, _, producer_id, _ in batches)


# ---------------------------------------------------------------- 6. cluster


#: Kafka's operations of each resource type, as authorized_operations lists them
CLUSTER_OPS = {Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
               Op.IDEMPOTENT_WRITE}
TOPIC_OPS = {Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
GROUP_OPS = {Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}  # the configs ones: group configs


async def test_describe_cluster_authorized_operations_with_confluent_and_our_admin(cluster: Cluster,
                                                                                  clients: Clients) -> None:
    """DescribeCluster (ours) and Metadata (confluent-kafka's describe_cluster asks Metadata v10
    for include_cluster_authorized_operations) refuse no one; asked for the cluster's authorized
    operations they answer them with Describe on the cluster, none without (Kafka's 0)."""
    async def describe(user: str, _: str) -> tuple[set[AclOperation], set[AclOperation]]:
        ck_ops = clients.confluent(user).describe_cluster(include_authorized_operations=True,
                                                          request_timeout=15).result(timeout=20).authorized_operations
        ours = (await (await clients.ours(user)).describe_cluster(include_authorized_operations=True))
        return set(ck_ops or ()), {AclOperation(op) for op in ours.authorized_operations or ()}

    got, _ = await five_cases(cluster, CLUSTER, Op.DESCRIBE, describe, tag="dcl")
    assert got == {"literal": ({Op.DESCRIBE},) * 2, "denied": (set(), set()), "prefixed": ({Op.DESCRIBE},) * 2,
                   "deny_overrides": (set(), set()), "super_user": (CLUSTER_OPS, CLUSTER_OPS)}


async def test_describe_log_dirs_with_our_admin(cluster: Cluster, clients: Clients) -> None:
    """Our Admin: kafka-python 3.0's describe_log_dirs drops the response's error code (a
    refusal reads as a broker without log dirs); confluent-kafka has no such call."""
    async def describe(user: str, _: str) -> int:
        admin = await clients.ours(user)
        return await outcome(admin.describe_log_dirs)

    got, _ = await five_cases(cluster, CLUSTER, Op.DESCRIBE, describe, tag="dld")
    assert got == refused(CLUSTER_DENIED)


def bob_binding(name: str) -> AclBinding:
    return Cluster.binding(TOPIC, name, Op.READ, principal="User:bob")


def bob_bindings(cluster: Cluster, names: list[str]) -> set[str]:
    """Which of the topics ``names`` have bob's Read ACL, as the super user sees them."""
    found = cluster.admin().describe_acls(AclBindingFilter(
        TOPIC, None, ResourcePatternType.LITERAL, "User:bob", None, Op.ANY, AclPermissionType.ANY)).result(timeout=20)
    return {b.name for b in found} & set(names)


async def test_create_acls_as_alice_with_confluent_kafka(cluster: Cluster, clients: Clients) -> None:
    names: list[str] = []

    def create(user: str, _: str) -> int:
        names.append(unique_name("cacl"))
        fs = clients.confluent(user).create_acls([bob_binding(names[-1])], request_timeout=15)
        return ck_outcome(next(iter(fs.values())))

    got, _ = await five_cases(cluster, CLUSTER, Op.ALTER, create, tag="cacl")
    assert got == refused(CLUSTER_DENIED)
    assert bob_bindings(cluster, names) == {names[0], names[2], names[4]}  # literal, prefixed, super user


async def test_describe_acls_as_alice_with_kafka_python(cluster: Cluster, clients: Clients) -> None:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter
    from kafka.admin import ResourceType as KResourceType

    topic = unique_name("dacl")
    cluster.create_acls([bob_binding(topic)])

    def describe(user: str, _: str) -> Awaitable[int]:
        def call() -> None:
            acls, error = clients.kafka_python(user).describe_acls(ACLFilter(
                None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                ResourcePatternFilter(KResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL)))
            assert [a.principal for a in acls] == ["User:bob"], (acls, error)
        return outcome(call)

    got, _ = await five_cases(cluster, CLUSTER, Op.DESCRIBE, describe, tag="dacl")
    assert got == refused(CLUSTER_DENIED)
    # Alter on the cluster implies Describe (a Deny of Describe still wins; one of Alter would not)
    got, _ = await five_cases(cluster, CLUSTER, Op.ALTER, describe, tag="dacl", deny_op=Op.DESCRIBE)
    assert got == refused(CLUSTER_DENIED)


async def test_delete_acls_as_alice_with_our_admin(cluster: Cluster, clients: Clients) -> None:
    from client.acl import AclBindingFilter as OurFilter
    from client.acl import PatternType, ResourcePatternFilter
    from client.acl import ResourceType as OurResourceType

    names: list[str] = []

    async def delete(user: str, _: str) -> int:
        names.append(unique_name("dlacl"))
        cluster.create_acls([bob_binding(names[-1])])
        admin = await clients.ours(user)
        return await outcome(lambda: admin.delete_acls([OurFilter(ResourcePatternFilter(
            OurResourceType.TOPIC, names[-1], PatternType.LITERAL))]))

    got, _ = await five_cases(cluster, CLUSTER, Op.ALTER, delete, tag="dlacl")
    assert got == refused(CLUSTER_DENIED)
    assert bob_bindings(cluster, names) == {names[1], names[3]}  # denied, deny_overrides: not deleted


async def test_authorized_operations_shrink_to_the_acls_with_confluent_kafka(cluster: Cluster,
                                                                             clients: Clients) -> None:
    """confluent-kafka's include_authorized_operations: Metadata (describe_cluster, describe_topics)
    and DescribeGroups answer the operations alice's ACLs grant (with the Describe that Read,
    Write, Delete or Alter imply, the DescribeConfigs that AlterConfigs implies, less what a Deny
    takes), every operation of the resource type for the super user."""
    alice, admin = clients.confluent("alice"), cluster.admin()
    topic, group = cluster.topic(unique_name("ops")), unique_name("ops-group")
    await commit_as_admin(clients, group, topic)

    def topic_ops(client: AdminClient) -> set[AclOperation]:
        fs = client.describe_topics(TopicCollection([topic]), include_authorized_operations=True, request_timeout=15)
        return set(fs[topic].result(timeout=20).authorized_operations)

    def group_ops(client: AdminClient) -> set[AclOperation]:
        fs = client.describe_consumer_groups([group], include_authorized_operations=True, request_timeout=15)
        return set(fs[group].result(timeout=20).authorized_operations)

    def cluster_ops(client: AdminClient) -> set[AclOperation]:
        return set(client.describe_cluster(include_authorized_operations=True, request_timeout=15)
                   .result(timeout=20).authorized_operations or ())

    cluster.create_acls([Cluster.binding(TOPIC, topic, op) for op in (Op.READ, Op.WRITE, Op.ALTER_CONFIGS)]
                        + [Cluster.binding(TOPIC, topic, Op.WRITE, perm=AclPermissionType.DENY, principal="User:*"),
                           Cluster.binding(GROUP, group, Op.READ)])
    assert topic_ops(alice) == {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert topic_ops(admin) == TOPIC_OPS
    assert group_ops(alice) == {Op.READ, Op.DESCRIBE}
    assert group_ops(admin) == GROUP_OPS
    assert cluster_ops(alice) == set()
    on_cluster = [Cluster.binding(CLUSTER, CLUSTER_NAME, op) for op in (Op.ALTER, Op.IDEMPOTENT_WRITE)]
    cluster.create_acls(on_cluster)
    try:
        assert cluster_ops(alice) == {Op.ALTER, Op.DESCRIBE, Op.IDEMPOTENT_WRITE}
    finally:
        cluster.delete_acls(on_cluster)
    assert cluster_ops(admin) == CLUSTER_OPS


async def test_refusals_do_not_tell_whether_the_resource_exists(cluster: Cluster, clients: Clients) -> None:
    """Without the ACL the answer is the same authorization error for a topic or group that
    exists and one that does not; the super user gets the existence errors, and so does one who
    may Describe the topic it deletes (Kafka's controller: UNKNOWN_TOPIC_OR_PARTITION)."""
    from client import NewTopic as OurNewTopic

    existing, ghost, ghost_group = cluster.topic(unique_name("ex")), unique_name("ghost"), unique_name("ghost-g")
    seen_ghost = unique_name("seen-ghost")  # alice may Describe it: she is told it does not exist
    cluster.allow(TOPIC, seen_ghost, Op.DESCRIBE)
    calls = {
        "create existing": lambda a: a.create_topics([OurNewTopic(existing)]),
        "delete ghost": lambda a: a.delete_topics([ghost]),
        "delete seen ghost": lambda a: a.delete_topics([seen_ghost]),
        "grow ghost": lambda a: a.create_partitions({ghost: 2}),
        "describe configs ghost": lambda a: a.describe_configs("topic", ghost),
        "alter configs ghost": lambda a: a.incremental_alter_configs("topic", ghost, {"retention.ms": "1000"}),
        "delete ghost group": lambda a: a.delete_groups([ghost_group]),
    }
    got = {}
    for user in ("alice", "admin"):
        admin = await clients.ours(user)
        got[user] = {what: await outcome(lambda call=call, admin=admin: call(admin))
                     for what, call in calls.items()}
    assert got["alice"] == {"create existing": TOPIC_DENIED, "delete ghost": TOPIC_DENIED, "delete seen ghost": 3,
                            "grow ghost": TOPIC_DENIED,
                            "describe configs ghost": TOPIC_DENIED, "alter configs ghost": TOPIC_DENIED,
                            "delete ghost group": GROUP_DENIED}
    assert got["admin"] == {"create existing": CkError.TOPIC_ALREADY_EXISTS, "delete ghost": 3, "delete seen ghost": 3,
                            "grow ghost": 3,
                            "describe configs ghost": 3, "alter configs ghost": 3,
                            "delete ghost group": CkError.GROUP_ID_NOT_FOUND}
