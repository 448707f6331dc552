"""Client-side errors: one ``KafkaError`` subclass per broker error code, with the flags the
client acts on, plus local failures (``KafkaConnectionError``, ``KafkaTimeoutError``,
``IllegalStateError``, ``TransactionAbortedError``).

- ``retriable``: the operation may succeed if tried again (Kafka's Java client: the exception
  extends RetriableException); the producer and consumer retry these themselves.
- ``invalid_metadata``: refresh the cluster metadata before retrying (the Java exception extends
  InvalidMetadataException).

One class per code of ``client.protocol.api.ErrorCode`` (Kafka 3.9), named after the code
(``UNKNOWN_TOPIC_OR_PARTITION`` -> ``UnknownTopicOrPartitionError``); ``ERRORS[code]`` maps a
code to its class. tests/client/test_errors.py checks the two stay in step.

Transactions (``Producer(transactional_id=...)``) use three of them as Kafka's producer does:
``ProducerFencedError`` is fatal (another producer took the transactional id, or the
coordinator aborted a timed-out transaction under a new epoch: close the producer),
``TransactionAbortableError`` says the transaction cannot commit and must be aborted (its
``__cause__`` is the failure that made it so), and ``TransactionAbortedError`` fails the
records dropped by an abort.
"""

from __future__ import annotations

from client.protocol.api import ErrorCode


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


class IllegalStateError(KafkaError):
    """A method was called in a state that does not allow it (Kafka's IllegalStateException):
    a partition not assigned to this consumer, a transactional method out of order
    (``commit_transaction`` without ``begin_transaction``), a send outside a transaction."""


class TransactionAbortedError(KafkaError):
    """The record was not sent: its transaction was aborted first (Kafka's
    TransactionAbortedException). Its batch had not been sent when ``abort_transaction``
    began, so it was dropped."""


# ---------------------------------------------------------------- one class per error code


class UnknownServerErrorError(KafkaError):
    """Broker error -1 (UNKNOWN_SERVER_ERROR)."""

    code = -1


class OffsetOutOfRangeError(KafkaError):
    """Broker error 1 (OFFSET_OUT_OF_RANGE)."""

    code = 1


class CorruptMessageError(KafkaError):
    """Broker error 2 (CORRUPT_MESSAGE)."""

    code = 2
    retriable = True


class UnknownTopicOrPartitionError(KafkaError):
    """Broker error 3 (UNKNOWN_TOPIC_OR_PARTITION)."""

    code = 3
    retriable = True
    invalid_metadata = True


class InvalidFetchSizeError(KafkaError):
    """Broker error 4 (INVALID_FETCH_SIZE)."""

    code = 4


class LeaderNotAvailableError(KafkaError):
    """Broker error 5 (LEADER_NOT_AVAILABLE)."""

    code = 5
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollowerError(KafkaError):
    """Broker error 6 (NOT_LEADER_OR_FOLLOWER)."""

    code = 6
    retriable = True
    invalid_metadata = True


class RequestTimedOutError(KafkaError):
    """Broker error 7 (REQUEST_TIMED_OUT)."""

    code = 7
    retriable = True


class BrokerNotAvailableError(KafkaError):
    """Broker error 8 (BROKER_NOT_AVAILABLE)."""

    code = 8


class ReplicaNotAvailableError(KafkaError):
    """Broker error 9 (REPLICA_NOT_AVAILABLE)."""

    code = 9
    retriable = True
    invalid_metadata = True


class MessageTooLargeError(KafkaError):
    """Broker error 10 (MESSAGE_TOO_LARGE)."""

    code = 10


class StaleControllerEpochError(KafkaError):
    """Broker error 11 (STALE_CONTROLLER_EPOCH)."""

    code = 11


class OffsetMetadataTooLargeError(KafkaError):
    """Broker error 12 (OFFSET_METADATA_TOO_LARGE)."""

    code = 12


class NetworkExceptionError(KafkaError):
    """Broker error 13 (NETWORK_EXCEPTION)."""

    code = 13
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgressError(KafkaError):
    """Broker error 14 (COORDINATOR_LOAD_IN_PROGRESS)."""

    code = 14
    retriable = True


class CoordinatorNotAvailableError(KafkaError):
    """Broker error 15 (COORDINATOR_NOT_AVAILABLE)."""

    code = 15
    retriable = True


class NotCoordinatorError(KafkaError):
    """Broker error 16 (NOT_COORDINATOR)."""

    code = 16
    retriable = True


