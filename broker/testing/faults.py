"""Fault injection: answer the next N requests of an API with an error code, delay them, or drop
the connection, so tests can drive real clients through their retry paths.

A ``Fault`` names an API (``ApiKey``, its name, or its number), optionally a topic and a
partition (then only requests that carry that topic/partition match), an action and a count
(the next ``count`` matching requests; ``count=-1``: until cleared). Actions:

- ``error``: the request is not handled; every partition of it (or the request itself, for APIs
  without partitions) is answered with ``error`` (an ``ErrorCode``, its name or number). A
  Produce rule that names a topic fails only that topic's (partition's) part of the request;
  the other partitions are written and answered as usual. A Metadata request is handled and
  then its topics carry the error. An acks=0 Produce gets no
  answer: its connection is closed, as Kafka does when an acks=0 produce fails.
- ``delay``: the request is handled ``delay_ms`` later (replies stay in request order, so the
  replies queued behind it on that connection wait too, as with a slow Kafka broker).
- ``drop``: the connection is closed before the request is handled (nothing of it is applied;
  replies not yet sent on that connection are lost with it).
- ``drop_after``: the request is handled, then the connection is closed instead of answering:
  the client cannot know whether it was applied (what idempotent producers exist for).

Rules are checked in the order they were added; the first that matches takes the request.

Off unless asked for: the broker calls into this module only while rules are pending (the
injector switches the server's request hook on when the first rule is added and off when the
last one is used up or cleared), so an idle injector costs nothing per request.

Threads: rules are added from the test's thread while the broker's event loop thread takes
them, so the rule list is guarded by a lock (taken only while rules are pending).
"""

from __future__ import annotations

import abc
import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from client.protocol.api import ApiKey, ErrorCode, error_name

__all__ = ["Fault", "FaultInjector", "FaultControl", "error_response", "request_partitions", "ACTIONS"]

ACTIONS = ("error", "delay", "drop", "drop_after")

_NAME_KEYS = {"name": ("topic", "topic_name"), "topic": ("name", "topic_name"), "topic_name": ("name", "topic"),
              "partition_index": ("partition", "index"), "index": ("partition", "partition_index"),
              "partition": ("partition_index", "index")}
_TOPIC_KEYS = ("name", "topic", "topic_name")
#: offsets an error answer carries as -1 (Kafka's INVALID_OFFSET), not the schema's 0
_OFFSET_FIELDS = {"base_offset", "high_watermark", "last_stable_offset", "log_start_offset", "offset"}
_PARTITION_KEYS = ("index", "partition", "partition_index")


def _api(api: ApiKey | str | int) -> int:
    if isinstance(api, str):
        return int(ApiKey[api.upper()])
    return int(ApiKey(api))


def _error(error: ErrorCode | str | int) -> int:
    if isinstance(error, str):
        return int(ErrorCode[error.upper()])
    return int(ErrorCode(error))


@dataclass
class Fault:
    api: int
    action: str
    error: int = 0
    delay_ms: float = 0.0
    count: int = 1
    topic: str | None = None
    partition: int | None = None
    hits: int = 0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {self.action!r}")
        if self.count == 0 or self.count < -1:
            raise ValueError("count must be positive, or -1 for until cleared")
        if self.action == "error" and not self.error:
            raise ValueError("an error fault needs a non-zero error code")

    def matches(self, key: int, request: dict[str, Any]) -> bool:
        if key != self.api:
            return False
        if self.topic is None and self.partition is None:
            return True
        for topic, partitions in request_partitions(request):
            if self.topic is not None and topic != self.topic:
                continue
            if self.partition is None or partitions is None or self.partition in partitions:
                return True
        return False

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["api"] = ApiKey(self.api).name
        d["error"] = error_name(self.error)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Fault:
        allowed = {"api", "action", "error", "delay_ms", "count", "topic", "partition"}
        unknown = set(d) - allowed
        if unknown:
            raise ValueError(f"unknown fault fields {sorted(unknown)}")
        return cls(api=_api(d["api"]), action=d["action"], error=_error(d.get("error", 0)),
                   delay_ms=float(d.get("delay_ms", 0)), count=int(d.get("count", 1)), topic=d.get("topic"),
                   partition=None if d.get("partition") is None else int(d["partition"]))


