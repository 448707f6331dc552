"""Storage exceptions, named after Kafka's.

Record-level problems (bad CRC, wrong magic, truncated batch) raise the ``client.records``
exceptions (CorruptRecordError, UnsupportedMagicError, ...), each carrying its Kafka error code.
"""

from __future__ import annotations

from client.protocol.api import ErrorCode

from ..errors import ApiError


class StorageError(ApiError):
    """Base class of storage failures. ``error_code`` is the Kafka wire error code."""


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

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class RecordTooLargeError(StorageError):
    """A batch larger than max.message.bytes (Kafka: RecordTooLargeException)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(StorageError):
    """An append larger than segment.bytes (Kafka: RecordBatchTooLargeException)."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class RecordValidationError(StorageError):
    """Records of a producer's batch refused one by one (Kafka's RecordValidationException,
    KIP-467): a record without a key on a compacted topic, a timestamp out of bounds, a
    LogAppendTime a producer may not set. ``record_errors`` holds (index of the record in its
    batch, why) for each refused record, in record order: Produce v8+ answers them as
    ``record_errors``. ``error_code`` is INVALID_TIMESTAMP when any of them is a timestamp's,
    else INVALID_RECORD; the message is Kafka's (``record_validation_error`` makes both)."""

    def __init__(self, message: str, record_errors: list[tuple[int, str]], *, error_code: int) -> None:
        super().__init__(message, error_code=error_code)
        self.record_errors = record_errors


class PolicyViolationError(StorageError):
    """A request the topic's configuration forbids (DeleteRecords on a compact-only topic)."""

    error_code = ErrorCode.POLICY_VIOLATION


class InvalidTopicError(StorageError):
    """A topic name that Kafka would reject (INVALID_TOPIC_EXCEPTION)."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidConfigError(StorageError):
    """An unknown config name or an out-of-range value (INVALID_CONFIG)."""

    error_code = ErrorCode.INVALID_CONFIG


class InvalidPartitionsError(StorageError):
    """A partition count that is not allowed (CreatePartitions: not an increase)."""

    error_code = ErrorCode.INVALID_PARTITIONS


class UnknownTopicOrPartitionError(StorageError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class TopicExistsError(StorageError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class KafkaStorageError(StorageError):
    """The log is closed or deleted, or an I/O error made it unusable (KAFKA_STORAGE_ERROR)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class InconsistentMetaPropertiesError(KafkaStorageError):
    """``meta.properties`` does not parse, or names another node: the broker refuses to start
    on a data directory it cannot vouch for (Kafka does the same)."""


class LogDirError(KafkaStorageError):
    """The data directory (``log.dirs``) cannot be created, is not a directory, or cannot be
    written: the broker refuses to start (Kafka takes such a directory offline, and shuts down
    when none is left)."""


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not continue its sequence (a gap, or a new epoch
    not starting at 0)."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """A batch from an older epoch of its producer id (the producer was fenced or bumped)."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer with a transaction open."""

    error_code = ErrorCode.INVALID_TXN_STATE


class CorruptSnapshotError(StorageError):
    """A producer state snapshot that cannot be trusted (version, CRC, size): it is deleted."""


class LogCleaningAbortedError(StorageError):
    """A cleaning was given up: the log was closed or deleted, its segments changed under the
    cleaner (retention, truncation), or the cleaner is shutting down. Nothing was swapped in."""
