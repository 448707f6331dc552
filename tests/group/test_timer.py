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
        due: dict[int, float] = {}

        def fire(k: int) -> None:
            fired.append((k, loop.time()))

        for k in range(500):
            delay = rng.randint(0, 60)
            due[k] = loop.time() + delay / 1000
            timer.schedule(k, delay, lambda k=k: fire(k))
        for k in rng.sample(range(500), 100):  # rescheduled: only the new deadline counts
            delay = rng.randint(0, 60)
            due[k] = loop.time() + delay / 1000
            timer.schedule(k, delay, lambda k=k: fire(k))
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
                assert at >= due[k] - 0.001  # never early (the loop's clock resolution aside)
        # in deadline order: the test's deadlines are read just before each schedule call, the
        # timer's just after, so two keys due within a few microseconds may swap
        order = [due[k] for k in keys if k != -1]
        assert all(b >= a - 0.002 for a, b in zip(order, order[1:]))
        timer.close()

    asyncio.run(main())