class FaultControl(abc.ABC):
    """The user-facing methods, shared by the in-process injector and the client of a
    subprocess broker's control listener; subclasses implement ``add``, ``clear`` and ``rules``."""

    @abc.abstractmethod
    def add(self, fault: Fault) -> None:
        """Install ``fault`` (a rule)."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every pending rule."""

    @abc.abstractmethod
    def rules(self) -> list[dict[str, Any]]:
        """Pending rules (with ``count`` left and ``hits`` so far), as JSON-style dicts."""

    def fail(self, api: ApiKey | str | int, error: ErrorCode | str | int, count: int = 1, *,
             topic: str | None = None, partition: int | None = None) -> None:
        """Answer the next ``count`` matching requests of ``api`` with ``error``."""
        self.add(Fault(_api(api), "error", error=_error(error), count=count, topic=topic, partition=partition))

    def delay(self, api: ApiKey | str | int, delay_ms: float, count: int = 1, *, topic: str | None = None,
              partition: int | None = None) -> None:
        """Handle the next ``count`` matching requests of ``api`` ``delay_ms`` later."""
        self.add(Fault(_api(api), "delay", delay_ms=delay_ms, count=count, topic=topic, partition=partition))

    def drop(self, api: ApiKey | str | int, count: int = 1, *, after: bool = False, topic: str | None = None,
             partition: int | None = None) -> None:
        """Close the connection of the next ``count`` matching requests of ``api``: before
        handling them, or (``after=True``) after handling them, instead of answering."""
        self.add(Fault(_api(api), "drop_after" if after else "drop", count=count, topic=topic, partition=partition))


class FaultInjector(FaultControl):
    """The broker-side rule list. ``on_change(armed)`` is called when the list goes from empty
    to pending or back, from the thread that changed it and *under the rule lock*, so that
    concurrent changes (a rule added by the test while the loop uses up the last one) reach it
    in the order they happened; it must be quick and must not call back into the injector."""

    def __init__(self) -> None:
        self._rules: list[Fault] = []
        #: the APIs of the pending rules (replaced, never mutated: read without the lock)
        self._apis: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.on_change: Callable[[bool], None] | None = None

    @property
    def armed(self) -> bool:
        return bool(self._rules)

    def add(self, fault: Fault) -> None:
        with self._lock:
            was = bool(self._rules)
            self._rules.append(fault)
            self._apis = frozenset(r.api for r in self._rules)
            if not was and self.on_change is not None:
                self.on_change(True)

    def clear(self) -> None:
        with self._lock:
            was = bool(self._rules)
            self._rules.clear()
            self._apis = frozenset()
            if was and self.on_change is not None:
                self.on_change(False)

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.to_json() for r in self._rules]

    def take(self, key: int, request: dict[str, Any]) -> Fault | None:
        """The first pending rule matching this request, used up by one."""
        with self._lock:
            for i, r in enumerate(self._rules):
                if r.matches(key, request):
                    r.hits += 1
                    if r.count > 0:
                        r.count -= 1
                        if r.count == 0:
                            del self._rules[i]
                            self._apis = frozenset(r.api for r in self._rules)
                            if not self._rules and self.on_change is not None:
                                self.on_change(False)
                    return r
            return None

    def intercept(self, conn: Any, key: int, version: int, request: dict[str, Any],
                  call: Callable[[dict[str, Any]], Any]) -> Any:
        """Handle one request through the rules: ``call(request)`` runs the real handler;
        ``conn.abort(reason)`` drops the connection. Returns what a handler returns."""
        if key not in self._apis:  # the common case while rules for other APIs are pending
            return call(request)
        from ..handlers import CLOSE, NO_RESPONSE
        rule = self.take(key, request)
        if rule is None:
            return call(request)
        acks0 = key == ApiKey.PRODUCE and request.get("acks") == 0
        if rule.action == "error":
            if acks0:
                return CLOSE
            if key == ApiKey.PRODUCE and rule.topic is not None:
                return self._produce_partly(version, request, rule, call)
            if key == ApiKey.METADATA:
                body = call(request)
                for t in body.get("topics") or ():
                    if rule.topic is None or t.get("name") == rule.topic:
                        t["error_code"] = rule.error
                return body
            return error_response(key, version, request, rule.error)
        if rule.action == "drop":
            conn.abort(f"fault injection: {rule.action} on {ApiKey(key).name}")
            return NO_RESPONSE
        result = call(request) if rule.action == "drop_after" or acks0 else None
        if rule.action == "drop_after":
            if not asyncio.iscoroutine(result):
                conn.abort(f"fault injection: {rule.action} on {ApiKey(key).name}")
                return NO_RESPONSE

            async def then_drop() -> Any:
                body = await result
                conn.abort(f"fault injection: {rule.action} on {ApiKey(key).name}")
                return body
            return then_drop()
        if acks0:  # delay: nothing is answered, so there is nothing to delay
            return result

        async def delayed() -> Any:
            await asyncio.sleep(rule.delay_ms / 1000)
            r = call(request)
            if asyncio.iscoroutine(r):
                r = await r
            return r
        return delayed()

    @staticmethod
    def _produce_partly(version: int, request: dict[str, Any], rule: Fault,
                        call: Callable[[dict[str, Any]], Any]) -> Any:
        """A Produce rule naming a topic (and partition): only those partitions get the error
        (and are not written); the request's other partitions are handled as usual, and the
        answers are merged (clients match partition answers by topic and index)."""
        hit: list[dict[str, Any]] = []
        keep: list[dict[str, Any]] = []
        for t in request["topic_data"]:
            mine = [p for p in t["partition_data"] if t["name"] == rule.topic
                    and (rule.partition is None or p["index"] == rule.partition)]
            rest = [p for p in t["partition_data"] if not any(p is m for m in mine)]
            if mine:
                hit.append({**t, "partition_data": mine})
            if rest:
                keep.append({**t, "partition_data": rest})
        errors = error_response(ApiKey.PRODUCE, version, {"topic_data": hit}, rule.error)["responses"]
        if not keep:
            return error_response(ApiKey.PRODUCE, version, request, rule.error)
        result = call({**request, "topic_data": keep})

        def merge(body: dict[str, Any]) -> dict[str, Any]:
            body["responses"].extend(errors)
            return body
        if asyncio.iscoroutine(result):
            async def merged() -> Any:
                return merge(await result)
            return merged()
        return merge(result)

    # ------------------------------------------------------------ the control listener's route

    def http_route(self, method: str, body: bytes) -> tuple[int, str, bytes]:
        """``GET /faults``: pending rules; ``POST /faults`` with one rule as JSON (the
        ``Fault`` fields; ``api`` and ``error`` by name or number): add it;
        ``DELETE /faults``: clear."""
        try:
            if method == "POST":
                self.add(Fault.from_json(json.loads(body)))
            elif method == "DELETE":
                self.clear()
            elif method != "GET":
                return 405, "text/plain", b"GET, POST or DELETE\n"
        except (ValueError, KeyError, TypeError) as e:
            return 400, "application/json", json.dumps({"error": str(e)}).encode()
        return 200, "application/json", json.dumps(self.rules()).encode()


