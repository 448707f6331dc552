"""``minibroker configs``: describe and alter topic and broker configs (like ``kafka-configs.sh``).

::

    minibroker configs --describe --topic events            # the topic's overrides
    minibroker configs --describe --topic events --all      # every config, with its source
    minibroker configs --alter --topic events --add-config retention.ms=3600000,segment.bytes=1048576
    minibroker configs --alter --topic events --delete-config retention.ms
    minibroker configs --alter --broker 0 --add-config log.retention.ms=86400000   # dynamic broker config
    minibroker configs --alter --broker-defaults --add-config log.retention.ms=86400000  # cluster-wide

``--describe`` prints Kafka's layout: ``Dynamic configs for topic events are:`` (``All configs``
with ``--all``), then one ``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``
line per config. ``--alter`` sends IncrementalAlterConfigs: ``--add-config`` sets, and
``--delete-config`` removes (the config returns to its default); values containing commas
go in square brackets (``cleanup.policy=[compact,delete]``), as in Kafka's tool.
"""

from __future__ import annotations

import argparse
import sys

from . import add_common, client_options, fail, run_client

HELP = "describe or alter topic and broker configs on a running broker"

_DYNAMIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="show the entity's configs")
    action.add_argument("--alter", action="store_true", help="change the entity's configs")
    entity = parser.add_mutually_exclusive_group(required=True)
    entity.add_argument("--topic", metavar="NAME", help="the topic NAME")
    entity.add_argument("--broker", metavar="ID", help="the broker with node id ID (its dynamic configs)")
    entity.add_argument("--broker-defaults", action="store_true", help="the cluster-wide dynamic broker defaults")
    parser.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V]",
                        help="with --alter: set configs (repeatable; [a,b] for a value with commas)")
    parser.add_argument("--delete-config", action="append", default=[], metavar="K[,K]",
                        help="with --alter: remove configs, back to their defaults (repeatable)")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, not only those set")
    add_common(parser)


def parse_add_config(items: list[str]) -> dict[str, str]:
    """``k=v,k2=[a,b]`` -> {k: v, k2: "a,b"}; ValueError on a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        i = 0
        while i < len(item):
            eq = item.find("=", i)
            if eq < 0:
                raise ValueError(f"--add-config expects KEY=VALUE, got {item[i:]!r}")
            key = item[i:eq].strip()
            if not key:
                raise ValueError(f"--add-config expects KEY=VALUE, got {item[i:]!r}")
            j = eq + 1
            if item.startswith("[", j):
                close = item.find("]", j)
                if close < 0:
                    raise ValueError(f"unclosed [ in --add-config {item!r}")
                value, i = item[j + 1:close], close + 1
                if i < len(item) and item[i] != ",":
                    raise ValueError(f"expected ',' after ] in --add-config {item!r}")
            else:
                comma = item.find(",", j)
                comma = len(item) if comma < 0 else comma
                value, i = item[j:comma], comma
            out[key] = value
            i += 1
    return out


def run(args: argparse.Namespace) -> int:
    if args.describe and (args.add_config or args.delete_config):
        return fail("configs", "--add-config and --delete-config go with --alter")
    if args.alter and not (args.add_config or args.delete_config):
        return fail("configs", "--alter needs --add-config or --delete-config")
    if args.all and not args.describe:
        return fail("configs", "--all goes with --describe")
    try:
        added = parse_add_config(args.add_config)
    except ValueError as e:
        return fail("configs", str(e))
    deleted = [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]
    if args.topic is not None:
        rtype, rname, what = "topic", args.topic, f"topic {args.topic}"
    elif args.broker is not None:
        rtype, rname, what = "broker", args.broker, f"broker {args.broker}"
    else:
        rtype, rname, what = "broker", "", "the broker default"

    async def main() -> int:
        from client.admin import Admin, AlterConfigOp, AlterConfigOpType

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.alter:
                ops = [AlterConfigOp(k, v) for k, v in added.items()]
                ops += [AlterConfigOp(k, None, AlterConfigOpType.DELETE) for k in deleted]
                await admin.incremental_alter_configs(rtype, rname, ops)
                out.write(f"Completed updating config for {what}.\n")
            else:
                entries = await admin.describe_configs(rtype, rname, include_synonyms=True)
                shown = [e for e in entries.values() if args.all or e.source.name in _DYNAMIC_SOURCES]
                out.write(f"{'All' if args.all else 'Dynamic'} configs for {what} are:\n")
                for e in sorted(shown):
                    synonyms = ", ".join(f"{s.source.name}:{s.name}={s.value}" for s in e.synonyms)
                    out.write(f"  {e.name}={e.value} sensitive={str(e.is_sensitive).lower()}"
                              f" synonyms={{{synonyms}}}\n")
            out.flush()
        return 0

    return run_client("configs", args, main)
