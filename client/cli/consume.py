"""``minibroker consume TOPIC``: print records (like ``kafka-console-consumer.sh`` / ``kcat -C``).

Where to start (every partition read, or only ``--partition P``): the end of the log by default
(records produced from now on), ``--from-beginning``, ``--offset N`` (N < 0: N records before
the end, as kcat's ``-o -N``), or ``--timestamp MS`` (the first record at or after MS, ms since
the epoch). Stops after ``--max-messages N``, at the log end as it was when the command started
(``--exit-at-end``), after ``--timeout-ms`` without a record, or on Ctrl-C (exit 0).

With ``--group G`` the command is a member of consumer group G: it subscribes to the topic,
reads what the group assigns it from the group's committed offsets (where there are none: the
log end, or the beginning with ``--from-beginning``), and commits what it printed (every 5 s,
and on exit). ``--partition``, ``--offset``, ``--timestamp`` and ``--exit-at-end`` do not
apply to a group.

``--format`` (default ``%v``) is printed for each record, followed by a newline::

    %v (or %s) value   %k key   %t topic   %p partition   %o offset   %T timestamp (ms)
    %h headers as k=v,k2=v2   %K key length   %S value length (-1 = null)   %% a percent sign
    escapes: \\t \\n \\r \\\\

Keys and values are written as raw bytes; a null one prints as ``--null-literal`` (default
``null``, as Kafka's console consumer does). "Processed a total of N messages" goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from . import add_common, client_options, fail, positive_int, run_client, unescape

HELP = "print the records of a topic to stdout"

_FIELDS = {
    "v": "V(r[6])", "s": "V(r[6])", "k": "V(r[5])", "t": "TOPIC", "p": "str(r[1]).encode()",
    "o": "str(r[2]).encode()", "T": "str(r[3]).encode()", "h": "H(r[7])",
    "K": "L(r[5])", "S": "L(r[6])",
}


def compile_format(fmt: str, topic: str, null: bytes) -> Callable[[Any], bytes]:
    """``--format`` -> a function of a ConsumerRecord giving its output line (newline included).
    Built as one generated expression so that a record costs one call, not one per token."""
    parts: list[str] = []
    literal = []
    text = unescape(fmt) + "\n"
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%" and i + 1 < len(text):
            token = text[i + 1]
            if token == "%":
                literal.append("%")
            elif token in _FIELDS:
                if literal:
                    parts.append(repr("".join(literal).encode()))
                    literal = []
                parts.append(_FIELDS[token])
            else:
                raise ValueError(f"unknown format token %{token} (known: %v %s %k %t %p %o %T %h %K %S %%)")
            i += 2
            continue
        literal.append(c)
        i += 1
    if literal:
        parts.append(repr("".join(literal).encode()))

    def V(v: bytes | None) -> bytes:
        return null if v is None else v

    def L(v: bytes | None) -> bytes:
        return b"-1" if v is None else str(len(v)).encode()

    def H(h: tuple[tuple[str, bytes | None], ...]) -> bytes:
        return b",".join(k.encode() + b"=" + (null if v is None else v) for k, v in h)

    env = {"V": V, "L": L, "H": H, "TOPIC": topic.encode()}
    return eval("lambda r: b''.join((" + ", ".join(parts) + ",))", env)  # built from a fixed table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", metavar="TOPIC")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the beginning of the log")
    start.add_argument("--offset", "-o", type=int, metavar="N",
                       help="start at offset N (N < 0: N records before the end)")
    start.add_argument("--timestamp", type=int, metavar="MS",
                       help="start at the first record with a timestamp >= MS (ms since the epoch)")
    parser.add_argument("--partition", "-p", type=int, metavar="P", help="read only partition P")
    parser.add_argument("--group", "-g", metavar="GROUP",
                        help="consume as a member of consumer group GROUP (subscribe, commit what is printed)")
    parser.add_argument("--max-messages", "-c", type=positive_int, metavar="N", help="exit after N records")
    parser.add_argument("--exit-at-end", "-e", action="store_true",
                        help="exit at the end of the log (as it was when the command started)")
    parser.add_argument("--timeout-ms", type=positive_int, metavar="MS",
                        help="exit when no record arrives for MS milliseconds")
    parser.add_argument("--format", "-f", default="%v", help="output format (see below; default %%v)")
    parser.add_argument("--null-literal", default="null", metavar="TEXT",
                        help="what a null key or value prints as (default: null)")
    add_common(parser)
    parser.epilog = ("format tokens: %v value, %k key, %t topic, %p partition, %o offset, %T timestamp, "
                     "%h headers, %K key length, %S value length, %% percent; a newline follows each record")


def run(args: argparse.Namespace) -> int:
    try:
        fmt = compile_format(args.format, args.topic, args.null_literal.encode())
    except ValueError as e:
        return fail("consume", str(e))
    count = 0
    if args.group is not None:
        for flag, given in (("--partition", args.partition is not None), ("--offset", args.offset is not None),
                            ("--timestamp", args.timestamp is not None), ("--exit-at-end", args.exit_at_end)):
            if given:
                return fail("consume", f"{flag} cannot be used with --group")

    async def main() -> int:
        nonlocal count
        import time

        from client.consumer import Consumer
        from client.structs import TopicPartition

        out = sys.stdout.buffer
        limit = args.max_messages
        if args.group is not None:
            return await consume_group(Consumer, out, fmt)
        async with Consumer(args.bootstrap_server, auto_offset_reset="latest", fetch_max_wait_ms=200,
                            **client_options(args)) as consumer:
            partitions = sorted(await consumer.partitions_for_topic(args.topic))
            if args.partition is not None:
                if args.partition not in partitions:
                    return fail("consume", f"topic {args.topic!r} has no partition {args.partition}"
                                           f" (it has {len(partitions)})")
                partitions = [args.partition]
            tps = [TopicPartition(args.topic, p) for p in partitions]
            consumer.assign(tps)
            if args.from_beginning:
                await consumer.seek_to_beginning()
            elif args.offset is not None:
                if args.offset >= 0:
                    for tp in tps:
                        consumer.seek(tp, args.offset)
                else:
                    starts = await consumer.beginning_offsets(tps)
                    ends = await consumer.end_offsets(tps)
                    for tp in tps:
                        consumer.seek(tp, max(starts[tp], ends[tp] + args.offset))
            elif args.timestamp is not None:
                await consumer.seek_to_timestamp(args.timestamp)
            else:
                await consumer.seek_to_end()
            ends = await consumer.end_offsets(tps) if args.exit_at_end else {}

            async def at_end() -> bool:
                for tp, end in ends.items():
                    if await consumer.position(tp) < end:
                        return False
                return True

            idle_since = time.monotonic()
            wait_ms = 200 if (args.timeout_ms or args.exit_at_end) else 1000
            while True:
                if args.exit_at_end and await at_end():
                    break
                got = await consumer.getmany(timeout_ms=wait_ms,
                                             max_records=None if limit is None else limit - count)
                if not got:
                    if args.timeout_ms and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                        break
                    continue
                idle_since = time.monotonic()
                lines: list[bytes] = []
                for records in got.values():
                    if args.exit_at_end:
                        end = ends[TopicPartition(records[0].topic, records[0].partition)]
                        records = [r for r in records if r.offset < end]
                    lines.extend(map(fmt, records))
                out.write(b"".join(lines))
                out.flush()
                count += len(lines)
                if limit is not None and count >= limit:
                    break
        return 0

    async def consume_group(consumer_cls: Any, out: Any, fmt: Callable[[Any], bytes]) -> int:
        """Subscribe as a member of ``--group``; positions move only past printed records (each
        getmany takes at most what is still to print), so auto-commit and the commit on exit
        store exactly what was printed."""
        nonlocal count
        import time

        limit = args.max_messages
        async with consumer_cls(args.bootstrap_server, group_id=args.group, fetch_max_wait_ms=200,
                                auto_offset_reset="earliest" if args.from_beginning else "latest",
                                **client_options(args)) as consumer:
            await consumer.partitions_for_topic(args.topic)  # UnknownTopicOrPartitionError at once
            consumer.subscribe([args.topic])
            idle_since = time.monotonic()
            while limit is None or count < limit:
                got = await consumer.getmany(timeout_ms=200, max_records=None if limit is None else limit - count)
                if not got:
                    if args.timeout_ms and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                        break
                    continue
                idle_since = time.monotonic()
                lines = [fmt(r) for records in got.values() for r in records]
                out.write(b"".join(lines))
                out.flush()
                count += len(lines)
            await consumer.commit()
        return 0

    status = run_client("consume", args, main, interrupted_status=0)
    sys.stderr.write(f"Processed a total of {count} messages\n")
    return status
