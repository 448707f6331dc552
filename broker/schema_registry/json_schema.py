"""JSON Schema schemas (``schemaType: "JSON"``): validity by the ``jsonschema`` library, the
stored and normalized forms, and the references the compatibility checker resolves ``$ref``
with.

The dialect is the one ``$schema`` names (Draft 4, 6, 7, 2019-09, 2020-12); without
``$schema``, Draft 7, the default of Confluent's registry. A schema is valid when it is a
JSON object or boolean that the dialect's metaschema accepts (``check_schema``) and every
``$ref`` in it resolves: to a place in the schema itself (``#/definitions/X``, ``#/$defs/X``,
an ``$id``/``$anchor``) or to a referenced schema, whose reference ``name`` is the URI the
``$ref`` uses (``"address.json"``, ``"address.json#/$defs/Street"``), as with Confluent's
serializers, which load each reference under its name.

Forms, as for AVRO (avro.py):

- *stored*: the JSON without whitespace, keys in the order written (Confluent's canonical
  string of a JSON schema);
- *normalized* (``normalize=true``): the same with every object's keys sorted, so that two
  spellings of one schema share an id. Arrays keep their order: ``enum`` or ``required``
  reordered is a different text, although it accepts the same documents (the cost: such a
  pair gets two ids; sorting them would need to know which arrays are sets, keyword by
  keyword and dialect by dialect).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT7, UnknownDialect, specification_with

from .avro import InvalidSchema, LookupReference
from .records import Reference

__all__ = ["JsonSchema"]


class JsonSchema:
    schema_type = "JSON"

    def __init__(self, stored: str, tree: Any, registry: Registry[Any]) -> None:
        self.stored = stored
        self.tree = tree
        #: the referenced schemas by name, and this one (under "") for its own fragments
        self.registry = registry

    @classmethod
    def parse(cls, text: str, references: tuple[Reference, ...] = (), lookup: LookupReference | None = None,
              *, normalize: bool = False) -> JsonSchema:
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"not JSON: {e}") from None
        if not isinstance(obj, dict | bool):
            raise InvalidSchema("a JSON schema is an object or a boolean")
        _check(obj)
        registry: Registry[Any] = Registry()
        registry = _load_references(references, lookup, registry, set())
        registry = registry.with_resource("", _resource(obj))
        _check_refs(obj, registry.resolver(""))
        stored = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=normalize)
        return cls(stored, obj, registry)


def _resource(obj: Any) -> Resource[Any]:
    try:
        return Resource.from_contents(obj, default_specification=DRAFT7)
    except UnknownDialect as e:
        raise InvalidSchema(f"unknown $schema {e.uri!r}") from None


def _check(obj: Any) -> None:
    """The dialect's metaschema accepts ``obj``."""
    if isinstance(obj, dict) and "$schema" in obj:
        try:
            specification_with(str(obj["$schema"]))
        except UnknownDialect:
            raise InvalidSchema(f"unknown $schema {obj['$schema']!r}") from None
    cls = validators.validator_for(obj, default=Draft7Validator)
    try:
        cls.check_schema(obj)
    except SchemaError as e:
        where = "/".join(str(p) for p in e.path)
        raise InvalidSchema(f"{e.message}{f' at {where}' if where else ''}") from None


def _load_references(references: tuple[Reference, ...], lookup: LookupReference | None,
                     registry: Registry[Any], seen: set[tuple[str, int]]) -> Registry[Any]:
    for ref in references:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        value = lookup(ref) if lookup is not None else None
        if value is None:
            raise InvalidSchema(f"reference {ref.name} to subject {ref.subject!r} version {ref.version} not found")
        if value.schema_type != "JSON":
            raise InvalidSchema(f"reference {ref.name} is a {value.schema_type} schema")
        registry = _load_references(value.references, lookup, registry, seen)
        try:
            obj = json.loads(value.schema)
        except ValueError as e:
            raise InvalidSchema(f"reference {ref.name}: {e}") from None
        registry = registry.with_resource(ref.name, _resource(obj))
    return registry


def _check_refs(obj: Any, resolver: Any) -> None:
    """Every ``$ref`` resolves (walked in ``obj`` only: a referenced schema was checked when it
    was registered)."""
    if isinstance(obj, list):
        for item in obj:
            _check_refs(item, resolver)
    elif isinstance(obj, dict):
        ref = obj.get("$ref")
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except (Unresolvable, NoSuchResource, KeyError, LookupError) as e:
                raise InvalidSchema(f"$ref {ref!r} does not resolve: {e}") from None
        for k, v in obj.items():
            if k not in ("enum", "const", "default", "examples"):  # data, not schemas
                _check_refs(v, resolver)
