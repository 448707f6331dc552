#!/usr/bin/env python3
"""A soak under failure: producers (acks=all) and admin calls run against a broker that is
SIGKILLed and restarted at random moments; at the end every acknowledged record must be in
the log, in the order its producer had it acknowledged.

    .venv/bin/python scripts/chaos.py --duration 120          # what CI runs (tests/broker)
    .venv/bin/python scripts/chaos.py --duration 1800 --seed 7 # a long one

Load: one confluent-kafka producer (librdkafka, acks=all, ``enable.idempotence=true``) and one
of ours (acks=all, ``enable_idempotence=True``, 1 request in flight), each writing values
``<producer>-<sequence>`` to a 3-partition topic, plus an admin
thread listing offsets and describing the topic. The broker (a ``python -m broker serve``
process on a fixed port, data kept across restarts) is SIGKILLed every ``--kill-every``
seconds on average (uniformly 0.5x-1.5x) and restarted at once.

Checks, on a last clean start: every acknowledged record is present; per producer and
partition, acknowledged records appear in the log in sequence order; the log's offsets are
contiguous; no value is in the log twice. Records written but not acknowledged (in flight at a
kill) may or may not be there. A retried batch whose first attempt was written (its answer
lost with the killed broker) is recognised by the broker from the producer's id, epoch and
sequences, also after the restart (producer state rebuilt from the snapshot plus the log
tail), and answered with its first offsets: a value in the log twice is a failure.
``--no-idempotence`` runs both producers without idempotence, where such retries are written
twice: duplicates are then counted and reported, not failures. Exit status 1 on any lost or
reordered acknowledged record, or on any duplicate with idempotent producers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import Future

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from broker.testing import BrokerProcess  # noqa: E402
from client.sync import SyncAdmin, SyncConsumer, SyncProducer  # noqa: E402

TOPIC = "chaos"
PARTITIONS = 3


class Acks:
    """Acknowledged (partition, offset, value) per producer, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_producer: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)

    def ok(self, producer: str, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.by_producer[producer].append((partition, offset, value))

    def failed(self, producer: str) -> None:
        with self.lock:
            self.errors[producer] += 1


def run_confluent(bootstrap: str, acks: Acks, stop: threading.Event, rng: random.Random, idempotence: bool) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotence,
                  "linger.ms": 5, "message.timeout.ms": 600000, "retry.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 200, "log_level": 2})  # no line per refused reconnect

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acks.ok("confluent", msg.partition(), msg.offset(), msg.value())
        else:
            acks.failed("confluent")

    seq = 0
    while not stop.is_set():
        for _ in range(rng.randint(1, 50)):
            p.produce(TOPIC, b"confluent-%09d" % seq, partition=seq % PARTITIONS, on_delivery=delivered)
            seq += 1
        p.poll(0.01)
    p.flush(120)


def run_ours(bootstrap: str, acks: Acks, stop: threading.Event, rng: random.Random, idempotence: bool) -> None:
    with SyncProducer(bootstrap, acks="all", linger_ms=5, retries=1_000_000, delivery_timeout_ms=600000,
                      max_in_flight_requests_per_connection=1, retry_backoff_ms=50,
                      enable_idempotence=idempotence) as p:
        seq = 0
        pending: list[tuple[bytes, Future]] = []  # type: ignore[type-arg]
        while not stop.is_set():
            for _ in range(rng.randint(1, 50)):
                value = b"ours-%09d" % seq
                pending.append((value, p.send_nowait(TOPIC, value, partition=seq % PARTITIONS)))
                seq += 1
            time.sleep(0.01)
            still = []
            for value, fut in pending:
                if not fut.done():
                    still.append((value, fut))
                elif fut.exception() is None:
                    md = fut.result()
                    acks.ok("ours", md.partition, md.offset, value)
                else:
                    acks.failed("ours")
            pending = still
        p.flush()
        for value, fut in pending:
            try:
                md = fut.result(timeout=120)
                acks.ok("ours", md.partition, md.offset, value)
            except Exception:  # noqa: BLE001 - counted, not fatal
                acks.failed("ours")


def run_admin(bootstrap: str, stop: threading.Event, calls: list[int]) -> None:
    while not stop.is_set():
        try:
            with SyncAdmin(bootstrap, request_timeout_ms=5000) as admin:
                while not stop.is_set():
                    admin.topic_offsets(TOPIC)
                    admin.describe_topics([TOPIC])
                    calls[0] += 1
                    time.sleep(0.2)
        except Exception:  # noqa: BLE001 - the broker was killed under it: reconnect
            time.sleep(0.2)


def read_all(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = {}
    with SyncAdmin(bootstrap) as admin:
        ends = admin.topic_offsets(TOPIC)
    with SyncConsumer(bootstrap, auto_offset_reset="earliest", max_poll_records=10000) as consumer:
        for part in range(PARTITIONS):
            consumer.assign([(TOPIC, part)])
            consumer.seek((TOPIC, part), 0)
            got: list[tuple[int, bytes]] = []
            while not got or got[-1][0] < ends[part] - 1:
                batch = consumer.poll(timeout_ms=2000)
                if not batch and (not got or got[-1][0] >= ends[part] - 1):
                    break
                got += [(r.offset, r.value) for r in batch]
            out[part] = got
    return out


def check(acks: Acks, log: dict[int, list[tuple[int, bytes]]]) -> dict[str, int]:
    where: dict[bytes, list[int]] = defaultdict(list)  # value -> offsets holding it
    partition_of: dict[bytes, int] = {}
    gaps = 0
    for part, records in log.items():
        offsets = [o for o, _ in records]
        gaps += sum(1 for a, b in zip(offsets, offsets[1:], strict=False) if b != a + 1)
        for offset, value in records:
            where[value].append(offset)
            partition_of[value] = part
    lost = reordered = 0
    for producer, acked in acks.by_producer.items():
        last_offset: dict[int, int] = {}
        for partition, _, value in sorted(acked, key=lambda a: a[2]):  # sequence order
            offsets = where.get(value)
            if not offsets:
                lost += 1
                print(f"LOST: {value!r} acknowledged by {producer} on partition {partition}", file=sys.stderr)
                continue
            if offsets[0] < last_offset.get(partition, -1):
                reordered += 1
            last_offset[partition] = offsets[0]
    duplicated = sorted((partition_of[value], offsets, value) for value, offsets in where.items() if len(offsets) > 1)
    for part, offsets, value in duplicated[:20]:
        print(f"DUPLICATE: {value!r} in partition {part} at offsets {offsets}", file=sys.stderr)
    duplicates = sum(len(o) - 1 for _, o, _ in duplicated)
    return {"lost": lost, "reordered": reordered, "duplicates": duplicates, "offset_gaps": gaps,
            "records_in_log": sum(len(r) for r in log.values())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=120, help="seconds of load (default 120)")
    ap.add_argument("--kill-every", type=float, default=6, help="mean seconds between SIGKILLs (default 6)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--data-dir", default=None, help="keep the data here (default: a temp dir, removed)")
    ap.add_argument("--json", default=None, help="also write the summary to this file")
    ap.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                    help="producers without idempotence: duplicates reported, not failures")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    data = args.data_dir or tempfile.mkdtemp(prefix="minibroker-chaos-")
    broker = BrokerProcess(os.path.join(data, "data"), overrides=[f"num.partitions={PARTITIONS}"]).start()
    broker.requested_port = broker.port  # restarts keep the port: the clients reconnect to it
    bootstrap = broker.bootstrap
    with SyncAdmin(bootstrap) as admin:
        admin.create_topic(TOPIC, num_partitions=PARTITIONS)
    acks = Acks()
    stop = threading.Event()
    admin_calls = [0]
    threads = [threading.Thread(target=run_confluent,
                                args=(bootstrap, acks, stop, random.Random(seed + 1), args.idempotence)),
               threading.Thread(target=run_ours, args=(bootstrap, acks, stop, random.Random(seed + 2), args.idempotence)),
               threading.Thread(target=run_admin, args=(bootstrap, stop, admin_calls), daemon=True)]
    for t in threads:
        t.start()
    kills = 0
    t_end = time.monotonic() + args.duration
    try:
        while time.monotonic() < t_end:
            time.sleep(min(rng.uniform(0.5, 1.5) * args.kill_every, max(0.0, t_end - time.monotonic())))
            if time.monotonic() >= t_end:
                break
            broker.kill()
            kills += 1
            broker.start(timeout=60)
            print(f"[{args.duration - (t_end - time.monotonic()):6.1f} s] kill {kills}: restarted;"
                  f" acknowledged so far {sum(len(v) for v in acks.by_producer.values())}", flush=True)
        stop.set()
        for t in threads[:2]:
            t.join(300)
        assert broker.stop() == 0, "the broker did not shut down cleanly"
        broker.start(timeout=60)
        log = read_all(bootstrap)
    finally:
        stop.set()
        broker.stop()
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    result = {"seed": seed, "duration_s": args.duration, "idempotence": args.idempotence, "kills": kills,
              "admin_calls": admin_calls[0],
              "acknowledged": {k: len(v) for k, v in acks.by_producer.items()},
              "failed_deliveries": dict(acks.errors), **check(acks, log)}
    print(json.dumps(result, indent=2))
    print(f"reproduce: .venv/bin/python scripts/chaos.py --duration {args.duration:g}"
          f" --kill-every {args.kill_every:g} --seed {seed}" + ("" if args.idempotence else " --no-idempotence"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    failed = result["lost"] or result["reordered"] or (args.idempotence and result["duplicates"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
