"""LogConfig (broker/storage/config.py): every Kafka 3.9 topic config, Kafka's validation and
wording, broker synonyms and their precedence."""

from __future__ import annotations

import pytest

from broker.storage.config import LONG_MAX, TOPIC_CONFIGS, LogConfig
from broker.storage.errors import InvalidConfigError

#: A valid non-default value for every topic config Kafka 3.9 defines.
VALID = {
    "cleanup.policy": "compact,delete", "compression.type": "zstd", "compression.gzip.level": "9",
    "compression.lz4.level": "17", "compression.zstd.level": "-5", "delete.retention.ms": "1000",
    "file.delete.delay.ms": "0", "flush.messages": "10", "flush.ms": "1000",
    "follower.replication.throttled.replicas": "0:0,1:0", "index.interval.bytes": "100",
    "leader.replication.throttled.replicas": "*", "local.retention.bytes": "-2", "local.retention.ms": "-2",
    "max.compaction.lag.ms": "100000", "max.message.bytes": "5000", "message.downconversion.enable": "false",
    "message.format.version": "2.8", "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "3600000", "message.timestamp.difference.max.ms": "100000",
    "message.timestamp.type": "LogAppendTime", "min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "10",
    "min.insync.replicas": "2", "preallocate": "true", "remote.storage.enable": "false",
    "remote.log.copy.disable": "true", "remote.log.delete.on.disable": "true", "retention.bytes": "100000",
    "retention.ms": "-1", "segment.bytes": "1048576", "segment.index.bytes": "4096", "segment.jitter.ms": "10",
    "segment.ms": "1000", "unclean.leader.election.enable": "true",
}


def test_every_kafka_topic_config_is_known_and_accepted() -> None:
    assert set(VALID) == set(TOPIC_CONFIGS)
    config = LogConfig().with_overrides(VALID)
    assert config.to_properties() == VALID | {"cleanup.policy": "compact,delete"}
    assert config.compact and config.delete_enabled
    assert config.min_cleanable_dirty_ratio == 0.25 and config.min_insync_replicas == 2


@pytest.mark.parametrize(("configs", "message"), [
    ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
    ({"segment.bytes": "x"}, "Invalid value x for configuration segment.bytes: Not a number of type INT"),
    ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ({"cleanup.policy": "delete,nope"},
     "Invalid value nope for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one"
                                     " of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"compression.gzip.level": "0"},
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ({"compression.lz4.level": "18"},
     "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"),
    ({"min.cleanable.dirty.ratio": "2"},
     "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either true or"
                             " false"),
    ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled in the broker. Topic cannot be"
                                        " configured with remote log storage."),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
    ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ({"leader.replication.throttled.replicas": "0-1"}, "leader.replication.throttled.replicas must be the literal"
                                                       " '*' or a list of replicas"),
])
def test_invalid_values_are_refused_with_kafkas_message(configs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as e:
        LogConfig().with_overrides(configs)
    assert message in str(e.value)
    assert e.value.error_code == 40


def test_broker_synonyms_first_set_wins_with_unit_conversion() -> None:
    assert LogConfig.from_broker_properties({"log.retention.hours": "2"}).retention_ms == 2 * 3600_000
    assert LogConfig.from_broker_properties({"log.retention.hours": "2", "log.retention.minutes": "3"}
                                            ).retention_ms == 3 * 60_000
    assert LogConfig.from_broker_properties({"log.retention.ms": "5", "log.retention.minutes": "3"}).retention_ms == 5
    assert LogConfig.from_broker_properties({"log.roll.hours": "1"}).segment_ms == 3600_000
    assert LogConfig.from_broker_properties({"log.flush.scheduler.interval.ms": "7"}).flush_ms == 7
    cfg = LogConfig.from_broker_properties({"compression.type": "lz4", "min.insync.replicas": "2",
                                            "log.cleaner.min.cleanable.ratio": "0.9", "message.max.bytes": "100"})
    assert (cfg.compression_type, cfg.min_insync_replicas, cfg.min_cleanable_dirty_ratio, cfg.max_message_bytes) \
        == ("lz4", 2, 0.9, 100)
    with pytest.raises(InvalidConfigError, match="log.segment.bytes"):
        LogConfig.from_broker_properties({"log.segment.bytes": "1"})


def test_timestamp_bounds_fall_back_to_the_deprecated_difference() -> None:
    cfg = LogConfig()
    assert cfg.timestamp_before_max_ms == cfg.timestamp_after_max_ms == LONG_MAX
    cfg = LogConfig().with_overrides({"message.timestamp.difference.max.ms": "1000"})
    assert cfg.timestamp_before_max_ms == cfg.timestamp_after_max_ms == 1000
    cfg = cfg.with_overrides({"message.timestamp.after.max.ms": "5"})
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (1000, 5)
