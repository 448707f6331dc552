#!/usr/bin/env python3
"""What authorization costs: two broker processes side by side, one without an authorizer and
one with ``authorizer.class.name=...StandardAuthorizer`` and ``--acls`` ACLs (half LITERAL,
half PREFIXED, for other principals and resources, plus the few that let the benchmark's own
principal — ``User:ANONYMOUS`` on a PLAINTEXT listener — write and read its topic and its
group), runs alternating between them:

- **W1 produce**: confluent-kafka's Producer with its default configs, 100-byte values,
  1 partition, acks=1: records/s, the broker's CPU per record and per Produce request;
- **W2 consume**: a confluent-kafka Consumer reading the records back from offset 0:
  records/s and the broker's CPU per Fetch request.

Requests are counted from each broker's metrics (``minibroker_requests_total``), CPU from
/proc. The ACLs are written into the data directory's ``acls.json`` (the broker's own store)
before the broker starts. Reports the medians and the on/off ratio (target >= 0.9x).

    .venv/bin/python scripts/bench_acls.py                  # 10,000 ACLs, 1M records, 3 runs each
    .venv/bin/python scripts/bench_acls.py --quick
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench  # noqa: E402 - scripts/bench.py: the rdkafka logger
from _benchutil import proc_cpu_split  # noqa: E402

from broker.authorizer.acl import (  # noqa: E402
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.authorizer.acl_store import AclStore  # noqa: E402
from broker.authorizer.standard_authorizer import AUTHORIZER_CLASS_NAME  # noqa: E402
from broker.testing.process import BrokerProcess  # noqa: E402

COMMAND = "scripts/bench_acls.py"
TOPIC_PREFIX = "bench-acl"
GROUP = "bench-acl-group"


def acl_set(n: int) -> list[AclBinding]:
    """``n`` ACLs of other principals (half LITERAL topics and groups, half PREFIXED), and the
    benchmark's own: WRITE and READ on the topics it uses, READ on its group."""
    out = []
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    for i in range(n):
        pattern = PatternType.LITERAL if i % 2 == 0 else PatternType.PREFIXED
        rtype = ResourceType.TOPIC if i % 4 < 2 else ResourceType.GROUP
        name = f"app-{i % 997}-{i}" if pattern == PatternType.LITERAL else f"team-{i % 211}-{i % 13}-{i}"
        op = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE)[i % 3]
        out.append(AclBinding(ResourcePattern(rtype, name, pattern),
                              AccessControlEntry(f"User:user-{i % 500}", "*", op, deny if i % 50 == 0 else allow)))
    mine = "User:ANONYMOUS"
    for op in (AclOperation.WRITE, AclOperation.READ):
        out.append(AclBinding(ResourcePattern(ResourceType.TOPIC, TOPIC_PREFIX, PatternType.PREFIXED),
                              AccessControlEntry(mine, "*", op, allow)))
    out.append(AclBinding(ResourcePattern(ResourceType.GROUP, GROUP, PatternType.PREFIXED),
                          AccessControlEntry(mine, "*", AclOperation.READ, allow)))
    out.append(AclBinding(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                          AccessControlEntry(mine, "*", AclOperation.CREATE, allow)))
    return out


def requests_of(broker: BrokerProcess, api: str) -> float:
    pattern = re.compile(rf'^minibroker_requests_total{{api="{api}",version="\d+"}} (\S+)$', re.M)
    return sum(float(v) for v in pattern.findall(broker.scrape()))


def cpu_s(pid: int) -> float:
    return float(sum(proc_cpu_split(pid)))


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "logger": bench._rdkafka_logger()})
    value = b"x" * 100
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.001)
    if p.flush(120):
        raise RuntimeError("records not delivered")


