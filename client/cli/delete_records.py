"""``minibroker delete-records``: delete the records of partitions below an offset (like
``kafka-delete-records.sh``): the partitions' log start offsets move there.

::

    minibroker delete-records events --offset 1000            # every partition of events
    minibroker delete-records events --partition 0 --offset -1   # -1: everything (the high watermark)
    minibroker delete-records --offset-json-file offsets.json

The JSON file is Kafka's: ``{"partitions": [{"topic": "events", "partition": 0, "offset": 1000}],
"version": 1}``. Prints ``partition: events-0  low_watermark: 1000`` per partition.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import add_common, client_options, fail, run_client

HELP = "delete the records of partitions below an offset"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", nargs="?", help="the topic (every partition unless --partition)")
    parser.add_argument("--partition", "-p", type=int, action="append", metavar="P",
                        help="only this partition (repeatable)")
    parser.add_argument("--offset", type=int, metavar="N",
                        help="delete every record below offset N (-1: all records, up to the high watermark)")
    parser.add_argument("--offset-json-file", metavar="FILE",
                        help="Kafka's JSON: {\"partitions\": [{\"topic\": T, \"partition\": P, \"offset\": N}, ...]}")
    add_common(parser)


def _from_json(path: str) -> dict[tuple[str, int], int]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for p in data["partitions"]:
        out[(str(p["topic"]), int(p["partition"]))] = int(p["offset"])
    return out


def run(args: argparse.Namespace) -> int:
    if args.offset_json_file is not None:
        if args.topic is not None or args.offset is not None or args.partition:
            return fail("delete-records", "--offset-json-file goes without TOPIC, --partition and --offset")
        try:
            wanted: dict[tuple[str, int], int] | None = _from_json(args.offset_json_file)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return fail("delete-records", f"cannot read {args.offset_json_file}: {e}")
    elif args.topic is None or args.offset is None:
        return fail("delete-records", "give TOPIC and --offset, or --offset-json-file")
    else:
        wanted = None

    async def main() -> int:
        from client.admin import Admin

        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            targets = wanted
            if targets is None:
                partitions = args.partition or [tp.partition for tp in
                                                (await admin.describe_topics([args.topic], include_configs=False))
                                                [args.topic].partitions]
                targets = {(args.topic, p): args.offset for p in partitions}
            result = await admin.delete_records(targets)
            sys.stdout.write("Records delete operation completed:\n")
            for tp, low in sorted(result.items()):
                sys.stdout.write(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {low}\n")
            sys.stdout.flush()
        return 0

    return run_client("delete-records", args, main)
