"""Typed keys and values for the data source: Confluent-framed bytes <-> Arrow arrays, whole
batches at a time, with the writer schemas fetched from a schema registry by id.

**Reader schema** (the source): resolved once, on the driver (``resolve``): the latest version of
the subject (``valueSubject``, default ``<topic>-value``) or the schema ``valueSchemaId``; it
gives the column's type (client/spark/schemas.py) and travels to the workers in the plan, so
every task of a read decodes to the same type even if a version is registered meanwhile. An
Avro schema's references (named types registered under other subjects, as confluent-kafka's
serializers use them) are fetched with it, dependencies first, and parsed before it: reader,
writer and sink schemas alike.

**Each record** (``Decoder``): magic byte 0 and the 4-byte schema id, checked; the writer schema
fetched by id (once per worker process: an id names one schema forever) and checked to be of
the format's type; then

- AVRO: fastavro's ``schemaless_reader`` with the writer schema and, when the record's id is not
  the reader's, the reader schema: the Avro specification's schema resolution (fields added
  with a default get it, removed fields are skipped, promotions applied);
- JSON: the document parsed; properties the reader schema lacks are dropped, missing ones are
  null;
- PROTOBUF: the message indexes read past and the message at that path of the writer's file
  required to have the reader message's full name; the payload parsed with the reader's message
  class (fields match by number: unknown fields are ignored, missing ones take their default).

The Python values of a batch then become one Arrow array with ``pyarrow.array(values, type)``
(C++ conversion). Cost: one Python decode per record (fastavro's is C); the binary read has
none. A value that fits only after conversion (Avro ``uuid``/``time``, JSON text columns) takes
a second pass through ``_fit`` for that batch only.

**Bad records**: not framed, an id the registry does not know (404), a schema of another type,
or a payload that does not decode: ``RecordDecodeError`` naming topic, partition and offset
(``mode=FAILFAST``), or a null value and the reason in ``_corrupt_record`` (``PERMISSIVE``).
A registry that cannot be reached, or that refuses the credentials, fails the task either way.

**Encoding** (the sink, ``Encoder``): the subject's latest version, resolved on the driver;
each row's value (a struct as a dict) is written by fastavro, ``json.dumps`` (null properties
left out, so that a reader sees them missing) or a message filled field by field, behind
Confluent's header (and, for Protobuf, the message index path).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import importlib
import io
import json
import struct
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from client.serde.wire import SerdeError, decode_indexes, encode_indexes

from .format_options import FormatOptions, SideOptions, default_subject
from .schemas import avro_type, json_type, protobuf_type
from .schemas import repeated as is_repeated

__all__ = ["SyncRegistry", "ResolvedSchema", "RecordDecodeError", "RegistryUnavailable", "resolve", "Decoder",
           "Encoder", "registry_for"]

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
_HEADER = struct.Struct(">bi")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class RecordDecodeError(ValueError):
    """A record the typed column cannot hold (FAILFAST)."""


class RegistryUnavailable(RuntimeError):
    """The registry answered with an error other than "not found", or could not be reached."""


class _NotFound(Exception):
    pass


class _Bad(Exception):
    """One record's problem (becomes a RecordDecodeError or a _corrupt_record)."""


