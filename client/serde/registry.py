"""A small asyncio client of a Confluent-compatible schema registry (minibroker's own, or
Confluent's) over aiohttp: registering a schema under a subject and fetching one by id, both
cached for the client's life (an id names one schema forever; a registration answered once
stays answered)."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple
from urllib.parse import quote

import aiohttp

from .wire import SerdeError

__all__ = ["RegisteredSchema", "RegistryClient", "RegistryClientError"]

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryClientError(SerdeError):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(f"{status} {error_code}: {message}")
        self.status = status
        self.error_code = error_code


class RegisteredSchema(NamedTuple):
    schema_type: str  # AVRO, JSON, PROTOBUF
    schema: str
    references: tuple[dict[str, Any], ...]


class RegistryClient:
    """``async with RegistryClient("http://127.0.0.1:8081") as registry: ...``"""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._session: aiohttp.ClientSession | None = None
        self._ids: dict[tuple[str, str, str, str], int] = {}
        self._schemas: dict[tuple[int, str], RegisteredSchema] = {}
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers={"Accept": MEDIA_TYPE})
        async with self._session.request(method, self.url + path, json=body,
                                         headers={"Content-Type": MEDIA_TYPE}) as resp:
            answer = await resp.json(content_type=None)
            if resp.status != 200:
                answer = answer if isinstance(answer, dict) else {}
                raise RegistryClientError(resp.status, int(answer.get("error_code", resp.status)),
                                          str(answer.get("message", "")))
            return answer

    async def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                       references: tuple[dict[str, Any], ...] = ()) -> int:
        """The id of ``schema`` under ``subject``, registering it if needed."""
        key = (subject, schema_type, schema, repr(references))
        found = self._ids.get(key)
        if found is not None:
            return found
        body: dict[str, Any] = {"schema": schema, "schemaType": schema_type}
        if references:
            body["references"] = list(references)
        answer = await self._call("POST", f"/subjects/{quote(subject, safe='')}/versions", body)
        self._ids[key] = int(answer["id"])
        return self._ids[key]

    async def latest_version(self, subject: str) -> int:
        answer = await self._call("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")
        return int(answer["version"])

    async def schema(self, schema_id: int, fmt: str = "") -> RegisteredSchema:
        """The schema with ``schema_id`` (``fmt="serialized"``: a Protobuf one as a base64
        descriptor)."""
        key = (schema_id, fmt)
        found = self._schemas.get(key)
        if found is None:
            answer = await self._call("GET", f"/schemas/ids/{schema_id}" + (f"?format={fmt}" if fmt else ""))
            found = RegisteredSchema(answer.get("schemaType", "AVRO"), answer["schema"],
                                     tuple(answer.get("references") or ()))
            self._schemas[key] = found
        return found
