"""The options of typed keys and values (pure: no I/O, no pyspark), for the source and the sink.

- ``valueFormat`` / ``keyFormat``: ``binary`` (the default: Kafka's bytes, as Spark's source),
  ``avro``, ``json`` or ``protobuf``: Confluent-framed values (magic byte 0, 4-byte schema id)
  decoded into a typed column, or rows encoded into them by the sink.
- ``schema.registry.url``: the registry (Confluent's, or minibroker's own
  ``schema.registry.listeners``); required with a format other than binary. The broker's
  Kafka protocol does not advertise its registry, and guessing its address from the bootstrap
  host would silently pick the wrong one behind NAT or Docker: the option is explicit.
  ``schema.registry.basic.auth.user.info`` (``user:password``, confluent-kafka's name) sends
  HTTP Basic credentials.
- ``valueSubject`` / ``keySubject``: the subject whose latest version is the reader schema (the
  source) or the writer schema (the sink); default ``<topic>-value`` / ``<topic>-key`` (Confluent's
  TopicNameStrategy), which needs exactly one topic (``subscribe`` or ``assign`` of one topic in
  the source, the ``topic`` option in the sink).
- ``valueSchemaId`` / ``keySchemaId`` (source): the reader schema by id instead of a subject.
- ``valueMessage`` / ``keyMessage``: for Protobuf, the message's full name (default: the first
  message of the schema's file, as Confluent's serializers).
- ``mode`` (source): ``FAILFAST`` (the default; a record that is not Confluent-framed, names a
  schema id the registry does not know, or does not decode fails the task, naming topic,
  partition and offset) or ``PERMISSIVE`` (such a record's typed column is null and the column
  ``_corrupt_record`` holds the reason, as Spark's file sources do).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["FORMATS", "CORRUPT_COLUMN", "SideOptions", "FormatOptions", "parse_format_options", "default_subject"]

FORMATS = ("binary", "avro", "json", "protobuf")
SCHEMA_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
CORRUPT_COLUMN = "_corrupt_record"


@dataclass(frozen=True)
class SideOptions:
    """How the key or the value is typed."""

    format: str                   # avro | json | protobuf
    subject: str | None = None
    schema_id: int | None = None
    message: str | None = None    # Protobuf: the message's full name

    @property
    def schema_type(self) -> str:
        return SCHEMA_TYPES[self.format]


@dataclass(frozen=True)
class FormatOptions:
    value: SideOptions | None = None
    key: SideOptions | None = None
    registry_url: str = ""
    registry_user_info: str | None = None
    permissive: bool = False

    @property
    def typed(self) -> bool:
        return self.value is not None or self.key is not None

    def sides(self) -> list[tuple[str, SideOptions]]:
        return [(name, s) for name, s in (("key", self.key), ("value", self.value)) if s is not None]


def _side(opts: Mapping[str, str], side: str, source: bool) -> SideOptions | None:
    fmt = opts.get(f"{side}format", "binary").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"Invalid value '{opts[side + 'format']}' for option '{side}Format', must be one of"
                         f" {', '.join(FORMATS)}")
    if fmt == "binary":
        return None
    schema_id = None
    raw_id = opts.get(f"{side}schemaid")
    if raw_id is not None:
        if not source:
            raise ValueError(f"Option '{side}SchemaId' is for reads; the sink writes with '{side}Subject''s latest"
                             " version")
        try:
            schema_id = int(raw_id)
        except ValueError:
            schema_id = -1
        if schema_id < 0:
            raise ValueError(f"Invalid value '{raw_id}' for option '{side}SchemaId', must be a schema id")
    subject = opts.get(f"{side}subject")
    message = opts.get(f"{side}message")
    if message is not None and fmt != "protobuf":
        raise ValueError(f"Option '{side}Message' is for {side}Format=protobuf")
    return SideOptions(fmt, subject.strip() if subject else None, schema_id, message.strip() if message else None)


def parse_format_options(opts: Mapping[str, str], source: bool = True) -> FormatOptions:
    """``opts``: the options with lower-cased names. ``ValueError`` for a mistake."""
    value, key = _side(opts, "value", source), _side(opts, "key", source)
    url = opts.get("schema.registry.url", "").strip()
    typed = value or key
    if typed is not None and not url:
        which = "valueFormat" if value else "keyFormat"
        raise ValueError(f"Option 'schema.registry.url' must be specified with {which}={typed.format}")
    mode = opts.get("mode", "FAILFAST").strip().upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise ValueError(f"Invalid value '{opts['mode']}' for option 'mode', must be FAILFAST or PERMISSIVE")
    if mode == "PERMISSIVE" and not source:
        raise ValueError("Option 'mode' is for reads")
    user_info = opts.get("schema.registry.basic.auth.user.info")
    return FormatOptions(value, key, url.rstrip("/"), user_info, mode == "PERMISSIVE" and typed is not None)


def default_subject(side: SideOptions, which: str, topics: tuple[str, ...]) -> str | None:
    """The subject to resolve ``side`` by (None when a schema id is given)."""
    if side.schema_id is not None:
        return None
    if side.subject:
        return side.subject
    if len(topics) != 1:
        raise ValueError(f"Option '{which}Subject' (or '{which}SchemaId') must be specified when the read or"
                         f" the write is not of exactly one topic (got {', '.join(topics) or 'a pattern'})")
    return f"{topics[0]}-{which}"
