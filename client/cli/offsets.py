"""``minibroker offsets TOPIC``: the offsets of a topic's partitions (ListOffsets).

Without ``--time``: a table of each partition's log start offset, log end offset (the next
offset to be written) and the number of offsets between them. With ``--time earliest|latest|MS``
Kafka's ``GetOffsetShell`` layout, ``topic:partition:offset`` per line; for MS the offset is the
first whose record timestamp is >= MS, or -1 when no record is that recent.
"""

from __future__ import annotations

import argparse
import sys

from . import add_common, client_options, fail, run_client

HELP = "show the start and end offsets of a topic's partitions"


def _time(text: str) -> int:
    named = {"earliest": -2, "latest": -1, "-2": -2, "-1": -1}
    if text in named:
        return named[text]
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected earliest, latest or a timestamp in ms, not {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"a timestamp must be >= 0, not {v}")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--partition", "-p", type=int, metavar="P", help="only partition P")
    parser.add_argument("--time", type=_time, metavar="earliest|latest|MS",
                        help="print topic:partition:offset for this point instead of the table")
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    async def main() -> int:
        from client.admin import Admin
        from client.structs import OffsetSpec, TopicPartition

        out = sys.stdout
        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            desc = (await admin.describe_topics([args.topic], include_configs=False))[args.topic]
            partitions = [p.partition for p in desc.partitions]
            if args.partition is not None:
                if args.partition not in partitions:
                    return fail("offsets", f"topic {args.topic!r} has no partition {args.partition}"
                                           f" (it has {len(partitions)})")
                partitions = [args.partition]
            tps = [TopicPartition(args.topic, p) for p in partitions]
            if args.time is not None:
                got = await admin.list_offsets({tp: args.time for tp in tps})
                for tp in tps:
                    out.write(f"{tp.topic}:{tp.partition}:{got[tp].offset}\n")
            else:
                starts = await admin.list_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
                ends = await admin.list_offsets({tp: OffsetSpec.LATEST for tp in tps})
                rows = [("TOPIC", "PARTITION", "START", "END", "OFFSETS")]
                for tp in tps:
                    s, e = starts[tp].offset, ends[tp].offset
                    rows.append((tp.topic, str(tp.partition), str(s), str(e), str(e - s)))
                widths = [max(len(r[i]) for r in rows) for i in range(5)]
                for r in rows:
                    out.write("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                        for i, (c, w) in enumerate(zip(r, widths))).rstrip() + "\n")
            out.flush()
        return 0

    return run_client("offsets", args, main)
