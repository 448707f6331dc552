"""The options of Spark's Kafka source, parsed and checked (pure: no I/O, no pyspark).

``parse_options(options)`` takes the data source's options (names case-insensitive, values
strings, as Spark hands them over) and returns a ``SourceOptions`` or raises ``ValueError``
with the message Spark's Kafka source gives for the same mistake, so a job moved between the
two fails the same way.

``parse_options(options, streaming=True)`` checks them for ``readStream`` instead.

- ``kafka.bootstrap.servers`` (required). Other ``kafka.*`` options go to the client (see
  ``CONSUMER_CONFIGS``: ``client.id``, ``fetch.*``, ``max.partition.fetch.bytes``,
  ``check.crcs``, ``isolation.level``, ``request.timeout.ms``, ...) as snake_case keyword
  arguments, values checked like Kafka's ``ConfigException``; consumer-group settings are
  ignored (Spark assigns partitions itself); ``security.protocol``, ``sasl.mechanism``,
  ``sasl.jaas.config`` and ``ssl.*`` (truststore and keystore location, type and password,
  ``ssl.key.password``, ``ssl.endpoint.identification.algorithm``) secure the connections as
  in ``client.security.properties``: checked here, carried as strings in ``security`` and
  turned into client options (an ``SSLContext``, which cannot be pickled) by each process that
  makes a client (``SourceOptions.security_options()``); anything else is logged as Kafka's
  "supplied but isn't a known config" warning. Refused as by Spark: deserializers,
  ``auto.offset.reset``, ``enable.auto.commit``, ``interceptor.classes``.
- exactly one of ``assign`` (JSON ``{"t":[0,1]}``), ``subscribe`` (comma-separated),
  ``subscribePattern`` (a regex that must match the whole topic name, as Java's ``matches``).
- ``startingOffsets``: batch: ``earliest`` (default) or JSON ``{"t":{"0":23,"1":-2}}`` (-2
  earliest; ``latest``/-1 are refused in batch); streaming: ``latest`` (default), ``earliest``
  or JSON with -1/-2. ``endingOffsets`` (batch only): ``latest`` (default) or JSON (-1
  latest; ``earliest``/-2 refused).
- ``startingTimestamp`` (ms, all partitions) > ``startingOffsetsByTimestamp`` (JSON of ms) >
  ``startingOffsets``; ``startingOffsetsByTimestampStrategy``: ``error`` (default) or
  ``latest`` when no record is that recent. Likewise (batch only) ``endingTimestamp`` >
  ``endingOffsetsByTimestamp`` > ``endingOffsets`` (no match: latest).
- ``minPartitions``, ``maxRecordsPerPartition`` (positive ints; see ``client.spark.ranges``),
  ``failOnDataLoss`` (default true), ``includeHeaders`` (default false),
  ``kafkaConsumer.pollTimeoutMs`` (default 120000, Spark's).
- ``valueFormat``/``keyFormat`` (``binary``, ``avro``, ``json``, ``protobuf``),
  ``schema.registry.url``, ``valueSubject``, ``valueSchemaId``, ``mode``, ...: typed keys and
  values (``client.spark.format_options``), in ``formats``.
- streaming only (logged and ignored in batch, as by Spark): ``maxOffsetsPerTrigger``,
  ``minOffsetsPerTrigger`` (<= max), ``maxTriggerDelay`` (default ``15m``; units ms, s, m,
  min, h, d).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.security.properties import is_security_property, security_items, security_options
from client.spark.format_options import FormatOptions, parse_format_options

__all__ = ["SourceOptions", "Earliest", "Latest", "parse_options", "client_configs", "EARLIEST", "LATEST",
           "CONSUMER_CONFIGS"]

logger = logging.getLogger(__name__)

EARLIEST = -2  # Kafka's (and Spark's JSON) markers
LATEST = -1

STRATEGY_KEYS = ("assign", "subscribe", "subscribepattern")
_UNSUPPORTED_KAFKA = {
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays"
                        " with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are deserialized as byte"
                          " arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize"
                          " the values.",
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the source option"
                         " 'startingOffsets' to 'earliest' or 'latest' to specify where to start. Structured"
                         " Streaming manages which offsets are consumed internally, rather than relying on the"
                         " kafkaConsumer. This will ensure that no data is missed when new topics/partitions"
                         " are dynamically subscribed. Note that 'startingOffsets' only applies when a new"
                         " Streaming query is started, and that resuming will always pick up from where the"
                         " query left off. See the docs for more details.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported. Structured Streaming manages which"
                          " offsets are consumed internally, rather than relying on the kafkaConsumer.",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported as user-specified consumer"
                           " interceptors are not supported.",
}


def _kafka_int(name: str, v: str) -> int:
    try:
        n = int(v.strip())
    except ValueError:
        raise ValueError(f"Invalid value {v} for configuration {name}: Not a number of type INT") from None
    if n < 0:
        raise ValueError(f"Invalid value {v} for configuration {name}: Value must be at least 0")
    return n


def _kafka_bool(name: str, v: str) -> bool:
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"Invalid value {v} for configuration {name}: Expected value to be either true or false")
    return s == "true"


def _isolation(name: str, v: str) -> str:
    s = v.strip().lower()
    if s not in ("read_uncommitted", "read_committed"):
        raise ValueError(f"Invalid value {v} for configuration {name}: String must be one of: read_committed,"
                         " read_uncommitted")
    return s


Parse = Callable[[str, str], Any]
# kafka.* name -> (keyword of client.Admin and client.Consumer, parser)
CLIENT_CONFIGS: dict[str, tuple[str, Parse]] = {
    "client.id": ("client_id", lambda n, v: v),
    "request.timeout.ms": ("request_timeout_ms", _kafka_int),
    "retry.backoff.ms": ("retry_backoff_ms", _kafka_int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _kafka_int),
    "socket.connection.setup.timeout.ms": ("connect_timeout_ms", _kafka_int),
}
# ... and of client.Consumer only
CONSUMER_CONFIGS: dict[str, tuple[str, Parse]] = {
    **CLIENT_CONFIGS,
    "fetch.min.bytes": ("fetch_min_bytes", _kafka_int),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _kafka_int),
    "fetch.max.bytes": ("fetch_max_bytes", _kafka_int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _kafka_int),
    "check.crcs": ("check_crcs", _kafka_bool),
    "isolation.level": ("isolation_level", _isolation),
}
# Consumer-group and polling settings: Spark assigns partitions and polls by itself.
_IGNORED_KAFKA = {"group.id", "group.instance.id", "session.timeout.ms", "heartbeat.interval.ms",
                  "max.poll.records", "max.poll.interval.ms", "partition.assignment.strategy",
                  "auto.commit.interval.ms", "exclude.internal.topics", "allow.auto.create.topics"}


def client_configs(kafka: Mapping[str, str]) -> tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """The ``kafka.*`` options (prefix removed) as sorted keyword items for (Consumer, Admin)."""
    consumer: dict[str, Any] = {}
    admin: dict[str, Any] = {}
    for name, value in sorted(kafka.items()):
        if name == "bootstrap.servers" or name in _IGNORED_KAFKA or is_security_property(name):
            continue  # security's: SourceOptions.security
        if name not in CONSUMER_CONFIGS:
            logger.warning("The configuration '%s' was supplied but isn't a known config.", name)
            continue
        kw, parse = CONSUMER_CONFIGS[name]
        consumer[kw] = parse(name, value)
        if name in CLIENT_CONFIGS:
            admin[kw] = consumer[kw]
    return tuple(sorted(consumer.items())), tuple(sorted(admin.items()))



class Earliest:
    """``earliest`` for all partitions."""

    def __repr__(self) -> str:
        return "Earliest"


class Latest:
    def __repr__(self) -> str:
        return "Latest"


@dataclass(frozen=True)
class GlobalTimestamp:
    """``startingTimestamp``/``endingTimestamp``: one timestamp (ms) for every partition."""

    ts: int


@dataclass(frozen=True)
class PartitionOffsets:
    """JSON offsets: ``(topic, partition) -> offset`` (-2 earliest, -1 latest)."""

    offsets: dict[tuple[str, int], int]


@dataclass(frozen=True)
class PartitionTimestamps:
    """``*OffsetsByTimestamp``: ``(topic, partition) -> timestamp (ms)``."""

    timestamps: dict[tuple[str, int], int]


Bound = Earliest | Latest | GlobalTimestamp | PartitionOffsets | PartitionTimestamps


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    strategy: str                          # "assign" | "subscribe" | "subscribePattern"
    assign: tuple[tuple[str, int], ...] = ()
    topics: tuple[str, ...] = ()
    pattern: str = ""
    starting: Bound = field(default_factory=Earliest)
    ending: Bound = field(default_factory=Latest)
    timestamp_strategy_latest: bool = False  # startingOffsetsByTimestampStrategy=latest
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120000
    kafka_params: dict[str, str] = field(default_factory=dict)   # every kafka.* option, prefix removed
    consumer_config: tuple[tuple[str, Any], ...] = ()            # keyword items for client.Consumer
    admin_config: tuple[tuple[str, Any], ...] = ()               # ... and for client.Admin
    streaming: bool = False
    #: the ``kafka.`` security properties (prefix removed), checked, as sorted string pairs
    security: tuple[tuple[str, str], ...] = ()
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    #: typed keys and values (valueFormat, keyFormat, schema.registry.url, ...)
    formats: FormatOptions = field(default_factory=FormatOptions)

    @property
    def topic_names(self) -> tuple[str, ...]:
        """The topics named by ``subscribe`` or ``assign`` (none for a pattern)."""
        return self.topics if self.strategy == "subscribe" else tuple(dict.fromkeys(t for t, _ in self.assign))

    @property
    def isolation_level(self) -> str:
        """``kafka.isolation.level``: with read_committed the latest offsets are the last stable
        offsets, and reads skip aborted records."""
        return str(dict(self.consumer_config).get("isolation_level", "read_uncommitted"))

    def security_options(self) -> dict[str, Any]:
        """The clients' security options (reads the TLS stores: call where the client is made)."""
        return security_options(dict(self.security)) if self.security else {}