class InvalidTopicExceptionError(KafkaError):
    """Broker error 17 (INVALID_TOPIC_EXCEPTION)."""

    code = 17


class RecordListTooLargeError(KafkaError):
    """Broker error 18 (RECORD_LIST_TOO_LARGE)."""

    code = 18


class NotEnoughReplicasError(KafkaError):
    """Broker error 19 (NOT_ENOUGH_REPLICAS)."""

    code = 19
    retriable = True


class NotEnoughReplicasAfterAppendError(KafkaError):
    """Broker error 20 (NOT_ENOUGH_REPLICAS_AFTER_APPEND)."""

    code = 20
    retriable = True


class InvalidRequiredAcksError(KafkaError):
    """Broker error 21 (INVALID_REQUIRED_ACKS)."""

    code = 21


class IllegalGenerationError(KafkaError):
    """Broker error 22 (ILLEGAL_GENERATION)."""

    code = 22


class InconsistentGroupProtocolError(KafkaError):
    """Broker error 23 (INCONSISTENT_GROUP_PROTOCOL)."""

    code = 23


class InvalidGroupIdError(KafkaError):
    """Broker error 24 (INVALID_GROUP_ID)."""

    code = 24


class UnknownMemberIdError(KafkaError):
    """Broker error 25 (UNKNOWN_MEMBER_ID)."""

    code = 25


class InvalidSessionTimeoutError(KafkaError):
    """Broker error 26 (INVALID_SESSION_TIMEOUT)."""

    code = 26


class RebalanceInProgressError(KafkaError):
    """Broker error 27 (REBALANCE_IN_PROGRESS)."""

    code = 27


class InvalidCommitOffsetSizeError(KafkaError):
    """Broker error 28 (INVALID_COMMIT_OFFSET_SIZE)."""

    code = 28


class TopicAuthorizationFailedError(KafkaError):
    """Broker error 29 (TOPIC_AUTHORIZATION_FAILED)."""

    code = 29


class GroupAuthorizationFailedError(KafkaError):
    """Broker error 30 (GROUP_AUTHORIZATION_FAILED)."""

    code = 30


class ClusterAuthorizationFailedError(KafkaError):
    """Broker error 31 (CLUSTER_AUTHORIZATION_FAILED)."""

    code = 31


class InvalidTimestampError(KafkaError):
    """Broker error 32 (INVALID_TIMESTAMP)."""

    code = 32


class UnsupportedSaslMechanismError(KafkaError):
    """Broker error 33 (UNSUPPORTED_SASL_MECHANISM)."""

    code = 33


class IllegalSaslStateError(KafkaError):
    """Broker error 34 (ILLEGAL_SASL_STATE)."""

    code = 34


class UnsupportedVersionError(KafkaError):
    """Broker error 35 (UNSUPPORTED_VERSION)."""

    code = 35


class TopicAlreadyExistsError(KafkaError):
    """Broker error 36 (TOPIC_ALREADY_EXISTS)."""

    code = 36


class InvalidPartitionsError(KafkaError):
    """Broker error 37 (INVALID_PARTITIONS)."""

    code = 37


class InvalidReplicationFactorError(KafkaError):
    """Broker error 38 (INVALID_REPLICATION_FACTOR)."""

    code = 38


class InvalidReplicaAssignmentError(KafkaError):
    """Broker error 39 (INVALID_REPLICA_ASSIGNMENT)."""

    code = 39


class InvalidConfigError(KafkaError):
    """Broker error 40 (INVALID_CONFIG)."""

    code = 40


class NotControllerError(KafkaError):
    """Broker error 41 (NOT_CONTROLLER)."""

    code = 41
    retriable = True


class InvalidRequestError(KafkaError):
    """Broker error 42 (INVALID_REQUEST)."""

    code = 42


class UnsupportedForMessageFormatError(KafkaError):
    """Broker error 43 (UNSUPPORTED_FOR_MESSAGE_FORMAT)."""

    code = 43


class PolicyViolationError(KafkaError):
    """Broker error 44 (POLICY_VIOLATION)."""

    code = 44


