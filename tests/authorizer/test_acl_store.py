"""broker/authorizer/acl_store.py: create / delete / describe with Kafka's result semantics,
the file format, durability (write, reload, a torn temp file leaves the old set, a failed
write changes nothing), a corrupt file refused with its name, and the authorizer fed by it."""

from __future__ import annotations

import json
import os

import pytest

from broker.authorizer import acl_store as acl_store_module
from broker.authorizer.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from broker.authorizer.acl_store import ACLS_FILE, AclCreateResult, AclDeleteResult, AclFileError, AclStore
from broker.authorizer.standard_authorizer import StandardAuthorizer
from client.protocol.api import ErrorCode

RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType
INVALID = int(ErrorCode.INVALID_REQUEST)


def acl(name: str = "orders", op: AclOperation = OP.READ, perm: AclPermissionType = PERM.ALLOW, *,
        pt: PatternType = PT.LITERAL, rt: ResourceType = RT.TOPIC, principal: str = "User:alice",
        host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(principal, host, op, perm))


A = acl("orders")
B = acl("ord", OP.WRITE, pt=PT.PREFIXED)
C = acl("*", OP.DESCRIBE, PERM.DENY, principal="User:*", host="10.0.0.9")
D = acl("billing", OP.READ, rt=RT.GROUP, principal="User:bob")


def test_empty_directory_is_the_empty_set(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    assert len(store) == 0 and store.bindings() == []
    assert not os.path.exists(tmp_path / ACLS_FILE)  # nothing written until a change


def test_create_describe_reload(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    assert store.create([A, B, C, D]) == [AclCreateResult()] * 4
    assert set(store.bindings()) == {A, B, C, D}
    reloaded = AclStore(str(tmp_path))
    assert reloaded.bindings() == store.bindings()
    assert reloaded.describe(AclBindingFilter()) == store.bindings()
    matched = reloaded.describe(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH)))
    assert matched == [b for b in store.bindings() if b in {A, B, C}]  # the literal, the prefix, the wildcard
    assert reloaded.describe(AclBindingFilter(ResourcePatternFilter(RT.GROUP))) == [D]
    assert reloaded.describe(AclBindingFilter(entry_filter=AccessControlEntryFilter(principal="User:*"))) == [C]


def test_file_format(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([D, A])
    text = (tmp_path / ACLS_FILE).read_text()
    doc = json.loads(text)
    assert doc["version"] == 1
    assert doc["acls"] == [
        {"resource_type": "TOPIC", "name": "orders", "pattern_type": "LITERAL", "principal": "User:alice",
         "host": "*", "operation": "READ", "permission_type": "ALLOW"},
        {"resource_type": "GROUP", "name": "billing", "pattern_type": "LITERAL", "principal": "User:bob",
         "host": "*", "operation": "READ", "permission_type": "ALLOW"},
    ]
    assert len(text.splitlines()) == 4  # header, one line per ACL, footer
    store.delete([AclBindingFilter()])
    assert json.loads((tmp_path / ACLS_FILE).read_text()) == {"version": 1, "acls": []}


def test_create_is_idempotent_and_reports_invalid_bindings(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([A])
    mtime = os.stat(tmp_path / ACLS_FILE).st_mtime_ns
    bad = acl(pt=PT.MATCH)
    results = store.create([A, bad, acl(""), acl(principal="alice"), A])
    assert results == [
        AclCreateResult(),
        AclCreateResult(INVALID, "Invalid patternType MATCH"),
        AclCreateResult(INVALID, "Invalid empty resource name"),
        AclCreateResult(INVALID, "Could not parse principal from `alice` (no colon is present separating the"
                                 " principal type from the principal name)"),
        AclCreateResult(),
    ]
    assert store.bindings() == [A]
    assert os.stat(tmp_path / ACLS_FILE).st_mtime_ns == mtime  # nothing new: no write


def test_delete_per_filter_results(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([A, B, C, D])
    results = store.delete([
        AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.LITERAL)),
        AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH)),  # overlaps the first
        AclBindingFilter(ResourcePatternFilter(RT.UNKNOWN)),
        AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "nothing", PT.LITERAL)),
    ])
    assert results[0] == AclDeleteResult(bindings=(A,))
    assert set(results[1].bindings) == {A, B, C}  # each filter sees the set as it was
    assert results[2] == AclDeleteResult(INVALID, "Unknown patternFilter.")
    assert results[3] == AclDeleteResult()
    assert store.bindings() == [D]
    assert AclStore(str(tmp_path)).bindings() == [D]


