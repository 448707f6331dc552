"""Client quota configs (KIP-546), kept durably in the data directory: what AlterClientQuotas
changes and DescribeClientQuotas lists, with the checks and messages of Kafka's KRaft
controller (``ClientQuotaControlManager``) and broker (``ClientQuotasImage.describe``).

**Entities** map entity types to names: ``user`` (a principal's name: ``alice`` for
``User:alice``, ``ANONYMOUS`` on a PLAINTEXT listener), ``client-id`` (a request header's client
id), alone or together, or ``ip`` alone; a null name is the type's default entity. Keys:
``producer_byte_rate`` and ``consumer_byte_rate`` (bytes per second, whole numbers),
``request_percentage`` (percent of one thread's time) and ``controller_mutation_rate``
(partitions created or deleted per second) for user and client-id entities;
``connection_creation_rate`` (connections per second, a whole number up to 2^31-1) for ip.

**Alter** (Kafka 3.9's ``ClientQuotaControlManager.alterClientQuotas``), entity by entity in
request order, all the accepted changes applied at once:

- an entity whose ops name a key twice, or an entity named again, answers INVALID_REQUEST
  "Ignoring duplicate entity ClientQuotaEntity(entries={...})" (the later answer replaces the
  earlier one, as Kafka keeps one result per entity; the first occurrence's changes still apply);
- INVALID_REQUEST for an empty entity ("Invalid empty client quota entity"), an unknown entity
  type ("Unhandled client quota entity type: x"), an empty name ("Empty user not supported"),
  ip with user or client-id ("Invalid quota entity combination, IP entity shouldnot be combined
  with User or ClientId", Kafka's missing space kept), an ip that is neither an address nor a
  resolvable host name ("x is not a valid IP or resolvable host."), an unknown key ("Invalid
  configuration key x"), a value not above 0 ("Quota x must be greater than 0"), a fraction for
  a whole-number key ("x cannot be a fractional value."), a value too large for its type
  ("Proposed value for x is too large for a LONG." / "an INT.");
- a removal of a key that is not set changes nothing, and is not checked (Kafka's);
- ``validate_only`` answers as above and changes nothing.

**Describe** (``ClientQuotasImage.describe``): a filter component per entity type (at most
one each): match type 0 the exact name, 1 the default entity, 2 any name (default included);
``strict`` leaves out entities that have other types. Refused whole: an empty entity type
(INVALID_REQUEST "Invalid empty entity type."), a type named twice ("Entity type x cannot appear
more than once in the filter."), a type other than the three (UNSUPPORTED_VERSION "Unsupported
entity type x"), a match string with match type 1 or 2, none with 0, an unknown match type,
ip with user or client-id ("Invalid entity filter component combination. IP filter component
should not be used with user or clientId filter component.").

**File**: ``<log.dir>/client-quotas.json`` (minibroker's own; Kafka keeps ClientQuotaRecords in
its metadata log), replaced whole by ``atomic_write`` on every accepted change, so a crash
leaves the old or the new set; the set in memory changes only once the file is written::

    {"version": 1, "quotas": [
    {"entity": {"user": "alice"}, "values": {"producer_byte_rate": 1048576.0}}
    ]}

A missing file is no quota. A file that cannot be read as this format (bad JSON, another
version, an unknown entity type or key, a bad combination, a value not above 0, an entity
twice) stops start-up with ``ClientQuotaFileError``, one line naming the file.

Entities are listed with their types in the order Kafka's ``HashMap`` gives them
(``client-id`` before ``user``), as its answers do.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from client.protocol.api import ErrorCode

from ..storage.fileutil import atomic_write, read_atomic_file

__all__ = ["ClientQuotaStore", "ClientQuotaFileError", "QuotaRequestError", "Entity", "USER", "CLIENT_ID", "IP",
           "USER_CLIENT_KEYS", "IP_KEYS", "QUOTAS_FILE", "MATCH_EXACT", "MATCH_DEFAULT", "MATCH_SPECIFIED",
           "entity_text", "java_order", "is_ip_literal", "listed_entity"]

QUOTAS_FILE = "client-quotas.json"
FORMAT_VERSION = 1

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

_LONG, _INT, _DOUBLE = "LONG", "INT", "DOUBLE"
#: the keys of user and client-id entities, with their ConfigDef types (Kafka's QuotaConfig)
USER_CLIENT_KEYS = {"producer_byte_rate": _LONG, "consumer_byte_rate": _LONG, "request_percentage": _DOUBLE,
                    "controller_mutation_rate": _DOUBLE}
#: the keys of ip entities
IP_KEYS = {"connection_creation_rate": _INT}
_LONG_MAX = float(2**63 - 1)
_INT_MAX = float(2**31 - 1)

#: an entity: (type, name) pairs sorted by type; a null name is the type's default entity
Entity = tuple[tuple[str, str | None], ...]


class ClientQuotaFileError(Exception):
    """The quotas file exists but cannot be used (the message names it, on one line)."""


class QuotaRequestError(Exception):
    """A DescribeClientQuotas filter refused whole: its error code and Kafka's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _java_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_order(keys: Sequence[str], initial_capacity: int) -> list[str]:
    """``keys`` (distinct) in the order a Java ``HashMap(initial_capacity)`` they were put in,
    in turn, iterates them: by bucket (the spread hash modulo the final table size), then by
    insertion within a bucket."""
    cap = 1
    while cap < initial_capacity:
        cap <<= 1
    threshold = int(cap * 0.75)
    for size in range(1, len(keys) + 1):
        if size > threshold:
            cap <<= 1
            threshold = int(cap * 0.75) if cap < 16 * 2 else threshold * 2
    def bucket(i: int) -> tuple[int, int]:
        h = _java_hash(keys[i])
        return ((h ^ (h >> 16)) & (cap - 1), i)
    return [keys[i] for i in sorted(range(len(keys)), key=bucket)]


