"""Client quotas: the quota configs (broker/quota/store.py: Kafka's checks and messages, the
filters, the file), Kafka's measures (rate.py), which quota applies to whom (manager.py: the
eight levels and the metric-tag rule), and DescribeClientQuotas / AlterClientQuotas over the
wire (v0-1, authorization, kept across a restart, a corrupt file stopping start-up).
Enforcement on live traffic is in tests/server/test_quota_throttling.py, the CLI in
tests/client/cli/test_cli.py."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from broker.authorizer import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.quota import (
    DEFAULT,
    ClientQuotaFileError,
    ClientQuotaManager,
    ClientQuotaStore,
    QuotaManagers,
    QuotaRequestError,
)
from broker.quota.manager import ConnectionQuotas, QuotaKind
from broker.quota.rate import Rate, TokenBucket
from broker.quota.store import QUOTAS_FILE, entity_text, java_order
from broker.testing.inprocess import InProcessBroker
from broker.testing.wire import Conn
from client.protocol.api import ApiKey, ErrorCode
from tests.broker_process import REPO

INVALID = ErrorCode.INVALID_REQUEST


def entry(*entity: tuple[str, str | None], **ops: float | None) -> dict:
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops.items()]}


def alter(store: ClientQuotaStore, *entries: dict, validate_only: bool = False, resolvable=None) -> list:
    kwargs = {} if resolvable is None else {"resolvable": resolvable}
    return [(dict(listed), code, message) for listed, code, message in
            store.alter(list(entries), validate_only, **kwargs)]


def comp(etype: str, match_type: int, match: str | None = None) -> dict:
    return {"entity_type": etype, "match_type": match_type, "match": match}


# ------------------------------------------------------------------ the store


def test_alter_and_describe(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    assert alter(s, entry(("user", "alice"), producer_byte_rate=1048576.0, request_percentage=12.5),
                 entry(("user", None), ("client-id", "app"), controller_mutation_rate=0.5),
                 entry(("ip", "10.0.0.7"), connection_creation_rate=20.0)) == [
        ({"user": "alice"}, 0, None), ({"client-id": "app", "user": None}, 0, None), ({"ip": "10.0.0.7"}, 0, None)]
    assert s.describe([], False) == [
        ((("client-id", "app"), ("user", None)), {"controller_mutation_rate": 0.5}),
        ((("ip", "10.0.0.7"),), {"connection_creation_rate": 20.0}),
        ((("user", "alice"),), {"producer_byte_rate": 1048576.0, "request_percentage": 12.5})]
    # a removal, a removal of what is not set (a no-op, unchecked as in Kafka), a change
    assert alter(s, entry(("user", "alice"), request_percentage=None, nonsense=None, producer_byte_rate=2.0)) == [
        ({"user": "alice"}, 0, None)]
    assert s.quotas[(("user", "alice"),)] == {"producer_byte_rate": 2.0}
    # removing an entity's last key removes the entity
    alter(s, entry(("ip", "10.0.0.7"), connection_creation_rate=None))
    assert (("ip", "10.0.0.7"),) not in s.quotas
    # validate_only: answered alike, nothing changes
    assert alter(s, entry(("user", "bob"), producer_byte_rate=5.0), validate_only=True) == [({"user": "bob"}, 0, None)]
    assert (("user", "bob"),) not in s.quotas
    assert ClientQuotaStore(str(tmp_path)).quotas == s.quotas  # durable


@pytest.mark.parametrize(("the_entry", "message"), [
    (entry(op_key=1.0), "Invalid empty client quota entity"),
    (entry(("group", "g"), producer_byte_rate=1.0), "Unhandled client quota entity type: group"),
    (entry(("user", ""), producer_byte_rate=1.0), "Empty user not supported"),
    (entry(("client-id", ""), producer_byte_rate=1.0), "Empty client-id not supported"),
    (entry(("ip", "1.2.3.4"), ("user", "u"), connection_creation_rate=1.0),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (entry(("ip", "no-such-host.invalid"), connection_creation_rate=1.0),
     "no-such-host.invalid is not a valid IP or resolvable host."),
    (entry(("user", "u"), connection_creation_rate=1.0), "Invalid configuration key connection_creation_rate"),
    (entry(("ip", None), producer_byte_rate=1.0), "Invalid configuration key producer_byte_rate"),
    (entry(("user", "u"), producer_byte_rate=0.0), "Quota producer_byte_rate must be greater than 0"),
    (entry(("user", "u"), request_percentage=-1.0), "Quota request_percentage must be greater than 0"),
    (entry(("user", "u"), consumer_byte_rate=1.5), "consumer_byte_rate cannot be a fractional value."),
    (entry(("user", "u"), consumer_byte_rate=1e19), "Proposed value for consumer_byte_rate is too large for a LONG."),
    (entry(("ip", None), connection_creation_rate=2.0**31), "Proposed value for connection_creation_rate is too large"
                                                            " for an INT."),
    (entry(("ip", None), connection_creation_rate=2.5), "connection_creation_rate cannot be a fractional value."),
])
def test_kafkas_refusals(tmp_path, the_entry, message) -> None:
    s = ClientQuotaStore(str(tmp_path))
    ((_, code, got),) = alter(s, the_entry)
    assert (code, got) == (INVALID, message)
    assert s.quotas == {} and not os.path.exists(tmp_path / QUOTAS_FILE)


def test_doubles_may_be_fractions_and_an_entity_refused_changes_nothing_of_it(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    got = alter(s, entry(("client-id", "c"), request_percentage=0.25, controller_mutation_rate=1e-3),
                entry(("user", "u"), producer_byte_rate=100.0, consumer_byte_rate=0.5))
    assert got == [({"client-id": "c"}, 0, None),
                   ({"user": "u"}, INVALID, "consumer_byte_rate cannot be a fractional value.")]
    assert s.quotas == {(("client-id", "c"),): {"request_percentage": 0.25, "controller_mutation_rate": 1e-3}}


def test_a_duplicate_entity_or_key_answers_kafkas_ignoring_duplicate_entity(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    dup_key = entry(("user", "u"), producer_byte_rate=1.0)
    dup_key["ops"].append({"key": "producer_byte_rate", "value": 2.0, "remove": False})
    assert alter(s, dup_key) == [({"user": "u"}, INVALID, "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})")]
    assert s.quotas == {}
    # named twice: one result per entity, the later one; the first one's change applies (Kafka's controller)
    got = alter(s, entry(("user", "v"), ("client-id", None), producer_byte_rate=1.0),
                entry(("client-id", None), ("user", "v"), producer_byte_rate=2.0))
    assert got == [({"client-id": None, "user": "v"}, INVALID,
                    "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=null, user=v})")]
    assert s.quotas == {(("client-id", None), ("user", "v")): {"producer_byte_rate": 1.0}}


def test_java_map_order_and_entity_text() -> None:
    assert java_order(["user", "client-id"], 2) == ["client-id", "user"]
    assert java_order(["ip"], 1) == ["ip"]
    assert entity_text({"user": "alice", "client-id": None}) == "ClientQuotaEntity(entries={client-id=null, user=alice})"


def test_an_ip_entity_may_name_a_host_that_resolves(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    assert alter(s, entry(("ip", "db.example"), connection_creation_rate=3.0),
                 resolvable=lambda h: h == "db.example") == [({"ip": "db.example"}, 0, None)]
    assert alter(s, entry(("ip", "::1"), connection_creation_rate=3.0), resolvable=lambda h: False)[0][1] == 0


def _described(s: ClientQuotaStore, components: list, strict: bool = False) -> list:
    return [dict(entity) for entity, _ in s.describe(components, strict)]


def test_describe_filters(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    alter(s, entry(("user", "alice"), producer_byte_rate=1.0), entry(("user", None), producer_byte_rate=2.0),
          entry(("user", "alice"), ("client-id", "app"), producer_byte_rate=3.0),
          entry(("client-id", "app"), producer_byte_rate=4.0), entry(("client-id", None), producer_byte_rate=5.0),
          entry(("ip", None), connection_creation_rate=6.0))
    assert len(_described(s, [])) == 6
    assert _described(s, [], strict=True) == []
    assert _described(s, [comp("user", 0, "alice")]) == [{"client-id": "app", "user": "alice"}, {"user": "alice"}]
    assert _described(s, [comp("user", 0, "alice")], strict=True) == [{"user": "alice"}]
    assert _described(s, [comp("user", 1)], strict=True) == [{"user": None}]
    assert _described(s, [comp("user", 2)], strict=True) == [{"user": None}, {"user": "alice"}]
    assert _described(s, [comp("user", 2), comp("client-id", 2)]) == [{"client-id": "app", "user": "alice"}]
    assert _described(s, [comp("client-id", 0, "app")], strict=True) == [{"client-id": "app"}]
    assert _described(s, [comp("client-id", 1)]) == [{"client-id": None}]
    assert _described(s, [comp("ip", 2)]) == [{"ip": None}]
    assert _described(s, [comp("ip", 0, "10.0.0.1")]) == []


@pytest.mark.parametrize(("components", "code", "message"), [
    ([comp("", 2)], INVALID, "Invalid empty entity type."),
    ([comp("user", 2), comp("user", 0, "a")], INVALID, "Entity type user cannot appear more than once in the filter."),
    ([comp("group", 2)], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([comp("user", 0)], INVALID, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([comp("user", 1, "a")], INVALID, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([comp("user", 2, "a")], INVALID, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([comp("user", 7)], INVALID, "Unknown match type 7"),
    ([comp("ip", 2), comp("client-id", 1)], INVALID, "Invalid entity filter component combination. IP filter"
                                                      " component should not be used with user or clientId filter"
                                                      " component."),
])
def test_describe_refusals(tmp_path, components, code, message) -> None:
    with pytest.raises(QuotaRequestError) as e:
        ClientQuotaStore(str(tmp_path)).describe(components, False)
    assert (e.value.code, e.value.message) == (code, message)


@pytest.mark.parametrize(("content", "why"), [
    (b"{", "Expecting"),
    (b'{"version": 2, "quotas": []}', "not a version 1"),
    (b'{"version": 1, "quotas": [{"entity": {"group": "g"}, "values": {}}]}', "bad entity"),
    (b'{"version": 1, "quotas": [{"entity": {"user": ""}, "values": {}}]}', "bad entity"),
    (b'{"version": 1, "quotas": [{"entity": {"user": "u", "ip": null}, "values": {}}]}', "IP entity"),
    (b'{"version": 1, "quotas": [{"entity": {"user": "u"}, "values": {"producer_byte_rate": -1}}]}', "greater than 0"),
    (b'{"version": 1, "quotas": [{"entity": {"user": "u"}, "values": {"nope": 1}}]}', "Invalid configuration key"),
    (b'{"version": 1, "quotas": [{"entity": {"user": "u"}, "values": {"producer_byte_rate": "1"}}]}',
     "not a number"),
    (b'{"version": 1, "quotas": [{"entity": {"user": "u"}, "values": {}}, {"entity": {"user": "u"}, "values": {}}]}',
     "listed twice"),
])
def test_a_corrupt_file_is_one_line_naming_it(tmp_path, content, why) -> None:
    (tmp_path / QUOTAS_FILE).write_bytes(content)
    with pytest.raises(ClientQuotaFileError, match=why) as e:
        ClientQuotaStore(str(tmp_path))
    assert str(tmp_path / QUOTAS_FILE) in str(e.value) and "\n" not in str(e.value)


def test_a_torn_write_is_ignored_and_removed(tmp_path) -> None:
    s = ClientQuotaStore(str(tmp_path))
    alter(s, entry(("user", "u"), producer_byte_rate=7.0))
    (tmp_path / (QUOTAS_FILE + ".tmp")).write_bytes(b'{"version": 1, "quo')
    assert ClientQuotaStore(str(tmp_path)).quotas == {(("user", "u"),): {"producer_byte_rate": 7.0}}
    assert not os.path.exists(tmp_path / (QUOTAS_FILE + ".tmp"))
    assert json.loads((tmp_path / QUOTAS_FILE).read_text()) == {
        "version": 1, "quotas": [{"entity": {"user": "u"}, "values": {"producer_byte_rate": 7.0}}]}


def test_a_failed_write_changes_nothing(tmp_path, monkeypatch) -> None:
    s = ClientQuotaStore(str(tmp_path))
    seen = []
    s.listeners.append(lambda *change: seen.append(change))

    def no_space(*_):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(s, "_write", no_space)
    with pytest.raises(OSError):
        alter(s, entry(("user", "u"), producer_byte_rate=7.0))
    assert s.quotas == {} and seen == []


# ------------------------------------------------------------------ measures


def test_rate_counts_at_least_samples_minus_one_windows_and_kafkas_throttle_time() -> None:
    r = Rate(11, 1000)
    r.record(11_000.0, 0)
    assert r.window_size(0) == 10_000  # 10 whole windows assumed, not a burst over 1 ms
    assert r.measure(0) == pytest.approx(1100.0)
    assert r.throttle_time(1000.0, 0) == 1000  # (1100 - 1000) / 1000 * 10 s
    assert r.throttle_time(1100.0, 0) == 0
    r.record(0.0, 10_500)
    assert r.window_size(10_500) == 10_500
    # a sample with no event for samples x window is dropped
    assert r.measure(11_000 + 10_500) == 0.0


def test_rate_keeps_samples_plus_one_samples() -> None:
    r = Rate(2, 1000)
    for t in (0, 1000, 2000, 3000):
        r.record(1.0, t)
    assert len(r._samples) == 3  # samples + the overlapping one, recycled
    # at 3000 the sample last written at 1000 has had no event for samples x window: reset;
    # the two left (2000, 3000) over one window (samples - 1 windows at least)
    assert r.measure(3000) == pytest.approx(2.0)


def test_token_bucket_starts_full_and_refills() -> None:
    b = TokenBucket(11, 1000)
    assert b.measure(2.0, 0) == 22.0  # burst: samples x window x quota
    b.record(30.0, 2.0, 0)
    assert b.tokens == -8.0 and TokenBucket.throttle_time(-8.0, 2.0) == 4000
    assert b.measure(2.0, 4000) == pytest.approx(0.0)


# ------------------------------------------------------------------ which quota applies


def test_kafkas_eight_levels_in_order() -> None:
    m = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1)
    levels = [("u", "c"), ("u", DEFAULT), ("u", None), (DEFAULT, "c"), (DEFAULT, DEFAULT), (DEFAULT, None),
              (None, "c"), (None, DEFAULT)]
    assert m.quota("u", "c") == math.inf
    for i, (user, client) in enumerate(reversed(levels)):  # the least specific first
        m.update(user, client, float(8 - i))
        assert m.quota("u", "c") == 8 - i, (user, client)
    for i, (user, client) in enumerate(levels):  # removed from the most specific: the next applies
        m.update(user, client, None)
        assert m.quota("u", "c") == (i + 2 if i < 7 else math.inf), (user, client)
    assert m.quota("other", "other-client") == math.inf


def test_metric_tags_a_default_quota_applies_to_each_user_and_client_alone() -> None:
    m = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1)
    m.update(None, "c", 100.0)  # only client-id quotas: counted per client id, whoever the user
    assert m.metric_tags("u1", "c") == m.metric_tags("u2", "c") == ("", "c")
    m2 = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1)
    m2.update(DEFAULT, None, 100.0)  # only user quotas: per user
    assert m2.metric_tags("u1", "c") == ("u1", "")
    m3 = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1)
    m3.update(DEFAULT, DEFAULT, 100.0)  # (user, client-id) quotas: per pair
    assert m3.metric_tags("u1", "c") == ("u1", "c")
    # several kinds: the tags of the level that applies
    m.update(DEFAULT, None, 50.0)
    assert m.metric_tags("u1", "c") == ("u1", "") and m.quota("u1", "c") == 50.0
    m.update("u1", "c", 10.0)
    assert m.metric_tags("u1", "c") == ("u1", "c") and m.quota("u1", "c") == 10.0
    m.update(DEFAULT, None, None)
    assert m.metric_tags("u2", "c") == ("", "c") and m.quota("u2", "c") == 100.0
    # a default user's quota: each user has the whole of it
    t = 0
    d = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1, clock=lambda: t)
    d.update(DEFAULT, None, 1000.0)
    assert d.record("a", "x", 10_000.0) == 0 and d.record("b", "x", 10_000.0) == 0
    assert d.record("a", "y", 1000.0) == 1000  # a's own allowance is spent; the client id does not matter


def test_nothing_is_measured_before_a_quota_of_the_type_is_set_and_an_empty_client_id() -> None:
    m = ClientQuotaManager(QuotaKind.PRODUCE, 11, 1)
    assert m.record("u", "c", 1e12) == 0 and m.sensors == {}
    m.update(None, DEFAULT, 1.0)
    assert m.record("u", "", 1e12) == 0  # an empty client id with client-id tags has no quota (Kafka's)
    assert m.record("u", "c", 1e12) > 0


def test_request_time_is_bounded_by_one_window_and_byte_rates_are_not() -> None:
    q = QuotaManagers(clock=lambda: 0)
    q.on_change((("client-id", "c"),), "request_percentage", 1.0)
    q.on_change((("client-id", "c"),), "producer_byte_rate", 1.0)
    assert q.active
    assert q.request.record("u", "c", 1e6) == 1000
    assert q.produce.record("u", "c", 1e6) > 1000
    assert q.fetch.record("u", "c", 1e12) == 0  # no consumer_byte_rate set


def test_controller_mutation_quota_strict_and_permissive() -> None:
    t = [0]
    q = QuotaManagers(clock=lambda: t[0])
    q.on_change((("client-id", "c"),), "controller_mutation_rate", 1.0)  # burst 11 partitions
    strict = q.controller_mutation.mutation_quota("u", "c", strict=True)
    assert strict.record(10) and strict.record(10)  # not exhausted yet when the second came
    assert not strict.record(1)  # exhausted: refused, and the time until it is back
    assert strict.throttle_time() == 9000
    t[0] = 2000
    assert strict.throttle_time() == 7000  # less the time since
    permissive = q.controller_mutation.mutation_quota("u", "c", strict=False)
    assert permissive.record(5) and permissive.throttle_time() == 12000  # accepted, throttled
    other = q.controller_mutation.mutation_quota("u", "unlimited", strict=True)
    assert not other.bounded and other.record(1000) and other.throttle_time() == 0


def test_connection_creation_rate_per_ip() -> None:
    c = ConnectionQuotas(11, 1, clock=lambda: 0)
    assert c.accept("10.0.0.1") == 0  # no quota: not even measured
    c.update("10.0.0.1", 2.0)
    accepted = [c.accept("10.0.0.1") for _ in range(25)]
    assert accepted[:20] == [0] * 20 and all(0 < d <= 1000 for d in accepted[20:])  # 2/s over 10 windows
    assert c.accept("10.0.0.2") == 0
    c.update(None, 1.0)  # the default ip entity
    assert [c.accept("10.0.0.2") for _ in range(11)][-1] > 0
    c.update("db.example", 1.0)
    c.resolved("db.example", ["10.0.0.9"])
    assert c.hosts() == ["db.example"] and c._by_address["10.0.0.9"] == 1.0


# ------------------------------------------------------------------ over the wire


def _alter_req(*entries: dict, validate_only: bool = False) -> dict:
    return {"entries": list(entries), "validate_only": validate_only}


def test_the_apis_over_the_wire_both_versions_and_a_restart(tmp_path) -> None:
    data = str(tmp_path / "data")
    with InProcessBroker(data) as b, Conn(b.port) as c:
        for version in (0, 1):
            r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, version, _alter_req(
                entry(("user", "alice"), ("client-id", None), producer_byte_rate=1048576.0),
                entry(("user", ""), producer_byte_rate=1.0)))
            assert r["entries"] == [
                {"error_code": 0, "error_message": None, "entity": [
                    {"entity_type": "client-id", "entity_name": None}, {"entity_type": "user", "entity_name": "alice"}]},
                {"error_code": INVALID, "error_message": "Empty user not supported",
                 "entity": [{"entity_type": "user", "entity_name": ""}]}]
            d = c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {"components": [comp("user", 0, "alice")], "strict": False})
            assert (d["error_code"], d["error_message"]) == (0, None)
            assert d["entries"] == [{"entity": [{"entity_type": "client-id", "entity_name": None},
                                                {"entity_type": "user", "entity_name": "alice"}],
                                     "values": [{"key": "producer_byte_rate", "value": 1048576.0}]}]
            d = c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {"components": [comp("nope", 2)], "strict": False})
            assert d == {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION,
                         "error_message": "Unsupported entity type nope", "entries": None}
        r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, _alter_req(entry(("ip", "localhost"), connection_creation_rate=5.0),
                                                             validate_only=True))
        assert r["entries"][0]["error_code"] == 0
        r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, _alter_req(entry(("ip", "no-such-host.invalid"),
                                                                   connection_creation_rate=5.0)))
        assert r["entries"][0]["error_message"] == "no-such-host.invalid is not a valid IP or resolvable host."
    with InProcessBroker(data) as b, Conn(b.port) as c:  # kept across the restart, and enforced
        d = c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
        assert [v for e in d["entries"] for v in e["values"]] == [{"key": "producer_byte_rate", "value": 1048576.0}]
        assert b.call(lambda: b.broker.state.quotas.produce.quota("alice", "any")) == 1048576.0


def test_authorization(tmp_path) -> None:
    on = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with InProcessBroker(str(tmp_path / "data"), on) as b, Conn(b.port) as c:
        d = c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
        assert (d["error_code"], d["error_message"], d["entries"]) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", None)
        r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, _alter_req(entry(("user", "u"), producer_byte_rate=1.0)))
        assert r["entries"] == [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                 "error_message": "Cluster authorization failed.",
                                 "entity": [{"entity_type": "user", "entity_name": "u"}]}]
        cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
        allow = AclPermissionType.ALLOW
        b.call(lambda: b.broker.state.acls.create([
            AclBinding(cluster, AccessControlEntry("User:ANONYMOUS", "*", AclOperation.DESCRIBE_CONFIGS, allow))]))
        assert c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})["error_code"] == 0
        r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, _alter_req(entry(("user", "u"), producer_byte_rate=1.0)))
        assert r["entries"][0]["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # DESCRIBE_CONFIGS is not ALTER_CONFIGS
        b.call(lambda: b.broker.state.acls.create([
            AclBinding(cluster, AccessControlEntry("User:ANONYMOUS", "*", AclOperation.ALTER_CONFIGS, allow))]))
        r = c.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, _alter_req(entry(("user", "u"), producer_byte_rate=1.0)))
        assert r["entries"][0]["error_code"] == 0


def test_a_corrupt_file_stops_start_up_with_one_line(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / QUOTAS_FILE).write_text('{"version": 1, "quotas": [{"entity": {"user": "u"}, "values": {"x": 1}}]}')
    r = subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir", str(data)], cwd=REPO,
                       capture_output=True, timeout=60, check=False)
    assert r.returncode == 2
    err = r.stderr.decode()
    (line,) = [x for x in err.splitlines() if x.startswith("minibroker: cannot start:")]
    assert line.startswith(f"minibroker: cannot start: the client quotas file {data / QUOTAS_FILE} cannot be used")
    assert "Invalid configuration key x" in line and "Traceback" not in err


def test_the_admin_client_async_and_blocking(tmp_path) -> None:
    from client.admin import (
        Admin,
        ClientQuotaAlteration,
        ClientQuotaEntity,
        ClientQuotaFilter,
        ClientQuotaFilterComponent,
    )
    from client.errors import InvalidRequestError, UnsupportedVersionError
    from client.sync import SyncAdmin

    alice = ClientQuotaEntity({ClientQuotaEntity.USER: "alice"})
    default_client = ClientQuotaEntity({ClientQuotaEntity.USER: "alice", ClientQuotaEntity.CLIENT_ID: None})
    with InProcessBroker(str(tmp_path / "data")) as b:
        with SyncAdmin(b.bootstrap) as admin:
            admin.alter_client_quotas([
                ClientQuotaAlteration(alice, [ClientQuotaAlteration.Op("producer_byte_rate", 1048576)]),
                ClientQuotaAlteration(default_client, [ClientQuotaAlteration.Op("request_percentage", 50.0)])])
            assert admin.describe_client_quotas() == {alice: {"producer_byte_rate": 1048576.0},
                                                      default_client: {"request_percentage": 50.0}}
            only_alice = ClientQuotaFilter.contains_only([ClientQuotaFilterComponent.of_entity("user", "alice")])
            assert admin.describe_client_quotas(only_alice) == {alice: {"producer_byte_rate": 1048576.0}}
            by_default = ClientQuotaFilter.contains([ClientQuotaFilterComponent.of_default_entity("client-id")])
            assert list(admin.describe_client_quotas(by_default)) == [default_client]
            admin.alter_client_quotas([ClientQuotaAlteration(alice, [ClientQuotaAlteration.Op("producer_byte_rate",
                                                                                             5.0)])], validate_only=True)
            with pytest.raises(InvalidRequestError, match="producer_byte_rate cannot be a fractional value"):
                admin.alter_client_quotas([ClientQuotaAlteration(alice, [ClientQuotaAlteration.Op(
                    "producer_byte_rate", 0.5)])])
            with pytest.raises(UnsupportedVersionError, match="Unsupported entity type group"):
                admin.describe_client_quotas(ClientQuotaFilter.contains([
                    ClientQuotaFilterComponent.of_entity_type("group")]))

        async def remove() -> dict:
            async with Admin(b.bootstrap) as admin:
                await admin.alter_client_quotas([ClientQuotaAlteration(alice, [
                    ClientQuotaAlteration.Op("producer_byte_rate", None)])])
                return await admin.describe_client_quotas()

        import asyncio
        assert asyncio.run(remove()) == {default_client: {"request_percentage": 50.0}}
