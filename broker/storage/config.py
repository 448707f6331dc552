"""LogConfig: per-topic log settings, with Kafka's topic config names, broker synonyms and defaults.

A topic's effective config is the broker defaults (``log.*`` properties, static or changed at
run time) overlaid with the topic's overrides (``segment.bytes`` ...). Overrides are validated
by name, type and range (Kafka's ConfigDef rules and wording: ``Invalid value X for
configuration NAME: reason``) before anything touches the disk; the LogManager persists them so
they survive a restart.

Every topic config Kafka 3.9 defines is here (``TOPIC_CONFIGS``). What each one does on this
single-node broker is in its ``doc``; a few have no effect here but are accepted and reported
(replication throttles, ``message.format.version``), as a Kafka broker without that feature in
use would.

Kinds: ``int`` (32-bit), ``long`` (64-bit), ``double``, ``bool``, ``str`` and ``list`` (a comma
separated list, kept normalised as ``"a,b"``). ``synonyms`` are the broker properties that set
the default, first match wins (``log.retention.ms`` before ``log.retention.minutes`` before
``log.retention.hours``), each with the factor that turns it into the topic config's unit and
Kafka's default for it (None: no default, i.e. absent unless set).

Each topic config's default is written once, in its ``TOPIC_CONFIGS`` row: ``LogConfig``'s
attribute defaults come from there, as does the default of a synonym in the same unit.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from .errors import InvalidConfigError

__all__ = ["LogConfig", "TOPIC_CONFIGS", "ConfigDef", "Synonym", "LONG_MAX", "INT_MAX", "parse_value",
           "BROKER_SYNONYMS", "config_error"]

_C = TypeVar("_C")

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_HOUR, _MINUTE = 3600_000, 60_000


def config_error(name: str, value: Any, reason: str) -> InvalidConfigError:
    """Kafka's ConfigException wording."""
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {reason}")


@dataclass(frozen=True)
class Synonym:
    """A broker property that gives a topic config its default: value x ``factor``."""

    name: str
    factor: int = 1
    default: str | None = None


@dataclass(frozen=True)
class ConfigDef:
    name: str            # topic config name, e.g. "segment.bytes"
    field: str           # LogConfig attribute
    kind: str            # "int", "long", "double", "bool", "str", "list"
    default: Any
    synonyms: tuple[Synonym, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    #: an extra check on the parsed value: raises InvalidConfigError
    check: Callable[[str, Any], None] | None = None
    doc: str = ""

    @property
    def broker_name(self) -> str:
        """The broker property with the highest precedence ("" when the config has none)."""
        return self.synonyms[0].name if self.synonyms else ""


def _text(value: Any) -> str:
    """A value as Kafka prints it (ConfigDef.convertToString)."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _D(name: str, field: str, kind: str, default: Any, synonyms: str | tuple[Synonym, ...] = (),
       minimum: float | None = None, maximum: float | None = None, *, choices: tuple[str, ...] | None = None,
       check: Callable[[str, Any], None] | None = None, doc: str = "") -> ConfigDef:
    """A row of TOPIC_CONFIGS. ``synonyms`` given as one name: that broker property alone, in
    the topic config's unit and with its default (written once, as ``default``)."""
    if isinstance(synonyms, str):
        synonyms = (Synonym(synonyms, 1, _text(default)),)
    return ConfigDef(name, field, kind, default, synonyms, minimum, maximum, choices, check, doc)


def _gzip_level(name: str, value: Any) -> None:
    if value > 9 or (value < 1 and value != -1):
        raise config_error(name, value, "Value must be between 1 and 9 or equal to -1")


_THROTTLED = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str, value: Any) -> None:
    items = value.split(",") if value else [""]
    if not (all(_THROTTLED.fullmatch(s) for s in items) or "".join(items) == "*"):
        raise config_error(name, value, f"{name} must be the literal '*' or a list of replicas in the following"
                                        " format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


_METADATA_VERSION = re.compile(r"(0\.(8\.[0-2]|9\.0|10\.[0-2]|11\.0)|[123]\.[0-9])(\.[0-9]+)?(-IV[0-9]+)?")


def _message_format_version(name: str, value: Any) -> None:
    # Kafka accepts any of its metadata versions here (the config is ignored since 3.0).
    if not _METADATA_VERSION.fullmatch(value):
        raise config_error(name, value, f"Version {value} is not a valid version")


def _remote_storage(name: str, value: Any) -> None:
    if value:
        raise InvalidConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be"
                                 " configured with remote log storage.")


TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _D("segment.bytes", "segment_bytes", "int", 1073741824, "log.segment.bytes", 14, INT_MAX,
           doc="The largest a segment file grows before a new one is rolled."),
        _D("segment.ms", "segment_ms", "long", 604800000,
           (Synonym("log.roll.ms"), Synonym("log.roll.hours", _HOUR, "168")), 1,
           doc="Roll a new segment once the active one's first batch is this old (record time), even if not full."),
        _D("segment.jitter.ms", "segment_jitter_ms", "long", 0,
           (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", _HOUR, "0")), 0,
           doc="A random amount up to this is taken off segment.ms per segment, so partitions do not all roll at once."),
        # Kafka accepts >= 4, but an index file smaller than one entry (12 bytes for the time
        # index) cannot be created: refused here, before anything is written.
        _D("segment.index.bytes", "segment_index_bytes", "int", 10485760,
           "log.index.size.max.bytes", 12, INT_MAX,
           doc="The size the offset and time index files are preallocated to; a segment rolls when either is full."),
        _D("index.interval.bytes", "index_interval_bytes", "int", 4096, "log.index.interval.bytes", 0,
           INT_MAX, doc="Bytes of batches between two entries of the sparse offset index."),
        _D("retention.ms", "retention_ms", "long", 604800000,
           (Synonym("log.retention.ms"), Synonym("log.retention.minutes", _MINUTE),
            Synonym("log.retention.hours", _HOUR, "168")), -1,
           doc="Segments whose newest record is older than this are deleted (with cleanup.policy delete); -1: keep"
               " forever."),
        _D("retention.bytes", "retention_bytes", "long", -1, "log.retention.bytes",
           doc="Oldest segments are deleted while the partition is larger than this (cleanup.policy delete); -1: no"
               " limit."),
        _D("max.message.bytes", "max_message_bytes", "int", 1048588, "message.max.bytes", 0, INT_MAX,
           doc="The largest record batch the partition accepts (after any broker-side recompression)."),
        _D("flush.messages", "flush_messages", "long", LONG_MAX, "log.flush.interval.messages", 1,
           doc="fsync the partition after this many records have been appended since the last fsync."),
        _D("flush.ms", "flush_ms", "long", LONG_MAX,
           (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms", 1, str(LONG_MAX))), 0,
           doc="fsync the partition when its unflushed data is this old."),
        _D("message.timestamp.type", "message_timestamp_type", "str", "CreateTime",
           "log.message.timestamp.type", choices=("CreateTime", "LogAppendTime"),
           doc="CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock."),
        _D("cleanup.policy", "cleanup_policy", "list", "delete", "log.cleanup.policy",
           choices=("compact", "delete"),
           doc="delete: retention.ms / retention.bytes remove old segments. compact: keep the latest record per key."),
        _D("file.delete.delay.ms", "file_delete_delay_ms", "long", 60000, "log.segment.delete.delay.ms", 0,
           doc="How long a deleted segment's files stay (renamed .deleted) so reads in progress can finish."),
        _D("preallocate", "preallocate", "bool", False, "log.preallocate",
           doc="Create new segment files at their full size."),
        _D("compression.type", "compression_type", "str", "producer", "compression.type",
           choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
           doc="producer: store batches as the producer compressed them. Any other value: the broker rewrites"
               " batches in that codec (uncompressed: none) before storing them."),
        _D("compression.gzip.level", "compression_gzip_level", "int", -1, "compression.gzip.level",
           check=_gzip_level, doc="gzip level when compression.type is gzip: 1-9, or -1 for the codec's default."),
        _D("compression.lz4.level", "compression_lz4_level", "int", 9, "compression.lz4.level", 1, 17,
           doc="lz4 level when compression.type is lz4."),
        _D("compression.zstd.level", "compression_zstd_level", "int", 3, "compression.zstd.level",
           -131072, 22, doc="zstd level when compression.type is zstd."),
        _D("delete.retention.ms", "delete_retention_ms", "long", 86400000,
           "log.cleaner.delete.retention.ms", 0,
           doc="How long a compacted topic keeps tombstones (null values) after cleaning."),
        _D("min.compaction.lag.ms", "min_compaction_lag_ms", "long", 0,
           "log.cleaner.min.compaction.lag.ms", 0,
           doc="A record stays uncompacted at least this long after it was written."),
        _D("max.compaction.lag.ms", "max_compaction_lag_ms", "long", LONG_MAX,
           "log.cleaner.max.compaction.lag.ms", 1,
           doc="A record becomes eligible for compaction at the latest this long after it was written."),
        _D("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", "double", 0.5,
           "log.cleaner.min.cleanable.ratio", 0, 1,
           doc="Compact a partition once this fraction of its log has not been cleaned yet."),
        _D("unclean.leader.election.enable", "unclean_leader_election_enable", "bool", False,
           "unclean.leader.election.enable",
           doc="Whether a replica outside the ISR may become leader. One replica here: it is always the leader."),
        _D("min.insync.replicas", "min_insync_replicas", "int", 1, "min.insync.replicas", 1,
           doc="acks=all produces need this many in-sync replicas. This broker has one: above 1, acks=all produces"
               " fail with NOT_ENOUGH_REPLICAS (acks=0/1 are unaffected), as on a one-replica Kafka topic."),
        _D("message.format.version", "message_format_version", "str", "3.0-IV1",
           "log.message.format.version", check=_message_format_version,
           doc="Deprecated and ignored: batches are always stored in format v2."),
        _D("message.timestamp.difference.max.ms", "message_timestamp_difference_max_ms", "long", LONG_MAX,
           "log.message.timestamp.difference.max.ms", 0,
           doc="Deprecated: the default of message.timestamp.before.max.ms and .after.max.ms when they are not set."),
        _D("message.timestamp.before.max.ms", "message_timestamp_before_max_ms", "long", LONG_MAX,
           "log.message.timestamp.before.max.ms", 0,
           doc="With CreateTime, a record whose timestamp is more than this before the broker's clock is refused"
               " (INVALID_TIMESTAMP)."),
        _D("message.timestamp.after.max.ms", "message_timestamp_after_max_ms", "long", LONG_MAX,
           "log.message.timestamp.after.max.ms", 0,
           doc="With CreateTime, a record whose timestamp is more than this after the broker's clock is refused"
               " (INVALID_TIMESTAMP)."),
        _D("leader.replication.throttled.replicas", "leader_replication_throttled_replicas", "list", "",
           check=_throttled_replicas, doc="Replication throttling; no replication here, accepted and unused."),
        _D("follower.replication.throttled.replicas", "follower_replication_throttled_replicas", "list", "",
           check=_throttled_replicas, doc="Replication throttling; no replication here, accepted and unused."),
        _D("message.downconversion.enable", "message_downconversion_enable", "bool", True,
           "log.message.downconversion.enable",
           doc="Whether Fetch v0-3 (clients before Kafka 0.11) get the batches down-converted to magic 0/1"
               " messages; false answers them UNSUPPORTED_VERSION for this topic's partitions, as Kafka 3.9."),
        _D("remote.storage.enable", "remote_storage_enable", "bool", False, check=_remote_storage,
           doc="Tiered storage; not available on this broker (true is refused)."),
        _D("local.retention.ms", "local_retention_ms", "long", -2, "log.local.retention.ms", -2,
           doc="Tiered storage's local retention; unused (-2: follow retention.ms)."),
        _D("local.retention.bytes", "local_retention_bytes", "long", -2, "log.local.retention.bytes", -2,
           doc="Tiered storage's local retention; unused (-2: follow retention.bytes)."),
        _D("remote.log.copy.disable", "remote_log_copy_disable", "bool", False,
           doc="Tiered storage; unused."),
        _D("remote.log.delete.on.disable", "remote_log_delete_on_disable", "bool", False,
           doc="Tiered storage; unused."),
    )
}

