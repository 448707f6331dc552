"""``minibroker share-groups``: share groups (KIP-932), like Kafka's ``kafka-share-groups.sh``
(its flags, its columns).

::

    minibroker share-groups --list [--state]
    minibroker share-groups --describe --group G [--offsets | --members | --state]
    minibroker share-groups --reset-offsets --group G --topic T[:P,P...] (--to-earliest |
                            --to-latest | --to-offset N) [--dry-run | --execute]
    minibroker share-groups --delete-offsets --group G --topic T [--topic T ...]
    minibroker share-groups --delete --group G [--group G ...]

``--describe`` prints by default (``--offsets``) ``GROUP TOPIC PARTITION START-OFFSET LAG``, one
line per share-partition with state (the start offset is the first offset not yet done with;
lag, Kafka 4.2's, counts the records from it to the high watermark not done with, "-" where
unknown); ``--members`` ``GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT``;
``--state`` ``GROUP COORDINATOR (ID) STATE #MEMBERS``. ``--reset-offsets`` prints ``GROUP TOPIC
PARTITION NEW-OFFSET`` and changes nothing unless ``--execute`` is given; it, ``--delete-offsets``
and ``--delete`` need the group to have no members.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from client.structs import TopicPartition

from . import add_common, client_options, fail, run_client

HELP = "list, describe, reset the offsets of, or delete share groups (KIP-932)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="list the share groups")
    action.add_argument("--describe", action="store_true", help="describe a share group (see --offsets, "
                                                                 "--members, --state)")
    action.add_argument("--reset-offsets", action="store_true",
                        help="set the start offsets of a share group without members")
    action.add_argument("--delete-offsets", action="store_true",
                        help="delete a share group's state of whole topics (no members)")
    action.add_argument("--delete", action="store_true", help="delete share groups without members")
    parser.add_argument("--group", action="append", metavar="GROUP", help="the share group (repeatable with --delete)")
    parser.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                        help="topic (all partitions, or those listed); repeatable")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="with --describe: start offsets and lag (default)")
    view.add_argument("--members", action="store_true", help="with --describe: the members and assignments")
    view.add_argument("--state", action="store_true", help="with --describe or --list: the group's state")
    to = parser.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="with --reset-offsets: the log start offset")
    to.add_argument("--to-latest", action="store_true", help="with --reset-offsets: the log end offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="with --reset-offsets: offset N (kept within the log)")
    run = parser.add_mutually_exclusive_group()
    run.add_argument("--execute", action="store_true", help="with --reset-offsets: set the offsets")
    run.add_argument("--dry-run", action="store_true", help="with --reset-offsets: only print them (the default)")
    add_common(parser)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(" ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in rows)


def _one_group(args: argparse.Namespace) -> str:
    if not args.group or len(args.group) != 1:
        raise ValueError("give one --group")
    return str(args.group[0])


def run(args: argparse.Namespace) -> int:
    action = next(a for a in ("list", "describe", "reset_offsets", "delete_offsets", "delete") if getattr(args, a))
    prog = "share-groups --" + action.replace("_", "-")

    async def main() -> int:
        from client.admin import Admin

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if action == "list":
                groups = await admin.list_share_groups()
                if args.state:
                    out.write(_table([("GROUP", "STATE")] + [(g.group_id, g.state) for g in groups]) if groups else "")
                else:
                    out.write("".join(g.group_id + "\n" for g in groups))
            elif action == "describe":
                group = _one_group(args)
                desc = (await admin.describe_share_groups([group]))[group]
                if desc.state == "Dead":
                    # a group known by its stored state alone (no members since a restart)
                    try:
                        offsets = await admin.list_share_group_offsets(group)
                    except Exception:  # noqa: BLE001 - GroupIdNotFound: it does not exist
                        return fail(prog, f"share group {group!r} does not exist")
                else:
                    offsets = await admin.list_share_group_offsets(group) if not (args.members or args.state) else {}
                if args.state:
                    node = desc.coordinator
                    coordinator = "-" if node is None else f"{node[1]}:{node[2]} ({node[0]})"
                    out.write(_table([("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"),
                                      (group, coordinator, "Empty" if desc.state == "Dead" else desc.state,
                                       str(len(desc.members)))]))
                elif args.members:
                    if not desc.members:
                        out.write(f"Share group '{group}' has no active members.\n")
                    else:
                        rows: list[tuple[str, ...]] = [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                                         "ASSIGNMENT")]
                        for m in desc.members:
                            rows.append((group, m.member_id, m.client_host, m.client_id, str(len(m.assignment)),
                                         ",".join(f"{tp.topic}:{tp.partition}" for tp in m.assignment) or "-"))
                        out.write(_table(rows))
                else:
                    table: list[tuple[str, ...]] = [("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")]
                    for tp, o in offsets.items():
                        table.append((group, tp.topic, str(tp.partition),
                                     "-" if o.start_offset < 0 else str(o.start_offset),
                                     "-" if o.lag is None else str(o.lag)))
                    if not desc.members:
                        out.write(f"\nShare group '{group}' has no active members.\n\n")
                    out.write(_table(table))
            elif action == "reset_offsets":
                group = _one_group(args)
                if not args.topic:
                    raise ValueError("give --topic")
                to = ({"to_earliest": True} if args.to_earliest else {"to_latest": True} if args.to_latest else
                      {"to_offset": args.to_offset} if args.to_offset is not None else None)
                if to is None:
                    raise ValueError("give one of --to-earliest, --to-latest, --to-offset")
                tps = []
                for spec in args.topic:
                    topic, _, parts = spec.partition(":")
                    have = sorted(p.partition for p in
                                  (await admin.describe_topics([topic], include_configs=False))[topic].partitions)
                    wanted = have if not parts else [int(p) for p in parts.split(",") if p.strip()]
                    missing = [p for p in wanted if p not in have]
                    if missing:
                        return fail(prog, f"topic {topic!r} has no partition {missing[0]}")
                    tps += [TopicPartition(topic, p) for p in wanted]
                new = await admin.reset_share_group_offsets(group, tps, execute=args.execute, **to)
                if not args.execute and not args.dry_run:
                    sys.stderr.write("WARN: No action will be performed as the --execute option is missing."
                                     " These are the offsets the group would get.\n")
                out.write(_table([("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")] +
                                 [(group, tp.topic, str(tp.partition), str(o)) for tp, o in new.items()]))
            elif action == "delete_offsets":
                group = _one_group(args)
                if not args.topic:
                    raise ValueError("give --topic")
                topics = [t.partition(":")[0] for t in args.topic]
                await admin.delete_share_group_offsets(group, topics)
                out.write(_table([("TOPIC", "STATUS")] + [(t, "Successful") for t in topics]))
            else:
                if not args.group:
                    raise ValueError("give --group")
                await admin.delete_groups(args.group)
                names = ", ".join(f"'{g}'" for g in args.group)
                out.write(f"Deletion of requested share groups ({names}) was successful.\n")
            out.flush()
        return 0

    try:
        return run_client(prog, args, main)
    except ValueError as e:
        return fail(prog, str(e))
