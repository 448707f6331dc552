"""``minibroker acls``: add, list and remove ACLs with ``kafka-acls.sh``'s options and output,
so that scripts written for Kafka run unchanged::

    minibroker acls --bootstrap-server H:P --add --allow-principal User:alice --operation Read \\
                    --topic orders --group billing
    minibroker acls --add --allow-principal User:app --producer --topic orders --transactional-id tx --idempotent
    minibroker acls --add --allow-principal User:app --consumer --topic orders --group billing
    minibroker acls --list [--topic orders] [--principal User:alice] [--resource-pattern-type match]
    minibroker acls --remove --force --allow-principal User:alice --operation Read --topic orders

The semantics are Kafka's AclCommand's (3.8 and later, which no longer lists the ACLs after an
add or remove):

- Resources: ``--topic``, ``--group``, ``--transactional-id``, ``--delegation-token``,
  ``--user-principal`` (each repeatable) and ``--cluster``, named with
  ``--resource-pattern-type`` (literal, prefixed, any, match; default literal, also for
  ``--list`` and ``--remove``). ``--add`` takes only literal or prefixed. ``--cluster`` (and
  ``--idempotent``) add the cluster only when the pattern type is literal.
- Entries: every ``--allow-principal`` (``--deny-principal``) × ``--operation`` (repeatable,
  default All; Kafka's names, case-insensitive) × ``--allow-host`` (``--deny-host``; default
  ``*``). Each resource gets them all; an operation its type does not support is refused
  before anything is sent.
- ``--producer``: Write, Describe, Create on the topics, Write and Describe on the
  transactional ids, IdempotentWrite on the cluster with ``--idempotent``; ``--consumer``:
  Read, Describe on the topics and Read on the groups. They replace ``--operation`` and take no
  deny options.
- ``--list``: the ACLs of each resource given (a filter with any principal), or every ACL;
  with ``--principal`` (repeatable) only that principal's, under ``ACLs for principal `P```.
- ``--remove``: with principals, exactly the entries built as for ``--add`` from each
  resource filter; without, every ACL of the resource filter. Each filter is confirmed first
  ("Are you sure ... (y/n)", a line read from stdin whether or not it is a terminal, as
  kafka-acls.sh does; anything but y/Y skips that filter); ``--force`` does not ask. With stdin
  closed and no ``--force`` the command fails (exit 1) before deleting anything more.

Output is kafka-acls.sh's, byte for byte (the Java ``toString`` of patterns and entries, and
its stray spaces)::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \\n
     \\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \\n
    \\n

``Current ACLs for resource `...`: `` has the same shape. Kafka keeps resources and entries in
Scala sets, whose order is the insertion order up to four items and a hash order beyond; here
it is always the order the options were given in (for ``--list``, the broker's). A broker error
prints ``Error while executing ACL command: <error>`` on stdout and exits 1, as kafka-acls.sh
does; a bad combination of options prints the reason on stderr and exits 1 (argparse's own
errors exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from . import add_common, client_options, run_client

if TYPE_CHECKING:
    from client.acl import AccessControlEntry, AclOperation, PatternType, ResourcePattern, ResourcePatternFilter

HELP = "add, list and remove ACLs (kafka-acls.sh's options and output)"

NEWLINE = "\n"


class UsageError(ValueError):
    """A combination of options AclCommand refuses (printUsageAndExit: exit status 1)."""


def _pattern_type(text: str) -> PatternType:
    from client.acl import PatternType

    for member in PatternType:
        if member.name.lower() == text.strip().lower() and member is not PatternType.UNKNOWN:
            return member
    raise argparse.ArgumentTypeError(f"Unknown resource-pattern-type: {text}"
                                     " (ANY|MATCH|LITERAL|PREFIXED)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    action = parser.add_argument_group("actions (exactly one)")
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs (of the resources given, or all)")
    res = parser.add_argument_group("resources")
    res.add_argument("--topic", action="append", metavar="TOPIC", help="a topic ('*': every topic); repeatable")
    res.add_argument("--group", action="append", metavar="GROUP", help="a consumer group ('*': every group)")
    res.add_argument("--cluster", action="store_true", help="the cluster")
    res.add_argument("--transactional-id", action="append", metavar="ID", help="a transactional id ('*': every one)")
    res.add_argument("--delegation-token", action="append", metavar="TOKEN", help="a delegation token")
    res.add_argument("--user-principal", action="append", metavar="USER",
                     help="a user principal as the resource (CreateTokens, DescribeTokens)")
    res.add_argument("--resource-pattern-type", type=_pattern_type, default=None, metavar="TYPE",
                     help="literal or prefixed (--add); also any or match (--list, --remove); default literal")
    ent = parser.add_argument_group("entries")
    ent.add_argument("--allow-principal", action="append", metavar="TYPE:NAME",
                     help="principal allowed (User:alice; User:* for everyone); repeatable")
    ent.add_argument("--deny-principal", action="append", metavar="TYPE:NAME", help="principal denied (a Deny wins)")
    ent.add_argument("--allow-host", action="append", metavar="HOST", help="host of the allowed principals (default *)")
    ent.add_argument("--deny-host", action="append", metavar="HOST", help="host of the denied principals (default *)")
    ent.add_argument("--operation", action="append", metavar="OP",
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                          "AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens or All (default); repeatable")
    ent.add_argument("--principal", action="append", nargs="?", metavar="TYPE:NAME",
                     help="with --list: only this principal's ACLs; repeatable")
    conv = parser.add_argument_group("conveniences")
    conv.add_argument("--producer", action="store_true", help="Write, Describe, Create on --topic; Write, Describe "
                                                              "on --transactional-id")
    conv.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster")
    conv.add_argument("--consumer", action="store_true", help="Read, Describe on --topic; Read on --group")
    parser.add_argument("--force", action="store_true", help="do not ask before removing")


# ------------------------------------------------------------------ options -> bindings


def check_args(args: argparse.Namespace) -> None:
    """AclCommandOptions.checkArgs: the combinations kafka-acls.sh refuses (UsageError)."""
    if sum((args.add, args.remove, args.list)) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    given = {name: bool(getattr(args, name.replace("-", "_"))) for name in (
        "list", "producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal", "operation",
        "topic", "group", "cluster", "transactional-id", "idempotent")}

    def invalid(used: str, *others: str) -> None:
        if given[used]:
            for other in others:
                if given[other]:
                    raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')

    invalid("list", "producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal")
    invalid("producer", "operation", "deny-principal", "deny-host")
    invalid("consumer", "operation", "deny-principal", "deny-host")
    if args.principal and not args.list:
        raise UsageError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise UsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group
                          or (not args.producer and (args.cluster or args.transactional_id))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")


def _pattern(args: argparse.Namespace) -> PatternType:
    from client.acl import PatternType

    return args.resource_pattern_type or PatternType.LITERAL


def resource_filters(args: argparse.Namespace, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """The resources named, as filters with ``--resource-pattern-type`` (AclCommand's
    getResourceFilter; its order)."""
    from client.acl import CLUSTER_NAME, PatternType, ResourcePatternFilter, ResourceType

    pt = _pattern(args)
    out: dict[ResourcePatternFilter, None] = {}
    for topic in args.topic or ():
        out[ResourcePatternFilter(ResourceType.TOPIC, topic.strip(), pt)] = None
    if pt == PatternType.LITERAL and (args.cluster or args.idempotent):
        out[ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)] = None
    for group in args.group or ():
        out[ResourcePatternFilter(ResourceType.GROUP, group.strip(), pt)] = None
    for tid in args.transactional_id or ():  # not trimmed: kafka-acls.sh does not trim these
        out[ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, tid, pt)] = None
    for token in args.delegation_token or ():
        out[ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, token.strip(), pt)] = None
    for user in args.user_principal or ():
        out[ResourcePatternFilter(ResourceType.USER, user.strip(), pt)] = None
    if not out and die_if_none:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                         "--delegation-token <Delegation Token ID>")
    return list(out)


def _principals(values: list[str] | None) -> list[str]:
    from client.acl import parse_principal

    return list(dict.fromkeys(parse_principal(v.strip()) for v in values or () if v is not None))


def entries(args: argparse.Namespace, operations: list[AclOperation]) -> list[AccessControlEntry]:
    """Allowed principals × operations × hosts, then the denied ones (AclCommand's getAcl)."""
    from client.acl import WILDCARD_HOST, AccessControlEntry, AclPermissionType

    out: dict[AccessControlEntry, None] = {}
    for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
            (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        names = _principals(principals)
        host_list = list(dict.fromkeys(h.strip() for h in hosts)) if hosts else ([WILDCARD_HOST] if names else [])
        for principal in names:
            for op in operations:
                for host in host_list:
                    out[AccessControlEntry(principal, host, op, permission)] = None
    return list(out)


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    from client.acl import AclOperation

    return list(dict.fromkeys(AclOperation.parse(o) for o in args.operation or ["All"]))


def filter_to_acls(args: argparse.Namespace) -> dict[ResourcePatternFilter, list[AccessControlEntry]]:
    """Each resource filter with the entries to add or remove (AclCommand's
    getResourceFilterToAcls, with the --producer / --consumer expansions), validated: an
    operation a resource type does not support is a UsageError."""
    from client.acl import (
        CLUSTER_NAME,
        SUPPORTED_OPERATIONS,
        AclOperation,
        PatternType,
        ResourcePatternFilter,
        ResourceType,
        operation_name,
    )

    Op = AclOperation
    out: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        acls = entries(args, _operations(args))
        out.update((f, acls) for f in resource_filters(args))
    if args.producer:
        filters = resource_filters(args)
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                out[f] = entries(args, [Op.WRITE, Op.DESCRIBE, Op.CREATE])
        for f in filters:
            if f.resource_type == ResourceType.TRANSACTIONAL_ID:
                out[f] = entries(args, [Op.WRITE, Op.DESCRIBE])
        if args.idempotent:
            cluster = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            out[cluster] = entries(args, [Op.IDEMPOTENT_WRITE])
    if args.consumer:
        filters = resource_filters(args)
        consumer: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                consumer[f] = entries(args, [Op.READ, Op.DESCRIBE])
        for f in filters:
            if f.resource_type == ResourceType.GROUP:
                consumer[f] = entries(args, [Op.READ])
        for f, acls in consumer.items():  # the consumer's entries first, then the producer's
            out[f] = list(dict.fromkeys(acls + out.get(f, [])))
    for f, acls in out.items():
        valid = (*SUPPORTED_OPERATIONS.get(f.resource_type, ()), Op.ALL)
        if any(e.operation not in valid for e in acls):
            raise UsageError(f"ResourceType {f.resource_type} only supports operations "
                             + ", ".join(operation_name(o) for o in valid))
    return out


def resource_to_acls(args: argparse.Namespace) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """What ``--add`` creates (AclCommand's getResourceToAcls)."""
    from client.acl import ResourcePattern

    pt = _pattern(args)
    if not pt.is_specific:
        raise UsageError(f"A '--resource-pattern-type' value of '{pt}' is not valid when adding acls.")
    out = {ResourcePattern(f.resource_type, f.name or "", f.pattern_type): acls
           for f, acls in filter_to_acls(args).items()}
    if any(not acls for acls in out.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return out


# ------------------------------------------------------------------ output


def _entries_text(acls: list[Any]) -> str:
    return NEWLINE.join(f"\t{a}" for a in acls)


def adding_text(pattern: ResourcePattern, acls: list[AccessControlEntry]) -> str:
    """What kafka-acls.sh prints before it adds one resource's ACLs (println adds the last \\n)."""
    return f"Adding ACLs for resource `{pattern}`: {NEWLINE} {_entries_text(acls)} {NEWLINE}\n"


def current_text(pattern: ResourcePattern, acls: list[AccessControlEntry]) -> str:
    return f"Current ACLs for resource `{pattern}`: {NEWLINE} {_entries_text(acls)} {NEWLINE}\n"


def remove_prompt(resource_filter: ResourcePatternFilter, acls: list[AccessControlEntry]) -> str:
    if not acls:
        return f"Are you sure you want to delete all ACLs for resource filter `{resource_filter}`? (y/n)\n"
    return (f"Are you sure you want to remove ACLs: {NEWLINE} {_entries_text(acls)} {NEWLINE}"
            f" from resource filter `{resource_filter}`? (y/n)\n")


def list_text(bindings: list[Any], principals: list[str]) -> str:
    """``--list``'s output from the bindings the broker described: per resource pattern its
    entries (first-seen order, without repeats), for every principal or per ``--principal``."""
    by_pattern: dict[ResourcePattern, dict[AccessControlEntry, None]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, {})[b.entry] = None
    if not principals:
        return "".join(current_text(p, list(acls)) for p, acls in by_pattern.items())
    out = []
    for principal in principals:
        out.append(f"ACLs for principal `{principal}`\n")
        for p, acls in by_pattern.items():
            mine = [e for e in acls if e.principal == principal]
            if mine:
                out.append(current_text(p, mine))
    return "".join(out)


# ------------------------------------------------------------------ run


class _Declined(Exception):
    """stdin closed before the confirmation's answer."""


def _confirm(args: argparse.Namespace, prompt: str) -> bool:
    if args.force:
        return True
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise _Declined
    return line.strip().lower() == "y"


def run(args: argparse.Namespace) -> int:
    prog = "acls"
    try:
        check_args(args)
        if args.add:
            to_add = resource_to_acls(args)
        elif args.remove:
            to_remove = filter_to_acls(args)
        else:
            filters = resource_filters(args, die_if_none=False)
            principals = _principals(args.principal)
    except (UsageError, ValueError) as e:
        sys.stderr.write(f"{e}\nRun `minibroker acls --help` for the options.\n")
        return 1

    async def main() -> int:
        from client.acl import AccessControlEntryFilter, AclBinding, AclBindingFilter
        from client.admin import Admin
        from client.errors import KafkaConnectionError, KafkaError

        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            try:
                if args.add:
                    for pattern, acls in to_add.items():
                        sys.stdout.write(adding_text(pattern, acls))
                        sys.stdout.flush()
                        await admin.create_acls([AclBinding(pattern, e) for e in acls])
                elif args.remove:
                    for f, acls in to_remove.items():
                        if not _confirm(args, remove_prompt(f, acls)):
                            continue
                        if acls:
                            await admin.delete_acls([AclBindingFilter(f, e.to_filter()) for e in acls])
                        else:
                            await admin.delete_acls([AclBindingFilter(f, AccessControlEntryFilter())])
                else:
                    bindings = []
                    if not filters:
                        bindings = await admin.describe_acls()
                    for f in filters:
                        bindings += await admin.describe_acls(AclBindingFilter(f))
                    sys.stdout.write(list_text(bindings, principals))
            except KafkaConnectionError:
                raise
            except KafkaError as e:
                sys.stdout.write(f"Error while executing ACL command: {type(e).__name__}: {e}\n")
                sys.stdout.flush()
                return 1
            except _Declined:
                sys.stdout.flush()
                sys.stderr.write(f"minibroker {prog}: error: no answer to the confirmation (stdin is closed);"
                                 " give --force to remove without asking\n")
                return 1
        sys.stdout.flush()
        return 0

    return run_client(prog, args, main)
