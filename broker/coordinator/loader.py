"""CoordinatorLoader: replays a coordinator's compacted internal topic at start-up, one partition
after another, for every coordinator that keeps its state in one (``__consumer_offsets``,
``__transaction_state``).

Per partition: a ``LogReplayReader`` reads chunks of about ``load_buffer_size`` bytes in a
worker thread, where the coordinator's ``decode`` also turns the records into its own
key/value objects (file reads, CRC checks and decoding stay off the event loop); its ``replay``
then applies them on the loop, and ``on_partition_loaded`` says when a partition is done.

A damaged batch costs only itself: the reader skips it and the loader logs it (partition,
file, position, the offsets due there, why) and goes on, so that the records committed after
the damage load too. An I/O error while reading a partition ends that partition's load with
an error line; the other partitions still load.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Generic, NamedTuple, TypeVar

from ..storage.log import Log
from ..storage.record_reader import LoggedRecord, LogReplayReader, RecordChunk

__all__ = ["CoordinatorLoader", "LoadSummary"]

logger = logging.getLogger("broker.coordinator.loader")

T = TypeVar("T")


class LoadSummary(NamedTuple):
    records: int          # records replayed
    skipped_batches: int  # damaged ranges skipped (each logged)
    failed_partitions: int  # partitions whose load ended early on an I/O error
    seconds: float


class CoordinatorLoader(Generic[T]):
    """``decode(partition, records) -> items`` runs in a worker thread; ``replay(partition,
    items)`` and ``on_partition_loaded(partition)`` run on the event loop."""

    def __init__(self, topic: str, get_log: Callable[[str, int], Log | None], load_buffer_size: int,
                 decode: Callable[[int, list[LoggedRecord]], list[T]],
                 replay: Callable[[int, list[T]], None],
                 on_partition_loaded: Callable[[int], None] | None = None) -> None:
        self.topic = topic
        self.get_log = get_log
        self.load_buffer_size = load_buffer_size
        self.decode = decode
        self.replay = replay
        self.on_partition_loaded = on_partition_loaded

    async def load(self, partitions: Iterable[int]) -> LoadSummary:
        t0 = time.perf_counter()
        records = skipped = failed = 0
        for p in partitions:
            n, s, ok = await self._load_partition(p)
            records, skipped, failed = records + n, skipped + s, failed + (not ok)
            if self.on_partition_loaded is not None:
                self.on_partition_loaded(p)
        return LoadSummary(records, skipped, failed, time.perf_counter() - t0)

    async def _load_partition(self, p: int) -> tuple[int, int, bool]:
        log = self.get_log(self.topic, p)
        if log is None:
            return 0, 0, True
        loop = asyncio.get_running_loop()
        reader = LogReplayReader(log)
        records = skipped = 0
        while True:
            try:
                chunk, items = await loop.run_in_executor(None, self._read, p, reader)
            except OSError as e:
                logger.error("%s-%d: cannot read the partition (%s); its state is loaded up to here", self.topic, p, e)
                return records, skipped, False
            for s in chunk.skipped:
                logger.error("%s-%d: %s; loading goes on after it", self.topic, p, s.describe())
            skipped += len(chunk.skipped)
            records += len(chunk.records)
            self.replay(p, items)
            if chunk.done:
                return records, skipped, True

    def _read(self, p: int, reader: LogReplayReader) -> tuple[RecordChunk, list[T]]:
        chunk = reader.next_chunk(self.load_buffer_size)
        return chunk, self.decode(p, chunk.records)
