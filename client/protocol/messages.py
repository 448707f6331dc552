"""Schema tables of the APIs minibroker serves, at the versions it advertises.

Written from Kafka's JSON message specs (``clients/src/main/resources/common/message/``);
field names are the specs' names in snake_case. ``valid`` is the range we implement (the
broker advertises exactly these, reference/kafka_protocol.md §3); ``flexible`` is the specs'
flexibleVersions. Versions outside ``valid`` are refused before decoding.
"""

from __future__ import annotations

from .schema import NULL, Array, Message
from .schema import Field as F

__all__ = ["REQUESTS", "RESPONSES"]

# ---------------------------------------------------------------- ApiVersions (18)
ApiVersionsRequest = Message("ApiVersionsRequest", 18, "0-4", "3+", [
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
])
ApiVersionsResponse = Message("ApiVersionsResponse", 18, "0-4", "3+", [
    F("error_code", "int16"),
    F("api_keys", Array([
        F("api_key", "int16"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ])),
    F("throttle_time_ms", "int32", "1+"),
    # Tagged fields (v3+): the broker sends none; a client reading a real Kafka's reply gets them.
    F("supported_features", Array([
        F("name", "string"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ]), "3+", tag=0),
    F("finalized_features_epoch", "int64", "3+", default=-1, tag=1),
    F("finalized_features", Array([
        F("name", "string"),
        F("max_version_level", "int16"),
        F("min_version_level", "int16"),
    ]), "3+", tag=2),
    F("zk_migration_ready", "bool", "3+", default=False, tag=3),
])

# ---------------------------------------------------------------- Metadata (3)
MetadataRequest = Message("MetadataRequest", 3, "0-4", "9+", [
    F("topics", Array([F("name", "string")]), nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
])
MetadataResponse = Message("MetadataResponse", 3, "0-4", "9+", [
    F("throttle_time_ms", "int32", "3+"),
    F("brokers", Array([
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", "1+", nullable="1+", default=NULL),
    ])),
    F("cluster_id", "string", "2+", nullable="2+", default=NULL),
    F("controller_id", "int32", "1+", default=-1),
    F("topics", Array([
        F("error_code", "int16"),
        F("name", "string"),
        F("is_internal", "bool", "1+"),
        F("partitions", Array([
            F("error_code", "int16"),
            F("partition_index", "int32"),
            F("leader_id", "int32"),
            F("replica_nodes", Array("int32")),
            F("isr_nodes", Array("int32")),
        ])),
    ])),
])

# ---------------------------------------------------------------- Produce (0)
ProduceRequest = Message("ProduceRequest", 0, "0-7", "9+", [
    F("transactional_id", "string", "3+", nullable="0+"),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    F("topic_data", Array([
        F("name", "string"),
        F("partition_data", Array([
            F("index", "int32"),
            F("records", "records", nullable="0+"),
        ])),
    ])),
])
ProduceResponse = Message("ProduceResponse", 0, "0-7", "9+", [
    F("responses", Array([
        F("name", "string"),
        F("partition_responses", Array([
            F("index", "int32"),
            F("error_code", "int16"),
            F("base_offset", "int64"),
            F("log_append_time_ms", "int64", "2+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
        ])),
    ])),
    F("throttle_time_ms", "int32", "1+"),
])

# ---------------------------------------------------------------- Fetch (1)
FetchRequest = Message("FetchRequest", 1, "4-11", "12+", [
    F("replica_id", "int32", default=-1),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "int8", "4+"),
    F("session_id", "int32", "7+"),
    F("session_epoch", "int32", "7+", default=-1),
    F("topics", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64"),
            F("log_start_offset", "int64", "5+", default=-1),
            F("partition_max_bytes", "int32"),
        ])),
    ])),
    F("forgotten_topics_data", Array([
        F("topic", "string"),
        F("partitions", Array("int32")),
    ]), "7+"),
    F("rack_id", "string", "11+"),
])
FetchResponse = Message("FetchResponse", 1, "4-11", "12+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+"),
    F("responses", Array([
        F("topic", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("high_watermark", "int64"),
            F("last_stable_offset", "int64", "4+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("aborted_transactions", Array([
                F("producer_id", "int64"),
                F("first_offset", "int64"),
            ]), "4+", nullable="4+"),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", nullable="0+"),
        ])),
    ])),
])

