"""A broker process with the schema registry on a free port, shared by a module, and a small
HTTP client (urllib) that returns (status, JSON body) whatever the status."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing import BrokerProcess

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: Any = None, accept: str = MEDIA_TYPE) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": MEDIA_TYPE, "Accept": accept})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status, raw, ctype = resp.status, resp.read(), resp.headers["Content-Type"]
        except urllib.error.HTTPError as e:
            status, raw, ctype = e.code, e.read(), e.headers["Content-Type"]
        assert ctype.startswith(accept), ctype
        return status, json.loads(raw)

    def get(self, path: str) -> tuple[int, Any]:
        return self.call("GET", path)

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        return self.call("POST", path, body)

    def put(self, path: str, body: Any) -> tuple[int, Any]:
        return self.call("PUT", path, body)

    def delete(self, path: str) -> tuple[int, Any]:
        return self.call("DELETE", path)

    def register(self, subject: str, schema: str, **extra: Any) -> int:
        status, body = self.post(f"/subjects/{subject}/versions", {"schema": schema, **extra})
        assert status == 200, body
        return int(body["id"])


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(str(tmp_path_factory.mktemp("registry") / "data"), schema_registry=True).start()
    try:
        yield b
    finally:
        assert b.stop() == 0, b.log_text()


@pytest.fixture(scope="module")
def registry(registry_broker: BrokerProcess) -> Registry:
    return Registry(registry_broker.schema_registry_url)
