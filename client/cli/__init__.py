"""Client subcommands of ``minibroker``: ``topics``, ``produce``, ``consume``, ``offsets``,
``groups``.

They talk to a running broker (this one or any Kafka) through the ``client`` library, like
Kafka's console tools. Shared here: ``--bootstrap-server`` (default 127.0.0.1:9092) and
``--request-timeout-ms``, and ``run_client`` which runs the command's coroutine and turns failures into
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


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text}")
    return v


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword options every client takes, from the common arguments."""
    return {"request_timeout_ms": args.request_timeout_ms, "connect_timeout_ms": args.request_timeout_ms}


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
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        return fail(prog, str(e))
