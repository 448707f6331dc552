"""``minibroker groups``: consumer groups, like Kafka's ``kafka-consumer-groups.sh``.

::

    minibroker groups list [--state]            group ids (with --state: GROUP STATE)
    minibroker groups describe GROUP [--members | --state] [--verbose]
    minibroker groups reset-offsets GROUP --topic T[:P,P...] (--to-earliest | --to-latest |
                                    --to-offset N | --to-datetime ISO) [--execute]
    minibroker groups delete GROUP [GROUP ...]

``describe`` prints, per partition that has a committed offset or an owner, Kafka's columns
``GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID`` ("-"
where there is none). ``reset-offsets`` prints the new offsets (``GROUP TOPIC PARTITION
NEW-OFFSET``) and changes nothing without ``--execute``; it needs the group to have no active
members. ``--to-datetime`` takes ISO 8601 (``2024-05-01T12:00:00``, local time unless an offset
such as ``+00:00`` or ``Z`` is given). For a KIP-848 group (``group.protocol=consumer``),
``--members --verbose`` adds each member's ``CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH
TARGET-ASSIGNMENT`` and ``--state --verbose`` the ``GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH``, as
``kafka-consumer-groups.sh`` prints them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from client.structs import TopicPartition

from . import add_common, client_options, fail, run_client

HELP = "list, describe, reset the offsets of, or delete consumer groups"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    p = sub.add_parser("list", help="list the groups")
    p.add_argument("--state", action="store_true", help="print each group's state too")
    add_common(p)
    p = sub.add_parser("describe", help="a group's partitions, offsets, lag and members")
    p.add_argument("group", metavar="GROUP")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one line per member instead")
    view.add_argument("--state", action="store_true", help="the group's state, assignor and member count")
    p.add_argument("--verbose", action="store_true",
                   help="with --members or --state of a KIP-848 group: epochs and target assignments")
    add_common(p)
    p = sub.add_parser("reset-offsets", help="move a group's committed offsets (the group must be inactive)")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--topic", required=True, action="append", metavar="TOPIC[:P,P...]",
                   help="topic (all partitions, or those listed); repeatable")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the log start offset")
    to.add_argument("--to-latest", action="store_true", help="the log end offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N (kept within the log)")
    to.add_argument("--to-datetime", metavar="ISO", help="the first record at or after this time")
    p.add_argument("--execute", action="store_true", help="commit the new offsets (default: only print them)")
    add_common(p)
    p = sub.add_parser("delete", help="delete groups and their committed offsets (groups without members)")
    p.add_argument("group", metavar="GROUP", nargs="+")
    add_common(p)
    parser.epilog = "Run `minibroker groups <action> --help` for an action's options."


def _tps(tps: Sequence[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in tps) or "-"


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join(" ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in rows)


def _node(node: tuple[int, str, int] | None) -> str:
    return "-" if node is None else f"{node[1]}:{node[2]} ({node[0]})"


def _timestamp_ms(text: str) -> int:
    from datetime import datetime

    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--to-datetime: not an ISO 8601 date-time: {text!r}") from None
    return int(dt.timestamp() * 1000)


def run(args: argparse.Namespace) -> int:
    prog = f"groups {args.action}"

    async def main() -> int:
        from client.admin import Admin

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.action == "list":
                groups = await admin.list_groups()
                if args.state:
                    out.write(_table([("GROUP", "STATE")] + [(g.group_id, g.state) for g in groups]) if groups else "")
                else:
                    out.write("".join(g.group_id + "\n" for g in groups))
            elif args.action == "describe":
                desc = (await admin.describe_groups([args.group]))[args.group]
                if desc.state == "Dead":
                    return fail(prog, f"consumer group {args.group!r} does not exist")
                verbose = args.verbose and desc.group_type == "consumer"
                if args.state:
                    head: tuple[str, ...] = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE")
                    row: tuple[str, ...] = (args.group, _node(desc.coordinator), desc.protocol or "-", desc.state)
                    if verbose:
                        head += ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
                        row += (str(desc.group_epoch), str(desc.assignment_epoch))
                    out.write(_table([head + ("#MEMBERS",), row + (str(len(desc.members)),)]))
                elif args.members:
                    rows: list[tuple[str, ...]] = [("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                                                    "#PARTITIONS") + (("CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
                                                                       "TARGET-EPOCH", "TARGET-ASSIGNMENT")
                                                                      if verbose else ("ASSIGNMENT",))]
                    for m in desc.members:
                        row = (args.group, m.member_id, m.group_instance_id or "-", m.client_host, m.client_id,
                               str(len(m.assignment)))
                        if verbose:
                            row += (str(m.member_epoch), _tps(m.assignment), str(desc.assignment_epoch),
                                    _tps(m.target_assignment or []))
                        else:
                            row += (_tps(m.assignment),)
                        rows.append(row)
                    if not desc.members:
                        out.write(f"Consumer group '{args.group}' has no active members.\n")
                    else:
                        out.write(_table(rows))
                else:
                    offsets = await admin.list_group_offsets(args.group)
                    owner = {tp: m for m in desc.members for tp in m.assignment}
                    ends = {}
                    unowned = [tp for tp in owner if tp not in offsets]
                    if unowned:
                        from client.structs import OffsetSpec
                        ends = {tp: v.offset for tp, v in
                                (await admin.list_offsets({tp: OffsetSpec.LATEST for tp in unowned})).items()}
                    rows = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                             "HOST", "CLIENT-ID")]
                    for tp in sorted(set(offsets) | set(owner), key=lambda x: (x.topic, x.partition)):
                        o = offsets.get(TopicPartition(*tp))
                        member = owner.get(tp)
                        end = o.log_end_offset if o is not None else ends.get(tp)
                        rows.append((args.group, tp.topic, str(tp.partition), "-" if o is None else str(o.committed),
                                     "-" if end is None else str(end),
                                     "-" if o is None or o.lag is None else str(o.lag),
                                     member.member_id if member else "-", member.client_host if member else "-",
                                     member.client_id if member else "-"))
                    if not desc.members:
                        out.write(f"\nConsumer group '{args.group}' has no active members.\n\n")
                    out.write(_table(rows))
            elif args.action == "reset-offsets":
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
                to = ({"to_earliest": True} if args.to_earliest else {"to_latest": True} if args.to_latest else
                      {"to_offset": args.to_offset} if args.to_offset is not None else
                      {"to_timestamp_ms": _timestamp_ms(args.to_datetime)})
                new = await admin.reset_group_offsets(args.group, tps, execute=args.execute, **to)
                if not args.execute:
                    sys.stderr.write("WARN: No action will be performed as the --execute option is missing."
                                     " These are the offsets the group would get.\n")
                out.write(_table([("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")] +
                                 [(args.group, tp.topic, str(tp.partition), str(o)) for tp, o in new.items()]))
            else:
                await admin.delete_groups(args.group)
                names = ", ".join(f"'{g}'" for g in args.group)
                out.write(f"Deletion of requested consumer groups ({names}) was successful.\n")
            out.flush()
        return 0

    try:
        return run_client(prog, args, main)
    except ValueError as e:
        return fail(prog, str(e))
