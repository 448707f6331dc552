"""A share-group consumer in its own process, for tests/compat/test_share_groups.py: a
confluent-kafka ``ShareConsumer`` (explicit acknowledgement) that writes ``offset
delivery_count ack`` for every record it is given to ``--out`` (flushed, before it
acknowledges), then ``C offset`` for each once ``commit_sync`` says its acknowledgement is
stored, and acknowledges by ``--mode``:

- ``accept``: every record;
- ``reject=N,M`` / ``release=N,M``: those offsets rejected / released, the others accepted;
- ``hold``: nothing (it keeps what it acquired, to be SIGKILLed holding records);
- ``slow``: accept each record 5 ms after it came (records spend time in flight).

It stops cleanly (commit, close) when ``--stop`` appears.

    python -m tests.compat.share_worker BOOTSTRAP TOPIC GROUP --out F --stop F [--mode accept]
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("bootstrap")
    p.add_argument("topic")
    p.add_argument("group")
    p.add_argument("--out", required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--mode", default="accept")
    a = p.parse_args()
    from confluent_kafka import AcknowledgeType, ShareConsumer

    special: dict[int, int] = {}
    if a.mode.startswith(("reject=", "release=")):
        kind, offsets = a.mode.split("=")
        t = AcknowledgeType.REJECT if kind == "reject" else AcknowledgeType.RELEASE
        special = {int(o): t for o in offsets.split(",")}
    c = ShareConsumer({"bootstrap.servers": a.bootstrap, "group.id": a.group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([a.topic])
    out = open(a.out, "a", buffering=1)
    while not os.path.exists(a.stop):
        batch = c.poll(0.2)
        msgs = [m for m in (list(batch) if batch is not None else []) if m.error() is None]
        for m in msgs:
            t = special.get(m.offset(), AcknowledgeType.ACCEPT)
            name = "hold" if a.mode == "hold" else {AcknowledgeType.ACCEPT: "accept", AcknowledgeType.REJECT: "reject",
                                                    AcknowledgeType.RELEASE: "release"}[t]
            out.write(f"{m.offset()} {m.delivery_count()} {name}\n")
            if a.mode == "hold":
                continue
            if a.mode == "slow":
                time.sleep(0.005)
            c.acknowledge(m, t)
        if msgs and a.mode == "hold":
            while not os.path.exists(a.stop):  # keep the records locked until killed
                time.sleep(0.1)
            break
        if msgs:
            try:
                results = c.commit_sync(10)
            except Exception as e:  # noqa: BLE001 - logged; the records come back
                out.write(f"# commit failed: {e}\n")
                continue
            if all(err is None for err in results.values()):
                for m in msgs:  # durable: the broker answered the acknowledgement
                    out.write(f"C {m.offset()}\n")
            else:
                out.write(f"# commit failed: {results}\n")
    c.close()


if __name__ == "__main__":
    main()
