"""GroupConfig: the broker settings the group coordinator reads, with Kafka's names and
defaults, and ``group_config``, which reads them from the broker's configuration."""

from __future__ import annotations

from typing import NamedTuple

from ..config import CONSUMER_ASSIGNORS, BrokerConfig

__all__ = ["GroupConfig", "group_config"]


class GroupConfig(NamedTuple):
    """The broker settings the coordinator reads (Kafka's names and defaults)."""

    num_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_size: int = 2**31 - 1  # group.max.size
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    new_member_join_timeout_ms: int = 300_000  # Kafka's fixed 5 minutes
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    #: KIP-848 consumer groups: served when "consumer" is in group.coordinator.rebalance.protocols
    consumer_protocol: bool = True
    consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1  # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy
    #: minibroker's own: groups this large compute assignments off the request path
    consumer_assignment_offload_min_members: int = 100  # group.consumer.assignment.offload.min.members


def group_config(cfg: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        num_partitions=cfg.int("offsets.topic.num.partitions"),
        min_session_timeout_ms=cfg.int("group.min.session.timeout.ms"),
        max_session_timeout_ms=cfg.int("group.max.session.timeout.ms"),
        max_size=cfg.int("group.max.size"),
        initial_rebalance_delay_ms=cfg.int("group.initial.rebalance.delay.ms"),
        offset_metadata_max_bytes=cfg.int("offset.metadata.max.bytes"),
        offsets_retention_ms=cfg.int("offsets.retention.minutes") * 60_000,
        consumer_protocol="consumer" in [p.strip().lower() for p in
                                         cfg.get("group.coordinator.rebalance.protocols").split(",")],
        consumer_session_timeout_ms=cfg.int("group.consumer.session.timeout.ms"),
        consumer_heartbeat_interval_ms=cfg.int("group.consumer.heartbeat.interval.ms"),
        consumer_max_size=cfg.int("group.consumer.max.size"),
        consumer_assignors=tuple(dict.fromkeys(CONSUMER_ASSIGNORS[a.strip()] for a in
                                               cfg.get("group.consumer.assignors").split(",") if a.strip())),
        migration_policy=cfg.get("group.consumer.migration.policy").strip().lower(),
        consumer_assignment_offload_min_members=cfg.int("group.consumer.assignment.offload.min.members"),
    )
