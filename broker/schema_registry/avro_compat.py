"""Whether data written with one AVRO schema can be read with another: the Avro
specification's schema resolution, reader against writer, over ``AvroSchema`` trees.

The rules (the specification's "Schema Resolution"):

- the same primitive; or a writer's ``int`` read as ``long``/``float``/``double``, ``long`` as
  ``float``/``double``, ``float`` as ``double``, ``string`` as ``bytes`` and ``bytes`` as
  ``string`` (promotions);
- records, enums and fixed of the same unqualified name (or a reader alias naming the writer);
  a record's reader fields are matched to the writer's by name (or the reader field's aliases):
  a reader field the writer lacks needs a default, a writer field the reader lacks is skipped;
  an enum reader must hold every writer symbol unless it has a ``default``; fixed sizes equal;
- arrays by their items, maps by their values;
- a writer union: each of its branches must be readable; a reader union: the writer (or each
  writer branch) must be readable by one of its branches.

Logical types do not take part, as in Avro's own checker. Each incompatibility is reported
with Avro's error type, the path in the reader schema and a description, in the shape
Confluent's registry prints them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .avro import PRIMITIVES, AvroSchema

__all__ = ["Incompatibility", "check_avro"]

_PROMOTIONS = frozenset({("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                         ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")})


class Incompatibility(NamedTuple):
    error_type: str  # Avro's SchemaIncompatibilityType names
    path: str
    description: str
    info: str

    def __str__(self) -> str:
        return (f"{{errorType:'{self.error_type}', description:'{self.description}', "
                f"additionalInfo:'{self.info}'}}")


def check_avro(reader: AvroSchema, writer: AvroSchema) -> list[Incompatibility]:
    """The reasons ``reader`` cannot read what ``writer`` wrote (empty: it can)."""
    return _Checker(reader, writer).check(reader.tree, writer.tree, "")


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    return str(node["type"])


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Checker:
    def __init__(self, reader: AvroSchema, writer: AvroSchema) -> None:
        self.reader = reader
        self.writer = writer
        #: pairs of named types being checked: a recursive type is assumed to match itself
        self.assumed: set[tuple[int, int]] = set()

    def check(self, r: Any, w: Any, path: str) -> list[Incompatibility]:
        r, w = self.reader.resolve(r), self.writer.resolve(w)
        rk, wk = _kind(r), _kind(w)
        if wk == "union":
            out: list[Incompatibility] = []
            for b in w:
                out += self.check(r, b, path)
            return out
        if rk == "union":
            for i, b in enumerate(r):
                if not self.check(b, w, f"{path}/{i}"):
                    return []
            return [Incompatibility("MISSING_UNION_BRANCH", path or "/",
                                    f"The new schema is missing a type inside a union field at path '{path or '/'}' "
                                    f"in the old schema", f"reader union lacking writer type: {wk.upper()}")]
        if rk in PRIMITIVES or wk in PRIMITIVES or rk != wk:
            if rk == wk or (wk, rk) in _PROMOTIONS:
                return []
            return [self._mismatch(rk, wk, path)]
        if rk in ("record", "error", "enum", "fixed"):
            if not self._names_match(r, w):
                return [Incompatibility("NAME_MISMATCH", f"{path}/name",
                                        f"The type (path '{path}/name') of a field in the new schema does not match "
                                        f"with the old schema", f"expected: {w['name']}")]
            key = (id(r), id(w))
            if key in self.assumed:
                return []
            self.assumed.add(key)
            if rk == "enum":
                return self._enum(r, w, path)
            if rk == "fixed":
                if r["size"] != w["size"]:
                    return [Incompatibility("FIXED_SIZE_MISMATCH", f"{path}/size",
                                            f"The size of FIXED type field at path '{path}/size' in the new schema"
                                            f" does not match with the old schema",
                                            f"expected: {w['size']}, found: {r['size']}")]
                return []
            return self._record(r, w, path)
        if rk == "array":
            return self.check(r["items"], w["items"], f"{path}/items")
        if rk == "map":
            return self.check(r["values"], w["values"], f"{path}/values")
        return [self._mismatch(rk, wk, path)]

    def _mismatch(self, rk: str, wk: str, path: str) -> Incompatibility:
        return Incompatibility("TYPE_MISMATCH", path or "/",
                               f"The type (path '{path or '/'}') of a field in the new schema does not match with "
                               f"the old schema", f"reader type: {rk.upper()} not compatible with writer type: "
                               f"{wk.upper()}")

    @staticmethod
    def _names_match(r: dict[str, Any], w: dict[str, Any]) -> bool:
        return _short(r["name"]) == _short(w["name"]) or w["name"] in r.get("aliases", ())

    def _enum(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[Incompatibility]:
        missing = [s for s in w["symbols"] if s not in r["symbols"]]
        if missing and "default" not in r:
            return [Incompatibility("MISSING_ENUM_SYMBOLS", f"{path}/symbols",
                                    f"The new schema is missing enum symbols '{', '.join(missing)}' at path "
                                    f"'{path}/symbols' in the old schema", f"[{', '.join(missing)}]")]
        return []

    def _record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[Incompatibility]:
        by_name = {f["name"]: f for f in w["fields"]}
        out: list[Incompatibility] = []
        for i, field in enumerate(r["fields"]):
            wf = by_name.get(field["name"])
            for alias in field.get("aliases", ()):
                if wf is None:
                    wf = by_name.get(alias)
            if wf is not None:
                out += self.check(field["type"], wf["type"], f"{path}/fields/{i}/type")
            elif "default" not in field:
                out.append(Incompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", f"{path}/fields/{i}",
                                           f"The field '{field['name']}' at path '{path}/fields/{i}' in the new schema"
                                           f" has no default value and is missing in the old schema", field["name"]))
        return out
