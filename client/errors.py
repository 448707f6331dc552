"""Client-side errors: one ``KafkaError`` subclass per broker error code, with the flags the
client acts on (``retriable``: try again; ``invalid_metadata``: refresh metadata first), plus
local failures (``KafkaConnectionError``, ``KafkaTimeoutError``)."""

from __future__ import annotations

from client.protocol.api import ErrorCode

__all__ = ["KafkaError", "KafkaConnectionError", "KafkaTimeoutError", "error_for_code", "raise_for_code"]


class KafkaError(Exception):
    """Base of every client error. ``code`` is the Kafka error code (-1 for local errors)."""

    code: int = -1
    retriable: bool = False
    invalid_metadata: bool = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or type(self).__name__)


class KafkaConnectionError(KafkaError):
    """The broker could not be reached or the connection broke."""

    retriable = True
    invalid_metadata = True


class KafkaTimeoutError(KafkaError):
    """A request or operation did not complete in time."""

    retriable = True


_RETRIABLE = {
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE,
}
_INVALID_METADATA = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE,
}


def _class_name(code: ErrorCode) -> str:
    return "".join(part.capitalize() for part in code.name.split("_")) + "Error"


#: code -> exception class, e.g. ERRORS[3] is UnknownTopicOrPartitionError
ERRORS: dict[int, type[KafkaError]] = {}
for _code in ErrorCode:
    if _code == ErrorCode.NONE:
        continue
    _cls = type(_class_name(_code), (KafkaError,), {
        "code": int(_code), "retriable": _code in _RETRIABLE, "invalid_metadata": _code in _INVALID_METADATA,
        "__doc__": f"Broker error {int(_code)} {_code.name}.",
    })
    ERRORS[int(_code)] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)


def error_for_code(code: int, message: str = "") -> KafkaError:
    cls = ERRORS.get(code)
    if cls is None:
        err = KafkaError(message or f"broker error code {code}")
        err.code = code
        return err
    return cls(message or f"{cls.__name__} (error code {code})")


def raise_for_code(code: int, message: str = "") -> None:
    if code:
        raise error_for_code(code, message)