class SyncRegistry:
    """A blocking client of the registry's reads (urllib), caching every answer: ids and
    ``subject/version`` pairs name one schema forever (``latest`` is not cached)."""

    def __init__(self, url: str, user_info: str | None = None) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Accept": MEDIA_TYPE}
        if user_info:
            self._headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode("ascii")
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, path: str, cache: bool = True) -> Any:
        with self._lock:
            if path in self._cache:
                return self._cache[path]
        req = urllib.request.Request(self.url + path, headers=self._headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)
            except ValueError:
                err = {}
            if e.code == 404:
                raise _NotFound(f"{err.get('error_code', 404)} {err.get('message', '')}") from None
            raise RegistryUnavailable(f"schema registry {self.url}: GET {path} answered {e.code}"
                                      f" {err.get('error_code', '')} {err.get('message', raw[:200])!r}") from None
        except OSError as e:
            raise RegistryUnavailable(f"schema registry {self.url}: GET {path}: {e}") from None
        if cache:
            with self._lock:
                self._cache[path] = body
        return body

    def by_id(self, schema_id: int, fmt: str = "") -> Any:
        return self.get(f"/schemas/ids/{schema_id}" + (f"?format={fmt}" if fmt else ""))

    def version(self, subject: str, version: int | str, fmt: str = "") -> Any:
        path = f"/subjects/{quote(subject, safe='')}/versions/{version}" + (f"?format={fmt}" if fmt else "")
        return self.get(path, cache=version != "latest")


_registries: dict[tuple[str, str | None], SyncRegistry] = {}
_registries_lock = threading.Lock()


def registry_for(fo: FormatOptions) -> SyncRegistry:
    """This process's client of ``fo``'s registry (kept for later tasks)."""
    key = (fo.registry_url, fo.registry_user_info)
    with _registries_lock:
        got = _registries.get(key)
        if got is None:
            got = _registries[key] = SyncRegistry(*key)
        return got


# ---------------------------------------------------------------------------- Protobuf files

def _protobuf_files(reg: SyncRegistry, answer: Any, name: str | None, out: list[tuple[str, bytes]]) -> None:
    """Append the serialized FileDescriptorProtos ``answer`` needs, dependencies first."""
    from google.protobuf import descriptor_pb2

    for ref in answer.get("references") or ():
        if any(n == ref["name"] for n, _ in out):
            continue
        _protobuf_files(reg, reg.version(ref["subject"], ref["version"], "serialized"), ref["name"], out)
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(answer["schema"]))
    if name is not None:
        file.name = name  # imports name the reference
    out.append((file.name, file.SerializeToString()))


def _pool(files: tuple[bytes, ...]) -> Any:
    """A DescriptorPool holding ``files`` (deps first) and the well-known files they import."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    for raw in files:
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
        for dep in file.dependency:
            if dep not in added and dep.startswith("google/"):
                module = importlib.import_module(dep[:-len(".proto")].replace("/", ".") + "_pb2")
                wk = descriptor_pb2.FileDescriptorProto()
                module.DESCRIPTOR.CopyToProto(wk)
                pool.Add(wk)
                added.add(dep)
        pool.Add(file)
        added.add(file.name)
    return pool


def _message_at(file_desc: Any, path: list[int]) -> Any:
    desc = list(file_desc.message_types_by_name.values())[path[0]]
    for i in path[1:]:
        desc = desc.nested_types[i]
    return desc


def _index_path(desc: Any) -> list[int]:
    path: list[int] = []
    while desc.containing_type is not None:
        path.append(list(desc.containing_type.nested_types).index(desc))
        desc = desc.containing_type
    path.append(list(desc.file.message_types_by_name.values()).index(desc))
    return path[::-1]


# ---------------------------------------------------------------------------- resolving

@dataclass(frozen=True)
class ResolvedSchema:
    """A registered schema, with what a worker needs to use it (picklable)."""

    schema_id: int
    schema_type: str
    schema: str
    #: PROTOBUF: the serialized files, dependencies first, and the message's full name
    files: tuple[bytes, ...] = ()
    message: str = ""
    #: AVRO: the schemas it references (named types of other subjects), dependencies first
    refs: tuple[str, ...] = ()

    def arrow_type(self) -> pa.DataType:
        if self.schema_type == "AVRO":
            return avro_type(json.loads(self.schema), [json.loads(r) for r in self.refs])
        if self.schema_type == "JSON":
            return json_type(json.loads(self.schema))
        return protobuf_type(self.message_descriptor())

    def message_descriptor(self) -> Any:
        return _pool(self.files).FindMessageTypeByName(self.message)


def _avro_refs(reg: SyncRegistry, answer: Any, out: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Append the (name, schema text) of the Avro schemas ``answer`` references, dependencies
    first (Confluent's schema references: named types registered under other subjects)."""
    for ref in answer.get("references") or ():
        if any(n == ref["name"] for n, _ in out):
            continue
        dep = reg.version(ref["subject"], ref["version"])
        _avro_refs(reg, dep, out)
        out.append((ref["name"], dep["schema"]))
    return out


