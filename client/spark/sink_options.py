"""The options and the input schema of Spark's Kafka sink, checked (pure: no I/O, no pyspark).

``parse_sink_options(options)`` takes the sink's options (names case-insensitive, values
strings) and returns a ``SinkOptions`` or raises ``ValueError`` with Spark's message;
``check_schema(fields, topic)`` checks the DataFrame's columns as Spark's ``KafkaWriter`` does.

Options:

- ``kafka.bootstrap.servers`` (required).
- ``topic``: the topic of every row. It wins over a ``topic`` column, as in Spark.
- ``kafka.*``: settings of the producer (``client.producer.Producer``), Kafka's names and value
  checks, as snake_case keyword arguments (``PRODUCER_CONFIGS``): ``acks``, ``linger.ms``,
  ``batch.size``, ``compression.type``, ``enable.idempotence``, ``buffer.memory``,
  ``max.request.size``, ``max.block.ms``, ``delivery.timeout.ms``, ``retries``,
  ``max.in.flight.requests.per.connection``, ``client.id``, ``request.timeout.ms``, ... .
  Refused as by Spark: ``key.serializer``, ``value.serializer`` (keys and values are written as
  bytes). ``security.protocol``, ``sasl.*`` and ``ssl.*`` as in the source
  (``client.spark.options``, ``client.security.properties``): checked here, carried as strings
  in ``security``, made into the clients' options where they are made.
  Anything else is logged as Kafka's "supplied but isn't a known config" warning.
- ``valueFormat``/``keyFormat`` = ``avro`` | ``json`` | ``protobuf`` with ``schema.registry.url``
  (client/spark/format_options.py): the ``value`` (``key``) column, of any type (a struct for a
  record), is encoded with the latest version of ``valueSubject`` (default ``<topic>-value``,
  which needs the ``topic`` option) in Confluent's framing. The subject must exist: the sink
  does not register schemas.
- ``kafka.transactional.id``: the **exactly-once option** (client/spark/writer.py): a prefix;
  each task writes in one transaction with the transactional id ``<prefix>-<partition id>``.
  It needs ``acks=all`` and idempotence (the defaults then), so other values are refused.

Input columns (``check_schema``; a column not listed is ignored, as by Spark):

==============  =====================================  ==========================================
column          type                                   when absent
==============  =====================================  ==========================================
``value``       string or binary (null: a tombstone)   error: Required attribute 'value' not found
``key``         string or binary                       null keys
``topic``       string (not null)                      the ``topic`` option is required
``partition``   int                                    the producer's partitioner
``headers``     array<struct<key:string,value:binary>>  no headers
``timestamp``   timestamp                              the time of writing (CreateTime)
==============  =====================================  ==========================================
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from client.security.properties import is_security_property, security_items, security_options
from client.spark.format_options import FormatOptions, parse_format_options
from client.spark.options import CLIENT_CONFIGS, Parse, _kafka_bool, _kafka_int

__all__ = ["SinkOptions", "parse_sink_options", "check_schema", "PRODUCER_CONFIGS", "HEADERS_TYPE"]

logger = logging.getLogger(__name__)

HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def _acks(name: str, v: str) -> Any:
    s = v.strip().lower()
    if s in ("all", "-1", "0", "1"):
        return -1 if s == "all" else int(s)
    raise ValueError(f"Invalid value {v} for configuration {name}: String must be one of: all, -1, 0, 1")


def _compression(name: str, v: str) -> str:
    s = v.strip().lower()
    if s not in ("none", "gzip", "snappy", "lz4", "zstd"):
        raise ValueError(f"Invalid value {v} for configuration {name}: String must be one of: none, gzip, snappy,"
                         " lz4, zstd")
    return s


def _positive(name: str, v: str) -> int:
    n = _kafka_int(name, v)
    if n < 1:
        raise ValueError(f"Invalid value {v} for configuration {name}: Value must be at least 1")
    return n


# kafka.* name -> (keyword of client.Producer, parser)
PRODUCER_CONFIGS: dict[str, tuple[str, Parse]] = {
    **CLIENT_CONFIGS,
    "acks": ("acks", _acks),
    "linger.ms": ("linger_ms", _kafka_int),
    "batch.size": ("batch_size", _positive),
    "buffer.memory": ("buffer_memory", _positive),
    "compression.type": ("compression_type", _compression),
    "enable.idempotence": ("enable_idempotence", _kafka_bool),
    "max.request.size": ("max_request_size", _positive),
    "max.block.ms": ("max_block_ms", _kafka_int),
    "delivery.timeout.ms": ("delivery_timeout_ms", _kafka_int),
    "retries": ("retries", _kafka_int),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests_per_connection", _positive),
}

_REFUSED = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized with"
                      " ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as values are serialized with"
                        " ByteArraySerializer.",
}


@dataclass(frozen=True)
class SinkOptions:
    """The sink's options, checked. ``producer_config``: keyword items for ``client.Producer``."""

    bootstrap_servers: str
    topic: str | None = None
    producer_config: tuple[tuple[str, Any], ...] = ()
    #: ``kafka.transactional.id``: the exactly-once option's prefix (None: at-least-once)
    transactional_id_prefix: str | None = None
    #: the ``kafka.`` security properties (prefix removed), checked, as sorted string pairs
    security: tuple[tuple[str, str], ...] = ()
    #: typed keys and values (valueFormat, keyFormat, schema.registry.url, ...)
    formats: FormatOptions = FormatOptions()
    #: their writer schemas, resolved on the driver: (("value", registry_codec.ResolvedSchema), ...)
    resolved: tuple[tuple[str, Any], ...] = ()

    def security_options(self) -> dict[str, Any]:
        """The clients' security options (reads the TLS stores: call where the client is made)."""
        return security_options(dict(self.security)) if self.security else {}


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the sink's ``options`` (``ValueError`` with Spark's message for what Spark refuses)."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
    for name, msg in _REFUSED.items():
        if name in kafka:
            raise ValueError(msg)
    prefix = kafka.pop("transactional.id", None)
    if prefix is not None:
        prefix = prefix.strip()
        if not prefix:
            raise ValueError("Kafka option 'transactional.id' must not be empty")
        if kafka.get("acks", "all").strip().lower() not in ("all", "-1"):
            raise ValueError("Kafka option 'acks' must be 'all' with 'transactional.id' (exactly-once writes)")
        if kafka.get("enable.idempotence", "true").strip().lower() != "true":
            raise ValueError("Kafka option 'enable.idempotence' must be true with 'transactional.id'"
                             " (exactly-once writes)")
    servers = kafka.pop("bootstrap.servers", "").strip()
    if not servers:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    config: dict[str, Any] = {}
    security = security_items(kafka)
    for name, value in sorted(kafka.items()):
        if is_security_property(name):
            continue
        if name not in PRODUCER_CONFIGS:
            logger.warning("The configuration '%s' was supplied but isn't a known config.", name)
            continue
        kw, parse = PRODUCER_CONFIGS[name]
        config[kw] = parse(name, value)
    topic = opts.get("topic")
    return SinkOptions(bootstrap_servers=servers, topic=topic.strip() if topic is not None else None,
                       producer_config=tuple(sorted(config.items())), transactional_id_prefix=prefix,
                       security=security, formats=parse_format_options(opts, source=False))