def _java_map_text(pairs: Mapping[str, str | None], initial_capacity: int) -> str:
    order = java_order(list(pairs), initial_capacity)
    return "{" + ", ".join(f"{k}={'null' if pairs[k] is None else pairs[k]}" for k in order) + "}"


def entity_text(pairs: Mapping[str, str | None], initial_capacity: int | None = None) -> str:
    """Kafka's ``ClientQuotaEntity.toString``: ``ClientQuotaEntity(entries={user=alice})``."""
    cap = len(pairs) if initial_capacity is None else initial_capacity
    return f"ClientQuotaEntity(entries={_java_map_text(pairs, cap)})"


def _canonical(pairs: Mapping[str, str | None]) -> Entity:
    return tuple(sorted(pairs.items(), key=lambda kv: kv[0]))


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _key_error(keys: Mapping[str, str], key: str, value: float) -> str | None:
    """Kafka's ``validateQuotaKeyValue``: why ``value`` may not be set for ``key``, or None."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if not value > 0.0:  # NaN too: Kafka would store it and then divide by it
        return f"Quota {key} must be greater than 0"
    if kind == _DOUBLE:
        return None
    if kind == _INT and value > _INT_MAX:
        return f"Proposed value for {key} is too large for an INT."
    if kind == _LONG and value > _LONG_MAX:
        return f"Proposed value for {key} is too large for a LONG."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _keys_for(pairs: Mapping[str, str | None], resolvable: Callable[[str], bool]) -> tuple[Mapping[str, str] | None, str]:
    """Kafka's ``configKeysForEntityType``: the keys the entity may have, or (None, why not)."""
    has_user, has_client, has_ip = USER in pairs, CLIENT_ID in pairs, IP in pairs
    if has_ip:
        if has_user or has_client:
            return None, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        ip = pairs[IP]
        if ip is not None and not is_ip_literal(ip) and not resolvable(ip):
            return None, f"{ip} is not a valid IP or resolvable host."
        return IP_KEYS, ""
    if has_user or has_client:
        return USER_CLIENT_KEYS, ""
    return None, "Invalid empty client quota entity"


