"""client/errors.py: one class per Kafka error code, with Kafka's retriable / invalid-metadata
flags, and the storage / record exceptions carrying the same codes."""

from __future__ import annotations

import client.errors as errors
from broker.storage import errors as storage_errors
from client.protocol.api import ErrorCode, error_name
from client.records import batch


def test_one_written_out_class_per_error_code() -> None:
    codes = {int(c) for c in ErrorCode if c != ErrorCode.NONE}
    assert set(errors.ERRORS) == codes
    for code, cls in errors.ERRORS.items():
        name = "".join(p.capitalize() for p in error_name(code).split("_")) + "Error"
        assert cls.__name__ == name and getattr(errors, name) is cls and cls.code == code
        assert issubclass(cls, errors.KafkaError) and name in errors.__all__


def test_flags_are_kafkas() -> None:
    """Kafka's Java client: RetriableException and InvalidMetadataException subclasses."""
    e = errors
    assert e.UnknownTopicOrPartitionError.retriable and e.UnknownTopicOrPartitionError.invalid_metadata
    assert e.NotLeaderOrFollowerError.retriable and e.NotLeaderOrFollowerError.invalid_metadata
    assert e.NetworkExceptionError.retriable and e.NetworkExceptionError.invalid_metadata
    assert e.NotCoordinatorError.retriable and not e.NotCoordinatorError.invalid_metadata
    assert e.CorruptMessageError.retriable and not e.CorruptMessageError.invalid_metadata
    assert not e.TopicAlreadyExistsError.retriable and not e.InvalidRecordError.retriable
    assert not e.OutOfOrderSequenceNumberError.retriable
    assert e.error_for_code(3).code == 3 and isinstance(e.error_for_code(3), e.UnknownTopicOrPartitionError)
    assert e.error_for_code(9999).code == 9999


def test_storage_and_record_exceptions_use_kafkas_codes() -> None:
    assert storage_errors.KafkaStorageError.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert storage_errors.TopicExistsError.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    for cls, code in ((batch.CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
                      (batch.InvalidRecordError, ErrorCode.INVALID_RECORD),
                      (batch.UnsupportedMagicError, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
                      (batch.UnsupportedCompressionTypeError, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)):
        assert cls.error_code == code, cls