class _Field(Protocol):
    name: str

    @property
    def dataType(self) -> Any: ...  # pyspark's name


# column -> the types Spark's KafkaWriter accepts (catalog strings)
_TYPES: dict[str, tuple[str, ...]] = {
    "topic": ("string",),
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "headers": (HEADERS_TYPE,),
    "partition": ("int",),
    "timestamp": ("timestamp",),
}


def check_schema(fields: Sequence[_Field], topic: str | None, typed: Sequence[str] = ()) -> dict[str, str]:
    """Check the input columns (pyspark ``StructField``s) as Spark's ``KafkaWriter.validateQuery``
    does, in its order (topic, key, value, headers, partition); return {column: type} of the
    columns the sink uses. ``ValueError`` with Spark's message otherwise. The columns in
    ``typed`` ("key", "value" with a format) may be of any type: the schema's encoder checks them."""
    by_name = {f.name: f.dataType.simpleString() for f in fields}
    used: dict[str, str] = {}
    for col in ("topic", "key", "value", "headers", "partition", "timestamp"):
        if col == "topic" and topic is not None:
            continue  # the option wins over the column
        t = by_name.get(col)
        if t is None:
            if col == "topic":
                raise ValueError("topic option required when no 'topic' attribute is present. Use the topic option"
                                 " for setting a topic.")
            if col == "value":
                raise ValueError("Required attribute 'value' not found")
            continue
        if t not in _TYPES[col] and col not in typed:
            raise ValueError(f"{col} attribute unsupported type {t}. {col} must be a(n) {' or '.join(_TYPES[col])}")
        used[col] = t
    return used