# ---------------------------------------------------------------- ListOffsets (2)
ListOffsetsRequest = Message("ListOffsetsRequest", 2, "1-2", "6+", [
    # The spec gives no default (0 = broker 0, a follower); a client codec means a consumer (-1).
    F("replica_id", "int32", default=-1),
    F("isolation_level", "int8", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("timestamp", "int64"),
        ])),
    ])),
])
ListOffsetsResponse = Message("ListOffsetsResponse", 2, "1-2", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("partitions", Array([
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
        ])),
    ])),
])

# ---------------------------------------------------------------- CreateTopics (19)
CreateTopicsRequest = Message("CreateTopicsRequest", 19, "0-3", "5+", [
    F("topics", Array([
        F("name", "string"),
        F("num_partitions", "int32"),
        F("replication_factor", "int16"),
        F("assignments", Array([
            F("partition_index", "int32"),
            F("broker_ids", Array("int32")),
        ])),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ])),
    ])),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool", "1+"),
])
CreateTopicsResponse = Message("CreateTopicsResponse", 19, "0-3", "5+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", Array([
        F("name", "string"),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="0+"),
    ])),
])

# ---------------------------------------------------------------- DeleteTopics (20)
DeleteTopicsRequest = Message("DeleteTopicsRequest", 20, "0-1", "4+", [
    F("topic_names", Array("string")),
    F("timeout_ms", "int32"),
])
DeleteTopicsResponse = Message("DeleteTopicsResponse", 20, "0-1", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("responses", Array([
        F("name", "string"),
        F("error_code", "int16"),
    ])),
])

# ---------------------------------------------------------------- FindCoordinator (10)
FindCoordinatorRequest = Message("FindCoordinatorRequest", 10, "0-1", "3+", [
    F("key", "string"),
    F("key_type", "int8", "1+"),
])
FindCoordinatorResponse = Message("FindCoordinatorResponse", 10, "0-1", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("error_message", "string", "1+", nullable="1+", default=NULL),
    F("node_id", "int32"),
    F("host", "string"),
    F("port", "int32"),
])

# ---------------------------------------------------------------- InitProducerId (22)
InitProducerIdRequest = Message("InitProducerIdRequest", 22, "0-1", "2+", [
    F("transactional_id", "string", nullable="0+"),
    F("transaction_timeout_ms", "int32"),
])
InitProducerIdResponse = Message("InitProducerIdResponse", 22, "0-1", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
])

# ---------------------------------------------------------------- DescribeConfigs (32)
DescribeConfigsRequest = Message("DescribeConfigsRequest", 32, "0-1", "4+", [
    F("resources", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configuration_keys", Array("string"), nullable="0+"),
    ])),
    F("include_synonyms", "bool", "1+"),
])
DescribeConfigsResponse = Message("DescribeConfigsResponse", 32, "0-1", "4+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="0+"),
            F("read_only", "bool"),
            F("is_default", "bool", "0"),
            F("config_source", "int8", "1+", default=-1),
            F("is_sensitive", "bool"),
            F("synonyms", Array([
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("source", "int8"),
            ]), "1+"),
        ])),
    ])),
])

REQUESTS = {m.api_key: m for m in (
    ApiVersionsRequest, MetadataRequest, ProduceRequest, FetchRequest, ListOffsetsRequest,
    CreateTopicsRequest, DeleteTopicsRequest, InitProducerIdRequest, DescribeConfigsRequest,
    FindCoordinatorRequest)}
RESPONSES = {m.api_key: m for m in (
    ApiVersionsResponse, MetadataResponse, ProduceResponse, FetchResponse, ListOffsetsResponse,
    CreateTopicsResponse, DeleteTopicsResponse, InitProducerIdResponse, DescribeConfigsResponse,
    FindCoordinatorResponse)}
