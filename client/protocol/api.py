"""API keys, the version ranges minibroker serves, and Kafka's error codes."""

from __future__ import annotations

import enum

__all__ = ["ApiKey", "ErrorCode", "SUPPORTED_VERSIONS", "FLEXIBLE_FROM", "request_header_version",
           "response_header_version"]


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_CONFIGS = 32


#: Advertised ranges (reference/kafka_protocol.md §3 "Advertise"); keep the lower bounds:
#: librdkafka < 2.11.1 enables features only on exact versions (Produce 3, Fetch 4, ...).
#: Two more such gates, found with kcat (librdkafka 2.0.2) and confluent-kafka (2.16) in
#: tests/compat: gzip and snappy need Produce **v0** in range (rdkafka_msgset_writer.c
#: ``compr_req``: ApiVersion 0, checked as the exact range 0..0 before 2.11.1), and LZ4 needs
#: FindCoordinator v0 in *every* librdkafka version (rdkafka_feature.c: "GroupCoordinator was
#: released in 0.8.2"). Without them librdkafka silently sends those codecs uncompressed.
#: Produce v0-2 differ from v3 only in lacking transactional_id (and throttle_time_ms /
#: log_append_time_ms in the response); they normally carry magic 0/1 message sets, which this
#: broker does not store: such a partition gets UNSUPPORTED_FOR_MESSAGE_FORMAT (Kafka 4 dropped
#: Produce v0-2 altogether). Every client here sends v7.
SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 7),
    ApiKey.FETCH: (4, 11),
    ApiKey.LIST_OFFSETS: (1, 2),
    ApiKey.METADATA: (0, 4),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (0, 3),
    ApiKey.DELETE_TOPICS: (0, 1),
    ApiKey.INIT_PRODUCER_ID: (0, 1),
    ApiKey.DESCRIBE_CONFIGS: (0, 1),
    ApiKey.FIND_COORDINATOR: (0, 1),
}

#: First flexible version of each API (Kafka's JSON flexibleVersions).
FLEXIBLE_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 9, ApiKey.FETCH: 12, ApiKey.LIST_OFFSETS: 6, ApiKey.METADATA: 9,
    ApiKey.OFFSET_COMMIT: 8, ApiKey.OFFSET_FETCH: 6, ApiKey.FIND_COORDINATOR: 3,
    ApiKey.JOIN_GROUP: 6, ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 4, ApiKey.SYNC_GROUP: 4,
    ApiKey.SASL_HANDSHAKE: 1 << 30, ApiKey.API_VERSIONS: 3, ApiKey.CREATE_TOPICS: 5,
    ApiKey.DELETE_TOPICS: 4, ApiKey.INIT_PRODUCER_ID: 2, ApiKey.DESCRIBE_CONFIGS: 4,
}


def request_header_version(api_key: int, api_version: int) -> int:
    """2 (with a tag buffer) for flexible requests, else 1."""
    return 2 if api_version >= FLEXIBLE_FROM.get(api_key, 1 << 30) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 (with a tag buffer) for flexible responses, else 0 — and always 0 for ApiVersions
    (KIP-511: a client must be able to read it before it knows the broker's versions)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if api_version >= FLEXIBLE_FROM.get(api_key, 1 << 30) else 0


class ErrorCode(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    TOPIC_DELETION_DISABLED = 73
    UNSUPPORTED_COMPRESSION_TYPE = 76
    MEMBER_ID_REQUIRED = 79
    GROUP_ID_NOT_FOUND = 69
    INVALID_RECORD = 87