def _avro_parsed(schema: str, refs: tuple[str, ...]) -> Any:
    """``schema`` parsed by fastavro, with the named types of ``refs`` (dependencies first)."""
    import fastavro

    named: dict[str, Any] = {}
    for ref in refs:
        fastavro.parse_schema(json.loads(ref), named_schemas=named)
    return fastavro.parse_schema(json.loads(schema), named_schemas=named)


def _resolved(reg: SyncRegistry, answer: Any, schema_id: int, side: SideOptions, where: str) -> ResolvedSchema:
    schema_type = answer.get("schemaType", "AVRO")
    if schema_type != side.schema_type:
        raise ValueError(f"{where} is a {schema_type} schema, not {side.schema_type} ({side.format} format)")
    if schema_type == "AVRO":
        return ResolvedSchema(schema_id, schema_type, answer["schema"],
                              refs=tuple(text for _, text in _avro_refs(reg, answer, [])))
    if schema_type != "PROTOBUF":
        return ResolvedSchema(schema_id, schema_type, answer["schema"])
    files: list[tuple[str, bytes]] = []
    _protobuf_files(reg, reg.by_id(schema_id, "serialized"), None, files)
    raw = tuple(f for _, f in files)
    pool = _pool(raw)
    main = pool.FindFileByName(files[-1][0])
    if side.message:
        try:
            name = pool.FindMessageTypeByName(side.message).full_name
        except KeyError:
            raise ValueError(f"{where} has no message {side.message}") from None
    else:
        if not main.message_types_by_name:
            raise ValueError(f"{where} has no message")
        name = _message_at(main, [0]).full_name
    return ResolvedSchema(schema_id, schema_type, answer["schema"], raw, name)


def resolve(fo: FormatOptions, which: str, side: SideOptions, topics: tuple[str, ...]) -> ResolvedSchema:
    """The reader (or writer) schema of the key or the value (``which``), from the registry."""
    reg = registry_for(fo)
    subject = default_subject(side, which, topics)
    try:
        if subject is None:
            assert side.schema_id is not None
            return _resolved(reg, reg.by_id(side.schema_id), side.schema_id, side, f"schema id {side.schema_id}")
        answer = reg.version(subject, "latest")
    except _NotFound as e:
        what = f"schema id {side.schema_id}" if subject is None else f"subject {subject!r}"
        raise ValueError(f"{which}Format={side.format}: {what} is not in the registry {fo.registry_url} ({e})") \
            from None
    return _resolved(reg, answer, int(answer["id"]), side, f"subject {subject!r} version {answer['version']}")


# ---------------------------------------------------------------------------- Python <-> Arrow

