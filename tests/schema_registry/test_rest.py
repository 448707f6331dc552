"""The REST API of broker/schema_registry/rest.py against a broker process, over real HTTP:
paths, bodies, media types, and Confluent's error codes for each case."""

from __future__ import annotations

import json

import pytest

from .conftest import Registry


def rec(*fields: tuple[object, ...], name: str = "R") -> str:
    """A record schema from (name, type) and (name, type, default) tuples."""
    out = []
    for name_, type_, *default in fields:
        out.append({"name": name_, "type": type_, **({"default": default[0]} if default else {})})
    return json.dumps({"type": "record", "name": name, "fields": out})


V1 = rec(("a", "int"))
V2 = rec(("a", "int"), ("b", "string", ""))


def test_register_get_and_list(registry: Registry) -> None:
    first = registry.register("rest-a", V1)
    assert registry.register("rest-a", V1) == first  # the same schema again: the same id, no new version
    second = registry.register("rest-a", V2)
    assert second == first + 1
    assert registry.get("/subjects/rest-a/versions") == (200, [1, 2])
    status, body = registry.get("/subjects/rest-a/versions/latest")
    assert status == 200
    assert body == {"subject": "rest-a", "version": 2, "id": second, "schema": json.dumps(json.loads(V2), separators=(",", ":"))}
    assert registry.get("/subjects/rest-a/versions/1")[1]["id"] == first
    assert registry.get("/subjects/rest-a/versions/1/schema") == (200, json.loads(V1))
    assert registry.get(f"/schemas/ids/{first}") == (200, {"schema": body["schema"].replace(',{"name":"b","type":"string","default":""}', "")})
    assert registry.get(f"/schemas/ids/{second}/schema") == (200, json.loads(V2))
    assert "rest-a" in registry.get("/subjects")[1]
    assert registry.get("/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
    assert registry.get("/")[0] == 200


def test_same_schema_in_another_subject_reuses_its_id(registry: Registry) -> None:
    schema = rec(("shared", "long"), name="Shared")
    one = registry.register("rest-shared-1", schema)
    two = registry.register("rest-shared-2", json.dumps(json.loads(schema), indent=2))  # whitespace differs only
    assert one == two
    assert registry.get(f"/schemas/ids/{one}/subjects") == (200, ["rest-shared-1", "rest-shared-2"])
    assert registry.get(f"/schemas/ids/{one}/versions") == (
        200, [{"subject": "rest-shared-1", "version": 1}, {"subject": "rest-shared-2", "version": 1}])


def test_lookup(registry: Registry) -> None:
    sid = registry.register("rest-lookup", V1)
    status, body = registry.post("/subjects/rest-lookup", {"schema": V1})
    assert status == 200 and body["id"] == sid and body["version"] == 1 and body["subject"] == "rest-lookup"
    assert registry.post("/subjects/rest-lookup", {"schema": V2})[1]["error_code"] == 40403
    assert registry.post("/subjects/rest-nobody", {"schema": V1})[1]["error_code"] == 40401
    reordered = json.dumps({"name": "R", "fields": [{"type": "int", "name": "a"}], "type": "record"})
    assert registry.post("/subjects/rest-lookup", {"schema": reordered})[0] == 404
    registry.register("rest-lookup-n", reordered)
    assert registry.post("/subjects/rest-lookup-n?normalize=true", {"schema": V1})[0] == 404  # stored as given
    nid = registry.call("POST", "/subjects/rest-lookup-nn/versions?normalize=true", {"schema": reordered})[1]["id"]
    assert registry.post("/subjects/rest-lookup-nn?normalize=true", {"schema": V1})[1]["id"] == nid


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("GET", "/subjects/rest-none/versions", None, 404, 40401),
    ("GET", "/subjects/rest-none/versions/1", None, 404, 40401),
    ("GET", "/subjects/rest-errors/versions/9", None, 404, 40402),
    ("GET", "/subjects/rest-errors/versions/0", None, 422, 42202),
    ("GET", "/subjects/rest-errors/versions/x", None, 422, 42202),
    ("GET", "/schemas/ids/99999", None, 404, 40403),
    ("POST", "/subjects/rest-errors/versions", {"schema": "{\"type\": \"nope\"}"}, 422, 42201),
    ("POST", "/subjects/rest-errors/versions", {"schema": "not json"}, 422, 42201),
    ("POST", "/subjects/rest-errors/versions", {"schema": ""}, 422, 42201),
    ("POST", "/subjects/rest-errors/versions", {"schema": "{}", "schemaType": "PROTOBUF"}, 422, 42201),
    ("POST", "/subjects/rest-errors/versions", {"schema": rec(("a", "string"))}, 409, 409),
    ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
    ("PUT", "/mode", {"mode": "SOMETIMES"}, 422, 42204),
    ("GET", "/config/rest-errors", None, 404, 40408),
    ("GET", "/config/rest-none", None, 404, 40401),
    ("DELETE", "/subjects/rest-errors/versions/1?permanent=true", None, 404, 40407),
    ("DELETE", "/subjects/rest-errors?permanent=true", None, 404, 40405),
    ("DELETE", "/subjects/rest-none", None, 404, 40401),
    ("GET", "/nowhere", None, 404, 404),
    ("POST", "/compatibility/subjects/rest-errors/versions/7", {"schema": V1}, 404, 40402),
])
def test_errors(registry: Registry, method: str, path: str, body: object, status: int, code: int) -> None:
    if not registry.get("/subjects/rest-errors/versions")[0] == 200:
        registry.register("rest-errors", V1)
    got_status, got = registry.call(method, path, body)
    assert (got_status, got["error_code"]) == (status, code), got
    assert isinstance(got["message"], str) and got["message"]


