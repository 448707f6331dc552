"""AsyncioTimer (broker/group/runtime.py): one loop handle for every deadline. Each live key
fires once, in deadline order, at or after its deadline; a rescheduled key fires at its new
deadline only; a cancelled key never fires; a callback may schedule more."""

from __future__ import annotations

import asyncio
import random

from broker.group.runtime import AsyncioTimer


def test_keys_fire_once_in_deadline_order_and_cancelled_ones_never() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        timer = AsyncioTimer()
        rng = random.Random(3)
        fired: list[tuple[int, float]] = []
        # each key's deadline lies in [lo, hi]: the loop's clock read just before and just after
        # its schedule call, plus the delay (a busy machine can preempt between the two reads)
        lo: dict[int, float] = {}
        hi: dict[int, float] = {}

        def schedule(k: int, delay: int) -> None:
            lo[k] = loop.time() + delay / 1000
            timer.schedule(k, delay, lambda: fire(k))
            hi[k] = loop.time() + delay / 1000

        def fire(k: int) -> None:
            fired.append((k, loop.time()))

        for k in range(500):
            schedule(k, rng.randint(0, 60))
        for k in rng.sample(range(500), 100):  # rescheduled: only the new deadline counts
            schedule(k, rng.randint(0, 60))
        cancelled = set(rng.sample(range(500), 50))
        for k in cancelled:
            timer.cancel(k)
        # a callback that schedules another key, earlier than keys already waiting
        timer.schedule("chain", 5, lambda: timer.schedule("chained", 1, lambda: fire(-1)))
        await asyncio.sleep(0.2)
        keys = [k for k, _ in fired]
        assert sorted(k for k in keys if k != -1) == sorted(set(range(500)) - cancelled)
        assert keys.count(-1) == 1
        for k, at in fired:
            if k != -1:
                assert at >= lo[k] - 0.001  # never early (the loop's clock resolution aside)
        # in deadline order: a key fired after another cannot have been due surely before it
        order = [k for k in keys if k != -1]
        assert all(hi[b] >= lo[a] - 0.001 for a, b in zip(order, order[1:]))
        timer.close()

    asyncio.run(main())