def _fit(v: Any, t: pa.DataType) -> Any:
    """``v`` converted where pyarrow would not: UUIDs and JSON documents in string columns,
    Avro times in integer ones."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _fit(v.get(f.name), f.type) for f in t} if isinstance(v, dict) else v
    if pa.types.is_list(t):
        return [_fit(x, t.value_type) for x in v] if isinstance(v, list) else v
    if pa.types.is_map(t):
        items = v.items() if isinstance(v, dict) else v
        return [(k, _fit(x, t.item_type)) for k, x in items]
    if pa.types.is_string(t) and not isinstance(v, str):
        return str(v) if isinstance(v, uuid.UUID) else json.dumps(v, separators=(",", ":"))
    if pa.types.is_integer(t) and isinstance(v, dt.time):
        us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return us // 1000 if t.bit_width == 32 else us
    return v


def _protobuf_reader(desc: Any) -> Callable[[Any], dict[str, Any]]:
    """A function: message -> dict of its fields as protobuf_type's struct expects them."""
    from google.protobuf.descriptor import FieldDescriptor as F

    if desc.full_name == "google.protobuf.Timestamp":
        return lambda m: EPOCH + dt.timedelta(seconds=m.seconds, microseconds=m.nanos // 1000)  # type: ignore
    plan: list[tuple[str, int, Any]] = []  # (name, kind, extra)
    for f in desc.fields:
        repeated = is_repeated(f)
        if f.type == F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            v = f.message_type.fields_by_name["value"]
            conv = _protobuf_reader(v.message_type) if v.type == F.TYPE_MESSAGE else \
                _enum_names(v) if v.type == F.TYPE_ENUM else None
            plan.append((f.name, 6, conv))
        elif f.type == F.TYPE_MESSAGE:
            plan.append((f.name, 4 if repeated else 2, _protobuf_reader(f.message_type)))
        elif f.type == F.TYPE_ENUM:
            plan.append((f.name, 5 if repeated else 3, _enum_names(f)))
        else:
            plan.append((f.name, 1 if repeated else 0, None))

    def read(m: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, kind, extra in plan:
            v = getattr(m, name)
            if kind == 0:
                out[name] = v
            elif kind == 1:
                out[name] = list(v)
            elif kind == 2:
                out[name] = extra(v) if m.HasField(name) else None
            elif kind == 3:
                out[name] = extra(v)
            elif kind == 4:
                out[name] = [extra(x) for x in v]
            elif kind == 5:
                out[name] = [extra(x) for x in v]
            else:
                out[name] = {k: extra(x) for k, x in v.items()} if extra else dict(v)
        return out

    return read


def _enum_names(f: Any) -> Callable[[int], str]:
    names = {v.number: v.name for v in f.enum_type.values}
    return lambda n: names.get(n, str(n))


def _protobuf_writer(desc: Any) -> Callable[[Any, Any], None]:
    """A function filling a message from protobuf_type's struct as a dict."""
    from google.protobuf.descriptor import FieldDescriptor as F

    if desc.full_name == "google.protobuf.Timestamp":
        def stamp(m: Any, v: Any) -> None:
            m.FromDatetime(v)
        return stamp
    plan: list[tuple[str, int, Any]] = []
    for f in desc.fields:
        repeated = is_repeated(f)
        if f.type == F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            v = f.message_type.fields_by_name["value"]
            conv = _protobuf_writer(v.message_type) if v.type == F.TYPE_MESSAGE else \
                _enum_numbers(v) if v.type == F.TYPE_ENUM else None
            plan.append((f.name, 6 if v.type == F.TYPE_MESSAGE else 7, conv))
        elif f.type == F.TYPE_MESSAGE:
            plan.append((f.name, 4 if repeated else 2, _protobuf_writer(f.message_type)))
        elif f.type == F.TYPE_ENUM:
            plan.append((f.name, 5 if repeated else 3, _enum_numbers(f)))
        else:
            plan.append((f.name, 1 if repeated else 0, None))

    def fill(m: Any, d: Any) -> None:
        for name, kind, extra in plan:
            v = d.get(name)
            if v is None:
                continue
            if kind == 0:
                setattr(m, name, v)
            elif kind == 1:
                getattr(m, name).extend(v)
            elif kind == 2:
                sub = getattr(m, name)
                sub.SetInParent()
                extra(sub, v)
            elif kind == 3:
                setattr(m, name, extra(v))
            elif kind == 4:
                field = getattr(m, name)
                for x in v:
                    extra(field.add(), x)
            elif kind == 5:
                getattr(m, name).extend(extra(x) for x in v)
            else:
                field = getattr(m, name)
                for k, x in (v.items() if isinstance(v, dict) else v):
                    if kind == 6:
                        extra(field[k], x)
                    else:
                        field[k] = extra(x) if extra else x

    return fill


def _enum_numbers(f: Any) -> Callable[[Any], int]:
    numbers = {v.name: v.number for v in f.enum_type.values}
    return lambda s: s if isinstance(s, int) else numbers[s]


def _plain(v: Any, t: pa.DataType) -> Any:
    """An Arrow value (``to_pylist``) as Avro or JSON writers expect it: maps as dicts."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _plain(v.get(f.name), f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_plain(x, t.value_type) for x in v]
    if pa.types.is_map(t):
        return {k: _plain(x, t.item_type) for k, x in v}
    return v


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    return False


def _drop_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


def _json_default(v: Any) -> Any:
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


# ---------------------------------------------------------------------------- decoding

class Decoder:
    """Confluent-framed bytes -> an Arrow array of ``reader``'s type (see the module docstring)."""

    def __init__(self, fo: FormatOptions, which: str, reader: ResolvedSchema) -> None:
        self.which = which
        self.reader = reader
        self.permissive = fo.permissive
        self.type = reader.arrow_type()
        self._registry = registry_for(fo)
        self._writers: dict[int, Any] = {}  # id -> fastavro schema / True / {index path: ok}
        fmt = reader.schema_type
        if fmt == "AVRO":
            import fastavro

            self._fastavro = fastavro
            self._reader_avro = _avro_parsed(reader.schema, reader.refs)
            self._one = self._avro
        elif fmt == "JSON":
            self._one = self._json
        else:
            desc = reader.message_descriptor()
            from google.protobuf import message_factory

            self._cls = message_factory.GetMessageClass(desc)
            self._to_py = _protobuf_reader(desc)
            self._one = self._protobuf

    def _writer(self, schema_id: int) -> Any:
        try:
            answer = self._registry.by_id(schema_id)
        except _NotFound:
            raise _Bad(f"schema id {schema_id} is not in the registry {self._registry.url}") from None
        got = answer.get("schemaType", "AVRO")
        if got != self.reader.schema_type:
            raise _Bad(f"schema id {schema_id} is a {got} schema, not {self.reader.schema_type}")
        if got == "AVRO":
            refs = tuple(text for _, text in _avro_refs(self._registry, answer, []))
            return _avro_parsed(answer["schema"], refs)
        if got == "PROTOBUF":
            files: list[tuple[str, bytes]] = []
            _protobuf_files(self._registry, self._registry.by_id(schema_id, "serialized"), None, files)
            return _pool(tuple(f for _, f in files)).FindFileByName(files[-1][0])
        return True

    def _header(self, data: bytes) -> tuple[int, Any]:
        if len(data) < 5:
            raise _Bad(f"not Confluent-framed ({len(data)} bytes, fewer than the 5 of the header)")
        magic, schema_id = _HEADER.unpack_from(data)
        if magic != 0:
            raise _Bad(f"not Confluent-framed (magic byte {magic & 0xFF:#04x}, expected 0x00)")
        w = self._writers.get(schema_id)
        if w is None:
            w = self._writers[schema_id] = self._writer(schema_id)
        return schema_id, w

    def _avro(self, data: bytes) -> Any:
        schema_id, writer = self._header(data)
        fo = io.BytesIO(data)
        fo.seek(5)
        try:
            return self._fastavro.schemaless_reader(
                fo, writer, None if schema_id == self.reader.schema_id else self._reader_avro)
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds (EOFError, SchemaResolutionError, ...)
            raise _Bad(f"does not decode with schema id {schema_id}: {type(e).__name__}: {e}") from None

    def _json(self, data: bytes) -> Any:
        self._header(data)
        try:
            return json.loads(data[5:])
        except ValueError as e:
            raise _Bad(f"not JSON: {e}") from None

    def _protobuf(self, data: bytes) -> Any:
        schema_id, file = self._header(data)
        try:
            path, payload = decode_indexes(memoryview(data)[5:])
        except SerdeError as e:
            raise _Bad(str(e)) from None
        try:
            name = _message_at(file, path).full_name
        except IndexError:
            raise _Bad(f"message index {path} is not in schema id {schema_id}") from None
        if name != self.reader.message:
            raise _Bad(f"a {name} message (schema id {schema_id}), not {self.reader.message}")
        try:
            return self._to_py(self._cls.FromString(bytes(payload)))
        except Exception as e:  # noqa: BLE001 - DecodeError, and upb's RuntimeError for bad UTF-8
            raise _Bad(f"does not decode as {name}: {e}") from None

    def decode(self, arr: pa.Array, offsets: pa.Array, topic: str, partition: int,
               corrupt: list[str | None] | None) -> pa.Array:
        """The typed column for the binary column ``arr``; ``corrupt[i]`` set for a bad record
        in PERMISSIVE mode (else a RecordDecodeError)."""
        values = arr.to_pylist()
        out: list[Any] = []
        one = self._one

        def bad(i: int, why: str) -> None:
            where = f"{self.which} of {topic}-{partition} at offset {offsets[i].as_py()}"
            if corrupt is None:
                raise RecordDecodeError(f"cannot decode the {where}: {why}")
            corrupt[i] = f"{where}: {why}" if corrupt[i] is None else f"{corrupt[i]}; {where}: {why}"

        for i, data in enumerate(values):
            if data is None:
                out.append(None)
                continue
            try:
                out.append(one(data))
            except _Bad as e:
                bad(i, str(e))
                out.append(None)
        try:
            return pa.array(out, type=self.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            pass
        fitted = [_fit(v, self.type) for v in out]
        try:
            return pa.array(fitted, type=self.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            pass
        for i, v in enumerate(fitted):  # find the records that do not fit, and say which
            try:
                pa.array([v], type=self.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as e:
                bad(i, f"does not fit the column's type {self.type}: {e}")
                fitted[i] = None
        return pa.array(fitted, type=self.type)


# ---------------------------------------------------------------------------- encoding

class Encoder:
    """Arrow values -> Confluent-framed bytes with ``writer`` (see the module docstring)."""

    def __init__(self, writer: ResolvedSchema) -> None:
        self.writer = writer
        fmt = writer.schema_type
        self._header = _HEADER.pack(0, writer.schema_id)
        if fmt == "AVRO":
            import fastavro

            self._fastavro = fastavro
            self._avro_schema = _avro_parsed(writer.schema, writer.refs)
        elif fmt == "PROTOBUF":
            from google.protobuf import message_factory

            desc = writer.message_descriptor()
            self._cls = message_factory.GetMessageClass(desc)
            self._fill = _protobuf_writer(desc)
            self._header += encode_indexes(_index_path(desc))

    def encode(self, arr: pa.Array) -> pa.Array:
        t = arr.type
        values = arr.to_pylist()
        if self.writer.schema_type != "PROTOBUF" and _has_map(t):
            values = [_plain(v, t) for v in values]
        header = self._header
        out: list[bytes | None] = []
        fmt = self.writer.schema_type
        for v in values:
            if v is None:
                out.append(None)
                continue
            try:
                if fmt == "AVRO":
                    buf = io.BytesIO()
                    buf.write(header)
                    self._fastavro.schemaless_writer(buf, self._avro_schema, v)
                    out.append(buf.getvalue())
                elif fmt == "JSON":
                    text = json.dumps(_drop_nulls(v), separators=(",", ":"), default=_json_default)
                    out.append(header + text.encode())
                else:
                    m = self._cls()
                    self._fill(m, v)
                    out.append(header + m.SerializeToString())
            except Exception as e:  # noqa: BLE001 - fastavro and protobuf raise many kinds
                raise ValueError(f"a row does not fit schema id {self.writer.schema_id}"
                                 f" ({self.writer.schema_type}): {type(e).__name__}: {e}: {v!r:.200}") from None
        return pa.array(out, type=pa.binary())
