"""Whether documents valid under one JSON schema (the writer's) are valid under another (the
reader's), by the difference rules Confluent's registry documents for JSON Schema, reported
with Confluent's difference names.

JSON Schema has no resolution rules: a reader accepts a document or not. So a change from the
writer schema to the reader schema is compatible when it can only *widen* what is accepted,
and the checker walks both schemas side by side, keyword by keyword:

- ``type``: a set of types; the reader's must hold each of the writer's (``integer`` is inside
  ``number``): TYPE_EXTENDED is fine, TYPE_NARROWED / TYPE_CHANGED are not. A schema without
  ``type`` accepts every type.
- upper bounds (``maxLength``, ``maximum``, ``exclusiveMaximum``, ``maxItems``,
  ``maxProperties``): removed or increased is fine, added or decreased is not; lower bounds
  (``min*``) the other way round. ``multipleOf``: removed is fine, and a reader's value that
  divides the writer's (EXPANDED); added or another value is not. ``pattern``: removed is fine,
  added or changed is not. ``uniqueItems`` turned on is not.
- ``enum`` (and ``const``, an enum of one): the reader's values must hold the writer's.
- ``required``: a name added is refused unless its property has a ``default``
  (REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED); a name removed is fine.
- ``properties`` and the *content model* (``additionalProperties``): open (absent or ``true``),
  closed (``false``) or partially open (a schema). A property the reader adds:

  * to a writer's open model: old documents may hold that name with any value, so it is
    refused (PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL) unless the new property's schema accepts
    anything (``{}``/``true``);
  * to a closed model: old documents never hold it: fine when optional, refused when required
    (without a default);
  * to a partially open model: fine when the new property's schema accepts what the writer's
    ``additionalProperties`` did (PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL).

  A property the reader removes: fine when the reader's model is open, refused when closed
  (unless the writer's property was ``false``), and when partially open, fine when the
  reader's ``additionalProperties`` accepts what the property did. Closing an open model is
  ADDITIONAL_PROPERTIES_REMOVED (refused), opening a closed one ADDITIONAL_PROPERTIES_ADDED.
- ``items``: one schema for every item, checked recursively; the tuple forms (``items`` as an
  array before 2020-12, ``prefixItems``) position by position, an item the reader adds being
  treated as a property added to the content model of ``additionalItems``/``items``.
- combined schemas: ``oneOf``/``anyOf`` (sum types) must keep, for each writer branch, a
  reader branch that accepts it (a branch added: SUM_TYPE_EXTENDED, removed:
  SUM_TYPE_NARROWED); a plain schema becoming a sum with a branch accepting it is
  COMBINED_TYPE_EXTENDED, without one COMBINED_TYPE_CHANGED; ``anyOf`` becoming ``oneOf`` (of
  more than one branch) is refused (a document two branches accept fails ``oneOf``), the
  other way is fine. ``allOf`` (a product) is folded into one schema and checked by the
  keyword rules: a branch added to it adds constraints (PRODUCT_TYPE_EXTENDED, refused when
  they narrow), one removed removes them. ``not``: the check runs reversed on the negated
  schemas.
- ``$ref``: followed (local fragments, ``$id``s and referenced schemas); a pair of schemas
  met again while checking it is assumed compatible (recursive schemas end).

Annotations (``title``, ``description``, ``default``, ``examples``, ``$comment``, ``$id``)
never make a change incompatible. Not checked (accepted whatever they become):
``dependencies``/``dependentRequired``/``dependentSchemas``, ``if``/``then``/``else``,
``patternProperties`` other than as a partially open content model, ``propertyNames``,
``contains``, ``format`` and the content keywords. That errs on the permissive side, as
Confluent's checker does for the keywords it does not diff.
"""

from __future__ import annotations

from typing import Any

from referencing.exceptions import NoSuchResource, Unresolvable

from .avro_compat import Incompatibility
from .json_schema import JsonSchema

__all__ = ["check_json"]

_UPPER = ("maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties")
_LOWER = ("minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties")
_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_NAMES = {"maxLength": "MAX_LENGTH", "maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM",
          "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES", "minLength": "MIN_LENGTH",
          "minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM", "minItems": "MIN_ITEMS",
          "minProperties": "MIN_PROPERTIES"}


def check_json(reader: JsonSchema, writer: JsonSchema) -> list[Incompatibility]:
    """The reasons documents valid under ``writer`` may be invalid under ``reader`` (empty:
    none)."""
    return _Checker().check(reader.tree, reader.registry.resolver(""), writer.tree,
                            writer.registry.resolver(""), "#")


def _incompat(kind: str, path: str, description: str) -> Incompatibility:
    return Incompatibility(kind, path, description, "")


