"""``minibroker acls`` (client/cli/acls.py): kafka-acls.sh's options translated to the bindings
and filters Kafka's AclCommand builds (its documented examples, the --producer / --consumer
expansions, its refusals), its output byte for byte, and, as a subprocess against a broker
process, SECURITY_DISABLED without an authorizer and add / list / remove round trips with one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from broker.__main__ import build_parser
from client.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from client.cli.acls import (
    UsageError,
    adding_text,
    check_args,
    current_text,
    filter_to_acls,
    list_text,
    remove_prompt,
    resource_to_acls,
)
from tests.broker_process import REPO, BrokerProcess
from tests.client.acl_broker import authorizer_broker

O = AclOperation  # noqa: E741
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
CLUSTER = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, LIT)


def parse(*argv: str):  # type: ignore[no-untyped-def]
    args = build_parser().parse_args(["acls", *argv])
    check_args(args)
    return args


def adds(*argv: str) -> dict[ResourcePattern, list[AccessControlEntry]]:
    return resource_to_acls(parse("--add", *argv))


def ace(principal: str, op: AclOperation, permission: AclPermissionType = ALLOW, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


def topic(name: str, pt: PatternType = LIT) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pt)


# ------------------------------------------------------------------ options -> bindings


def test_kafka_docs_example_two_principals_two_hosts() -> None:
    # Kafka's docs: "Principals User:Bob and User:Alice are allowed to perform Operation Read and
    # Write on Topic Test-topic from IP 198.51.100.0 and IP 198.51.100.1"
    out = adds("--allow-principal", "User:Bob", "--allow-principal", "User:Alice", "--allow-host", "198.51.100.0",
               "--allow-host", "198.51.100.1", "--operation", "Read", "--operation", "Write", "--topic", "Test-topic")
    assert list(out) == [topic("Test-topic")]
    assert out[topic("Test-topic")] == [ace(p, op, host=h) for p in ("User:Bob", "User:Alice") for op in (O.READ, O.WRITE)
                                        for h in ("198.51.100.0", "198.51.100.1")]


def test_kafka_docs_example_allow_all_deny_one() -> None:
    # "allow all users to Read from Test-topic but only deny User:BadBob from IP 198.51.100.3"
    out = adds("--allow-principal", "User:*", "--allow-host", "*", "--deny-principal", "User:BadBob", "--deny-host",
               "198.51.100.3", "--operation", "Read", "--topic", "Test-topic")
    assert out == {topic("Test-topic"): [ace("User:*", O.READ), ace("User:BadBob", O.READ, DENY, "198.51.100.3")]}


def test_default_operation_all_host_star_and_every_resource_kind() -> None:
    out = adds("--allow-principal", "User:alice", "--topic", "orders", "--group", "billing", "--cluster",
               "--transactional-id", "tx", "--delegation-token", "tok", "--user-principal", "User:bob")
    entry = [ace("User:alice", O.ALL)]
    assert out == {topic("orders"): entry, CLUSTER: entry, ResourcePattern(ResourceType.GROUP, "billing", LIT): entry,
                   ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", LIT): entry,
                   ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok", LIT): entry,
                   ResourcePattern(ResourceType.USER, "User:bob", LIT): entry}


def test_prefixed_and_operation_names_case_insensitive() -> None:
    out = adds("--allow-principal", "User:a", "--operation", "describeconfigs", "--operation", "ALTERCONFIGS",
               "--topic", "ord", "--resource-pattern-type", "PREFIXED")
    assert out == {topic("ord", PRE): [ace("User:a", O.DESCRIBE_CONFIGS), ace("User:a", O.ALTER_CONFIGS)]}


def test_producer_expansion() -> None:
    out = adds("--allow-principal", "User:app", "--producer", "--topic", "orders", "--transactional-id", "tx",
               "--idempotent")
    assert out == {topic("orders"): [ace("User:app", op) for op in (O.WRITE, O.DESCRIBE, O.CREATE)],
                   ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", LIT): [ace("User:app", O.WRITE),
                                                                               ace("User:app", O.DESCRIBE)],
                   CLUSTER: [ace("User:app", O.IDEMPOTENT_WRITE)]}
    # a prefixed producer: the topics prefixed, the cluster's IdempotentWrite still literal
    out = adds("--allow-principal", "User:app", "--producer", "--topic", "ord", "--idempotent",
               "--resource-pattern-type", "prefixed")
    assert list(out) == [topic("ord", PRE), CLUSTER]


def test_consumer_expansion_and_both() -> None:
    out = adds("--allow-principal", "User:app", "--consumer", "--topic", "orders", "--group", "billing")
    group = ResourcePattern(ResourceType.GROUP, "billing", LIT)
    assert out == {topic("orders"): [ace("User:app", O.READ), ace("User:app", O.DESCRIBE)],
                   group: [ace("User:app", O.READ)]}
    both = adds("--allow-principal", "User:app", "--producer", "--consumer", "--topic", "orders", "--group", "billing")
    assert both[topic("orders")] == [ace("User:app", op) for op in (O.READ, O.DESCRIBE, O.WRITE, O.CREATE)]
    assert both[group] == [ace("User:app", O.READ)]


def test_remove_filters_and_list_defaults() -> None:
    args = parse("--remove", "--topic", "orders", "--resource-pattern-type", "match")
    assert filter_to_acls(args) == {ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH): []}
    # --cluster is a LITERAL resource only
    args = parse("--remove", "--cluster", "--topic", "t", "--resource-pattern-type", "any")
    assert list(filter_to_acls(args)) == [ResourcePatternFilter(ResourceType.TOPIC, "t", PatternType.ANY)]


@pytest.mark.parametrize(("argv", "message"), [
    (["--topic", "t"], "Command must include exactly one action: --list, --add, --remove. "),
    (["--add", "--list", "--topic", "t"], "Command must include exactly one action"),
    (["--list", "--producer", "--topic", "t"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--add", "--producer", "--operation", "Read", "--topic", "t", "--allow-principal", "User:a"],
     'Option "[producer]" can\'t be used with option "[operation]"'),
    (["--add", "--consumer", "--deny-principal", "User:a", "--topic", "t", "--group", "g"],
     'Option "[consumer]" can\'t be used with option "[deny-principal]"'),
    (["--add", "--principal", "User:a", "--topic", "t"], "The --principal option is only available if --list is set"),
    (["--add", "--producer", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
    (["--add", "--idempotent", "--topic", "t"], "The --idempotent option is only available if --producer is set"),
    (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
     "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option"),
])
def test_refused_combinations(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match="^" + message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        parse(*argv)


@pytest.mark.parametrize(("argv", "message"), [
    (["--topic", "t", "--operation", "Read"], "You must specify one of: --allow-principal, --deny-principal"),
    (["--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster"),
    (["--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (["--allow-principal", "User:a", "--group", "g", "--operation", "Write"],
     "ResourceType GROUP only supports operations Read, Describe, Delete, DescribeConfigs, AlterConfigs, All"),
    (["--allow-principal", "User:a", "--topic", "t", "--operation", "Frobnicate"], "ResourceType TOPIC only supports"),
    (["--allow-principal", "alice", "--topic", "t"],
     "expected a string in format principalType:principalName but got alice"),
])
def test_refused_additions(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        adds(*argv)


def test_unknown_pattern_type_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["acls", "--list", "--resource-pattern-type", "glob"])
    assert e.value.code == 2 and "Unknown resource-pattern-type: glob" in capsys.readouterr().err


# ------------------------------------------------------------------ output


def test_output_is_kafkas_byte_for_byte() -> None:
    p = topic("orders")
    one = [ace("User:alice", O.READ)]
    assert adding_text(p, one) == ("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
                                   "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=READ, "
                                   "permissionType=ALLOW) \n\n")
    two = [ace("User:alice", O.READ), ace("User:bob", O.WRITE, DENY, "h")]
    assert current_text(p, two) == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:bob, host=h, operation=WRITE, permissionType=DENY) \n\n")
    f = ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.ANY)
    assert remove_prompt(f, []) == ("Are you sure you want to delete all ACLs for resource filter "
                                    "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=ANY)`? (y/n)\n")
    assert remove_prompt(f, one) == (
        "Are you sure you want to remove ACLs: \n \t(principal=User:alice, host=*, operation=READ, "
        "permissionType=ALLOW) \n from resource filter `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=ANY)`? (y/n)\n")
    bindings = [AclBinding(p, two[0]), AclBinding(CLUSTER, ace("User:bob", O.ALTER)), AclBinding(p, two[1]),
                AclBinding(p, two[0])]
    assert list_text(bindings, []) == current_text(p, two) + current_text(CLUSTER, [ace("User:bob", O.ALTER)])
    assert list_text(bindings, ["User:bob", "User:nobody"]) == (
        "ACLs for principal `User:bob`\n" + current_text(p, two[1:]) + current_text(CLUSTER, [ace("User:bob", O.ALTER)])
        + "ACLs for principal `User:nobody`\n")


# ------------------------------------------------------------------ against a broker


def mb(bootstrap: str, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker", "acls", "--bootstrap-server", bootstrap, *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def test_security_disabled_without_authorizer(module_broker) -> None:
    r = mb(module_broker.bootstrap, "--list")
    assert r.returncode == 1
    assert r.stdout == ("Error while executing ACL command: SecurityDisabledError: cannot describe ACLs: "
                        "No Authorizer is configured.\n")
    r = mb(module_broker.bootstrap, "--add", "--allow-principal", "User:a", "--topic", "t")
    assert r.returncode == 1 and r.stdout.startswith("Adding ACLs for resource `")
    assert r.stdout.endswith("No Authorizer is configured.\n")


def test_usage_errors_exit_1_before_connecting() -> None:
    r = mb("127.0.0.1:1", "--add", "--topic", "t")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("You must specify one of: --allow-principal, --deny-principal")


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory) -> Iterator[BrokerProcess]:
    yield from authorizer_broker(str(tmp_path_factory.mktemp("acl-cli") / "data"))


def test_add_list_remove_round_trip(acl_broker) -> None:
    bs = acl_broker.bootstrap
    r = mb(bs, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders",
           "--group", "billing")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == (adding_text(topic("orders"), [ace("User:alice", O.READ)])
                        + adding_text(ResourcePattern(ResourceType.GROUP, "billing", LIT), [ace("User:alice", O.READ)]))
    r = mb(bs, "--add", "--allow-principal", "User:app", "--producer", "--topic", "ord", "--resource-pattern-type",
           "prefixed", "--idempotent")
    assert r.returncode == 0, r.stdout + r.stderr
    r = mb(bs, "--add", "--allow-principal", "User:app", "--consumer", "--topic", "orders", "--group", "billing")
    assert r.returncode == 0, r.stdout + r.stderr

    r = mb(bs, "--list", "--topic", "orders")
    assert r.returncode == 0 and r.stdout.startswith("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, "
                                                     "name=orders, patternType=LITERAL)`: \n \t")
    assert "User:alice, host=*, operation=READ" in r.stdout and "User:app, host=*, operation=DESCRIBE" in r.stdout
    assert "ord," not in r.stdout  # LITERAL by default
    r = mb(bs, "--list", "--topic", "orders", "--resource-pattern-type", "match")
    assert "name=ord, patternType=PREFIXED" in r.stdout and "operation=CREATE" in r.stdout
    every = mb(bs, "--list").stdout
    assert every.count("Current ACLs for resource") == 4  # orders, billing, ord*, the cluster
    assert "resourceType=CLUSTER, name=kafka-cluster" in every and "operation=IDEMPOTENT_WRITE" in every
    r = mb(bs, "--list", "--principal", "User:alice")
    assert r.stdout.startswith("ACLs for principal `User:alice`\n") and "User:app" not in r.stdout

    # remove: declined, then closed stdin, then --force
    r = mb(bs, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", stdin="n\n")
    assert r.returncode == 0 and r.stdout.startswith("Are you sure you want to remove ACLs: \n \t(principal=User:alice")
    assert "User:alice, host=*, operation=READ" in mb(bs, "--list", "--topic", "orders").stdout
    r = mb(bs, "--remove", "--topic", "orders")
    assert r.returncode == 1 and "give --force" in r.stderr
    r = mb(bs, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", stdin="y\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "User:alice" not in mb(bs, "--list", "--topic", "orders").stdout
    r = mb(bs, "--remove", "--force", "--allow-principal", "User:app", "--consumer", "--topic", "orders",
           "--group", "billing")
    assert (r.returncode, r.stdout) == (0, "")
    # --cluster names the cluster only with the (default) literal pattern type
    r = mb(bs, "--remove", "--force", "--topic", "ord", "--resource-pattern-type", "prefixed", "--cluster")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "operation=IDEMPOTENT_WRITE" in mb(bs, "--list", "--cluster").stdout
    assert mb(bs, "--remove", "--force", "--cluster").returncode == 0
    r = mb(bs, "--remove", "--force", "--group", "billing")
    assert r.returncode == 0
    assert mb(bs, "--list").stdout == ""
