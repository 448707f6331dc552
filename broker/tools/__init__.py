"""Offline tools over a partition's files, each also a ``minibroker`` subcommand.

- ``dump_log``: Kafka's DumpLogSegments (``minibroker dump-log``) for ``.log``, ``.index``,
  ``.timeindex``, ``.txnindex`` and ``.snapshot`` files. Opens everything read-only, so it is
  safe on a live segment.
"""

from .dump_log import dump_files

__all__ = ["dump_files"]