def _types(s: dict[str, Any]) -> set[str] | None:
    """The types a schema allows (None: any)."""
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _is_open(s: Any) -> bool:
    return s is True or s == {}


class _Checker:
    def __init__(self) -> None:
        self.assumed: set[tuple[int, int]] = set()

    def _deref(self, s: Any, resolver: Any) -> tuple[Any, Any]:
        """Follow ``$ref`` (alone, or beside other keywords in 2019-09+: the referenced schema
        stands for the whole, the siblings being rare in registered schemas)."""
        for _ in range(64):
            if not (isinstance(s, dict) and isinstance(s.get("$ref"), str)):
                break
            try:
                resolved = resolver.lookup(s["$ref"])
            except (Unresolvable, NoSuchResource, LookupError):
                break  # parse() made sure refs resolve; unreachable in practice
            s, resolver = resolved.contents, resolved.resolver
        return s, resolver

    def check(self, r: Any, rres: Any, w: Any, wres: Any, path: str) -> list[Incompatibility]:
        r, rres = self._deref(r, rres)
        w, wres = self._deref(w, wres)
        if w is False or _is_open(r):
            return []  # nothing written, or anything read
        if r is False:
            return [_incompat("TYPE_NARROWED", path, f"The new schema at path '{path}' accepts nothing")]
        if w is True:
            w = {}
        key = (id(r), id(w))
        if key in self.assumed:
            return []
        self.assumed.add(key)
        r, w = _flatten(r, rres, self._deref), _flatten(w, wres, self._deref)
        if any(isinstance(s.get(k), list) for s in (r, w) for k in ("oneOf", "anyOf")):
            return self._sum(r, rres, w, wres, path)
        out: list[Incompatibility] = []
        out += self._type(r, w, path)
        out += self._bounds(r, w, path)
        out += self._enum(r, w, path)
        out += self._object(r, rres, w, wres, path)
        out += self._array(r, rres, w, wres, path)
        if "not" in r or "not" in w:
            if "not" not in r:
                pass  # the reader dropped a negation: it accepts more
            elif "not" not in w:
                out.append(_incompat("NOT_TYPE_NARROWED", path, f"A 'not' was added at path '{path}'"))
            elif self.check(w["not"], wres, r["not"], rres, path + "/not"):
                out.append(_incompat("NOT_TYPE_NARROWED", path, f"The 'not' at path '{path}' excludes more"))
        return out

    # -- keywords --

    def _type(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[Incompatibility]:
        rt, wt = _types(r), _types(w)
        if rt is None:
            return []
        written = set(_TYPES) if wt is None else wt
        if "number" in rt:
            written = written - {"integer"}
        missing = written - rt
        if not missing:
            return []
        widened = set(_TYPES) if wt is None else wt | ({"integer"} if "number" in wt else set())
        kind = "TYPE_NARROWED" if rt <= widened else "TYPE_CHANGED"
        return [_incompat(kind, path, f"The type at path '{path}' in the new schema does not accept "
                                      f"{', '.join(sorted(missing))} of the old schema")]

    def _bounds(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[Incompatibility]:
        out = []
        for kw in (*_UPPER, *_LOWER):
            rv, wv = _number(r.get(kw)), _number(w.get(kw))
            if rv is None:
                continue
            if wv is None:
                out.append(_incompat(f"{_NAMES[kw]}_ADDED", f"{path}/{kw}", f"'{kw}' was added at path '{path}'"))
            elif (kw in _UPPER and rv < wv) or (kw in _LOWER and rv > wv):
                change = "DECREASED" if rv < wv else "INCREASED"
                out.append(_incompat(f"{_NAMES[kw]}_{change}", f"{path}/{kw}",
                                     f"'{kw}' at path '{path}' changed from {wv} to {rv}"))
        rm, wm = _number(r.get("multipleOf")), _number(w.get("multipleOf"))
        if rm is not None:
            if wm is None:
                out.append(_incompat("MULTIPLE_OF_ADDED", f"{path}/multipleOf", f"'multipleOf' added at '{path}'"))
            elif rm != wm and not _divides(rm, wm):
                kind = "MULTIPLE_OF_REDUCED" if _divides(wm, rm) else "MULTIPLE_OF_CHANGED"
                out.append(_incompat(kind, f"{path}/multipleOf", f"'multipleOf' at '{path}' changed from {wm} to {rm}"))
        if "pattern" in r and r.get("pattern") != w.get("pattern"):
            kind = "PATTERN_CHANGED" if "pattern" in w else "PATTERN_ADDED"
            out.append(_incompat(kind, f"{path}/pattern", f"'pattern' at path '{path}' was added or changed"))
        if r.get("uniqueItems") is True and w.get("uniqueItems") is not True:
            out.append(_incompat("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems", f"'uniqueItems' added at '{path}'"))
        return out

    def _enum(self, r: dict[str, Any], w: dict[str, Any], path: str) -> list[Incompatibility]:
        renum = r["enum"] if isinstance(r.get("enum"), list) else [r["const"]] if "const" in r else None
        wenum = w["enum"] if isinstance(w.get("enum"), list) else [w["const"]] if "const" in w else None
        if renum is None:
            return []
        if wenum is None:
            return [_incompat("ENUM_ARRAY_NARROWED", f"{path}/enum", f"An enum was added at path '{path}'")]
        missing = [v for v in wenum if v not in renum]
        if not missing:
            return []
        kind = "ENUM_ARRAY_NARROWED" if all(v in wenum for v in renum) else "ENUM_ARRAY_CHANGED"
        return [_incompat(kind, f"{path}/enum", f"The enum at path '{path}' lost {missing}")]

    def _object(self, r: dict[str, Any], rres: Any, w: dict[str, Any], wres: Any, path: str) -> list[Incompatibility]:
        out: list[Incompatibility] = []
        rprops, wprops = r.get("properties") or {}, w.get("properties") or {}
        rreq, wreq = set(r.get("required") or ()), set(w.get("required") or ())
        radd, wadd = r.get("additionalProperties", True), w.get("additionalProperties", True)
        for name in sorted(rreq - wreq):
            prop, _ = self._deref(rprops.get(name), rres)
            if isinstance(prop, dict) and "default" in prop:
                continue  # REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
            if name not in wprops and wadd is False and name in rprops:
                kind = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            else:
                kind = "REQUIRED_ATTRIBUTE_ADDED"
            out.append(_incompat(kind, f"{path}/required", f"The property '{name}' at path '{path}' became required"))
        for name, rp in rprops.items():
            ppath = f"{path}/properties/{name}"
            if name in wprops:
                out += self.check(rp, rres, wprops[name], wres, ppath)
            elif wadd is False:
                pass  # OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL (required: handled above)
            elif _is_open(wadd) or wadd is True:
                if not _is_open(self._deref(rp, rres)[0]):
                    out.append(_incompat("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", ppath,
                                         f"The new schema has an open content model and has a property at path "
                                         f"'{ppath}' which is missing in the old schema"))
            elif self.check(rp, rres, wadd, wres, ppath):
                out.append(_incompat("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", ppath,
                                     f"The property at path '{ppath}' is not covered by the old schema's "
                                     f"additionalProperties"))
        for name, wp in wprops.items():
            if name in rprops:
                continue
            ppath = f"{path}/properties/{name}"
            if radd is True or _is_open(radd):
                continue  # PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
            if radd is False:
                if self._deref(wp, wres)[0] is not False:
                    out.append(_incompat("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", ppath,
                                         f"The new schema has a closed content model and lacks the property at "
                                         f"path '{ppath}' of the old schema"))
            elif self.check(radd, rres, wp, wres, ppath):
                out.append(_incompat("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", ppath,
                                     f"The property at path '{ppath}' removed is not covered by the new schema's "
                                     f"additionalProperties"))
        if radd is not True and not _is_open(radd):
            apath = f"{path}/additionalProperties"
            if radd is False and wadd is not False:
                out.append(_incompat("ADDITIONAL_PROPERTIES_REMOVED", apath,
                                     f"The new schema closed the content model at path '{path}'"))
            elif radd is not False and wadd is not False:
                if _is_open(wadd) or wadd is True:
                    out.append(_incompat("ADDITIONAL_PROPERTIES_NARROWED", apath,
                                         f"The new schema narrowed additionalProperties at path '{path}'"))
                elif found := self.check(radd, rres, wadd, wres, apath):
                    out += found
        return out

    def _array(self, r: dict[str, Any], rres: Any, w: dict[str, Any], wres: Any, path: str) -> list[Incompatibility]:
        rtuple, rrest = _tuple(r)
        wtuple, wrest = _tuple(w)
        out: list[Incompatibility] = []
        for i, ri in enumerate(rtuple):
            ipath = f"{path}/items/{i}"
            if i < len(wtuple):
                out += self.check(ri, rres, wtuple[i], wres, ipath)
            elif wrest is False:
                pass  # old arrays never had an item there
            elif _is_open(wrest) or wrest is None:
                if not _is_open(self._deref(ri, rres)[0]):
                    out.append(_incompat("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", ipath,
                                         f"An item was added at path '{ipath}' where the old schema allowed any"))
            else:
                out += self.check(ri, rres, wrest, wres, ipath)
        for i in range(len(rtuple), len(wtuple)):
            ipath = f"{path}/items/{i}"
            if rrest is False:
                out.append(_incompat("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", ipath,
                                     f"The item at path '{ipath}' was removed from a closed content model"))
            elif rrest is not None and not _is_open(rrest):
                out += self.check(rrest, rres, wtuple[i], wres, ipath)
        if rrest is not None and not _is_open(rrest):
            if rrest is False and wrest is not False:
                out.append(_incompat("ADDITIONAL_ITEMS_REMOVED", path, f"The new schema closed the items at '{path}'"))
            elif rrest is not False:
                out += self.check(rrest, rres, {} if wrest is None else wrest, wres, f"{path}/items")
        return out

    def _sum(self, r: dict[str, Any], rres: Any, w: dict[str, Any], wres: Any, path: str) -> list[Incompatibility]:
        rk = next((k for k in ("oneOf", "anyOf") if isinstance(r.get(k), list)), None)
        wk = next((k for k in ("oneOf", "anyOf") if isinstance(w.get(k), list)), None)
        written = [_merge(w, wk, b) for b in w[wk]] if wk else [w]
        if rk is None:  # each writer branch must be read by the plain reader
            out = []
            for i, wb in enumerate(written):
                out += self.check(r, rres, wb, wres, f"{path}/{wk}/{i}")
            return out
        branches = [_merge(r, rk, b) for b in r[rk]]
        out = []
        if wk == "anyOf" and rk == "oneOf" and len(branches) > 1:
            # a document matching two writer branches fails the reader's oneOf
            out.append(_incompat("COMBINED_TYPE_CHANGED", path, f"'anyOf' became 'oneOf' at path '{path}'"))
        for i, wb in enumerate(written):
            if all(self.check(rb, rres, wb, wres, f"{path}/{rk}/{j}") for j, rb in enumerate(branches)):
                kind = "SUM_TYPE_NARROWED" if wk else "COMBINED_TYPE_CHANGED"
                out.append(_incompat(kind, f"{path}/{wk}/{i}" if wk else path,
                                     f"No branch of the new schema's '{rk}' at path '{path}' accepts what the old "
                                     f"schema's {f'branch {i}' if wk else 'schema'} did"))
        return out


def _flatten(s: dict[str, Any], resolver: Any, deref: Any) -> dict[str, Any]:
    """``allOf`` folded into one schema: its branches' keywords together (``properties``
    merged, a property in two branches becoming the ``allOf`` of both, ``required`` and
    ``type`` combined). After this a product type is checked by the keyword rules: a branch
    added to a reader's ``allOf`` shows as the constraints it adds (PRODUCT_TYPE_EXTENDED),
    one removed as constraints removed."""
    if not isinstance(s.get("allOf"), list):
        return s
    out = {k: v for k, v in s.items() if k != "allOf"}
    for branch in s["allOf"]:
        b, _ = deref(branch, resolver)
        if b is True:
            continue
        if b is False:
            return {"not": {}}
        b = _flatten(b, resolver, deref)
        for k, v in b.items():
            if k not in out:
                out[k] = v
            elif k == "properties":
                props = dict(out[k])
                for name, p in v.items():
                    props[name] = {"allOf": [props[name], p]} if name in props else p
                out[k] = props
            elif k == "required":
                out[k] = sorted(set(out[k]) | set(v))
            elif k == "type":
                a = {out[k]} if isinstance(out[k], str) else set(out[k])
                c = {v} if isinstance(v, str) else set(v)
                out[k] = sorted(a & c | ({"integer"} if "integer" in a and "number" in c
                                         or "number" in a and "integer" in c else set()))
            else:
                out[k] = v  # the later branch's value: rare enough not to intersect further
    return out


def _merge(s: dict[str, Any], keyword: str | None, branch: Any) -> Any:
    """A branch of a sum with the keywords beside the ``oneOf``/``anyOf`` (they apply to every
    branch)."""
    rest = {k: v for k, v in s.items() if k not in ("oneOf", "anyOf", keyword)}
    if not rest or not isinstance(branch, dict):
        return branch
    return {"allOf": [rest, branch]}


def _tuple(s: dict[str, Any]) -> tuple[list[Any], Any]:
    """(the positional item schemas, the schema of the items after them; None: any)."""
    if isinstance(s.get("prefixItems"), list):
        return s["prefixItems"], s.get("items")
    items = s.get("items")
    if isinstance(items, list):
        return items, s.get("additionalItems")
    return [], items


def _number(v: Any) -> float | None:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _divides(d: float, n: float) -> bool:
    """``n`` is a multiple of ``d``."""
    q = n / d
    return abs(q - round(q)) < 1e-9