# ---------------------------------------------------------------- requests and error responses


def request_partitions(request: dict[str, Any]) -> list[tuple[str, set[int] | None]]:
    """(topic, partitions or None when the request names none) for each topic a request names,
    found by shape: a list of dicts with a topic-name key, holding lists of partition dicts or
    of partition numbers."""
    out: list[tuple[str, set[int] | None]] = []
    for v in request.values():
        if type(v) is not list:
            continue
        for item in v:
            if type(item) is not dict:
                continue
            topic = next((item[k] for k in _TOPIC_KEYS if isinstance(item.get(k), str)), None)
            if topic is None:
                continue
            parts: set[int] | None = None
            for sub in item.values():
                if type(sub) is not list:
                    continue
                for p in sub:
                    if type(p) is int:
                        parts = (parts or set()) | {p}
                    elif type(p) is dict:
                        idx = next((p[k] for k in _PARTITION_KEYS if type(p.get(k)) is int), None)
                        if idx is not None:
                            parts = (parts or set()) | {idx}
            out.append((topic, parts))
    return out


def error_response(key: int, version: int, request: dict[str, Any], code: int) -> dict[str, Any]:
    """A response body answering ``request`` with ``code``, built from the response schema: its
    arrays of structs mirror the request's arrays (same field name, else the request's first
    list at that level), copying the keys that identify an entry (topic name, partition index,
    ...); ``error_code`` is set at the innermost level that has one, every other field keeps
    its default (offsets: -1)."""
    from client.protocol.messages import RESPONSES
    body, _ = _mirror(RESPONSES[key].fields, request, version, code)
    return body


def _mirror(fields: Any, req: Any, version: int, code: int) -> tuple[dict[str, Any], bool]:
    from client.protocol.schema import Array, Struct, parse_versions
    out: dict[str, Any] = {}
    inner_error = False
    error_field: str | None = None
    req_lists = [(k, v) for k, v in req.items() if type(v) is list] if type(req) is dict else []
    for f in fields:
        lo, hi = parse_versions(f.versions)
        if not lo <= version <= hi:
            continue
        if f.name == "error_code" or f.name == "partition_error_code":  # AddPartitionsToTxn's name
            error_field = f.name
        elif f.name in _OFFSET_FIELDS:
            out[f.name] = -1
        elif isinstance(f.type, Array) and not isinstance(f.type.of, str):
            src = next((v for k, v in req_lists if k == f.name), None)
            if src is None and req_lists:  # the first list the request fills (a field of other
                # versions decodes to an empty list: AddPartitionsToTxn v3's "transactions")
                src = next((v for _, v in req_lists if v), req_lists[0][1])
            items = []
            for item in src or ():
                if type(item) is not dict:  # a list of names or numbers: the entry's first field
                    item = {f.type.of[0].name: item}
                child, err = _mirror(f.type.of, item, version, code)
                inner_error = inner_error or err
                items.append(child)
            out[f.name] = items
        elif isinstance(f.type, Struct) and f.nullable is None:  # a struct every response carries
            child, _ = _mirror(f.type.fields, {}, version, code)
            child.pop("error_code", None)
            out[f.name] = child
        elif type(req) is dict:
            if f.name in req and not isinstance(req[f.name], (list, dict, memoryview, bytes)):
                out[f.name] = req[f.name]
            else:
                for alias in _NAME_KEYS.get(f.name, ()):
                    if alias in req and isinstance(req[alias], (str, int)):
                        out[f.name] = req[alias]
                        break
    if error_field is not None:
        out[error_field] = 0 if inner_error else code
    return out, error_field is not None or inner_error
