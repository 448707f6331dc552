"""Log compaction (``cleanup.policy=compact``), as Kafka's log cleaner does it.

- offset_map.py    key -> last offset of a cleaning's dirty range, bounded in memory
- batch_filter.py  what happens to one stored batch: kept, rewritten, emptied or dropped
- cleaner.py       one cleaning of one log: map, group, write ``.cleaned``, swap
- manager.py       the cleaner threads, the choice of log, ``cleaner-offset-checkpoint``
- worker.py        ``log.cleaner.mode=process``: the worker process a cleaner thread drives
- throttler.py     ``log.cleaner.io.max.bytes.per.second``
"""

from .cleaner import Cleaner, CleanerStats, LogToClean, run_inline
from .manager import CLEANER_OFFSET_CHECKPOINT, CleanerConfig, LogCleaner, cleanable_offsets
from .offset_map import OffsetMap
from .throttler import Throttler

__all__ = ["Cleaner", "CleanerStats", "LogToClean", "run_inline", "CLEANER_OFFSET_CHECKPOINT", "CleanerConfig",
           "LogCleaner", "cleanable_offsets", "OffsetMap", "Throttler"]