def test_delete_with_any_filters(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([A, B, C, D])
    [r] = store.delete([AclBindingFilter(entry_filter=AccessControlEntryFilter(operation=OP.READ))])
    assert set(r.bindings) == {A, D}
    [r] = store.delete([AclBindingFilter(ResourcePatternFilter(RT.ANY, None, PT.PREFIXED))])
    assert r.bindings == (B,)
    assert store.bindings() == [C]


def test_torn_temp_file_leaves_the_old_set(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([A, B])
    # a crash after writing part of the next version to the temp file, before the rename
    with open(tmp_path / (ACLS_FILE + ".tmp"), "wb") as f:
        f.write(b'{"version": 1, "acls": [\n{"resource_type": "TOP')
    reloaded = AclStore(str(tmp_path))
    assert set(reloaded.bindings()) == {A, B}
    assert not os.path.exists(tmp_path / (ACLS_FILE + ".tmp"))


def test_failed_write_changes_nothing(tmp_path, monkeypatch) -> None:
    store = AclStore(str(tmp_path))
    store.create([A])
    authorizer = StandardAuthorizer()
    store.attach(authorizer)

    def fail(path: str, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(acl_store_module, "atomic_write", fail)
    with pytest.raises(OSError):
        store.create([B])
    with pytest.raises(OSError):
        store.delete([AclBindingFilter()])
    assert store.bindings() == [A]
    assert authorizer.acl_count == 1
    assert authorizer.authorize("User:alice", "h", OP.READ, RT.TOPIC, "orders")
    assert not authorizer.authorize("User:alice", "h", OP.WRITE, RT.TOPIC, "orders")
    monkeypatch.undo()
    assert AclStore(str(tmp_path)).bindings() == [A]


@pytest.mark.parametrize(("content", "why"), [
    (b"{not json", "corrupt"),
    (b"", "corrupt"),
    (b"[]", "not a JSON object"),
    (b'{"version": 2, "acls": []}', "unsupported version 2"),
    (b'{"acls": []}', "unsupported version None"),
    (b'{"version": 1}', '"acls" is not a list'),
    (b'{"version": 1, "acls": [7]}', "acl #0: not a JSON object"),
    (b'{"version": 1, "acls": [{"resource_type": "TOPIC", "name": "x", "pattern_type": "LITERAL",'
     b' "principal": "User:a", "host": "*", "operation": "FLY", "permission_type": "ALLOW"}]}',
     "acl #0: operation: unknown value 'FLY'"),
    (b'{"version": 1, "acls": [{"resource_type": "TOPIC", "name": 5, "pattern_type": "LITERAL",'
     b' "principal": "User:a", "host": "*", "operation": "READ", "permission_type": "ALLOW"}]}',
     "acl #0: name: not a string"),
    (b'{"version": 1, "acls": [{"resource_type": "ANY", "name": "x", "pattern_type": "LITERAL",'
     b' "principal": "User:a", "host": "*", "operation": "READ", "permission_type": "ALLOW"}]}',
     "acl #0: Invalid resourceType ANY"),
    (b"\xff\xfe", "corrupt"),
])
def test_corrupt_file_is_an_error_naming_the_file(tmp_path, content: bytes, why: str) -> None:
    (tmp_path / ACLS_FILE).write_bytes(content)
    with pytest.raises(AclFileError) as info:
        AclStore(str(tmp_path))
    message = str(info.value)
    assert str(tmp_path / ACLS_FILE) in message
    assert why in message


def test_authorizer_follows_the_store(tmp_path) -> None:
    store = AclStore(str(tmp_path))
    store.create([A])
    authorizer = StandardAuthorizer()
    store.attach(authorizer)
    assert authorizer.acl_count == 1
    assert authorizer.authorize("User:alice", "h", OP.READ, RT.TOPIC, "orders")
    store.create([acl("orders", OP.READ, PERM.DENY, host="h")])
    assert not authorizer.authorize("User:alice", "h", OP.READ, RT.TOPIC, "orders")
    assert authorizer.authorize("User:alice", "other", OP.READ, RT.TOPIC, "orders")
    store.delete([AclBindingFilter(entry_filter=AccessControlEntryFilter(permission_type=PERM.DENY))])
    assert authorizer.authorize("User:alice", "h", OP.READ, RT.TOPIC, "orders")
    assert authorizer.acl_count == 1
    store.create([B])
    assert authorizer.authorize("User:alice", "h", OP.WRITE, RT.TOPIC, "ord-1")
    # a restart: a new store and authorizer see the same set
    again = StandardAuthorizer()
    AclStore(str(tmp_path)).attach(again)
    assert again.acl_count == 2
    assert again.authorize("User:alice", "h", OP.WRITE, RT.TOPIC, "ord-1")
