"""The ``minibroker`` command line: argparse wiring only.

Each subcommand lives in its own module, which defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit status). To add one (serve, topics,
produce, consume), write the module and list it in ``SUBCOMMANDS``; nothing else changes here.
Every listed module is imported to build the parser, so a subcommand module must keep its
import cheap (import heavy things such as the event loop inside ``run``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# name -> module implementing it
SUBCOMMANDS: dict[str, str] = {
    "serve": "broker.serve",
    "dump-log": "broker.tools.dump_log",
    "healthcheck": "broker.healthcheck",
    "topics": "client.cli.topics",
    "produce": "client.cli.produce",
    "consume": "client.cli.consume",
    "offsets": "client.cli.offsets",
    "configs": "client.cli.configs",
    "delete-records": "client.cli.delete_records",
    "log-dirs": "client.cli.log_dirs",
    "groups": "client.cli.groups",
    "share-groups": "client.cli.share_groups",
    "transactions": "client.cli.transactions",
    "users": "client.cli.users",
    "acls": "client.cli.acls",
}


class _VersionAction(argparse.Action):
    """``--version``: what ``broker.build_info`` detects (version, Python, event loop, the C fast
    paths), detected only when asked, and printed on stdout."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version, the Python, the event loop and which C fast paths are in use")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from .build_info import detect, version_text
        sys.stdout.write(version_text(detect()))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minibroker",
        description="A single-node broker that stores partitions exactly as Apache Kafka does.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def _usage() -> str:
    lines = ["usage: minibroker <command> [options]", "", "commands:"]
    for name, module_name in SUBCOMMANDS.items():
        lines.append(f"  {name:<10} {importlib.import_module(module_name).HELP}")
    lines += [
        "",
        "Run `minibroker <command> --help` for a command's options, `minibroker --version` for what runs.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stdout.write(_usage())
        return 0
    try:
        return int(args.run(args))
    except BrokenPipeError:
        # The reader went away (`minibroker dump-log x.log | head`): stop quietly, and point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
