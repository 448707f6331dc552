"""Confluent Schema Registry's REST API (v1) on aiohttp, over a ``SchemaStore``.

Requests and answers are JSON; the answer's media type is the first of Confluent's
(``application/vnd.schemaregistry.v1+json``, ``application/vnd.schemaregistry+json``,
``application/json``) the request's ``Accept`` names, the first one by default. An error is
``{"error_code": N, "message": "..."}`` with Confluent's code (errors.py), also for an unknown
path (404), a method not allowed (405) and a body that is not JSON (400).

Reads answer from the state in memory; writes go through ``SchemaStore.write`` and answer once
their records are fsync'd. Schema types: AVRO, JSON and PROTOBUF (another ``schemaType`` is a
42201). ``?format=serialized`` on the reads of a PROTOBUF schema answers its descriptor,
serialized and base64-encoded, as confluent-kafka's Protobuf deserializer asks for it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from .auth import REALM, BasicAuthenticator
from .errors import ErrorCode, RegistryError
from .protobuf import ProtobufSchema
from .records import Reference, SchemaValue
from .schema_types import SCHEMA_TYPES
from .state import RegistryState
from .store import SchemaStore

__all__ = ["MEDIA_TYPES", "make_app"]

MEDIA_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(store: SchemaStore, authenticator: BasicAuthenticator | None = None) -> web.Application:
    """``authenticator``: HTTP Basic authentication of every request (auth.py); None: none."""
    middlewares: list[Middleware] = [_errors]
    if authenticator is not None:
        middlewares.append(_basic_auth(authenticator))
    app = web.Application(middlewares=middlewares)
    api = _Api(store)
    r = app.router
    r.add_get("/", api.root)
    r.add_get("/subjects", api.subjects)
    r.add_get("/subjects/{subject}/versions", api.versions)
    r.add_post("/subjects/{subject}/versions", api.register)
    r.add_get("/subjects/{subject}/versions/{version}", api.version)
    r.add_delete("/subjects/{subject}/versions/{version}", api.delete_version)
    r.add_get("/subjects/{subject}/versions/{version}/schema", api.version_schema)
    r.add_get("/subjects/{subject}/versions/{version}/referencedby", api.referenced_by)
    r.add_post("/subjects/{subject}", api.lookup)
    r.add_delete("/subjects/{subject}", api.delete_subject)
    r.add_get("/schemas/types", api.types)
    r.add_get("/schemas/ids/{id}", api.schema_by_id)
    r.add_get("/schemas/ids/{id}/schema", api.raw_schema_by_id)
    r.add_get("/schemas/ids/{id}/subjects", api.id_subjects)
    r.add_get("/schemas/ids/{id}/versions", api.id_versions)
    for path in ("/config", "/config/{subject}"):
        r.add_get(path, api.get_config)
        r.add_put(path, api.put_config)
        r.add_delete(path, api.delete_config)
    for path in ("/mode", "/mode/{subject}"):
        r.add_get(path, api.get_mode)
        r.add_put(path, api.put_mode)
        r.add_delete(path, api.delete_mode)
    r.add_post("/compatibility/subjects/{subject}/versions/{version}", api.compatibility)
    r.add_post("/compatibility/subjects/{subject}/versions", api.compatibility)
    return app


def _media_type(request: web.Request) -> str:
    accept = request.headers.get("Accept", "")
    for part in accept.split(","):
        mt = part.split(";")[0].strip().lower()
        if mt in MEDIA_TYPES:
            return mt
    return MEDIA_TYPES[0]


def _json(request: web.Request, body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(body).encode(), content_type=_media_type(request))


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RegistryError as e:
        return _json(request, e.body(), e.status)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return _json(request, {"error_code": e.status, "message": f"HTTP {e.status} {e.reason}"}, e.status)


def _basic_auth(authenticator: BasicAuthenticator) -> Middleware:
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if await authenticator.authenticate(request.headers.get("Authorization")) is None:
            response = _json(request, {"error_code": 401, "message": "Unauthorized"}, 401)
            response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
            return response
        return await handler(request)

    return check


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError as e:
        raise RegistryError(ErrorCode.BAD_REQUEST, f"Unrecognized JSON body: {e}") from None
    if not isinstance(body, dict):
        raise RegistryError(ErrorCode.BAD_REQUEST, "The request body must be a JSON object")
    return body


def _schema_request(body: dict[str, Any]) -> tuple[str, str, tuple[Reference, ...]]:
    """(schema text, schema type, references) of a register, lookup or compatibility body."""
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise RegistryError.invalid_schema("Empty schema")
    schema_type = body.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str):
        raise RegistryError.invalid_schema(f"schemaType {schema_type!r} is not a string")
    refs = []
    for r in body.get("references") or ():
        try:
            refs.append(Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
        except (KeyError, TypeError, ValueError):
            raise RegistryError.invalid_schema(f"a reference needs a name, a subject and a version: {r!r}") from None
    return schema, schema_type.upper(), tuple(refs)


def _version_body(v: SchemaValue, schema: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    out.update(_schema_fields(v, schema))
    return out


def _schema_fields(v: SchemaValue, schema: str | None = None) -> dict[str, Any]:
    """``schema``: the text to answer instead of the stored one (another ``format``)."""
    out: dict[str, Any] = {}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = [r.to_json() for r in v.references]
    out["schema"] = v.schema if schema is None else schema
    return out


def _schema_id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise RegistryError.schema_not_found() from None


class _Api:
    def __init__(self, store: SchemaStore) -> None:
        self.store = store

    @property
    def state(self) -> RegistryState:
        return self.store.state

    def _formatted(self, request: web.Request, v: SchemaValue) -> str:
        """The schema's text in the ``format`` asked for: ``serialized`` is the base64 descriptor
        of a PROTOBUF schema; any other format (Confluent's ``resolved`` of AVRO, ``default``)
        the stored text."""
        if request.query.get("format") == "serialized" and v.schema_type == "PROTOBUF":
            parsed = self.state.parsed(v)
            assert isinstance(parsed, ProtobufSchema)
            return parsed.serialized()
        return v.schema

    async def root(self, request: web.Request) -> web.Response:
        return _json(request, {})

    # -- subjects --

    async def subjects(self, request: web.Request) -> web.Response:
        return _json(request, self.state.list_subjects(_flag(request, "deleted"), request.query.get("subjectPrefix", "")))

    async def versions(self, request: web.Request) -> web.Response:
        return _json(request, self.state.list_versions(request.match_info["subject"], _flag(request, "deleted")))

    async def version(self, request: web.Request) -> web.Response:
        v = self.state.get_version(request.match_info["subject"], request.match_info["version"], _flag(request, "deleted"))
        return _json(request, _version_body(v, self._formatted(request, v)))

    async def version_schema(self, request: web.Request) -> web.Response:
        v = self.state.get_version(request.match_info["subject"], request.match_info["version"], _flag(request, "deleted"))
        return web.Response(body=self._formatted(request, v).encode(), content_type=_media_type(request))

    async def referenced_by(self, request: web.Request) -> web.Response:
        return _json(request, self.state.referenced_by(request.match_info["subject"], request.match_info["version"]))

    async def register(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        body = await _body(request)
        text, schema_type, refs = _schema_request(body)
        schema = self.state.parse(text, schema_type, refs, _flag(request, "normalize"))
        schema_id, version = body.get("id"), body.get("version")
        for name, given in (("id", schema_id), ("version", version)):
            if given is not None and (not isinstance(given, int) or given < 1):
                raise RegistryError(ErrorCode.BAD_REQUEST, f"{name} must be a positive integer, got {given!r}")
        new_id = await self.store.write(lambda s: s.register(subject, schema, refs, schema_id, version))
        return _json(request, {"id": new_id})

    async def lookup(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        text, schema_type, refs = _schema_request(await _body(request))
        if not self.state.subjects.get(subject):
            raise RegistryError.subject_not_found(subject)
        schema = self.state.parse(text, schema_type, refs, _flag(request, "normalize"))
        return _json(request, _version_body(self.state.lookup(subject, schema, refs, _flag(request, "deleted"))))

    async def delete_version(self, request: web.Request) -> web.Response:
        subject, version = request.match_info["subject"], request.match_info["version"]
        permanent = _flag(request, "permanent")
        return _json(request, await self.store.write(lambda s: s.delete_version(subject, version, permanent)))

    async def delete_subject(self, request: web.Request) -> web.Response:
        subject, permanent = request.match_info["subject"], _flag(request, "permanent")
        return _json(request, await self.store.write(lambda s: s.delete_subject(subject, permanent)))

    # -- schemas by id --

    async def types(self, request: web.Request) -> web.Response:
        return _json(request, list(SCHEMA_TYPES))

    async def schema_by_id(self, request: web.Request) -> web.Response:
        v = self.state.schema_by_id(_schema_id(request))
        return _json(request, _schema_fields(v, self._formatted(request, v)))

    async def raw_schema_by_id(self, request: web.Request) -> web.Response:
        v = self.state.schema_by_id(_schema_id(request))
        return web.Response(body=self._formatted(request, v).encode(), content_type=_media_type(request))

    async def id_subjects(self, request: web.Request) -> web.Response:
        pairs = self.state.id_versions(_schema_id(request), _flag(request, "deleted"))
        return _json(request, sorted({s for s, _ in pairs}))

    async def id_versions(self, request: web.Request) -> web.Response:
        pairs = self.state.id_versions(_schema_id(request), _flag(request, "deleted"))
        return _json(request, [{"subject": s, "version": v} for s, v in pairs])

    # -- config and mode --

    async def get_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        state = self.state
        if subject is not None and subject not in state.configs and not _flag(request, "defaultToGlobal"):
            if subject not in state.subjects:
                raise RegistryError.subject_not_found(subject)
            raise RegistryError(ErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
                                f"Subject '{subject}' does not have subject-level compatibility configured")
        return _json(request, {"compatibilityLevel": state.level(subject)})

    async def put_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        level = (await _body(request)).get("compatibility")
        return _json(request, {"compatibility": await self.store.write(lambda s: s.set_config(subject, level))})

    async def delete_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return _json(request, {"compatibilityLevel": await self.store.write(lambda s: s.delete_config(subject))})

    async def get_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        state = self.state
        if subject is not None and subject not in state.modes and not _flag(request, "defaultToGlobal"):
            if subject not in state.subjects:
                raise RegistryError.subject_not_found(subject)
            raise RegistryError(ErrorCode.SUBJECT_LEVEL_MODE_NOT_CONFIGURED,
                                f"Subject '{subject}' does not have subject-level mode configured")
        return _json(request, {"mode": state.mode(subject)})

    async def put_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        mode, force = (await _body(request)).get("mode"), _flag(request, "force")
        return _json(request, {"mode": await self.store.write(lambda s: s.set_mode(subject, mode, force))})

    async def delete_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return _json(request, {"mode": await self.store.write(lambda s: s.delete_mode(subject))})

    # -- compatibility --

    async def compatibility(self, request: web.Request) -> web.Response:
        subject, version = request.match_info["subject"], request.match_info.get("version")
        text, schema_type, refs = _schema_request(await _body(request))
        schema = self.state.parse(text, schema_type, refs, _flag(request, "normalize"))
        messages = self.state.compatibility(subject, version, schema)
        body: dict[str, Any] = {"is_compatible": not messages}
        if _flag(request, "verbose"):
            body["messages"] = messages
        return _json(request, body)
