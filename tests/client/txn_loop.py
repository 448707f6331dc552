"""A consume-transform-produce loop with our client, run as a child process by
tests/client/test_transactions.py (which kills it with SIGKILL at random points).

``python -m tests.client.txn_loop BOOTSTRAP SRC DST GROUP TRANSACTIONAL_ID``: for every record
of SRC (read with read_committed from GROUP's committed offsets) it sends ``out-<value>`` to the
same partition of DST, in transactions that also commit GROUP's offsets. Prints ``ready``,
``sent`` once a transaction's output is written (acknowledged, not committed), ``committed N``
after each transaction and ``done`` once every partition of SRC is consumed to its end (it
keeps running; the parent kills it)."""

from __future__ import annotations

import asyncio
import sys

from client import Consumer, Producer


async def main(bs: str, src: str, dst: str, group: str, txid: str) -> None:
    async with Producer(bs, transactional_id=txid, linger_ms=2) as p:
        await p.init_transactions()  # fences a killed predecessor and aborts its transaction
        async with Consumer(bs, group_id=group, isolation_level="read_committed", enable_auto_commit=False,
                            auto_offset_reset="earliest", fetch_max_wait_ms=50) as c:
            tps = [(src, part) for part in sorted(await c.partitions_for_topic(src))]
            c.assign(tps)
            for tp, om in (await c.committed(tps)).items():  # stable: no commit pending now
                if om is not None:
                    c.seek(tp, om.offset)
            ends = await c.end_offsets(tps)
            print("ready", flush=True)
            done = False
            while True:
                got = await c.getmany(timeout_ms=100, max_records=20)
                if not got:
                    if not done and all([await c.position(tp) >= ends[tp] for tp in tps]):
                        print("done", flush=True)
                        done = True
                    continue
                p.begin_transaction()
                for tp, rows in got.items():
                    for r in rows:
                        p.send_nowait(dst, b"out-" + (r.value or b""), partition=tp.partition)
                await p.flush()  # the output is in the log, the transaction still open
                print("sent", flush=True)
                await p.send_offsets_to_transaction({tp: rows[-1].offset + 1 for tp, rows in got.items()},
                                                    c.group_metadata())
                await p.commit_transaction()
                print("committed", sum(len(rows) for rows in got.values()), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