def _json_example() -> str:
    return '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'


def _partition_json(text: str) -> dict[tuple[str, int], int]:
    """``{"t":{"0":23}}`` -> ``{("t", 0): 23}`` (Spark's JsonUtils.partitionOffsets)."""
    try:
        obj = json.loads(text)
        out: dict[tuple[str, int], int] = {}
        for topic, parts in obj.items():
            for p, off in parts.items():
                if isinstance(off, bool) or not isinstance(off, int):
                    raise ValueError(off)
                out[(topic, int(p))] = off
        return out
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"Expected e.g. {_json_example()}, got {text}") from None


def _assign_json(text: str) -> tuple[tuple[str, int], ...]:
    """``{"t":[0,1]}`` -> ``(("t", 0), ("t", 1))`` (Spark's JsonUtils.partitions)."""
    try:
        obj = json.loads(text)
        out = []
        for topic, parts in obj.items():
            for p in parts:
                if isinstance(p, bool) or not isinstance(p, int):
                    raise ValueError(p)
                out.append((topic, p))
        return tuple(out)
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {text}') from None


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    v = opts.get(key)
    if v is None:
        return default
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError(f"Invalid value '{v}' for option '{name}', must be true or false")
    return s == "true"


def _positive_int(opts: Mapping[str, str], key: str, name: str) -> int | None:
    v = opts.get(key)
    if v is None:
        return None
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"Invalid value '{v}' for option '{name}', must be a positive integer")
    return n


