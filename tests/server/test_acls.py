"""The ACL APIs over a real socket, every version: a broker without an authorizer answers
SECURITY_DISABLED with Kafka's message for the request (DescribeAcls), each creation
(CreateAcls) and each filter (DeleteAcls), and stores nothing."""

from __future__ import annotations

import pytest

from client.protocol.api import ApiKey, ErrorCode

from .wire import Conn

MESSAGE = "No Authorizer is configured."
TOPIC, LITERAL, PREFIXED, READ, WRITE, ALLOW, ANY = 2, 3, 4, 3, 4, 3, 1


def _filter(version: int) -> dict[str, object]:
    f: dict[str, object] = {"resource_type_filter": TOPIC, "resource_name_filter": None, "principal_filter": None,
                            "host_filter": None, "operation": ANY, "permission_type": ANY}
    if version >= 1:
        f["pattern_type_filter"] = ANY
    return f


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_acl_apis_answer_security_disabled(module_broker, version: int) -> None:
    with Conn(module_broker.port) as c:
        creations = [{"resource_type": TOPIC, "resource_name": "orders", "principal": "User:alice", "host": "*",
                      "operation": op, "permission_type": ALLOW} for op in (READ, WRITE)]
        if version >= 1:
            for cr in creations:
                cr["resource_pattern_type"] = PREFIXED
        r = c.call(ApiKey.CREATE_ACLS, version, {"creations": creations})
        assert r["results"] == [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": MESSAGE}] * 2
        r = c.call(ApiKey.DESCRIBE_ACLS, version, _filter(version))
        assert (r["error_code"], r["error_message"], r["resources"]) == (ErrorCode.SECURITY_DISABLED, MESSAGE, [])
        r = c.call(ApiKey.DELETE_ACLS, version, {"filters": [_filter(version)]})
        assert r["filter_results"] == [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": MESSAGE,
                                        "matching_acls": []}]
        # the connection is still in service
        assert c.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
