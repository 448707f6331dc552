"""LogConfig: per-topic log settings, with Kafka's topic config names, broker synonyms and defaults.

A topic's effective config is the broker defaults (``log.*`` properties) overlaid with the
topic's overrides (``segment.bytes`` ...). Overrides are validated by name and range before
anything touches the disk; the LogManager persists them so they survive a restart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidConfigError

__all__ = ["LogConfig", "TOPIC_CONFIGS", "ConfigDef", "LONG_MAX"]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ConfigDef:
    name: str            # topic config name, e.g. "segment.bytes"
    field: str           # LogConfig attribute
    kind: str            # "int", "long", "double", "bool", "str", "list"
    default: Any
    broker_name: str     # broker-level synonym, e.g. "log.segment.bytes"
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""


TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("segment.bytes", "segment_bytes", "int", 1073741824, "log.segment.bytes", 14, INT_MAX,
                  doc="maximum size of a segment file"),
        ConfigDef("segment.ms", "segment_ms", "long", 604800000, "log.roll.ms", 1,
                  doc="roll a segment when its first batch is this old (record time)"),
        ConfigDef("segment.jitter.ms", "segment_jitter_ms", "long", 0, "log.roll.jitter.ms", 0),
        # Kafka accepts >= 4, but an index file smaller than one entry (12 bytes for the time
        # index) cannot be created: reject it here, before anything is written.
        ConfigDef("segment.index.bytes", "segment_index_bytes", "int", 10485760, "log.index.size.max.bytes", 12, INT_MAX),
        ConfigDef("index.interval.bytes", "index_interval_bytes", "int", 4096, "log.index.interval.bytes", 0, INT_MAX),
        ConfigDef("retention.ms", "retention_ms", "long", 604800000, "log.retention.ms", -1,
                  doc="-1 = unlimited"),
        ConfigDef("retention.bytes", "retention_bytes", "long", -1, "log.retention.bytes",
                  doc="-1 = unlimited"),
        ConfigDef("max.message.bytes", "max_message_bytes", "int", 1048588, "message.max.bytes", 0, INT_MAX),
        ConfigDef("flush.messages", "flush_messages", "long", LONG_MAX, "log.flush.interval.messages", 1),
        ConfigDef("flush.ms", "flush_ms", "long", LONG_MAX, "log.flush.interval.ms", 0),
        ConfigDef("message.timestamp.type", "message_timestamp_type", "str", "CreateTime",
                  "log.message.timestamp.type", choices=("CreateTime", "LogAppendTime")),
        ConfigDef("cleanup.policy", "cleanup_policy", "list", "delete", "log.cleanup.policy",
                  choices=("compact", "delete"), doc="delete, compact or both (compact,delete)"),
        ConfigDef("delete.retention.ms", "delete_retention_ms", "long", 86400000, "log.cleaner.delete.retention.ms", 0,
                  doc="how long a tombstone stays after the cleaner first kept it"),
        ConfigDef("min.compaction.lag.ms", "min_compaction_lag_ms", "long", 0, "log.cleaner.min.compaction.lag.ms", 0),
        ConfigDef("max.compaction.lag.ms", "max_compaction_lag_ms", "long", LONG_MAX,
                  "log.cleaner.max.compaction.lag.ms", 1),
        ConfigDef("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", "double", 0.5,
                  "log.cleaner.min.cleanable.ratio", 0, 1),
        ConfigDef("file.delete.delay.ms", "file_delete_delay_ms", "long", 60000, "log.segment.delete.delay.ms", 0),
        ConfigDef("preallocate", "preallocate", "bool", False, "log.preallocate"),
    )
}


def _parse(d: ConfigDef, raw: Any) -> Any:
    if d.kind == "bool":
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("true", "false"):
            return s == "true"
        raise InvalidConfigError(f"Invalid value {raw} for configuration {d.name}: Expected value to be either true or false")
    if d.kind == "list":  # Kafka's ValidList: comma-separated, each one of the choices
        items = [i.strip() for i in str(raw).split(",")]
        if not items or any(i not in (d.choices or ()) for i in items) or len(set(items)) != len(items):
            raise InvalidConfigError(
                f"Invalid value {raw} for configuration {d.name}: Invalid value(s) among"
                f" [{', '.join(items)}]: each must be one of {', '.join(d.choices or ())}"
            )
        return ",".join(items)
    if d.kind == "double":
        try:
            number = float(str(raw).strip())
        except ValueError:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {d.name}: Not a number of type DOUBLE") from None
        if number != number or (d.minimum is not None and number < d.minimum) or \
                (d.maximum is not None and number > d.maximum):
            raise InvalidConfigError(f"Invalid value {raw} for configuration {d.name}: Value must be at least"
                                     f" {d.minimum} and at most {d.maximum}")
        return number
    if d.kind == "str":
        text = str(raw).strip()
        if d.choices is not None and text not in d.choices:
            raise InvalidConfigError(
                f"Invalid value {text} for configuration {d.name}: String must be one of: {', '.join(d.choices)}"
            )
        return text
    try:
        value = int(str(raw).strip()) if not isinstance(raw, int) or isinstance(raw, bool) else raw
    except ValueError:
        raise InvalidConfigError(f"Invalid value {raw} for configuration {d.name}: Not a number of type {d.kind.upper()}") from None
    upper = d.maximum if d.maximum is not None else (INT_MAX if d.kind == "int" else LONG_MAX)
    lower = d.minimum if d.minimum is not None else -(upper + 1)
    if value < lower or value > upper:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {d.name}: Value must be at least {lower}"
            + (f" and at most {upper}" if d.maximum is not None else "")
        )
    return value


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    max_message_bytes: int = 1048588
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000
    preallocate: bool = False

    @staticmethod
    def validate(overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Parse and check topic-level overrides; raises InvalidConfigError naming the bad one."""
        parsed: dict[str, Any] = {}
        for name, raw in overrides.items():
            d = TOPIC_CONFIGS.get(name)
            if d is None:
                raise InvalidConfigError(
                    f"Unknown topic config name: {name}. Supported: {', '.join(sorted(TOPIC_CONFIGS))}"
                )
            parsed[name] = _parse(d, raw)
        return parsed

    def with_overrides(self, overrides: Mapping[str, Any]) -> LogConfig:
        """This config with topic-level overrides (Kafka names) applied, validated."""
        parsed = self.validate(overrides)
        return dataclasses.replace(self, **{TOPIC_CONFIGS[n].field: v for n, v in parsed.items()})

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """Defaults from broker properties (``log.segment.bytes``, ``log.retention.hours`` ...)."""
        values: dict[str, Any] = {}
        for d in TOPIC_CONFIGS.values():
            if d.broker_name in props:
                values[d.field] = _parse(d, props[d.broker_name])
        # Kafka's coarser synonyms, used when the finer one is absent.
        if "log.roll.ms" not in props and "log.roll.hours" in props:
            values["segment_ms"] = int(props["log.roll.hours"]) * 3600_000
        if "log.roll.jitter.ms" not in props and "log.roll.jitter.hours" in props:
            values["segment_jitter_ms"] = int(props["log.roll.jitter.hours"]) * 3600_000
        if "log.retention.ms" not in props:
            if "log.retention.minutes" in props:
                values["retention_ms"] = int(props["log.retention.minutes"]) * 60_000
            elif "log.retention.hours" in props:
                values["retention_ms"] = int(props["log.retention.hours"]) * 3600_000
        if "log.flush.interval.ms" not in props and "log.flush.scheduler.interval.ms" in props:
            values["flush_ms"] = int(props["log.flush.scheduler.interval.ms"])
        return cls(**values)

    def get(self, name: str) -> Any:
        """Value by Kafka topic config name."""
        return getattr(self, TOPIC_CONFIGS[name].field)

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka name -> string value (DescribeConfigs)."""
        out = {}
        for d in TOPIC_CONFIGS.values():
            v = getattr(self, d.field)
            out[d.name] = str(v).lower() if isinstance(v, bool) else str(v)
        return out

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` includes ``compact``: the log cleaner keeps the last record of each
        key, and produce refuses records without a key."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def random_segment_jitter(self, rng: Callable[[], float]) -> int:
        """Kafka: abs(random) % min(segment.jitter.ms, segment.ms); drawn once per segment."""
        if self.segment_jitter_ms == 0:
            return 0
        return int(rng() * 2**62) % min(self.segment_jitter_ms, self.segment_ms)