class ClientQuotaStore:
    """The quota configs of one data directory; see the module docstring. ``on_change(entity,
    key, value)`` is called for every key set (``value``) or removed (None) once durable."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, QUOTAS_FILE)
        self.quotas: dict[Entity, dict[str, float]] = self._load()
        self.listeners: list[Callable[[Entity, str, float | None], None]] = []

    # ------------------------------------------------------------------ the file

    def _load(self) -> dict[Entity, dict[str, float]]:
        data = read_atomic_file(self.path, "the client quotas file", ClientQuotaFileError)
        if data is None:
            return {}
        try:
            return _decode(data)
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as e:
            reason = str(e).replace("\n", " ")
            raise ClientQuotaFileError(f"the client quotas file {self.path} cannot be used ({reason}); restore it"
                                       " from a backup, or remove it to start without client quotas") from e

    def _write(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        atomic_write(self.path, _encode(quotas))

    # ------------------------------------------------------------------ describe

    def describe(self, components: Iterable[Mapping[str, Any]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities matching the filter, with their values (QuotaRequestError: refused)."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for c in components:
            etype, match_type, match = c["entity_type"], c["match_type"], c["match"]
            if not etype:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if etype in exact or etype in typed:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                        f"Entity type {etype} cannot appear more than once in the filter.")
            if etype not in ENTITY_TYPES:
                raise QuotaRequestError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {etype}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                            "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[etype] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[etype] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.INVALID_REQUEST,
                                            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match"
                                            " string.")
                typed.add(etype)
            else:
                raise QuotaRequestError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and (USER in exact or USER in typed or CLIENT_ID in exact or CLIENT_ID in typed):
            raise QuotaRequestError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP"
                                    " filter component should not be used with user or clientId filter component.")
        out = []
        for entity in sorted(self.quotas, key=_sort_key):
            pairs = dict(entity)
            if strict and len(pairs) != len(exact) + len(typed):
                continue
            if any(t not in pairs or pairs[t] != name for t, name in exact.items()):
                continue
            if any(t not in pairs for t in typed):
                continue
            out.append((entity, dict(sorted(self.quotas[entity].items()))))
        return out

    # ------------------------------------------------------------------ alter

    def alter(self, entries: Sequence[Mapping[str, Any]], validate_only: bool,
              resolvable: Callable[[str], bool] = lambda host: False) -> list[tuple[list[tuple[str, str | None]], int, str | None]]:
        """Apply AlterClientQuotas' ``entries`` (the request's, as decoded): one result per
        distinct entity, in the order they first appear: (the entity as (type, name) pairs in
        Kafka's order, error code, message). ``resolvable(host)``: whether an ip entity that
        is not an address names a host that resolves. OSError if the file cannot be written (nothing changed)."""
        results: dict[Entity, tuple[list[tuple[str, str | None]], int, str | None]] = {}
        changes: list[tuple[Entity, str, float | None]] = []
        for entry in entries:
            pairs: dict[str, str | None] = {}
            for e in entry["entity"]:
                pairs[e["entity_type"]] = e["entity_name"]  # a type named twice: the last name (a Java map)
            capacity = len(entry["entity"])
            listed = [(t, pairs[t]) for t in java_order(list(pairs), capacity)]
            key = _canonical(pairs)
            alterations: dict[str, float | None] = {}
            duplicate_key = False
            for op in entry["ops"]:
                if op["key"] in alterations:
                    duplicate_key = True
                else:
                    alterations[op["key"]] = None if op["remove"] else op["value"]
            if duplicate_key or key in results:
                results[key] = (listed, ErrorCode.INVALID_REQUEST,
                                f"Ignoring duplicate entity {entity_text(pairs, capacity)}")
                continue
            code, message, entity_changes = self._alter_entity(pairs, listed, key, alterations, resolvable)
            results[key] = (listed, code, message)
            changes += entity_changes
        if not validate_only and changes:
            new = {e: dict(v) for e, v in self.quotas.items()}
            for entity, k, value in changes:
                values = new.setdefault(entity, {})
                if value is None:
                    values.pop(k, None)
                    if not values:
                        del new[entity]
                else:
                    values[k] = value
            self._write(new)  # the commit point
            self.quotas = new
            for entity, k, value in changes:
                for listener in self.listeners:
                    listener(entity, k, value)
        return list(results.values())

    def _alter_entity(self, pairs: dict[str, str | None], listed: list[tuple[str, str | None]], key: Entity,
                      alterations: dict[str, float | None], resolvable: Callable[[str], bool]
                      ) -> tuple[int, str | None, list[tuple[Entity, str, float | None]]]:
        """Kafka's ``alterClientQuotaEntity``: (error code, message, the changes it makes)."""
        if not pairs:
            return ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity", []
        for etype, name in listed:
            if etype not in ENTITY_TYPES:
                return ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {etype}", []
            if name == "":
                return ErrorCode.INVALID_REQUEST, f"Empty {etype} not supported", []
        keys, why = _keys_for(pairs, resolvable)
        if keys is None:
            return ErrorCode.INVALID_REQUEST, why, []
        current = self.quotas.get(key, {})
        changes: list[tuple[Entity, str, float | None]] = []
        for k in java_order(list(alterations), len(alterations)):
            value = alterations[k]
            if value is None:
                if k in current:
                    changes.append((key, k, None))
                continue
            problem = _key_error(keys, k, value)
            if problem is not None:
                return ErrorCode.INVALID_REQUEST, problem, []
            if current.get(k) != value:
                changes.append((key, k, float(value)))
        return 0, None, changes


def _sort_key(entity: Entity) -> tuple[tuple[str, int, str], ...]:
    return tuple((t, 0 if n is None else 1, n or "") for t, n in entity)


def listed_entity(entity: Entity) -> list[tuple[str, str | None]]:
    """An entity's (type, name) pairs in the order Kafka's answers list them."""
    pairs = dict(entity)
    return [(t, pairs[t]) for t in java_order(list(pairs), 2)]


def _encode(quotas: Mapping[Entity, Mapping[str, float]]) -> bytes:
    lines = [json.dumps({"entity": dict(entity), "values": dict(sorted(values.items()))})
             for entity, values in sorted(quotas.items(), key=lambda kv: _sort_key(kv[0]))]
    body = ",\n".join(lines)
    return f'{{"version": {FORMAT_VERSION}, "quotas": [\n{body}\n]}}\n'.encode()


def _decode(data: bytes) -> dict[Entity, dict[str, float]]:
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"not a version {FORMAT_VERSION} client quotas file")
    quotas = doc["quotas"]
    if not isinstance(quotas, list):
        raise ValueError("quotas is not a list")
    out: dict[Entity, dict[str, float]] = {}
    seen: set[Entity] = set()
    for item in quotas:
        pairs, values = item["entity"], item["values"]
        if not isinstance(pairs, dict) or not isinstance(values, dict) or not pairs:
            raise ValueError(f"bad entry {json.dumps(item)}")
        for etype, name in pairs.items():
            if etype not in ENTITY_TYPES or not (name is None or (isinstance(name, str) and name)):
                raise ValueError(f"bad entity {json.dumps(pairs)}")
        keys, why = _keys_for(pairs, lambda _: True)
        if keys is None:
            raise ValueError(f"entity {json.dumps(pairs)}: {why}")
        entity = _canonical(pairs)
        if entity in seen:
            raise ValueError(f"entity {json.dumps(pairs)} listed twice")
        seen.add(entity)
        checked: dict[str, float] = {}
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"entity {json.dumps(pairs)}: {k} is not a number")
            problem = _key_error(keys, k, float(v))
            if problem is not None:
                raise ValueError(f"entity {json.dumps(pairs)}: {problem}")
            checked[k] = float(v)
        if checked:
            out[entity] = checked
    return out
