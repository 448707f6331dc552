"""``minibroker topics``: create, list, describe, alter and delete topics (like ``kafka-topics.sh``).

::

    minibroker topics --create events --partitions 3 --config retention.ms=3600000
    minibroker topics --alter events --partitions 6       # add partitions (never fewer)
    minibroker topics --list
    minibroker topics --describe [events]
    minibroker topics --delete events

``--describe`` prints Kafka's layout: one line per topic (partition count, replication factor,
the configs set on the topic), then one line per partition (leader, replicas, in-sync replicas).
"""

from __future__ import annotations

import argparse
import sys

from . import add_common, client_options, fail, run_client

HELP = "create, list, describe, alter or delete topics on a running broker"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", metavar="NAME", help="create topic NAME")
    action.add_argument("--list", action="store_true", help="list topic names, one per line")
    action.add_argument("--describe", metavar="NAME", nargs="?", const="", default=None,
                        help="describe topic NAME (every topic without a name)")
    action.add_argument("--delete", metavar="NAME", help="delete topic NAME and its data")
    action.add_argument("--alter", metavar="NAME", help="add partitions to topic NAME (with --partitions)")
    parser.add_argument("--partitions", type=int, default=-1, metavar="N",
                        help="with --create: number of partitions (default: the broker's num.partitions);"
                             " with --alter: the new partition count")
    parser.add_argument("--replication-factor", type=int, default=-1, metavar="N",
                        help="with --create: replicas per partition (a single broker has 1; default: broker's)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="with --create: a topic config, e.g. retention.ms=3600000 (repeatable)")
    parser.add_argument("--if-not-exists", action="store_true", help="with --create: no error if it exists")
    parser.add_argument("--if-exists", action="store_true", help="with --delete/--describe: no error if it is missing")
    add_common(parser)


def _configs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--config expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def run(args: argparse.Namespace) -> int:
    if args.alter is not None and (args.partitions < 1 or args.config or args.replication_factor != -1):
        return fail("topics", "--alter takes --partitions N (the new count); change configs with `minibroker configs`")
    if args.create is None and args.alter is None and (args.config or args.partitions != -1
                                                       or args.replication_factor != -1):
        return fail("topics", "--partitions, --replication-factor and --config go with --create")
    try:
        configs = _configs(args.config)
    except ValueError as e:
        return fail("topics", str(e))
    if args.create is not None and (args.partitions == 0 or args.partitions < -1):
        return fail("topics", f"--partitions must be at least 1, not {args.partitions}")

    async def main() -> int:
        from client.admin import Admin, ConfigSource, NewTopic
        from client.errors import ERRORS
        from client.protocol.api import ErrorCode

        exists_error = ERRORS[ErrorCode.TOPIC_ALREADY_EXISTS]
        unknown_error = ERRORS[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.create is not None:
                try:
                    await admin.create_topics([NewTopic(args.create, args.partitions, args.replication_factor,
                                                        configs or None)])
                except exists_error:
                    if args.if_not_exists:
                        return 0
                    return fail("topics", f"topic {args.create!r} already exists")
                out.write(f"Created topic {args.create}.\n")
            elif args.alter is not None:
                try:
                    await admin.create_partitions({args.alter: args.partitions})
                except unknown_error:
                    return fail("topics", f"topic {args.alter!r} does not exist")
                out.write(f"Topic {args.alter} now has {args.partitions} partitions.\n")
            elif args.list:
                for name in await admin.list_topics():
                    out.write(name + "\n")
            elif args.delete is not None:
                try:
                    await admin.delete_topics([args.delete])
                except unknown_error:
                    if args.if_exists:
                        return 0
                    return fail("topics", f"topic {args.delete!r} does not exist")
                out.write(f"Deleted topic {args.delete}.\n")
            else:
                names = [args.describe] if args.describe else None
                try:
                    topics = await admin.describe_topics(names, include_configs=False)
                except unknown_error:
                    if args.if_exists:
                        return 0
                    return fail("topics", f"topic {args.describe!r} does not exist")
                for name in sorted(topics):
                    desc = topics[name]
                    entries = await admin.describe_configs("topic", name)
                    overrides = ",".join(f"{e.name}={e.value}" for e in sorted(entries.values())
                                         if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG)
                    rf = max((len(p.replicas) for p in desc.partitions), default=0)
                    out.write(f"Topic: {name}\tPartitionCount: {len(desc.partitions)}\tReplicationFactor: {rf}"
                              f"\tConfigs: {overrides}\n")
                    for p in desc.partitions:
                        out.write(f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {p.leader}"
                                  f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}\n")
            out.flush()
        return 0

    return run_client("topics", args, main)
