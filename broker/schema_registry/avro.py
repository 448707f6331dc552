"""AVRO schemas: parsing (validity by fastavro's ``parse_schema``), the stored form, the
normalized form, and the named types the compatibility checker resolves names with.

Three forms of one schema:

- the *stored* form (what ``_schemas`` holds and GET returns): the schema's JSON without
  whitespace, a primitive written as ``{"type": "int"}`` collapsed to ``"int"``. Two
  registrations are the same schema when their stored forms, types and references are equal,
  as with Confluent's registry without ``normalize``. Defaults, docs and aliases count: a schema
  that gains a default is a new schema, since it resolves differently.
- the *normalized* form (``normalize=true``): every name fully qualified, the attributes of a
  type in a fixed order (``type``, ``name``, then ``fields``/``symbols``/``size``/``items``/
  ``values``, the rest sorted), so that two spellings of one schema compare equal. Unlike
  Avro's Parsing Canonical Form it keeps defaults, docs, aliases and logical types: dropping
  them would make a schema that only adds a default "the same" as the one before it.
- the *tree* the checker walks: the normalized form, in which a named type is a dict at its
  definition and its full name (a string) everywhere else, plus ``names``: full name -> the
  definition, including the named types of referenced schemas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import fastavro
from fastavro.schema import SchemaParseException, UnknownType

from .records import Reference, SchemaValue

__all__ = ["AvroSchema", "InvalidSchema", "PRIMITIVES"]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
#: the attributes of a normalized type, in this order; the others follow, sorted
_ORDER = ("type", "name", "fields", "symbols", "size", "items", "values", "default")


class InvalidSchema(ValueError):
    """Not a valid schema of its type (the message says why)."""


#: a reference's schema as stored: what ``AvroSchema.parse`` needs to resolve references
LookupReference = Callable[[Reference], SchemaValue | None]


class AvroSchema:
    schema_type = "AVRO"

    def __init__(self, stored: str, tree: Any, names: dict[str, Any]) -> None:
        self.stored = stored
        self.tree = tree
        self.names = names

    @classmethod
    def parse(cls, text: str, references: tuple[Reference, ...] = (), lookup: LookupReference | None = None,
              *, normalize: bool = False) -> AvroSchema:
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"not JSON: {e}") from None
        fastavro_names: dict[str, Any] = {}
        names: dict[str, Any] = {}
        _load_references(references, lookup, fastavro_names, names, set())
        try:
            fastavro.parse_schema(obj, named_schemas=fastavro_names, _write_hint=False)
        except UnknownType as e:
            raise InvalidSchema(f"unknown type {e.name!r}") from None
        except (SchemaParseException, KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidSchema(str(e) or type(e).__name__) from None
        tree = _Normalizer(names).checked_walk(obj)
        stored = _dump(tree) if normalize else _dump(_collapse(obj))
        return cls(stored, tree, names)

    def resolve(self, node: Any) -> Any:
        """A type of the tree with a name replaced by its definition."""
        if isinstance(node, str) and node not in PRIMITIVES:
            return self.names[node]
        return node


def _load_references(references: tuple[Reference, ...], lookup: LookupReference | None,
                     fastavro_names: dict[str, Any], names: dict[str, Any], seen: set[tuple[str, int]]) -> None:
    """Parse the referenced schemas (depth first, each once) into both name tables."""
    for ref in references:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        value = lookup(ref) if lookup is not None else None
        if value is None:
            raise InvalidSchema(f"reference {ref.name} to subject {ref.subject!r} version {ref.version} not found")
        if value.schema_type != "AVRO":
            raise InvalidSchema(f"reference {ref.name} is a {value.schema_type} schema")
        _load_references(value.references, lookup, fastavro_names, names, seen)
        try:
            obj = json.loads(value.schema)
            fastavro.parse_schema(obj, named_schemas=fastavro_names, _write_hint=False)
        except (ValueError, SchemaParseException, UnknownType, KeyError, TypeError) as e:
            raise InvalidSchema(f"reference {ref.name}: {e}") from None
        _Normalizer(names).checked_walk(obj)


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _collapse(obj: Any) -> Any:
    """The stored form: ``{"type": "int"}`` (no other attribute) is ``"int"``, recursively."""
    if isinstance(obj, list):
        return [_collapse(b) for b in obj]
    if isinstance(obj, dict):
        if len(obj) == 1 and obj.get("type") in PRIMITIVES:
            return obj["type"]
        out = {}
        for k, v in obj.items():
            if k in ("type", "items", "values"):
                out[k] = _collapse(v)
            elif k == "fields" and isinstance(v, list):
                out[k] = [{fk: _collapse(fv) if fk == "type" else fv for fk, fv in f.items()} for f in v]
            else:
                out[k] = v
        return out
    return obj


def _fullname(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    first = {k: node[k] for k in _ORDER if k in node}
    return {**first, **{k: node[k] for k in sorted(node) if k not in first}}


class _Normalizer:
    """Builds the tree of a schema that fastavro accepted (so the shapes are known good)."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def checked_walk(self, s: Any) -> Any:
        """``walk``, with what fastavro lets pass refused as Avro's Java parser does: a record
        without ``fields``, a union holding a union or two branches of one type."""
        try:
            return self.walk(s, "")
        except KeyError as e:
            raise InvalidSchema(f"missing attribute {e}") from None
        except (TypeError, AttributeError) as e:
            raise InvalidSchema(str(e)) from None

    def walk(self, s: Any, ns: str) -> Any:
        if isinstance(s, str):
            return s if s in PRIMITIVES else _fullname(s, ns)
        if isinstance(s, list):
            branches = [self.walk(b, ns) for b in s]
            seen = set()
            for b in branches:
                if isinstance(b, list):
                    raise InvalidSchema(f"Nested union: {_dump(s)}")
                kind = b if isinstance(b, str) else b.get("name", b["type"])
                if kind in seen:
                    raise InvalidSchema(f"Duplicate in union: {kind}")
                seen.add(kind)
            return branches
        t = s["type"]
        if not isinstance(t, str):  # {"type": {...}}: the type is the inner schema
            return self.walk(t, ns)
        extras = {k: v for k, v in s.items() if k not in ("type", "name", "namespace", "fields", "symbols",
                                                          "size", "items", "values", "aliases")}
        if t in PRIMITIVES:
            return _ordered({"type": t, **extras}) if extras else t
        if t == "array":
            return _ordered({"type": t, "items": self.walk(s["items"], ns), **extras})
        if t == "map":
            return _ordered({"type": t, "values": self.walk(s["values"], ns), **extras})
        if t not in NAMED:  # {"type": "com.acme.Named"}
            return _fullname(t, ns)
        name = s["name"]
        space = name.rsplit(".", 1)[0] if "." in name else s.get("namespace", ns) or ""
        full = _fullname(name, space)
        node: dict[str, Any] = {"type": t, "name": full, **extras}
        if s.get("aliases"):
            node["aliases"] = [_fullname(a, space) for a in s["aliases"]]
        self.names[full] = node  # before the fields: a recursive field names it
        if t in ("record", "error"):
            fields = []
            for f in s["fields"]:
                field = {k: v for k, v in f.items() if k not in ("type",)}
                field["type"] = self.walk(f["type"], space)
                head = {k: field[k] for k in ("name", "type", "default") if k in field}
                fields.append({**head, **{k: field[k] for k in sorted(field) if k not in head}})
            node["fields"] = fields
        elif t == "enum":
            node["symbols"] = list(s["symbols"])
        else:
            node["size"] = s["size"]
        ordered = _ordered(node)
        node.clear()
        node.update(ordered)  # the same dict object stays in names
        return node
