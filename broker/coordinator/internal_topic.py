"""InternalTopic: a coordinator's compacted internal topic (``__consumer_offsets``,
``__transaction_state``), and ``CoordinatorHost``, what a coordinator runtime uses of the broker.

The topic is created when the coordinator first needs it (a client looks for its coordinator,
or a record must be written), as Kafka does: ``num_partitions`` partitions (the coordinator's
``*.num.partitions`` config), ``cleanup.policy=compact``, ``segment.bytes`` from the
coordinator's ``*.segment.bytes``. Keys are placed by ``num_partitions``; at start-up an
existing topic's own partition count wins over the config (``adopt_existing``), since moving
keys would lose them, and the difference is logged.

Writes: ``append`` appends one batch to a partition; ``append_durable`` also waits until an
fsync covers it (the broker's group commit: one fsync per file covers every waiter). A
coordinator answers a request that depends on a record only once that record is durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from ..config import BrokerConfig
from ..storage.errors import TopicExistsError
from ..storage.log import Log, LogAppendInfo
from ..storage.log_manager import LogManager
from ..storage.record_reader import LoggedRecord
from .loader import CoordinatorLoader, LoadSummary

__all__ = ["CoordinatorHost", "InternalTopic"]

logger = logging.getLogger("broker.coordinator")

T = TypeVar("T")


class CoordinatorHost(Protocol):
    """The broker as a coordinator runtime sees it (``BrokerState`` is one)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def logs(self) -> LogManager: ...

    async def durable(self, log: Log, offset: int) -> None:
        """Return once every offset below ``offset`` of ``log`` is fsync'd."""

    def notify_append(self, topic: str, partition: int) -> None:
        """Wake the fetches long-polling ``topic-partition``."""


class InternalTopic:
    """One coordinator's internal topic on ``host`` (see the module docstring)."""

    def __init__(self, host: CoordinatorHost, name: str, num_partitions: int, segment_bytes: int,
                 load_buffer_size: int, partitions_config: str, topic_configs: dict[str, str] | None = None) -> None:
        self.host = host
        self.name = name
        #: the partition count keys are placed by (the config, or the existing topic's)
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.load_buffer_size = load_buffer_size
        #: the config named in the log line when an existing topic's count differs
        self.partitions_config = partitions_config
        #: the topic configs it is created with (default: compacted, ``segment_bytes``)
        self.topic_configs = topic_configs if topic_configs is not None else {
            "cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}

    def ensure(self) -> None:
        """Create the topic unless it exists (a StorageError if it cannot)."""
        logs = self.host.logs
        if self.name in logs.partition_counts():
            return
        try:
            logs.create_topic(self.name, self.num_partitions, dict(self.topic_configs))
        except TopicExistsError:
            pass

    def log(self, partition: int) -> Log:
        """The log of ``partition``, creating the topic first if needed."""
        self.ensure()
        return self.host.logs.log_or_raise(self.name, partition)

    def append(self, partition: int, batch: bytes | bytearray, *, from_coordinator: bool = False) -> tuple[Log, LogAppendInfo]:
        """Append ``batch`` (one encoded RecordBatch) to ``partition``; ``from_coordinator``
        for a transaction marker or a transactional batch written by a coordinator."""
        log = self.log(partition)
        return log, log.append(batch, from_coordinator=from_coordinator)

    async def append_durable(self, partition: int, batch: bytes | bytearray) -> LogAppendInfo:
        """``append``, then wait until an fsync covers the batch."""
        log, info = self.append(partition, batch)
        await self.host.durable(log, info.last_offset + 1)
        return info

    def adopt_existing(self) -> int | None:
        """At start-up: the existing topic's partition count (None when it does not exist yet),
        which becomes ``num_partitions``."""
        info = self.host.logs.topic(self.name)
        if info is None:
            return None
        if info.partitions != self.num_partitions:
            logger.warning("%s has %d partitions but %s is %d: keys are placed by the topic's count",
                           self.name, info.partitions, self.partitions_config, self.num_partitions)
            self.num_partitions = info.partitions
        return info.partitions

    async def load(self, decode: Callable[[int, list[LoggedRecord]], list[T]], replay: Callable[[int, list[T]], None],
                   on_partition_loaded: Callable[[int], None] | None = None) -> LoadSummary:
        """Replay every partition (``CoordinatorLoader``); the caller logs the summary."""
        loader: CoordinatorLoader[T] = CoordinatorLoader(self.name, self.host.logs.get_log, self.load_buffer_size,
                                                         decode, replay, on_partition_loaded)
        return await loader.load(range(self.num_partitions))
