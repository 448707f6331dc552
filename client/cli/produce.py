"""``minibroker produce TOPIC``: one record per input line (like ``kafka-console-producer.sh``).

Lines come from stdin (or ``--file``), bytes as they are, without their line ending (``\\n`` or
``\\r\\n``). With ``--key-separator SEP`` each line is ``KEY SEP VALUE``, cut at the first SEP
(a line without SEP is an error); without it records have no key. Records go through the
``client`` Producer (batching, ``--linger-ms``, ``--compression``, ``--acks``); the command
returns once every record is acknowledged (exit 0) or reports how many failed (exit 1).

Progress: on long inputs a line ``produced N records (R records/s)`` is refreshed on stderr
every second (``--progress auto``: when stderr is a terminal; ``always``: also into files and
pipes, one line each time; ``never``), followed by a summary when done.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, BinaryIO

from . import add_common, client_options, fail, run_client, unescape

HELP = "send lines of stdin (or a file) to a topic, one record per line"

_CHUNK = 1 << 16  # bytes of input read per thread hop


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--file", "-f", metavar="PATH", help="read lines from PATH instead of stdin")
    parser.add_argument("--key-separator", "-K", metavar="SEP",
                        help=r"each line is KEY SEP VALUE (escapes such as \t are understood)")
    parser.add_argument("--partition", "-p", type=int, metavar="P",
                        help="send every record to partition P (default: by key; sticky without a key)")
    parser.add_argument("--header", "-H", action="append", default=[], metavar="KEY=VALUE",
                        help="add this header to every record (repeatable; KEY alone = null value)")
    parser.add_argument("--compression", "-z", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                        help="compression codec of the batches (default none)")
    parser.add_argument("--acks", default="1", choices=["0", "1", "-1", "all"],
                        help="0: no answer, 1: written to the log (default), all/-1: written and fsync'd")
    parser.add_argument("--linger-ms", type=float, default=5, metavar="MS", help="batching delay (default 5)")
    parser.add_argument("--batch-size", type=int, default=65536, metavar="BYTES",
                        help="batch size in bytes (default 65536)")
    parser.add_argument("--progress", default="auto", choices=["auto", "always", "never"],
                        help="progress line on stderr: auto (when stderr is a terminal), always, never")
    add_common(parser)


def _headers(items: list[str]) -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not key:
            raise ValueError(f"--header expects KEY=VALUE, got {item!r}")
        out.append((key, value.encode() if sep else None))
    return out


class _Progress:
    """The stderr progress line: refreshed in place on a terminal, one line per update elsewhere."""

    def __init__(self, mode: str) -> None:
        tty = sys.stderr.isatty()
        self.enabled = mode == "always" or (mode == "auto" and tty)
        self.inplace = tty
        self.start = time.monotonic()
        self.next_at = self.start + 1.0
        self.shown = False

    def update(self, n: int) -> None:
        now = time.monotonic()
        if not self.enabled or now < self.next_at:
            return
        self.next_at = now + 1.0
        rate = n / max(now - self.start, 1e-9)
        self._write(f"produced {n:,} records ({rate:,.0f} records/s)")
        self.shown = True

    def _write(self, text: str) -> None:
        sys.stderr.write(("\r\x1b[K" + text) if self.inplace else text + "\n")
        sys.stderr.flush()

    def done(self, n: int, topic: str, failed: int) -> None:
        if not (self.enabled and (self.shown or not self.inplace)):
            return
        dt = time.monotonic() - self.start
        text = f"produced {n - failed:,} records to {topic} in {dt:.2f} s ({n / max(dt, 1e-9):,.0f} records/s)"
        if self.inplace:
            sys.stderr.write("\r\x1b[K" + text + "\n")
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    try:
        headers = _headers(args.header) or None
    except ValueError as e:
        return fail("produce", str(e))
    sep = unescape(args.key_separator).encode() if args.key_separator is not None else None
    if sep == b"":
        return fail("produce", "--key-separator must not be empty")
    if args.file is not None:
        try:
            source: BinaryIO = open(args.file, "rb")
        except OSError as e:
            return fail("produce", f"cannot read {args.file}: {e.strerror}")
    else:
        source = sys.stdin.buffer
    interactive = source.isatty()

    async def main() -> int:
        import asyncio

        from client.errors import KafkaError
        from client.producer import Producer

        loop = asyncio.get_running_loop()
        progress = _Progress(args.progress)
        sent = 0
        failed = 0
        first_error: list[BaseException] = []

        def on_done(fut: Any) -> None:
            nonlocal failed
            exc = fut.exception()
            if exc is not None:
                failed += 1
                if not first_error:
                    first_error.append(exc)

        # A terminal gives a line at a time; pipes and files are read 64 KiB at a time in a
        # thread, so the event loop keeps sending while the next chunk is read.
        read = (lambda: [source.readline()]) if interactive else (lambda: source.readlines(_CHUNK))
        acks = -1 if args.acks == "all" else int(args.acks)
        async with Producer(args.bootstrap_server, acks=acks, compression_type=args.compression,
                            linger_ms=args.linger_ms, batch_size=args.batch_size,
                            max_block_ms=args.request_timeout_ms, delivery_timeout_ms=3 * args.request_timeout_ms,
                            **client_options(args)) as producer:
            lineno = 0
            while True:
                lines = await loop.run_in_executor(None, read)
                if not lines or lines == [b""]:
                    break
                for line in lines:
                    lineno += 1
                    if line.endswith(b"\n"):
                        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
                    key = None
                    if sep is not None:
                        key, found, value = line.partition(sep)
                        if not found:
                            await producer.flush()
                            return fail("produce", f"line {lineno} has no key separator {args.key_separator!r}:"
                                                   f" {line[:80]!r} ({sent} records sent before it)")
                    else:
                        value = line
                    try:
                        fut = producer.send_nowait(args.topic, value, key, headers, args.partition)
                    except (ValueError, TypeError) as e:  # e.g. --partition out of range
                        first_error.append(e)
                        break
                    fut.add_done_callback(on_done)
                    sent += 1
                await producer.drain()
                if first_error:
                    break  # a record failed for good (retries are the producer's): stop reading
                progress.update(sent)
            try:
                await producer.flush()
            except KafkaError:
                pass  # counted by on_done
        progress.done(sent, args.topic, failed)
        if first_error:
            return fail("produce", f"{first_error[0]} ({sent - failed} of {sent} records written; input stopped"
                                   f" after line {lineno})")
        return 0

    try:
        return run_client("produce", args, main)
    finally:
        if args.file is not None:
            source.close()