class OutOfOrderSequenceNumberError(KafkaError):
    """Broker error 45 (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    code = 45


class DuplicateSequenceNumberError(KafkaError):
    """Broker error 46 (DUPLICATE_SEQUENCE_NUMBER)."""

    code = 46


class InvalidProducerEpochError(KafkaError):
    """Broker error 47 (INVALID_PRODUCER_EPOCH)."""

    code = 47


class InvalidTxnStateError(KafkaError):
    """Broker error 48 (INVALID_TXN_STATE)."""

    code = 48


class InvalidProducerIdMappingError(KafkaError):
    """Broker error 49 (INVALID_PRODUCER_ID_MAPPING)."""

    code = 49


class InvalidTransactionTimeoutError(KafkaError):
    """Broker error 50 (INVALID_TRANSACTION_TIMEOUT)."""

    code = 50


class ConcurrentTransactionsError(KafkaError):
    """Broker error 51 (CONCURRENT_TRANSACTIONS)."""

    code = 51
    retriable = True


class TransactionCoordinatorFencedError(KafkaError):
    """Broker error 52 (TRANSACTION_COORDINATOR_FENCED)."""

    code = 52


class TransactionalIdAuthorizationFailedError(KafkaError):
    """Broker error 53 (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""

    code = 53


class SecurityDisabledError(KafkaError):
    """Broker error 54 (SECURITY_DISABLED)."""

    code = 54


class OperationNotAttemptedError(KafkaError):
    """Broker error 55 (OPERATION_NOT_ATTEMPTED)."""

    code = 55


class KafkaStorageErrorError(KafkaError):
    """Broker error 56 (KAFKA_STORAGE_ERROR)."""

    code = 56
    retriable = True
    invalid_metadata = True


class LogDirNotFoundError(KafkaError):
    """Broker error 57 (LOG_DIR_NOT_FOUND)."""

    code = 57


class SaslAuthenticationFailedError(KafkaError):
    """Broker error 58 (SASL_AUTHENTICATION_FAILED)."""

    code = 58


class UnknownProducerIdError(KafkaError):
    """Broker error 59 (UNKNOWN_PRODUCER_ID)."""

    code = 59


class ReassignmentInProgressError(KafkaError):
    """Broker error 60 (REASSIGNMENT_IN_PROGRESS)."""

    code = 60


class DelegationTokenAuthDisabledError(KafkaError):
    """Broker error 61 (DELEGATION_TOKEN_AUTH_DISABLED)."""

    code = 61


class DelegationTokenNotFoundError(KafkaError):
    """Broker error 62 (DELEGATION_TOKEN_NOT_FOUND)."""

    code = 62


class DelegationTokenOwnerMismatchError(KafkaError):
    """Broker error 63 (DELEGATION_TOKEN_OWNER_MISMATCH)."""

    code = 63


class DelegationTokenRequestNotAllowedError(KafkaError):
    """Broker error 64 (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)."""

    code = 64


class DelegationTokenAuthorizationFailedError(KafkaError):
    """Broker error 65 (DELEGATION_TOKEN_AUTHORIZATION_FAILED)."""

    code = 65


class DelegationTokenExpiredError(KafkaError):
    """Broker error 66 (DELEGATION_TOKEN_EXPIRED)."""

    code = 66


class InvalidPrincipalTypeError(KafkaError):
    """Broker error 67 (INVALID_PRINCIPAL_TYPE)."""

    code = 67


class NonEmptyGroupError(KafkaError):
    """Broker error 68 (NON_EMPTY_GROUP)."""

    code = 68


class GroupIdNotFoundError(KafkaError):
    """Broker error 69 (GROUP_ID_NOT_FOUND)."""

    code = 69


class FetchSessionIdNotFoundError(KafkaError):
    """Broker error 70 (FETCH_SESSION_ID_NOT_FOUND)."""

    code = 70
    retriable = True


class InvalidFetchSessionEpochError(KafkaError):
    """Broker error 71 (INVALID_FETCH_SESSION_EPOCH)."""

    code = 71
    retriable = True


class ListenerNotFoundError(KafkaError):
    """Broker error 72 (LISTENER_NOT_FOUND)."""

    code = 72
    retriable = True
    invalid_metadata = True


class TopicDeletionDisabledError(KafkaError):
    """Broker error 73 (TOPIC_DELETION_DISABLED)."""

    code = 73


class FencedLeaderEpochError(KafkaError):
    """Broker error 74 (FENCED_LEADER_EPOCH)."""

    code = 74
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(KafkaError):
    """Broker error 75 (UNKNOWN_LEADER_EPOCH)."""

    code = 75
    retriable = True


class UnsupportedCompressionTypeError(KafkaError):
    """Broker error 76 (UNSUPPORTED_COMPRESSION_TYPE)."""

    code = 76


class StaleBrokerEpochError(KafkaError):
    """Broker error 77 (STALE_BROKER_EPOCH)."""

    code = 77


class OffsetNotAvailableError(KafkaError):
    """Broker error 78 (OFFSET_NOT_AVAILABLE)."""

    code = 78
    retriable = True


class MemberIdRequiredError(KafkaError):
    """Broker error 79 (MEMBER_ID_REQUIRED)."""

    code = 79


class PreferredLeaderNotAvailableError(KafkaError):
    """Broker error 80 (PREFERRED_LEADER_NOT_AVAILABLE)."""

    code = 80
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(KafkaError):
    """Broker error 81 (GROUP_MAX_SIZE_REACHED)."""

    code = 81


class FencedInstanceIdError(KafkaError):
    """Broker error 82 (FENCED_INSTANCE_ID)."""

    code = 82


class EligibleLeadersNotAvailableError(KafkaError):
    """Broker error 83 (ELIGIBLE_LEADERS_NOT_AVAILABLE)."""

    code = 83
    retriable = True
    invalid_metadata = True


class ElectionNotNeededError(KafkaError):
    """Broker error 84 (ELECTION_NOT_NEEDED)."""

    code = 84
    retriable = True
    invalid_metadata = True


class NoReassignmentInProgressError(KafkaError):
    """Broker error 85 (NO_REASSIGNMENT_IN_PROGRESS)."""

    code = 85


class GroupSubscribedToTopicError(KafkaError):
    """Broker error 86 (GROUP_SUBSCRIBED_TO_TOPIC)."""

    code = 86


class InvalidRecordError(KafkaError):
    """Broker error 87 (INVALID_RECORD)."""

    code = 87


class UnstableOffsetCommitError(KafkaError):
    """Broker error 88 (UNSTABLE_OFFSET_COMMIT)."""

    code = 88
    retriable = True


class ThrottlingQuotaExceededError(KafkaError):
    """Broker error 89 (THROTTLING_QUOTA_EXCEEDED)."""

    code = 89
    retriable = True


class ProducerFencedError(KafkaError):
    """Broker error 90 (PRODUCER_FENCED)."""

    code = 90


class ResourceNotFoundError(KafkaError):
    """Broker error 91 (RESOURCE_NOT_FOUND)."""

    code = 91


class DuplicateResourceError(KafkaError):
    """Broker error 92 (DUPLICATE_RESOURCE)."""

    code = 92


class UnacceptableCredentialError(KafkaError):
    """Broker error 93 (UNACCEPTABLE_CREDENTIAL)."""

    code = 93


class InconsistentVoterSetError(KafkaError):
    """Broker error 94 (INCONSISTENT_VOTER_SET)."""

    code = 94


class InvalidUpdateVersionError(KafkaError):
    """Broker error 95 (INVALID_UPDATE_VERSION)."""

    code = 95


class FeatureUpdateFailedError(KafkaError):
    """Broker error 96 (FEATURE_UPDATE_FAILED)."""

    code = 96


class PrincipalDeserializationFailureError(KafkaError):
    """Broker error 97 (PRINCIPAL_DESERIALIZATION_FAILURE)."""

    code = 97


class SnapshotNotFoundError(KafkaError):
    """Broker error 98 (SNAPSHOT_NOT_FOUND)."""

    code = 98


class UnknownTopicIdError(KafkaError):
    """Broker error 100 (UNKNOWN_TOPIC_ID)."""

    code = 100
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(KafkaError):
    """Broker error 101 (DUPLICATE_BROKER_REGISTRATION)."""

    code = 101


class BrokerIdNotRegisteredError(KafkaError):
    """Broker error 102 (BROKER_ID_NOT_REGISTERED)."""

    code = 102


class InconsistentTopicIdError(KafkaError):
    """Broker error 103 (INCONSISTENT_TOPIC_ID)."""

    code = 103
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(KafkaError):
    """Broker error 104 (INCONSISTENT_CLUSTER_ID)."""

    code = 104


class TransactionalIdNotFoundError(KafkaError):
    """Broker error 105 (TRANSACTIONAL_ID_NOT_FOUND)."""

    code = 105


class FetchSessionTopicIdErrorError(KafkaError):
    """Broker error 106 (FETCH_SESSION_TOPIC_ID_ERROR)."""

    code = 106
    retriable = True


class IneligibleReplicaError(KafkaError):
    """Broker error 107 (INELIGIBLE_REPLICA)."""

    code = 107


class NewLeaderElectedError(KafkaError):
    """Broker error 108 (NEW_LEADER_ELECTED)."""

    code = 108


class OffsetMovedToTieredStorageError(KafkaError):
    """Broker error 109 (OFFSET_MOVED_TO_TIERED_STORAGE)."""

    code = 109


class FencedMemberEpochError(KafkaError):
    """Broker error 110 (FENCED_MEMBER_EPOCH)."""

    code = 110


class UnreleasedInstanceIdError(KafkaError):
    """Broker error 111 (UNRELEASED_INSTANCE_ID)."""

    code = 111


class UnsupportedAssignorError(KafkaError):
    """Broker error 112 (UNSUPPORTED_ASSIGNOR)."""

    code = 112


class StaleMemberEpochError(KafkaError):
    """Broker error 113 (STALE_MEMBER_EPOCH)."""

    code = 113


class MismatchedEndpointTypeError(KafkaError):
    """Broker error 114 (MISMATCHED_ENDPOINT_TYPE)."""

    code = 114


class UnsupportedEndpointTypeError(KafkaError):
    """Broker error 115 (UNSUPPORTED_ENDPOINT_TYPE)."""

    code = 115


class UnknownControllerIdError(KafkaError):
    """Broker error 116 (UNKNOWN_CONTROLLER_ID)."""

    code = 116


class UnknownSubscriptionIdError(KafkaError):
    """Broker error 117 (UNKNOWN_SUBSCRIPTION_ID)."""

    code = 117


class TelemetryTooLargeError(KafkaError):
    """Broker error 118 (TELEMETRY_TOO_LARGE)."""

    code = 118


class InvalidRegistrationError(KafkaError):
    """Broker error 119 (INVALID_REGISTRATION)."""

    code = 119


class TransactionAbortableError(KafkaError):
    """Broker error 120 (TRANSACTION_ABORTABLE)."""

    code = 120


class InvalidRecordStateError(KafkaError):
    """Broker error 121 (INVALID_RECORD_STATE)."""

    code = 121


class ShareSessionNotFoundError(KafkaError):
    """Broker error 122 (SHARE_SESSION_NOT_FOUND)."""

    code = 122
    retriable = True


class InvalidShareSessionEpochError(KafkaError):
    """Broker error 123 (INVALID_SHARE_SESSION_EPOCH)."""

    code = 123
    retriable = True


class FencedStateEpochError(KafkaError):
    """Broker error 124 (FENCED_STATE_EPOCH)."""

    code = 124


class InvalidVoterKeyError(KafkaError):
    """Broker error 125 (INVALID_VOTER_KEY)."""

    code = 125


class DuplicateVoterError(KafkaError):
    """Broker error 126 (DUPLICATE_VOTER)."""

    code = 126


class VoterNotFoundError(KafkaError):
    """Broker error 127 (VOTER_NOT_FOUND)."""

    code = 127


class InvalidRegularExpressionError(KafkaError):
    """Broker error 128 (INVALID_REGULAR_EXPRESSION)."""

    code = 128


class RebootstrapRequiredError(KafkaError):
    """Broker error 129 (REBOOTSTRAP_REQUIRED)."""

    code = 129


class StreamsInvalidTopologyError(KafkaError):
    """Broker error 130 (STREAMS_INVALID_TOPOLOGY)."""

    code = 130


class StreamsInvalidTopologyEpochError(KafkaError):
    """Broker error 131 (STREAMS_INVALID_TOPOLOGY_EPOCH)."""

    code = 131


class StreamsTopologyFencedError(KafkaError):
    """Broker error 132 (STREAMS_TOPOLOGY_FENCED)."""

    code = 132


class ShareSessionLimitReachedError(KafkaError):
    """Broker error 133 (SHARE_SESSION_LIMIT_REACHED)."""

    code = 133
    retriable = True


#: code -> exception class, e.g. ERRORS[3] is UnknownTopicOrPartitionError
ERRORS: dict[int, type[KafkaError]] = {cls.code: cls for cls in (
    UnknownServerErrorError, OffsetOutOfRangeError, CorruptMessageError, UnknownTopicOrPartitionError,
    InvalidFetchSizeError, LeaderNotAvailableError, NotLeaderOrFollowerError, RequestTimedOutError,
    BrokerNotAvailableError, ReplicaNotAvailableError, MessageTooLargeError, StaleControllerEpochError,
    OffsetMetadataTooLargeError, NetworkExceptionError, CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError, NotCoordinatorError, InvalidTopicExceptionError, RecordListTooLargeError,
    NotEnoughReplicasError, NotEnoughReplicasAfterAppendError, InvalidRequiredAcksError,
    IllegalGenerationError, InconsistentGroupProtocolError, InvalidGroupIdError, UnknownMemberIdError,
    InvalidSessionTimeoutError, RebalanceInProgressError, InvalidCommitOffsetSizeError,
    TopicAuthorizationFailedError, GroupAuthorizationFailedError, ClusterAuthorizationFailedError,
    InvalidTimestampError, UnsupportedSaslMechanismError, IllegalSaslStateError, UnsupportedVersionError,
    TopicAlreadyExistsError, InvalidPartitionsError, InvalidReplicationFactorError,
    InvalidReplicaAssignmentError, InvalidConfigError, NotControllerError, InvalidRequestError,
    UnsupportedForMessageFormatError, PolicyViolationError, OutOfOrderSequenceNumberError,
    DuplicateSequenceNumberError, InvalidProducerEpochError, InvalidTxnStateError,
    InvalidProducerIdMappingError, InvalidTransactionTimeoutError, ConcurrentTransactionsError,
    TransactionCoordinatorFencedError, TransactionalIdAuthorizationFailedError, SecurityDisabledError,
    OperationNotAttemptedError, KafkaStorageErrorError, LogDirNotFoundError, SaslAuthenticationFailedError,
    UnknownProducerIdError, ReassignmentInProgressError, DelegationTokenAuthDisabledError,
    DelegationTokenNotFoundError, DelegationTokenOwnerMismatchError, DelegationTokenRequestNotAllowedError,
    DelegationTokenAuthorizationFailedError, DelegationTokenExpiredError, InvalidPrincipalTypeError,
    NonEmptyGroupError, GroupIdNotFoundError, FetchSessionIdNotFoundError, InvalidFetchSessionEpochError,
    ListenerNotFoundError, TopicDeletionDisabledError, FencedLeaderEpochError, UnknownLeaderEpochError,
    UnsupportedCompressionTypeError, StaleBrokerEpochError, OffsetNotAvailableError, MemberIdRequiredError,
    PreferredLeaderNotAvailableError, GroupMaxSizeReachedError, FencedInstanceIdError,
    EligibleLeadersNotAvailableError, ElectionNotNeededError, NoReassignmentInProgressError,
    GroupSubscribedToTopicError, InvalidRecordError, UnstableOffsetCommitError, ThrottlingQuotaExceededError,
    ProducerFencedError, ResourceNotFoundError, DuplicateResourceError, UnacceptableCredentialError,
    InconsistentVoterSetError, InvalidUpdateVersionError, FeatureUpdateFailedError,
    PrincipalDeserializationFailureError, SnapshotNotFoundError, UnknownTopicIdError,
    DuplicateBrokerRegistrationError, BrokerIdNotRegisteredError, InconsistentTopicIdError,
    InconsistentClusterIdError, TransactionalIdNotFoundError, FetchSessionTopicIdErrorError,
    IneligibleReplicaError, NewLeaderElectedError, OffsetMovedToTieredStorageError, FencedMemberEpochError,
    UnreleasedInstanceIdError, UnsupportedAssignorError, StaleMemberEpochError, MismatchedEndpointTypeError,
    UnsupportedEndpointTypeError, UnknownControllerIdError, UnknownSubscriptionIdError,
    TelemetryTooLargeError, InvalidRegistrationError, TransactionAbortableError, InvalidRecordStateError,
    ShareSessionNotFoundError, InvalidShareSessionEpochError, FencedStateEpochError, InvalidVoterKeyError,
    DuplicateVoterError, VoterNotFoundError, InvalidRegularExpressionError, RebootstrapRequiredError, StreamsInvalidTopologyError,
    StreamsInvalidTopologyEpochError, StreamsTopologyFencedError, ShareSessionLimitReachedError,
)}


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


__all__ = ["KafkaError", "KafkaConnectionError", "KafkaTimeoutError", "IllegalStateError", "TransactionAbortedError",
           "ERRORS", "ErrorCode", "error_for_code",
           "raise_for_code", *(cls.__name__ for cls in ERRORS.values())]
