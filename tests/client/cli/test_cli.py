"""Tests for ``client/cli/``: ``python -m broker topics|produce|consume|offsets`` run as real
subprocesses against a broker process, as a user would run them."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest

from tests.broker_process import REPO


def mb(*args: str, input: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "broker", *args], cwd=REPO, input=input, capture_output=True,
                          timeout=timeout, check=False)


def ok(*args: str, input: bytes | None = None) -> str:
    r = mb(*args, input=input)
    assert r.returncode == 0, f"{args} exited {r.returncode}:\n{r.stderr.decode(errors='replace')}"
    return r.stdout.decode()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:200]


def test_topics_create_list_describe_delete(module_broker, topic):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    assert ok("topics", "--create", topic, "--partitions", "3", "--config", "retention.ms=3600000", *bs) \
        == f"Created topic {topic}.\n"
    assert topic in ok("topics", "--list", *bs).splitlines()
    desc = ok("topics", "--describe", topic, *bs).splitlines()
    assert desc[0] == f"Topic: {topic}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=3600000"
    assert desc[1:] == [f"\tTopic: {topic}\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0" for p in range(3)]
    assert f"Topic: {topic}\t" in ok("topics", "--describe", *bs)  # every topic

    r = mb("topics", "--create", topic, "--partitions", "1", *bs)
    assert r.returncode == 1 and b"already exists" in r.stderr
    assert ok("topics", "--create", topic, "--if-not-exists", *bs) == ""

    assert ok("topics", "--delete", topic, *bs) == f"Deleted topic {topic}.\n"
    assert topic not in ok("topics", "--list", *bs).splitlines()
    r = mb("topics", "--describe", topic, *bs)
    assert r.returncode == 1 and f"topic '{topic}' does not exist".encode() in r.stderr
    r = mb("topics", "--delete", topic, *bs)
    assert r.returncode == 1 and b"does not exist" in r.stderr
    assert mb("topics", "--delete", topic, "--if-exists", *bs).returncode == 0

    r = mb("topics", "--create", "bad/name", *bs)
    assert r.returncode == 1 and b"bad/name" in r.stderr
    r = mb("topics", "--list", "--create", "x", *bs)
    assert r.returncode == 2  # argparse: the actions exclude each other
    r = mb("topics", "--create", topic, "--config", "novalue", *bs)
    assert r.returncode == 1 and b"KEY=VALUE" in r.stderr


def test_produce_consume_round_trip_with_keys_and_formats(module_broker, topic):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", topic, "--partitions", "2", *bs)
    lines = [f"key{i % 5}:value {i}: with colon" for i in range(50)] + ["nokeyvalue-is-empty:", ":empty-key"]
    ok("produce", topic, "--key-separator", ":", "--compression", "zstd", "--acks", "all", *bs,
       input=("\n".join(lines) + "\n").encode())
    out = ok("consume", topic, "--from-beginning", "--exit-at-end", "--format", "%k|%v|%p|%o|%t", *bs)
    got = [line.split("|") for line in out.splitlines()]
    assert sorted((k, v) for k, v, *_ in got) == sorted(tuple(line.split(":", 1)) for line in lines)
    # Same key, same partition (murmur2), offsets consecutive per partition, topic printed.
    part_of = {}
    for k, _, p, _, t in got:
        assert part_of.setdefault(k, p) == p and t == topic
    for p in ("0", "1"):
        offs = [int(o) for _, _, pp, o, _ in got if pp == p]
        assert offs == list(range(len(offs)))
    # The order within a partition is the input order.
    for p in ("0", "1"):
        vs = [v for _, v, pp, _, _ in got if pp == p]
        assert vs == [line.split(":", 1)[1] for line in lines if part_of[line.split(":", 1)[0]] == p]

    # Without a separator: whole lines, null keys; \r\n endings dropped; lengths via %K %S.
    ok("produce", topic, "--partition", "1", "--header", "src=cli", "--header", "flag", *bs,
       input=b"plain one\r\nplain two\n")
    out = ok("consume", topic, "--partition", "1", "--offset", "-2", "--exit-at-end",
             "--format", r"%k\t%v\t%K\t%S\t%h", *bs)
    assert out.splitlines() == ["null\tplain one\t-1\t9\tsrc=cli,flag=null", "null\tplain two\t-1\t9\tsrc=cli,flag=null"]

    r = mb("produce", topic, "-K", ":", *bs, input=b"a:1\nno separator here\n")
    assert r.returncode == 1 and b"line 2 has no key separator" in r.stderr


@pytest.mark.slow
def test_consume_offset_timestamp_max_messages(module_broker, topic, tmp_path):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", topic, "--partitions", "1", *bs)
    first = tmp_path / "first.txt"
    first.write_bytes(b"".join(b"a%d\n" % i for i in range(10)))
    ok("produce", topic, "--file", str(first), *bs)
    time.sleep(0.05)
    ok("produce", topic, *bs, input=b"".join(b"b%d\n" % i for i in range(10)))
    out = ok("consume", topic, "--offset", "7", "--max-messages", "5", *bs)
    assert out.splitlines() == ["a7", "a8", "a9", "b0", "b1"]
    stamps = ok("consume", topic, "--from-beginning", "-e", "--format", "%o %T", *bs).split()
    ts_b0 = int(stamps[2 * 10 + 1])
    assert ts_b0 > int(stamps[2 * 9 + 1])
    out = ok("consume", topic, "--timestamp", str(ts_b0), "--exit-at-end", *bs)
    assert out.splitlines() == [f"b{i}" for i in range(10)]
    # Default start is the end: nothing old is printed; --timeout-ms ends it.
    t0 = time.monotonic()
    r = mb("consume", topic, "--timeout-ms", "500", *bs)
    assert r.returncode == 0 and r.stdout == b"" and time.monotonic() - t0 < 10
    assert b"Processed a total of 0 messages" in r.stderr


def test_offsets(module_broker, topic):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", topic, "--partitions", "2", *bs)
    ok("produce", topic, "--partition", "0", *bs, input=b"x\ny\nz\n")
    out = ok("offsets", topic, *bs).splitlines()
    assert out[0].split() == ["TOPIC", "PARTITION", "START", "END", "OFFSETS"]
    assert [line.split() for line in out[1:]] == [[topic, "0", "0", "3", "3"], [topic, "1", "0", "0", "0"]]
    assert ok("offsets", topic, "--time", "latest", *bs).splitlines() == [f"{topic}:0:3", f"{topic}:1:0"]
    assert ok("offsets", topic, "--time", "earliest", "--partition", "0", *bs) == f"{topic}:0:0\n"
    assert ok("offsets", topic, "--time", str(2**45), "--partition", "0", *bs) == f"{topic}:0:-1\n"
    r = mb("offsets", topic, "--partition", "9", *bs)
    assert r.returncode == 1 and b"no partition 9" in r.stderr


def test_progress_line_on_long_inputs(module_broker, topic):
    data = b"".join(b"record number %d\n" % i for i in range(30000))
    r = mb("produce", topic, "--progress", "always", "--bootstrap-server", module_broker.bootstrap, input=data)
    assert r.returncode == 0, r.stderr
    assert re.search(rb"produced 30,000 records to " + topic.encode() + rb" in [\d.]+ s \([\d,]+ records/s\)", r.stderr)
    r = mb("produce", topic, "--bootstrap-server", module_broker.bootstrap, input=b"quiet\n")
    assert r.returncode == 0 and r.stderr == b""  # stderr is not a terminal: no progress by default
    out = ok("offsets", topic, "--time", "latest", "--bootstrap-server", module_broker.bootstrap)
    assert out.strip().endswith(":30001")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", [["topics", "--list"], ["produce", "t"], ["consume", "t"], ["offsets", "t"]])
def test_unreachable_broker(command):
    port = _closed_port()
    r = mb(*command, "--bootstrap-server", f"127.0.0.1:{port}", "--request-timeout-ms", "500", input=b"x\n")
    assert r.returncode == 1
    assert f"cannot reach 127.0.0.1:{port} (connection refused)".encode() in r.stderr, r.stderr
    assert b"Traceback" not in r.stderr


def test_errors_are_one_line(module_broker, topic):
    bs = ["--bootstrap-server", module_broker.bootstrap]
    r = mb("consume", "no-such-topic-" + topic, *bs)
    assert r.returncode == 1 and b"does not exist" in r.stderr and b"Traceback" not in r.stderr
    r = mb("consume", "x", "--format", "%q", *bs)
    assert r.returncode == 1 and b"unknown format token %q" in r.stderr
    r = mb("produce", "x", "--file", os.path.join("no", "such", "file"), *bs)
    assert r.returncode == 1 and b"cannot read" in r.stderr
    r = mb("consume", "x", "--from-beginning", "--offset", "3", *bs)
    assert r.returncode == 2
    ok("topics", "--create", topic, "--partitions", "1", *bs)
    r = mb("produce", topic, "--partition", "9", *bs, input=b"a\nb\n")
    assert r.returncode == 1 and b"partition 9 is not in [0, 1)" in r.stderr and b"Traceback" not in r.stderr


def test_topics_alter_configs_delete_records_and_log_dirs(module_broker, topic):
    import json

    bs = ["--bootstrap-server", module_broker.bootstrap]
    ok("topics", "--create", topic, "--partitions", "1", *bs)
    assert ok("topics", "--alter", topic, "--partitions", "3", *bs) == f"Topic {topic} now has 3 partitions.\n"
    r = mb("topics", "--alter", topic, "--partitions", "2", *bs)
    assert r.returncode == 1 and b"2 would not be an increase" in r.stderr
    assert "PartitionCount: 3" in ok("topics", "--describe", topic, *bs)

    assert ok("configs", "--alter", "--topic", topic, "--add-config", "retention.ms=60000,cleanup.policy=[delete,compact]",
              *bs) == f"Completed updating config for topic {topic}.\n"
    assert ok("configs", "--describe", "--topic", topic, *bs).splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact,"
        " DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000}"]
    ok("configs", "--alter", "--topic", topic, "--delete-config", "cleanup.policy", *bs)
    everything = ok("configs", "--describe", "--topic", topic, "--all", *bs)
    assert everything.startswith(f"All configs for topic {topic} are:\n")
    assert "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}\n" in everything
    r = mb("configs", "--alter", "--topic", topic, "--add-config", "retention.ms=soon", *bs)
    assert r.returncode == 1
    assert b"Invalid value soon for configuration retention.ms: Not a number of type LONG" in r.stderr
    assert "log.retention.hours=168" in ok("configs", "--describe", "--broker", "0", "--all", *bs)

    ok("produce", topic, "-p", "1", *bs, input=b"".join(b"line %d\n" % i for i in range(10)))
    assert ok("delete-records", topic, "--partition", "1", "--offset", "4", *bs).splitlines() == [
        "Records delete operation completed:", f"partition: {topic}-1\tlow_watermark: 4"]
    assert f"{topic}:1:4" in ok("offsets", topic, "--time", "earliest", *bs)

    dirs = json.loads(ok("log-dirs", "--describe", "--topic-list", topic, *bs))
    (broker,) = dirs["brokers"]
    (log_dir,) = broker["logDirs"]
    assert broker["broker"] == 0 and log_dir["logDir"] == module_broker.data_dir and log_dir["error"] is None
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sorted(sizes) == [f"{topic}-{p}" for p in range(3)] and sizes[f"{topic}-1"] > 0 == sizes[f"{topic}-0"]


def test_configs_quotas_of_users_clients_and_ips(module_broker):
    """kafka-configs.sh's quota commands, its messages and layout (its doubles as Java prints
    them). The entities are unique to this test (the broker is the module's), and removed."""
    bs = ["--bootstrap-server", module_broker.bootstrap]
    user = ["--entity-type", "users", "--entity-name", "cli-alice"]
    assert ok("configs", "--alter", *user, "--add-config", "producer_byte_rate=1048576,request_percentage=12.5",
              *bs) == "Completed updating config for user cli-alice.\n"
    assert ok("configs", "--alter", *user, "--entity-type", "clients", "--entity-name", "cli-app", "--add-config",
              "consumer_byte_rate=20000000", *bs) == "Completed updating config for user cli-alice.\n"
    assert ok("configs", "--alter", "--client", "cli-other", "--add-config", "controller_mutation_rate=0.5", *bs) \
        == "Completed updating config for client cli-other.\n"
    assert ok("configs", "--alter", "--entity-type", "ips", "--entity-name", "10.9.8.7", "--add-config",
              "connection_creation_rate=20", *bs) == "Completed updating config for ip 10.9.8.7.\n"
    assert ok("configs", "--describe", *user, *bs) == \
        "Quota configs for user-principal 'cli-alice' are producer_byte_rate=1048576.0, request_percentage=12.5\n"
    assert ok("configs", "--describe", *user, "--entity-type", "clients", *bs) == (
        "Quota configs for user-principal 'cli-alice', client-id 'cli-app' are consumer_byte_rate=2.0E7\n")
    assert "Quota configs for client-id 'cli-other' are controller_mutation_rate=0.5\n" in \
        ok("configs", "--describe", "--entity-type", "clients", *bs)
    assert ok("configs", "--describe", "--ip", "10.9.8.7", *bs) == \
        "Quota configs for ip '10.9.8.7' are connection_creation_rate=20.0\n"
    # users' SCRAM credentials go through the same command, as in Kafka's tool
    assert ok("configs", "--alter", *user, "--add-config", "SCRAM-SHA-512=[iterations=8192,password=pw]", *bs) \
        == "Completed updating config for user cli-alice.\n"
    assert ok("configs", "--describe", *user, *bs).splitlines()[1] == \
        "SCRAM credential configs for user-principal 'cli-alice' are SCRAM-SHA-512=iterations=8192"

    # Kafka's refusals, one line each
    def refused(*args: str) -> str:
        r = mb("configs", *args, *bs)
        assert r.returncode == 1 and b"Traceback" not in r.stderr, r
        return r.stderr.decode().strip()

    assert refused("--alter", *user, "--delete-config", "consumer_byte_rate") == "Invalid config(s): consumer_byte_rate"
    assert refused("--alter", "--client", "x", "--add-config", "nope=1").endswith(
        "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: nope")
    assert refused("--alter", *user, "--add-config", "producer_byte_rate=fast").endswith(
        "Cannot parse quota configuration value for producer_byte_rate: fast")
    assert refused("--alter", *user, "--add-config", "producer_byte_rate=1.5").endswith(
        "producer_byte_rate cannot be a fractional value.")
    assert refused("--alter", "--entity-type", "users", "--entity-type", "clients", "--entity-name", "u",
                   "--add-config", "producer_byte_rate=1").endswith(
        "--entity-name or --entity-default must be specified with each --entity-type for --alter")
    assert refused("--describe", "--entity-type", "topics", "--entity-type", "users").endswith(
        "Only 'users' and 'clients' entity types may be specified together")
    assert refused("--describe", "--entity-type", "users", "--client", "x").endswith(
        "--entity-{type,name,default} should not be used in conjunction with specific entity flags")

    # removing every key removes the entity
    ok("configs", "--alter", *user, "--delete-config", "producer_byte_rate,request_percentage", *bs)
    ok("configs", "--alter", *user, "--delete-config", "SCRAM-SHA-512", *bs)
    ok("configs", "--alter", *user, "--entity-type", "clients", "--entity-name", "cli-app", "--delete-config",
       "consumer_byte_rate", *bs)
    ok("configs", "--alter", "--client", "cli-other", "--delete-config", "controller_mutation_rate", *bs)
    ok("configs", "--alter", "--ip", "10.9.8.7", "--delete-config", "connection_creation_rate", *bs)
    assert ok("configs", "--describe", *user, *bs) == ""
    # the defaults: named with --entity-default (or --user-defaults)
    assert ok("configs", "--alter", "--entity-type", "users", "--entity-default", "--add-config",
              "consumer_byte_rate=1000000000", *bs) == "Completed updating default config for users in the cluster.\n"
    assert ok("configs", "--describe", "--user-defaults", *bs) == \
        "Quota configs for the default user-principal are consumer_byte_rate=1.0E9\n"
    ok("configs", "--alter", "--user-defaults", "--delete-config", "consumer_byte_rate", *bs)


def test_java_double() -> None:
    from client.cli.configs import java_double

    assert [java_double(x) for x in (1048576.0, 12.5, 0.5, 2e7, 1e7, 9999999.0, 1e-3, 1e-4, 100.0, 0.0, 1.5e300)] == [
        "1048576.0", "12.5", "0.5", "2.0E7", "1.0E7", "9999999.0", "0.001", "1.0E-4", "100.0", "0.0", "1.5E300"]