def _timestamp(opts: Mapping[str, str], key: str, name: str) -> int | None:
    v = opts.get(key)
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Invalid value '{v}' for option '{name}', must be a timestamp in ms") from None


def _bound(opts: Mapping[str, str], prefix: str) -> Bound | None:
    """``{prefix}Timestamp`` > ``{prefix}OffsetsByTimestamp`` > ``{prefix}Offsets``."""
    ts = _timestamp(opts, f"{prefix}timestamp", f"{prefix}Timestamp")
    if ts is not None:
        return GlobalTimestamp(ts)
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return PartitionTimestamps(_partition_json(by_ts))
    v = opts.get(f"{prefix}offsets")
    if v is None:
        return None
    s = v.strip().lower()
    if s == "earliest":
        return Earliest()
    if s == "latest":
        return Latest()
    return PartitionOffsets(_partition_json(v.strip()))


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


_DURATION = re.compile(r"(\d+)\s*(ms|s|m|min|h|d)?")
_UNIT_MS = {None: 1, "ms": 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}


def _duration_ms(opts: Mapping[str, str], key: str, name: str, default: int) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``; a bare number is ms)."""
    v = opts.get(key)
    if v is None:
        return default
    m = _DURATION.fullmatch(v.strip().lower())
    if not m:
        raise ValueError(f"Invalid value '{v}' for option '{name}', must be a duration such as 15m, 30s or 500ms")
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


def _check_starting_ending(opts: Mapping[str, str], streaming: bool) -> tuple[Bound, Bound]:
    if streaming:
        if "endingoffsets" in opts:
            raise ValueError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts or "endingtimestamp" in opts:
            raise ValueError("ending timestamp not valid in streaming queries")
        return _bound(opts, "starting") or Latest(), Latest()
    starting = _bound(opts, "starting") or Earliest()
    if isinstance(starting, Latest):
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, PartitionOffsets):
        for (t, p), off in starting.offsets.items():
            if off == LATEST:
                raise ValueError(f"startingOffsets for {t}-{p} can't be latest for batch queries on Kafka")
    ending = _bound(opts, "ending") or Latest()
    if isinstance(ending, Earliest):
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, PartitionOffsets):
        for (t, p), off in ending.offsets.items():
            if off == EARLIEST:
                raise ValueError(f"endingOffsets for {t}-{p} can't be earliest for batch queries on Kafka")
    for key, name in (("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
                      ("minoffsetspertrigger", "minOffsetsPerTrigger"), ("maxtriggerdelay", "maxTriggerDelay")):
        if key in opts:
            logger.warning("%s option ignored in batch queries", name)
    return starting, ending


def parse_options(options: Mapping[str, str], streaming: bool = False) -> SourceOptions:
    """Check ``options`` for a batch read (or a streaming one) and return them parsed
    (``ValueError`` with Spark's message for what Spark refuses)."""
    opts = _lower(options)
    kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    for k, msg in _UNSUPPORTED_KAFKA.items():
        if k in kafka:
            raise ValueError(msg)
    servers = kafka.get("bootstrap.servers", "").strip()
    if not servers:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    consumer_config, admin_config = client_configs(kafka)
    security = security_items(kafka)

    given = [k for k in STRATEGY_KEYS if k in opts]
    names = "assign, subscribe, subscribePattern"
    if len(given) > 1:
        raise ValueError(f"Only one of the following options can be specified: {names}. "
                         "See the docs for more details.")
    if not given:
        raise ValueError(f"One of the following options must be specified for Kafka source: {names}. "
                         "See the docs for more details.")
    kw: dict[str, Any] = {}
    key = given[0]
    value = opts[key]
    if key == "assign":
        v = value.strip()
        if not v.startswith("{"):
            raise ValueError("No topicpartitions to assign as specified value for option "
                             f"'assign' is '{value}'")
        kw.update(strategy="assign", assign=_assign_json(v))
    elif key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        kw.update(strategy="subscribe", topics=topics)
    else:
        if not value.strip():
            raise ValueError("Pattern to subscribe is empty as specified value for option "
                             f"'subscribePattern' is '{value}'")
        try:
            re.compile(value.strip())
        except re.error as e:
            raise ValueError(f"Invalid value '{value}' for option 'subscribePattern': {e}") from None
        kw.update(strategy="subscribePattern", pattern=value.strip())

    starting, ending = _check_starting_ending(opts, streaming)
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ValueError(f"Invalid value '{strategy}' for option 'startingOffsetsByTimestampStrategy',"
                         " must be error or latest")
    poll = _positive_int(opts, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs")
    max_trigger = _positive_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_trigger = _positive_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger")
    if streaming and max_trigger is not None and min_trigger is not None and min_trigger > max_trigger:
        raise ValueError(f"The value of minOffsetPerTrigger({min_trigger}) is higher than the "
                         f"maxOffsetsPerTrigger({max_trigger}).")
    return SourceOptions(
        bootstrap_servers=servers, starting=starting, ending=ending,
        timestamp_strategy_latest=strategy == "latest",
        min_partitions=_positive_int(opts, "minpartitions", "minPartitions"),
        max_records_per_partition=_positive_int(opts, "maxrecordsperpartition", "maxRecordsPerPartition"),
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        include_headers=_bool(opts, "includeheaders", "includeHeaders", False),
        poll_timeout_ms=poll if poll is not None else 120000,
        kafka_params=kafka, consumer_config=consumer_config, admin_config=admin_config,
        streaming=streaming, security=security,
        max_offsets_per_trigger=max_trigger if streaming else None,
        min_offsets_per_trigger=min_trigger if streaming else None,
        max_trigger_delay_ms=_duration_ms(opts, "maxtriggerdelay", "maxTriggerDelay", 15 * 60 * 1000),
        formats=parse_format_options(opts), **kw)