def consume(bootstrap: str, topic: str, n: int, run: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{GROUP}-{run}", "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 0, "logger": bench._rdkafka_logger()})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = 0, time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(10000, 1.0) if m.error() is None)
    c.close()
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--acls", type=int, default=10_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="300k records, 2 runs each")
    args = ap.parse_args()
    if args.quick:
        args.records, args.repeats = 300_000, 2
    work = tempfile.mkdtemp(prefix="bench-acls-")
    on_dir = os.path.join(work, "on")
    os.makedirs(on_dir)
    store = AclStore(on_dir)
    store.create(acl_set(args.acls))
    print(f"== {len(store):,} ACLs in {on_dir}/acls.json")
    brokers = {
        "off": BrokerProcess(os.path.join(work, "off"), ["num.partitions=1"], metrics=True, log_level="WARNING"),
        "on": BrokerProcess(on_dir, ["num.partitions=1", f"authorizer.class.name={AUTHORIZER_CLASS_NAME}"],
                            metrics=True, log_level="WARNING"),
    }
    rows: dict[str, list[dict[str, float]]] = {}
    try:
        for b in brokers.values():
            b.start(timeout=30)
        print(f"== W1 produce then W2 consume, {args.records:,} x 100-byte records, confluent-kafka defaults,"
              f" {args.repeats} runs each, alternating off/on")
        for r in range(args.repeats):
            for name, b in brokers.items():
                topic = f"{TOPIC_PREFIX}-{r}"
                produce(b.bootstrap, topic, 1)  # metadata, topic creation: not timed
                req0, c0, t0 = requests_of(b, "PRODUCE"), cpu_s(b.pid), time.perf_counter()
                produce(b.bootstrap, topic, args.records)
                wall, cpu, reqs = time.perf_counter() - t0, cpu_s(b.pid) - c0, requests_of(b, "PRODUCE") - req0
                w1 = {"rps": args.records / wall, "us_per_record": cpu / args.records * 1e6,
                      "us_per_request": cpu / max(reqs, 1) * 1e6, "requests": reqs}
                rows.setdefault(f"w1 {name}", []).append(w1)
                f0, c0, t0 = requests_of(b, "FETCH"), cpu_s(b.pid), time.perf_counter()
                consume(b.bootstrap, topic, args.records + 1, f"{name}-{r}")
                wall, cpu, reqs = time.perf_counter() - t0, cpu_s(b.pid) - c0, requests_of(b, "FETCH") - f0
                w2 = {"rps": (args.records + 1) / wall, "us_per_request": cpu / max(reqs, 1) * 1e6, "requests": reqs}
                rows.setdefault(f"w2 {name}", []).append(w2)
                print(f"  {name:<3} run {r + 1}: W1 {w1['rps']:>10,.0f} rec/s, {w1['us_per_record']:.2f} us CPU/record,"
                      f" {w1['us_per_request']:.0f} us CPU/Produce ({w1['requests']:.0f} requests);"
                      f" W2 {w2['rps']:>10,.0f} rec/s, {w2['us_per_request']:.0f} us CPU/Fetch"
                      f" ({w2['requests']:.0f} requests)")
        print("\n== summary (medians)")
        for w in ("w1", "w2"):
            off = statistics.median(x["rps"] for x in rows[f"{w} off"])
            on = statistics.median(x["rps"] for x in rows[f"{w} on"])
            cpu_off = statistics.median(x["us_per_request"] for x in rows[f"{w} off"])
            cpu_on = statistics.median(x["us_per_request"] for x in rows[f"{w} on"])
            what = "W1 produce" if w == "w1" else "W2 consume"
            print(f"  {what}: off {off:,.0f} rec/s, on ({args.acls:,} ACLs) {on:,.0f} rec/s: {on / off:.2f}x"
                  f" (target >= 0.9x); broker CPU per {'Produce' if w == 'w1' else 'Fetch'} request"
                  f" {cpu_off:.0f} -> {cpu_on:.0f} us ({cpu_on - cpu_off:+.0f} us)")
        print(f"  reproduce: .venv/bin/python {COMMAND}" + (" --quick" if args.quick else ""))
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
