"""Storage exceptions, named after Kafka's.

Record-level problems (bad CRC, wrong magic, truncated batch) raise the ``client.records``
exceptions (CorruptRecordError, UnsupportedMagicError, ...), each carrying its Kafka error code.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of storage failures. ``error_code`` is the Kafka wire error code."""

    error_code = -1  # UNKNOWN_SERVER_ERROR


class CorruptIndexError(StorageError):
    """An index file fails its sanity check (Kafka: CorruptIndexException)."""


class InvalidOffsetError(StorageError):
    """An index append with an offset not larger than the last one (InvalidOffsetException)."""


class IndexOffsetOverflowError(StorageError):
    """offset - baseOffset does not fit in an int32 (IndexOffsetOverflowException)."""


class IndexFullError(StorageError):
    """Append to a full index (Kafka throws IllegalArgumentException)."""


class LogSegmentOffsetOverflowError(StorageError):
    """A batch's last offset cannot be stored relative to the segment's base offset."""


class OffsetOutOfRangeError(StorageError):
    """A read below the log start offset or above the log end offset."""

    error_code = 1  # OFFSET_OUT_OF_RANGE


class RecordTooLargeError(StorageError):
    """A batch larger than max.message.bytes (Kafka: RecordTooLargeException)."""

    error_code = 10  # MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(StorageError):
    """An append larger than segment.bytes (Kafka: RecordBatchTooLargeException)."""

    error_code = 18  # RECORD_LIST_TOO_LARGE


class InvalidTopicError(StorageError):
    """A topic name that Kafka would reject (INVALID_TOPIC_EXCEPTION)."""

    error_code = 17


class InvalidConfigError(StorageError):
    """An unknown config name or an out-of-range value (INVALID_CONFIG)."""

    error_code = 40


class UnknownTopicOrPartitionError(StorageError):
    error_code = 3


class TopicExistsError(StorageError):
    error_code = 36  # TOPIC_ALREADY_EXISTS


class KafkaStorageError(StorageError):
    """The log is closed or deleted, or an I/O error made it unusable (KAFKA_STORAGE_ERROR)."""

    error_code = 56


class InconsistentMetaPropertiesError(KafkaStorageError):
    """``meta.properties`` does not parse, or names another node: the broker refuses to start
    on a data directory it cannot vouch for (Kafka does the same)."""
