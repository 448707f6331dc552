"""The open-files budget: how many partitions this process can hold, so that a request can never
leave the broker unable to open what it accepted.

Every partition keeps its active segment open: the ``.log`` and the two index files (each index
mapping holds a descriptor), ``FDS_PER_PARTITION``. Inactive segments' ``.log`` files are opened
on demand under the ``OpenFiles`` LRU. Sockets, pipes, checkpoints and everything else take the
reserve. With ``RLIMIT_NOFILE`` soft limit L (raised to the hard limit at start-up)::

    reserve     = max(1024, L / 8)                 sockets and the rest
    LRU         = max(64, L / 4)                   inactive segments' .log files
    partitions  = (L - reserve - LRU) / 3

A data directory that already holds more partitions than that (the limit was lowered, or the
directory came from elsewhere) shrinks the LRU, down to 64, to open them; past that, the start
logs how many descriptors it needs, and the partitions that cannot be opened go offline one by
one instead of taking the broker down. Creating topics or partitions beyond the budget is
refused with POLICY_VIOLATION and a message naming the limit (Kafka has no such limit; its JVM
would fail with "Too many open files" and take the log dir offline).
"""

from __future__ import annotations

import logging
import resource

from .errors import PolicyViolationError

__all__ = ["FDS_PER_PARTITION", "PartitionBudget", "raise_fd_limit"]

logger = logging.getLogger(__name__)

FDS_PER_PARTITION = 3
_MIN_LRU = 64


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; the soft limit in force."""
    soft = 4096
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            logger.info("raised the open files limit (RLIMIT_NOFILE) from %d to %d", soft, target)
            soft = target
    except (ValueError, OSError) as e:
        logger.warning("cannot raise the open files limit: %s", e)
    return soft


class PartitionBudget:
    def __init__(self, fd_limit: int, partitions_on_disk: int = 0) -> None:
        self.fd_limit = fd_limit
        self.reserve = max(1024, fd_limit // 8)
        lru = max(_MIN_LRU, fd_limit // 4)
        self.max_partitions = max(0, (fd_limit - self.reserve - lru) // FDS_PER_PARTITION)
        if partitions_on_disk > self.max_partitions:
            lru = max(_MIN_LRU, fd_limit - self.reserve - partitions_on_disk * FDS_PER_PARTITION)
            self.max_partitions = max(partitions_on_disk,
                                      (fd_limit - self.reserve - lru) // FDS_PER_PARTITION)
            needed = partitions_on_disk * FDS_PER_PARTITION + self.reserve + _MIN_LRU
            if needed > fd_limit:
                logger.error("the data directory holds %d partitions, which need about %d open files; the open files"
                             " limit (RLIMIT_NOFILE) is %d: raise it (ulimit -n), or partitions that cannot be opened"
                             " go offline", partitions_on_disk, needed, fd_limit)
        #: what the ``OpenFiles`` LRU may hold (``LogManager.startup`` sets it)
        self.lru = lru

    def check(self, current: int, adding: int) -> None:
        """Raise PolicyViolationError if ``adding`` more partitions would pass the budget."""
        if current + adding > self.max_partitions:
            raise PolicyViolationError(
                f"cannot add {adding} partitions: this broker holds {current} and can keep at most"
                f" {self.max_partitions} open with its open files limit (RLIMIT_NOFILE) of {self.fd_limit};"
                " raise the limit (ulimit -n) and restart to hold more")
