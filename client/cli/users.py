"""``minibroker users``: users' SCRAM credentials (KIP-554), what ``kafka-configs.sh
--entity-type users`` does with ``SCRAM-SHA-256=[iterations=N,password=P]``::

    minibroker users [--bootstrap-server H:P] --describe [--user NAME ...]
    minibroker users --add-scram NAME --mechanism SCRAM-SHA-512 [--iterations 8192]
                     [--password P | --password-file FILE]
    minibroker users --delete-scram NAME --mechanism SCRAM-SHA-512

The password comes from ``--password``, else ``--password-file`` (its first line), else the
environment variable ``MINIBROKER_SCRAM_PASSWORD``, else a prompt that does not echo (on a
terminal); it is never printed. ``--password`` puts it in the shell history and the process
list: prefer the others. The client salts it (32 random bytes) and sends only the salted
password (PBKDF2 with ``--iterations``, default 4096, Kafka's 4096..16384).

Output is Kafka's: ``--describe`` prints, per user with credentials (every user, or those named;
a user without any is skipped, as kafka-configs.sh does)::

    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192

and a change prints ``Completed updating config for user alice.``
"""

from __future__ import annotations

import argparse
import os
import sys

from . import add_common, client_options, fail, run_client

HELP = "add, delete and describe users' SCRAM credentials"

PASSWORD_ENV = "MINIBROKER_SCRAM_PASSWORD"
MECHANISM_NAMES = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="describe the SCRAM credentials of every user, or of"
                                                                " the users named with --user")
    action.add_argument("--add-scram", metavar="USER", help="create or replace USER's credential for --mechanism")
    action.add_argument("--delete-scram", metavar="USER", help="delete USER's credential for --mechanism")
    parser.add_argument("--user", action="append", metavar="USER", help="with --describe: this user (repeatable)")
    parser.add_argument("--mechanism", choices=MECHANISM_NAMES, help="the SCRAM mechanism (--add-scram, --delete-scram)")
    parser.add_argument("--iterations", type=int, default=4096, metavar="N",
                        help="PBKDF2 iterations of a new credential (default 4096; 4096..16384)")
    parser.add_argument("--password", help=f"the new password (visible in the process list: prefer --password-file or"
                                           f" {PASSWORD_ENV})")
    parser.add_argument("--password-file", metavar="FILE", help="read the new password from FILE's first line")


def _password(args: argparse.Namespace) -> str | None:
    if args.password is not None:
        return str(args.password)
    if args.password_file is not None:
        with open(args.password_file, encoding="utf-8") as f:
            return f.readline().rstrip("\r\n")
    if PASSWORD_ENV in os.environ:
        return os.environ[PASSWORD_ENV]
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"Password for {args.add_scram}: ")
    return None


def describe_line(user: str, infos: list[tuple[str, int]]) -> str:
    """kafka-configs.sh's line for one user's credentials."""
    text = ", ".join(f"{mechanism}=iterations={iterations}" for mechanism, iterations in infos)
    return f"SCRAM credential configs for user-principal '{user}' are {text}\n"


def run(args: argparse.Namespace) -> int:
    prog = "users"
    if args.user and not args.describe:
        return fail(prog, "--user goes with --describe (--add-scram and --delete-scram name their user)")
    password: str | None = None
    if not args.describe:
        if args.mechanism is None:
            return fail(prog, "--mechanism is required with --add-scram and --delete-scram")
        if args.add_scram is not None:
            try:
                password = _password(args)
            except OSError as e:
                return fail(prog, f"cannot read the password file: {e}")
            if not password:
                return fail(prog, f"no password: give --password, --password-file or {PASSWORD_ENV}")
    elif args.mechanism is not None or args.password is not None or args.password_file is not None:
        return fail(prog, "--describe takes no --mechanism or password")

    async def main() -> int:
        from client.admin import Admin, UserScramCredentialDeletion, UserScramCredentialUpsertion

        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            if args.describe:
                described = await admin.describe_user_scram_credentials()
                wanted = args.user if args.user else sorted(described)
                out = "".join(describe_line(u, [(c.mechanism.mechanism_name, c.iterations)
                                                for c in described[u].credential_infos])
                              for u in dict.fromkeys(wanted) if u in described)
            elif args.add_scram is not None:
                assert password is not None
                await admin.alter_user_scram_credentials(upsertions=[
                    UserScramCredentialUpsertion(args.add_scram, args.mechanism, password, args.iterations)])
                out = f"Completed updating config for user {args.add_scram}.\n"
            else:
                await admin.alter_user_scram_credentials(deletions=[
                    UserScramCredentialDeletion(args.delete_scram, args.mechanism)])
                out = f"Completed updating config for user {args.delete_scram}.\n"
        sys.stdout.write(out)
        sys.stdout.flush()
        return 0

    return run_client(prog, args, main)
