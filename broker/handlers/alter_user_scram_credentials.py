"""AlterUserScramCredentials (51), v0 (KIP-554): delete and upsert users' SCRAM credentials.

Kafka's controller's rules (ScramControlManager.alterCredentials), one result per user named:

- a user named twice, in the deletions, the upsertions or both, gets DUPLICATE_RESOURCE ("A
  user credential cannot be altered twice in the same request") and none of its changes is
  made — even for two different mechanisms; a user whose first change was refused keeps that
  error, later changes are ignored;
- an empty user name: UNACCEPTABLE_CREDENTIAL ("Username must not be empty"); a mechanism type
  other than 1 (SCRAM-SHA-256) and 2 (SCRAM-SHA-512): UNSUPPORTED_SASL_MECHANISM ("Unknown
  SCRAM mechanism");
- an upsertion with iterations outside 4096..16384: UNACCEPTABLE_CREDENTIAL ("Too few
  iterations" / "Too many iterations"); a deletion of a credential that does not exist:
  RESOURCE_NOT_FOUND ("Attempt to delete a user credential that does not exist").

The upsertion carries the salt and the salted password (the client ran PBKDF2); the broker
derives StoredKey and ServerKey from them and keeps those, never the salted password. The
accepted changes are applied together with one durable write before the answer is sent (all
or nothing, as Kafka's atomic batch of metadata records); if that write fails they all get
KAFKA_STORAGE_ERROR and nothing changed. Results: accepted deletions, accepted upsertions,
then refused users (Kafka's order; within each, request order). No authorizer yet: Kafka
would first check ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every user).
"""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode
from client.security.scram import MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS, credential_from_salted

from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
AUTHORIZATION = "ALTER on the cluster"

logger = logging.getLogger(__name__)

#: Kafka's ScramMechanism type -> its name
MECHANISM_NAMES: dict[int, str] = {t: name for name, t in MECHANISM_TYPES.items()}
DUPLICATE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not cluster_allows(ctx, AclOperation.ALTER):
        users = dict.fromkeys([d["name"] for d in request["deletions"]] + [u["name"] for u in request["upsertions"]])
        return {"throttle_time_ms": 0, "results": [
            {"user": u, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed."}
            for u in users]}
    store = ctx.state.scram_credentials
    deletions: dict[str, dict[str, Any]] = {}
    upsertions: dict[str, dict[str, Any]] = {}
    errors: dict[str, tuple[int, str]] = {}
    for d in request["deletions"]:
        name = d["name"]
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif (err := _check_name_and_mechanism(name, d["mechanism"])) is not None:
            errors[name] = err
        elif store.get(name, MECHANISM_NAMES[d["mechanism"]]) is None:
            errors[name] = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletions[name] = d
    for u in request["upsertions"]:
        name = u["name"]
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE)
        elif (err := _check_name_and_mechanism(name, u["mechanism"])) is not None:
            errors[name] = err
        elif u["iterations"] < MIN_ITERATIONS:
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u["iterations"] > MAX_ITERATIONS:
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upsertions[name] = u
    accepted = list(deletions) + list(upsertions)
    if accepted:
        try:
            store.alter([(name, MECHANISM_NAMES[u["mechanism"]],
                          credential_from_salted(MECHANISM_NAMES[u["mechanism"]], bytes(u["salted_password"]),
                                                 bytes(u["salt"]), u["iterations"]))
                         for name, u in upsertions.items()],
                        [(name, MECHANISM_NAMES[d["mechanism"]]) for name, d in deletions.items()])
        except OSError as e:
            logger.error("cannot write the SCRAM credentials of %s: %s", ", ".join(map(repr, accepted)), e)
            for name in accepted:
                errors[name] = (ErrorCode.KAFKA_STORAGE_ERROR, f"Cannot write the SCRAM credentials: {e.strerror or e}")
            accepted = []
    results = [{"user": name, "error_code": 0, "error_message": None} for name in accepted]
    results += [{"user": name, "error_code": code, "error_message": message} for name, (code, message) in errors.items()]
    return {"throttle_time_ms": 0, "results": results}