#: broker property -> the topic config it is a synonym of
BROKER_SYNONYMS: dict[str, ConfigDef] = {s.name: d for d in TOPIC_CONFIGS.values() for s in d.synonyms}


def parse_value(d: ConfigDef, raw: Any, name: str | None = None) -> Any:
    """Parse and check one value of config ``d`` (reported under ``name``, default its own)."""
    name = name or d.name
    if d.kind == "bool":
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("true", "false"):
            value: Any = s == "true"
        else:
            raise config_error(name, raw, "Expected value to be either true or false")
    elif d.kind == "str":
        value = str(raw).strip()
        if d.choices is not None and value not in d.choices:
            raise config_error(name, value, f"String must be one of: {', '.join(d.choices)}")
    elif d.kind == "list":
        text = str(raw).strip()
        items = [s.strip() for s in text.split(",")] if text else []
        if d.choices is not None:
            for item in items:
                if item not in d.choices:
                    raise config_error(name, item, f"String must be one of: {', '.join(d.choices)}")
        value = ",".join(items)
    elif d.kind == "double":
        try:
            value = float(str(raw).strip()) if not isinstance(raw, float) else raw
        except ValueError:
            raise config_error(name, raw, "Not a number of type DOUBLE") from None
    else:
        try:
            value = int(str(raw).strip()) if not isinstance(raw, int) or isinstance(raw, bool) else raw
        except ValueError:
            raise config_error(name, raw, f"Not a number of type {d.kind.upper()}") from None
        top = INT_MAX if d.kind == "int" else LONG_MAX
        if not -top - 1 <= value <= top:
            raise config_error(name, raw, f"Not a number of type {d.kind.upper()}")
    if d.kind in ("int", "long", "double"):
        if d.minimum is not None and value < d.minimum:
            raise config_error(name, value, f"Value must be at least {_number(d.minimum)}")
        if d.maximum is not None and value > d.maximum:
            raise config_error(name, value, f"Value must be no more than {_number(d.maximum)}")
    if d.check is not None:
        d.check(name, value)
    return value


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


