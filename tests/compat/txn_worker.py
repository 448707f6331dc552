"""A consume-transform-produce worker in its own process, for tests/compat/test_transactions.py:
confluent-kafka reads ``INPUT`` in group ``GROUP`` (read_committed, static membership, so a
restarted worker takes its predecessor's place at once), produces one record per input record
to ``OUTPUT`` (key ``"<partition>:<offset>"`` of the input record, value ``<input value>:out``)
and hands the consumed positions to the transaction (``send_offsets_to_transaction``),
committing every ``--every`` records and whenever the input runs dry (``--delay-ms`` after
each record stretches a transaction out, so that a SIGKILL lands inside one).

It can be SIGKILLed at any point: its successor, started with the same ``transactional.id``,
fences it (InitProducerId aborts the open transaction) and resumes from the offsets committed
with the last committed transaction. ``--progress`` gets one line per event, flushed:
``ready`` (transactions initialised, partitions assigned), ``begin``, ``committing`` (before
``send_offsets_to_transaction``), ``commit N`` (N records in it). The worker stops cleanly once
``--stop`` exists and it has read every assigned partition to its end (partition EOF events).

    python -m tests.compat.txn_worker BOOTSTRAP INPUT OUTPUT GROUP TXN_ID --progress F --stop F
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "output", "group", "txn_id"):
        ap.add_argument(name)
    ap.add_argument("--progress", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--every", type=int, default=40)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="sleep after each record (work to interrupt)")
    a = ap.parse_args()

    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

    progress = open(a.progress, "a", buffering=1)  # lives as long as the process
    # No re-bootstrap when every broker is down (librdkafka's default since 2.10): it decommissions
    # the one broker there is, after which librdkafka 2.16's send_offsets_to_transaction can wait
    # out its whole timeout for a group coordinator (librdkafka issue #5511) when the test
    # restarts the broker.
    no_rebootstrap = {"metadata.recovery.strategy": "none"}
    consumer = Consumer({
        "bootstrap.servers": a.bootstrap, "group.id": a.group, "group.instance.id": a.txn_id,
        "isolation.level": "read_committed", "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 50, "enable.partition.eof": True,
        "socket.timeout.ms": 5000, **no_rebootstrap})
    producer = Producer({
        "bootstrap.servers": a.bootstrap, "transactional.id": a.txn_id, "transaction.timeout.ms": 10000,
        "linger.ms": 2, "socket.timeout.ms": 5000, **no_rebootstrap})
    producer.init_transactions(30)
    assigned: set[int] = set()
    at_end: set[int] = set()  # partitions read up to their end (for read_committed: the LSO)

    def on_assign(c: Any, parts: list[Any]) -> None:
        if not assigned:
            progress.write("ready\n")
        assigned.clear()
        assigned.update(p.partition for p in parts)

    consumer.subscribe([a.input], on_assign=on_assign)

    in_txn = 0
    while True:
        msgs = []
        for m in consumer.consume(a.every - in_txn, timeout=0.2):
            err = m.error()
            if err is None:
                msgs.append(m)
                at_end.discard(m.partition())
            elif err.code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
        for m in msgs:
            if not in_txn:
                producer.begin_transaction()
                progress.write("begin\n")
            producer.produce(a.output, m.value() + b":out", key=f"{m.partition()}:{m.offset()}".encode(),
                             partition=m.partition())
            in_txn += 1
            if a.delay_ms:
                time.sleep(a.delay_ms / 1000)
        if in_txn and (in_txn >= a.every or not msgs):
            progress.write("committing\n")
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            try:
                producer.commit_transaction(30)
            except KafkaException as e:  # the test wants every commit to succeed: say why not
                progress.write(f"commit failed {e}\n")
                raise
            progress.write(f"commit {in_txn}\n")
            in_txn = 0
        if not in_txn and assigned and at_end >= assigned and os.path.exists(a.stop):
            break
    consumer.close()
    progress.write("closed\n")


if __name__ == "__main__":
    main()
