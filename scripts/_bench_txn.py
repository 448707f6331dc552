"""The ``txn`` section of ``scripts/bench.py``: what transactions cost against idempotent
produce, in the same run.

Load generator: confluent-kafka (librdkafka), W1's producer settings (100-byte values, no key,
1 partition, ``linger.ms=5``, ``batch.size=65536``), ``--txn-records`` records per run (default
100,000; ``--quick`` 20,000) into a fresh topic per run, three modes alternating within each
repeat so that a noisy moment hits them alike:

- ``idempotent``: ``enable.idempotence=true`` (acks=all), ``produce()`` in a loop, ``flush()``;
- ``transactional, K per transaction`` for K = 10,000 and K = 100: ``init_transactions()``
  before the clock starts, then ``begin_transaction()``, K ``produce()`` calls,
  ``commit_transaction()`` (which flushes), until the run's records are sent.

records/s = records / time from the first ``produce()`` to the last ``flush()`` or
``commit_transaction()`` returning; median of ``--repeats``. Broker CPU per record from
``/proc/<broker pid>/stat`` over the same interval, and per transaction: the transactional
run's broker CPU minus the idempotent run's (same records), divided by its transactions; the
same for wall time (milliseconds per transaction beyond the records themselves).

The idempotent run is W1's producer loop (``produce_records`` in bench.py, acks=all); the
transactional producers connect and get their producer id (``init_transactions``) before the
clock starts. Each run is checked: the topic's high watermark is the records plus one COMMIT
marker per transaction (none for idempotent), and its last stable offset (ListOffsets,
read_committed) has caught up with it.

What a transaction costs here: AddPartitionsToTxn (its state record fsync'd, after the previous
transaction's markers are), the batches at acks=all, EndTxn (PrepareCommit fsync'd), then,
right after the answer, the COMMIT marker and the CompleteCommit record (not waited for). The
per-transaction wall time is a difference of two noisy runs and can come out negative for one
repeat; its median is the figure.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from _bench_requests import call, connect

from client.protocol import ApiKey

VALUE_SIZE = 100
PER_TXN = (10_000, 100)
MODES = ("idempotent", *(f"transactional, {k:,} per transaction" for k in PER_TXN))


def _offsets(port: int, topic: str) -> tuple[int, int]:
    """(high watermark, last stable offset) of partition 0: ListOffsets latest, read_uncommitted
    and read_committed."""
    out = []
    with connect(port) as sock:
        for level in (0, 1):
            resp = call(sock, ApiKey.LIST_OFFSETS, {"replica_id": -1, "isolation_level": level, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
            part = resp["topics"][0]["partitions"][0]
            if part["error_code"]:
                raise RuntimeError(f"ListOffsets {topic}: error {part['error_code']}")
            out.append(part["offset"])
    return out[0], out[1]


def produce_transactions(ctx: Any, topic: str, n: int, per_txn: int, txn_id: str) -> tuple[float, int]:
    """Seconds to send ``n`` records in transactions of ``per_txn``, and the transactions."""
    from confluent_kafka import KafkaException, Producer

    errors: list[Any] = []
    p = Producer({"bootstrap.servers": ctx.broker.bootstrap, "transactional.id": txn_id, "linger.ms": 5,
                  "batch.size": 65536, "queue.buffering.max.messages": max(per_txn + 1000, 100_000),
                  "delivery.report.only.error": True, "on_delivery": lambda err, msg: errors.append(err)})
    p.list_topics(topic, timeout=10)  # before the clock: connections, metadata, the producer id
    p.init_transactions(30)
    value = b"v" * VALUE_SIZE
    produce = p.produce
    txns = sent = 0
    t0 = time.perf_counter()
    while sent < n:
        k = min(per_txn, n - sent)
        p.begin_transaction()
        for _ in range(k):
            produce(topic, value, partition=0)
        p.commit_transaction(120)  # flushes the transaction's records first
        sent += k
        txns += 1
    dt = time.perf_counter() - t0
    if errors:
        raise KafkaException(f"{len(errors)} delivery errors (first: {errors[0]})")
    return dt, txns


def section_txn(ctx: Any, meter: Callable[[], Any], create_topic: Callable[[Any, str], None],
                produce_records: Callable[..., tuple[float, float]]) -> dict[str, Any]:
    """``produce_records(ctx, topic, n, acks, idempotence)`` is W1's producer loop (bench.py)."""
    args = ctx.args
    n = args.txn_records
    print(f"== txn: {n:,} x {VALUE_SIZE}-byte records per run, 1 partition, linger.ms=5, batch.size=65536;"
          f" idempotent vs transactions of {' and '.join(f'{k:,}' for k in PER_TXN)} records; median of"
          f" {args.repeats}")
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    for r in range(args.repeats):
        for mode, per_txn in zip(MODES, (None, *PER_TXN)):
            topic = f"txn-{'idem' if per_txn is None else per_txn}-{r}"
            create_topic(ctx, topic)
            with meter() as m:
                if per_txn is None:
                    dt, txns = produce_records(ctx, topic, n, "all", True)[0], 0
                else:
                    dt, txns = produce_transactions(ctx, topic, n, per_txn, f"bench-{topic}")
            hw, lso = _offsets(ctx.broker.port, topic)
            if hw != n + txns or lso != hw:
                raise RuntimeError(f"{topic}: high watermark {hw}, last stable offset {lso}; expected {n + txns}"
                                   f" ({n} records + {txns} markers)")
            res = {"records_per_s": n / dt, "seconds": dt, "transactions": txns,
                   "broker_us_per_record": 1e6 * m.broker / n, **m.as_dict()}
            runs[mode].append(res)
            print(f"  {mode:<38} run {r + 1}: {n / dt:>10,.0f} records/s  {txns:>5,} transactions"
                  f"  {res['broker_us_per_record']:6.2f} µs broker CPU/record  ({m.describe()})")
    out: dict[str, Any] = {"records": n, "modes": {}}
    base = runs["idempotent"]
    for mode, mode_runs in runs.items():
        rps = statistics.median(x["records_per_s"] for x in mode_runs)
        us = statistics.median(x["broker_us_per_record"] for x in mode_runs)
        row: dict[str, Any] = {"runs": mode_runs, "median_records_per_s": rps, "median_broker_us_per_record": us}
        ctx.table.add("txn produce", f"{mode} records/s", rps, "rec/s", runs=[x["records_per_s"] for x in mode_runs])
        ctx.table.add("txn produce", f"{mode}: broker CPU per record", us, "us",
                      runs=[x["broker_us_per_record"] for x in mode_runs], fmt="{:,.2f}")
        if mode_runs[0]["transactions"]:
            # paired with the idempotent run of the same repeat
            cpu = [(x["broker_cpu_s"] - b["broker_cpu_s"]) / x["transactions"] * 1e6 for x, b in zip(mode_runs, base)]
            wall = [(x["seconds"] - b["seconds"]) / x["transactions"] * 1e3 for x, b in zip(mode_runs, base)]
            row.update(median_broker_us_per_txn=statistics.median(cpu), median_ms_per_txn=statistics.median(wall))
            ctx.table.add("txn produce", f"{mode}: broker CPU per transaction", statistics.median(cpu), "us",
                          runs=cpu, fmt="{:,.0f}")
            ctx.table.add("txn produce", f"{mode}: wall time per transaction", statistics.median(wall), "ms",
                          runs=wall, fmt="{:,.1f}")
        out["modes"][mode] = row
    idem = out["modes"]["idempotent"]["median_records_per_s"]
    print(f"  {'mode':<38} {'records/s':>10} {'vs idem':>8} {'µs CPU/rec':>10} {'µs CPU/txn':>10} {'ms/txn':>7}"
          "   (medians)")
    for mode, row in out["modes"].items():
        per_txn_cpu = f"{row['median_broker_us_per_txn']:10,.0f}" if "median_broker_us_per_txn" in row else " " * 10
        per_txn_ms = f"{row['median_ms_per_txn']:7.1f}" if "median_ms_per_txn" in row else " " * 7
        print(f"  {mode:<38} {row['median_records_per_s']:>10,.0f} {row['median_records_per_s'] / idem:>7.0%}"
              f" {row['median_broker_us_per_record']:>10.2f} {per_txn_cpu} {per_txn_ms}")
    return out