#: The default each LogConfig field declares: replaced by its TOPIC_CONFIGS default when the
#: class is defined (typed Any so that the annotations stay the fields' own types).
_FROM_TABLE: Any = object()


def _defaults_from_table(cls: type[_C]) -> type[_C]:
    """Give every field of ``cls`` (declared ``= _FROM_TABLE``) the default of the topic
    config whose ``ConfigDef.field`` it is, before ``dataclass`` reads the defaults. Fails
    at import unless fields and table match one to one."""
    fields = {name for name, value in vars(cls).items() if value is _FROM_TABLE}
    table = {d.field: d.default for d in TOPIC_CONFIGS.values()}
    if fields != set(table) or set(cls.__annotations__) != fields:
        raise TypeError(f"LogConfig fields and TOPIC_CONFIGS differ: {sorted(fields ^ set(table))}")
    for name, default in table.items():
        setattr(cls, name, default)
    return cls


@dataclass(frozen=True)
@_defaults_from_table
class LogConfig:
    """A topic's effective log settings, one attribute per topic config (``ConfigDef.field``).
    Every default is the one of its ``TOPIC_CONFIGS`` entry (``_defaults_from_table``: written
    once, there); construct with keyword arguments to override some."""

    segment_bytes: int = _FROM_TABLE
    segment_ms: int = _FROM_TABLE
    segment_jitter_ms: int = _FROM_TABLE
    segment_index_bytes: int = _FROM_TABLE
    index_interval_bytes: int = _FROM_TABLE
    retention_ms: int = _FROM_TABLE
    retention_bytes: int = _FROM_TABLE
    max_message_bytes: int = _FROM_TABLE
    flush_messages: int = _FROM_TABLE
    flush_ms: int = _FROM_TABLE
    message_timestamp_type: str = _FROM_TABLE
    cleanup_policy: str = _FROM_TABLE
    file_delete_delay_ms: int = _FROM_TABLE
    preallocate: bool = _FROM_TABLE
    compression_type: str = _FROM_TABLE
    compression_gzip_level: int = _FROM_TABLE
    compression_lz4_level: int = _FROM_TABLE
    compression_zstd_level: int = _FROM_TABLE
    delete_retention_ms: int = _FROM_TABLE
    min_compaction_lag_ms: int = _FROM_TABLE
    max_compaction_lag_ms: int = _FROM_TABLE
    min_cleanable_dirty_ratio: float = _FROM_TABLE
    unclean_leader_election_enable: bool = _FROM_TABLE
    min_insync_replicas: int = _FROM_TABLE
    message_format_version: str = _FROM_TABLE
    message_timestamp_difference_max_ms: int = _FROM_TABLE
    message_timestamp_before_max_ms: int = _FROM_TABLE
    message_timestamp_after_max_ms: int = _FROM_TABLE
    leader_replication_throttled_replicas: str = _FROM_TABLE
    follower_replication_throttled_replicas: str = _FROM_TABLE
    message_downconversion_enable: bool = _FROM_TABLE
    remote_storage_enable: bool = _FROM_TABLE
    local_retention_ms: int = _FROM_TABLE
    local_retention_bytes: int = _FROM_TABLE
    remote_log_copy_disable: bool = _FROM_TABLE
    remote_log_delete_on_disable: bool = _FROM_TABLE

    @staticmethod
    def validate(overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Parse and check topic-level overrides; raises InvalidConfigError naming the bad one."""
        parsed: dict[str, Any] = {}
        for name, raw in overrides.items():
            d = TOPIC_CONFIGS.get(name)
            if d is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            parsed[name] = parse_value(d, raw)
        return parsed

    def with_overrides(self, overrides: Mapping[str, Any]) -> LogConfig:
        """This config with topic-level overrides (Kafka names) applied, validated, including
        the checks across configs (min.compaction.lag.ms <= max.compaction.lag.ms)."""
        parsed = self.validate(overrides)
        out = dataclasses.replace(self, **{TOPIC_CONFIGS[n].field: v for n, v in parsed.items()})
        if out.min_compaction_lag_ms > out.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms ({out.min_compaction_lag_ms}) >"
                f" max.compaction.lag.ms ({out.max_compaction_lag_ms})")
        return out

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """Defaults from broker properties (``log.segment.bytes``, ``log.retention.hours`` ...):
        for each topic config the first of its synonyms that is set wins."""
        values: dict[str, Any] = {}
        for d in TOPIC_CONFIGS.values():
            for s in d.synonyms:
                if s.name in props:
                    if s.factor == 1:
                        values[d.field] = parse_value(d, props[s.name], s.name)
                    else:
                        try:
                            n = int(str(props[s.name]).strip())
                        except ValueError:
                            raise config_error(s.name, props[s.name], "Not a number of type INT") from None
                        values[d.field] = parse_value(d, n * s.factor, s.name)
                    break
        return cls(**values)

    def get(self, name: str) -> Any:
        """Value by Kafka topic config name."""
        return getattr(self, TOPIC_CONFIGS[name].field)

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka name -> string value (DescribeConfigs)."""
        return {d.name: _text(getattr(self, d.field)) for d in TOPIC_CONFIGS.values()}

    # The derived values below are read on every append: cached per instance (the dataclass is
    # frozen, and ``with_overrides`` makes a new instance, so a cached value never goes stale).

    @cached_property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @cached_property
    def compact(self) -> bool:
        """``cleanup.policy`` includes ``compact``: the log cleaner keeps the last record of each
        key, and produce refuses records without a key."""
        return "compact" in self.cleanup_policy.split(",")

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @cached_property
    def timestamp_before_max_ms(self) -> int:
        """message.timestamp.before.max.ms, or the deprecated difference.max.ms when it is unset."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @cached_property
    def timestamp_after_max_ms(self) -> int:
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @cached_property
    def timestamps_bounded(self) -> bool:
        """CreateTime with a finite before/after bound: appends check record timestamps (and
        need the clock for it)."""
        return not self.log_append_time and (
            self.timestamp_before_max_ms != LONG_MAX or self.timestamp_after_max_ms != LONG_MAX)

    def random_segment_jitter(self, rng: Callable[[], float]) -> int:
        """Kafka: abs(random) % min(segment.jitter.ms, segment.ms); drawn once per segment."""
        if self.segment_jitter_ms == 0:
            return 0
        return int(rng() * 2**62) % min(self.segment_jitter_ms, self.segment_ms)
