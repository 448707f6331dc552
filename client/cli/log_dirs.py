"""``minibroker log-dirs``: the brokers' log directories and each partition's size in bytes,
printed as ``kafka-log-dirs.sh --describe`` prints them (one line of JSON)::

    minibroker log-dirs [--topic-list events,clicks]

    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data","error":null,
      "partitions":[{"partition":"events-0","size":1234,"offsetLag":0,"isFuture":false}]}]}]}
"""

from __future__ import annotations

import argparse
import json
import sys

from . import add_common, client_options, run_client

HELP = "show the log directories and partition sizes of the brokers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--describe", action="store_true", help="(the only action; accepted for kafka-log-dirs.sh)")
    parser.add_argument("--topic-list", metavar="T1,T2", help="only these topics (default: all)")
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    topics = {t.strip() for t in args.topic_list.split(",") if t.strip()} if args.topic_list else None

    async def main() -> int:
        from client.admin import Admin
        from client.protocol.api import error_name

        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            dirs = await admin.describe_log_dirs()
        brokers = []
        for node, entries in sorted(dirs.items()):
            log_dirs = []
            for d in entries:
                parts = [{"partition": f"{tp.topic}-{tp.partition}", "size": r.size, "offsetLag": r.offset_lag,
                          "isFuture": r.is_future}
                         for tp, r in sorted(d.replicas.items()) if topics is None or tp.topic in topics]
                error = None if d.error_code == 0 else error_name(d.error_code)
                log_dirs.append({"logDir": d.path, "error": error, "partitions": parts})
            brokers.append({"broker": node, "logDirs": log_dirs})
        sys.stdout.write(json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        return 0

    return run_client("log-dirs", args, main)