def test_incompatible_is_409_with_the_details(registry: Registry) -> None:
    registry.register("rest-409", V1)
    status, body = registry.post("/subjects/rest-409/versions", {"schema": rec(("a", "int"), ("b", "string"))})
    assert status == 409 and body["error_code"] == 409
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in body["message"]
    status, body = registry.post("/compatibility/subjects/rest-409/versions/latest?verbose=true",
                                 {"schema": rec(("a", "int"), ("b", "string"))})
    assert status == 200 and body["is_compatible"] is False and any("oldSchemaVersion" in m for m in body["messages"])
    assert registry.post("/compatibility/subjects/rest-409/versions/1", {"schema": V2}) == (200, {"is_compatible": True})
    assert registry.post("/compatibility/subjects/rest-409-new/versions/latest", {"schema": V2}) == (
        200, {"is_compatible": True})


def test_config_levels(registry: Registry) -> None:
    registry.register("rest-cfg", V1)
    assert registry.get("/config/rest-cfg?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.put("/config/rest-cfg", {"compatibility": "forward"}) == (200, {"compatibility": "FORWARD"})
    assert registry.get("/config/rest-cfg") == (200, {"compatibilityLevel": "FORWARD"})
    # FORWARD: the old schema must read the new one's data: adding a field without default is fine
    registry.register("rest-cfg", rec(("a", "int"), ("c", "long")))
    assert registry.delete("/config/rest-cfg") == (200, {"compatibilityLevel": "FORWARD"})
    assert registry.get("/config/rest-cfg")[1]["error_code"] == 40408
    assert registry.put("/config/rest-cfg", {"compatibility": "NONE"})[0] == 200
    registry.register("rest-cfg", rec(("z", "string")))
    assert registry.get("/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_mode(registry: Registry) -> None:
    registry.register("rest-mode", V1)
    assert registry.get("/mode") == (200, {"mode": "READWRITE"})
    assert registry.put("/mode/rest-mode", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    assert registry.get("/mode/rest-mode") == (200, {"mode": "READONLY"})
    status, body = registry.post("/subjects/rest-mode/versions", {"schema": V2})
    assert (status, body["error_code"]) == (422, 42205)
    assert registry.delete("/mode/rest-mode") == (200, {"mode": "READONLY"})
    assert registry.get("/mode/rest-mode?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    registry.register("rest-mode", V2)


def test_soft_and_permanent_deletes(registry: Registry) -> None:
    first = registry.register("rest-del", V1)
    registry.register("rest-del", V2)
    assert registry.delete("/subjects/rest-del/versions/1") == (200, 1)
    assert registry.delete("/subjects/rest-del/versions/1")[1]["error_code"] == 40406
    assert registry.get("/subjects/rest-del/versions") == (200, [2])
    assert registry.get("/subjects/rest-del/versions?deleted=true") == (200, [1, 2])
    assert registry.get("/subjects/rest-del/versions/1")[1]["error_code"] == 40402
    assert registry.get("/subjects/rest-del/versions/1?deleted=true")[1]["id"] == first
    assert registry.get(f"/schemas/ids/{first}")[0] == 200  # a soft-deleted schema's id still resolves
    assert registry.delete("/subjects/rest-del/versions/1?permanent=true") == (200, 1)
    assert registry.get("/subjects/rest-del/versions?deleted=true") == (200, [2])
    assert registry.delete("/subjects/rest-del") == (200, [2])
    assert registry.delete("/subjects/rest-del")[1]["error_code"] == 40404
    assert "rest-del" not in registry.get("/subjects")[1]
    assert "rest-del" in registry.get("/subjects?deleted=true")[1]
    assert registry.get("/subjects/rest-del/versions")[1]["error_code"] == 40401
    assert registry.delete("/subjects/rest-del?permanent=true") == (200, [2])
    assert "rest-del" not in registry.get("/subjects?deleted=true")[1]
    # a new registration of a deleted schema starts the subject again, under a new id only if unknown
    assert registry.register("rest-del", V1) > 0
    assert registry.get("/subjects/rest-del/versions") == (200, [1])


def test_references(registry: Registry) -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme",
                          "fields": [{"name": "street", "type": "string"}]})
    registry.register("rest-address", address)
    person = json.dumps({"type": "record", "name": "Person", "namespace": "acme",
                         "fields": [{"name": "home", "type": "acme.Address"}]})
    refs = [{"name": "acme.Address", "subject": "rest-address", "version": 1}]
    assert registry.post("/subjects/rest-person/versions", {"schema": person})[1]["error_code"] == 42201
    pid = registry.register("rest-person", person, references=refs)
    status, body = registry.get("/subjects/rest-person/versions/1")
    assert body["references"] == refs
    assert registry.get(f"/schemas/ids/{pid}")[1]["references"] == refs
    assert registry.get("/subjects/rest-address/versions/1/referencedby") == (200, [pid])
    status, body = registry.delete("/subjects/rest-address/versions/1")
    assert (status, body["error_code"]) == (422, 42206)


@pytest.mark.parametrize("accept", ["application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                                    "application/json"])
def test_media_types(registry: Registry, accept: str) -> None:
    status, body = registry.call("GET", "/schemas/types", accept=accept)
    assert status == 200 and body == ["JSON", "PROTOBUF", "AVRO"]
