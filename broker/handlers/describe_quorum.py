"""DescribeQuorum (55), v0-2: the KRaft quorum of ``__cluster_metadata`` as a single combined
Kafka node formatted with ``kafka-storage format --standalone`` reports it: one voter, this
node, which is the leader; no observers (a combined node's broker is the voter itself).

The request must name exactly ``__cluster_metadata`` partition 0, as Kafka's
``KafkaRaftClient.handleDescribeQuorumRequest`` requires; anything else answers
UNKNOWN_TOPIC_OR_PARTITION for every partition named ("This server does not host this
topic-partition.", v2), with no error at the top. Without DESCRIBE on the cluster: a top-level
CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization failed.", v2) and no topics, as Kafka's
controller answers (``DescribeQuorumRequest.getTopLevelErrorResponse``).

The answer: leader this node, leader epoch 1, the voter with its log end offset at the high
watermark; v1+: the leader's last fetch and last caught-up timestamps are now (Kafka reports the
current time for the leader); v2+: the voter's directory id (``directory.id`` of the data
directory's meta.properties, as a dynamic, KIP-853 quorum has one: ``kraft.version`` 1) and
``nodes``, the voter's listeners. Observers: none.

Kafka differences: minibroker has no metadata log. Its stand-in is the finalized features'
history (broker/features.py): the high watermark is the features epoch + 1, so ApiVersions'
``finalized_features_epoch`` stays below it as Kafka's (the offset of the last metadata record)
does. Kafka's leader epoch goes up by one at every start of a single node (each start is an
election); here it stays 1. The listeners are the broker's advertised ones: there is no
separate controller listener."""

from __future__ import annotations

from typing import Any

from client.clock import now_ms
from client.protocol.api import ApiKey, ErrorCode

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.DESCRIBE_QUORUM
AUTHORIZATION = "DESCRIBE on the cluster"

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
NOT_HOSTED = "This server does not host this topic-partition."


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    state = ctx.state
    body: dict[str, Any] = {"error_code": 0, "error_message": None, "topics": [], "nodes": []}
    if not cluster_allows(ctx, AclOperation.DESCRIBE):
        body.update(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
        return body
    topics = request["topics"]
    if not (len(topics) == 1 and topics[0]["topic_name"] == METADATA_TOPIC and len(topics[0]["partitions"]) == 1
            and topics[0]["partitions"][0]["partition_index"] == 0):
        body["topics"] = [{"topic_name": t["topic_name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             "error_message": NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
             "current_voters": [], "observers": []} for p in t["partitions"]]} for t in topics]
        return body
    high_watermark = state.features.epoch + 1
    now = now_ms()
    voter = {"replica_id": state.node_id, "replica_directory_id": state.logs.directory_id,
             "log_end_offset": high_watermark, "last_fetch_timestamp": now, "last_caught_up_timestamp": now}
    body["topics"] = [{"topic_name": METADATA_TOPIC, "partitions": [
        {"partition_index": 0, "error_code": 0, "error_message": None, "leader_id": state.node_id,
         "leader_epoch": LEADER_EPOCH, "high_watermark": high_watermark, "current_voters": [voter],
         "observers": []}]}]
    body["nodes"] = [{"node_id": state.node_id, "listeners": [
        {"name": name, "host": e.host, "port": e.port} for name, e in state.advertised.items()]}]
    return body
