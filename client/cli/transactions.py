"""``minibroker transactions``: transactions and hanging transactions, like Kafka's
``kafka-transactions.sh`` (same actions, options and output columns)::

    minibroker transactions [--bootstrap-server H:P] list [--duration-filter MS]
    minibroker transactions describe --transactional-id ID
    minibroker transactions describe-producers --topic T --partition P [--broker-id N]
    minibroker transactions find-hanging (--broker-id N | --topic T [--partition P])
                                         [--max-transaction-timeout MINUTES]
    minibroker transactions abort --topic T --partition P
                                  (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)

A *hanging* transaction is one still open in a partition (DescribeProducers shows a current
transaction start offset) that its coordinator will never end: its producer id belongs to no
transactional id the coordinators know (ListTransactions), or that id's transaction
(DescribeTransactions) no longer includes the partition. It holds the partition's last stable
offset, so read_committed consumers stop before it. ``find-hanging`` looks at the open
transactions whose last write is older than ``--max-transaction-timeout`` (minutes, default 15:
Kafka's ``transaction.max.timeout.ms``; younger ones may still be ended by a live producer) and
prints the hanging ones; ``abort`` ends one with an ABORT marker (WriteTxnMarkers), given its
start offset (the producer is looked up with DescribeProducers) or its producer id and epochs.

Tables are printed as Kafka's tool prints them: every cell padded to its column's width and
followed by a tab. ``--bootstrap-server`` may come before or after the action.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from client.clock import now_ms

from . import DEFAULT_BOOTSTRAP, add_common, client_options, fail, positive_int, run_client

HELP = "list, describe, find hanging and abort transactions"

#: ``find-hanging`` asks DescribeProducers for at most this many partitions at a time (as Kafka's tool)
MAX_BATCH_SIZE = 500


def _non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text}")
    return v


def _add_connection(p: argparse.ArgumentParser) -> None:
    """The common options again after the action, overriding the ones before it only if given."""
    p.add_argument("--bootstrap-server", "-b", metavar="HOST:PORT[,HOST:PORT]", default=argparse.SUPPRESS,
                   help=f"broker(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--request-timeout-ms", type=positive_int, default=argparse.SUPPRESS, metavar="MS",
                   help="give up connecting, or waiting for a request's answer, after MS (default 10000)")
    p.add_argument("--command-config", metavar="FILE", default=argparse.SUPPRESS,
                   help="Kafka client properties for TLS and SASL")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    sub = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    p = sub.add_parser("list", help="list transactions")
    p.add_argument("--duration-filter", type=int, metavar="MS",
                   help="only transactions running longer than MS (default: all)")
    _add_connection(p)
    p = sub.add_parser("describe", help="describe the state of an active transactional-id")
    p.add_argument("--transactional-id", required=True, metavar="ID")
    _add_connection(p)
    p = sub.add_parser("describe-producers", help="describe the states of active producers for a topic partition")
    p.add_argument("--broker-id", type=int, metavar="N", help="(accepted for kafka-transactions.sh: one broker here)")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=_non_negative, required=True)
    _add_connection(p)
    p = sub.add_parser("find-hanging", help="find hanging transactions")
    p.add_argument("--broker-id", type=int, metavar="N", help="broker id to search for hanging transactions")
    p.add_argument("--max-transaction-timeout", type=_non_negative, default=15, metavar="MINUTES",
                   help="maximum transaction timeout in minutes to limit the scope of the search (default 15)")
    p.add_argument("--topic", help="topic name to limit search to (required if --partition is specified)")
    p.add_argument("--partition", type=_non_negative, help="partition number")
    _add_connection(p)
    p = sub.add_parser("abort", help="abort a hanging transaction")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=_non_negative, required=True)
    p.add_argument("--start-offset", type=_non_negative, metavar="O", help="start offset of the transaction to abort")
    p.add_argument("--producer-id", type=int, metavar="I", help="producer id (with the two epochs, instead of"
                                                                  " --start-offset)")
    p.add_argument("--producer-epoch", type=int, metavar="E", help="producer epoch")
    p.add_argument("--coordinator-epoch", type=int, metavar="C", help="coordinator epoch")
    _add_connection(p)
    parser.epilog = "Run `minibroker transactions <action> --help` for an action's options."


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's ``prettyPrintTable``: each cell left-justified to its column's width, then a tab."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return "".join("".join(c.ljust(w) + "\t" for c, w in zip(r, widths)) + "\n" for r in [headers, *rows])


def _opt(v: int) -> str:
    return "None" if v < 0 else str(v)


async def _list(admin: Any, args: argparse.Namespace) -> str:
    duration = -1 if args.duration_filter is None else args.duration_filter
    rows = [[t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state]
            for t in await admin.list_transactions(duration_ms=duration)]
    return table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


async def _describe(admin: Any, args: argparse.Namespace) -> str:
    d = (await admin.describe_transactions([args.transactional_id]))[args.transactional_id]
    now = now_ms()
    row = [str(d.coordinator_id), args.transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
           str(d.timeout_ms), _opt(d.start_time_ms), _opt(now - d.start_time_ms if d.start_time_ms >= 0 else -1),
           ",".join(f"{tp.topic}-{tp.partition}" for tp in d.partitions)]
    return table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                  "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                  "TopicPartitions"], [row])


async def _describe_producers(admin: Any, args: argparse.Namespace) -> str:
    from client.structs import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    rows = [[str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch), str(s.last_sequence),
             str(s.last_timestamp), _opt(s.current_txn_start_offset)]
            for s in (await admin.describe_producers([tp]))[tp]]
    return table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                  "CurrentTransactionStartOffset"], rows)


async def find_hanging(admin: Any, *, broker_id: int | None, topic: str | None, partition: int | None,
                       max_timeout_ms: int) -> list[tuple[Any, Any]]:
    """(partition, ProducerState) of every hanging transaction in scope (see the module's doc)."""
    from client.errors import TransactionalIdNotFoundError
    from client.structs import TopicPartition

    if topic is not None and partition is not None:
        partitions = [TopicPartition(topic, partition)]
    else:
        topics = [topic] if topic is not None else await admin.list_topics(include_internal=True)
        described = await admin.describe_topics(topics, include_configs=False)
        partitions = [TopicPartition(name, p.partition) for name in topics for p in described[name].partitions
                      if broker_id is None or broker_id in p.replicas]
    candidates: list[tuple[Any, Any]] = []
    for i in range(0, len(partitions), MAX_BATCH_SIZE):
        states = await admin.describe_producers(partitions[i:i + MAX_BATCH_SIZE])
        now = now_ms()
        candidates += [(tp, s) for tp in partitions[i:i + MAX_BATCH_SIZE] for s in states.get(tp, [])
                       if s.current_txn_start_offset >= 0 and now - s.last_timestamp > max_timeout_ms]
    if not candidates:
        return []
    pids = sorted({s.producer_id for _, s in candidates})
    txn_ids = {t.producer_id: t.transactional_id for t in await admin.list_transactions(producer_ids=pids)
               if t.producer_id in pids}
    descriptions: dict[str, Any] = {}
    for txn_id in sorted(set(txn_ids.values())):
        try:
            descriptions[txn_id] = (await admin.describe_transactions([txn_id]))[txn_id]
        except TransactionalIdNotFoundError:
            descriptions[txn_id] = None
    hanging = []
    for tp, s in candidates:
        txn_id = txn_ids.get(s.producer_id)
        d = descriptions.get(txn_id) if txn_id is not None else None
        if d is None or tp not in d.partitions:
            hanging.append((tp, s))
    return hanging


async def _find_hanging(admin: Any, args: argparse.Namespace) -> str:
    hanging = await find_hanging(admin, broker_id=args.broker_id, topic=args.topic, partition=args.partition,
                                 max_timeout_ms=args.max_transaction_timeout * 60_000)
    now = now_ms()
    rows = [[tp.topic, str(tp.partition), str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch),
             str(s.current_txn_start_offset), str(s.last_timestamp), str((now - s.last_timestamp) // 60_000)]
            for tp, s in hanging]
    return table(["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                  "LastTimestamp", "Duration(min)"], rows)


async def _abort(admin: Any, args: argparse.Namespace) -> str:
    from client.errors import KafkaError
    from client.structs import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        states = (await admin.describe_producers([tp]))[tp]
        found = [s for s in states if s.current_txn_start_offset == args.start_offset]
        if not found:
            raise KafkaError(f"could not find any open transactions starting at offset {args.start_offset} on"
                             f" partition {tp.topic}-{tp.partition}")
        pid, epoch, coordinator_epoch = found[0].producer_id, found[0].producer_epoch, found[0].coordinator_epoch
    else:
        pid, epoch, coordinator_epoch = args.producer_id, args.producer_epoch, args.coordinator_epoch
    # a transaction that hung before its producer's first marker shows coordinator epoch -1: 0 is
    # not above any coordinator epoch the partition can have seen (Kafka's tool does the same)
    await admin.abort_transaction(tp, pid, epoch, max(coordinator_epoch, 0))
    return ""


_ACTIONS = {"list": _list, "describe": _describe, "describe-producers": _describe_producers,
            "find-hanging": _find_hanging, "abort": _abort}


def run(args: argparse.Namespace) -> int:
    prog = f"transactions {args.action}"
    if args.action == "find-hanging":
        if args.topic is None and args.broker_id is None:
            return fail(prog, "the find-hanging command requires either --topic or --broker-id to limit the scope"
                              " of the search")
        if args.partition is not None and args.topic is None:
            return fail(prog, "the --partition argument requires --topic to be provided")
    if args.action == "abort" and args.start_offset is None:
        if args.producer_id is None:
            return fail(prog, "the transaction to abort must be identified either with --start-offset or with"
                              " --producer-id, --producer-epoch and --coordinator-epoch")
        if args.producer_epoch is None:
            return fail(prog, "missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            return fail(prog, "missing required argument --coordinator-epoch")

    async def main() -> int:
        from client.admin import Admin

        async with Admin(args.bootstrap_server, **client_options(args)) as admin:
            out = await _ACTIONS[args.action](admin, args)
        sys.stdout.write(out)
        sys.stdout.flush()
        return 0

    return run_client(prog, args, main)
