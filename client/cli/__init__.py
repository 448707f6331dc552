"""Client subcommands of ``minibroker``: ``topics``, ``produce``, ``consume``, ``offsets``,
``groups``, ``users``, ``acls``, ...

They talk to a running broker (this one or any Kafka) through the ``client`` library, like
Kafka's console tools. Shared here: ``--bootstrap-server`` (default 127.0.0.1:9092),
``--request-timeout-ms`` and ``--command-config FILE`` (Kafka's client properties for TLS and
SASL: ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.*``, translated by
``client.security.properties``; other properties are reported as unused), and ``run_client`` which runs the command's coroutine and turns failures into
one line on stderr and an exit status:

    0  success
    1  the operation failed (broker error, broker unreachable, bad input line, ...)
    2  bad command line (argparse)
    130  interrupted (Ctrl-C) where that loses work (produce)

Imports of the client and asyncio happen inside ``run`` (``broker/__main__.py`` imports every
subcommand module to build its parser).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", "-b", metavar="HOST:PORT[,HOST:PORT]", default=DEFAULT_BOOTSTRAP,
                        help=f"broker(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    parser.add_argument("--request-timeout-ms", type=positive_int, default=10000, metavar="MS",
                        help="give up connecting, or waiting for a request's answer, after MS (default 10000)")
    parser.add_argument("--command-config", metavar="FILE", default=None,
                        help="Kafka client properties for TLS and SASL (security.protocol, sasl.mechanism, "
                             "sasl.jaas.config, ssl.truststore.location, ...)")


class CommandConfigError(ValueError):
    """A ``--command-config`` file that cannot be read or has a bad value."""


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text}")
    return v


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword options every client takes, from the common arguments (the security options of
    ``--command-config`` are built once per command: its TLS context reads the stores)."""
    out: dict[str, Any] = {"request_timeout_ms": args.request_timeout_ms, "connect_timeout_ms": args.request_timeout_ms}
    path = getattr(args, "command_config", None)
    if path:
        cached = getattr(args, "_security_options", None)
        if cached is None:
            cached = args._security_options = _security_options(path)
        out.update(cached)
    return out


def _security_options(path: str) -> dict[str, Any]:
    from client.security.properties import is_security_property, load_properties, security_options

    try:
        props = load_properties(path)
    except (OSError, UnicodeDecodeError) as e:
        raise CommandConfigError(f"--command-config {path}: {e}") from None
    unused = sorted(k for k in props if not is_security_property(k))
    if unused:
        sys.stderr.write(f"minibroker: warning: --command-config {path}: not used here: {', '.join(unused)}\n")
    try:
        return security_options(props)
    except (OSError, ValueError) as e:  # ssl.SSLError is an OSError: a store that does not load
        raise CommandConfigError(f"--command-config {path}: {e}") from None


def unescape(text: str) -> str:
    r"""``\t``, ``\n``, ``\r``, ``\0`` and ``\\`` in a command-line string (separators, formats)."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            mapped = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "\\": "\\"}.get(nxt)
            if mapped is not None:
                out.append(mapped)
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


def fail(prog: str, message: str) -> int:
    sys.stderr.write(f"minibroker {prog}: error: {message}\n")
    sys.stderr.flush()
    return 1


def run_client(prog: str, args: argparse.Namespace, main: Callable[[], Coroutine[Any, Any, int]],
               interrupted_status: int = 130) -> int:
    """Run ``main()`` on an event loop; KafkaError and OSError become one line on stderr."""
    import asyncio

    from client.errors import KafkaConnectionError, KafkaError

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return interrupted_status
    except KafkaConnectionError as e:
        detail = str(e)
        if "Errno 111" in detail or "Connect call failed" in detail or "refused" in detail:
            detail = "connection refused"
        elif "timed out" in detail:
            detail = f"no answer within {args.request_timeout_ms} ms"
        return fail(prog, f"cannot reach {args.bootstrap_server} ({detail}); is the broker running?"
                          " (`minibroker serve` starts one)")
    except KafkaError as e:
        return fail(prog, str(e))
    except CommandConfigError as e:
        return fail(prog, str(e))
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        return fail(prog, str(e))
