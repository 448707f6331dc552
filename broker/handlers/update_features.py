"""UpdateFeatures (57), v0-2: changes the finalized feature levels (broker/features.py says the
checks, the levels and where they are kept), as Kafka 4.2's controller does.

All or nothing: the first refused update refuses the request with a top-level
INVALID_UPDATE_VERSION and "The update failed for all features since the following feature had
an error: Invalid update version 2 for feature transaction.version. ...", and no results. An
accepted request changes every level at once, durably, then answers NONE: v0-1 with one result
per update (error NONE, message "NONE", as Kafka's QuorumController writes it), v2 with none.
``validate_only`` (v1+) checks and changes nothing. v0's ``allow_downgrade`` is not read: Kafka's
controller takes every v0 update as an UPGRADE (the field's default ``upgrade_type``), so a v0
downgrade is refused. ``timeout_ms`` is not used: the change is one file write.

Kafka differences: the finalized-features epoch moves by one per accepted change (Kafka's is
its metadata log offset); a level the broker does not implement yet (``features.IMPLEMENTED``)
is refused even inside Kafka's supported range; without ALTER on the cluster the answer is
CLUSTER_AUTHORIZATION_FAILED with "Cluster authorization failed." (Kafka's names the request)."""

from __future__ import annotations

import logging
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..features import FeatureUpdate
from ..request_context import RequestContext
from .authz import AclOperation, cluster_allows

API_KEY = ApiKey.UPDATE_FEATURES
AUTHORIZATION = "ALTER on the cluster"

logger = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": []}
    if not cluster_allows(ctx, AclOperation.ALTER):
        body.update(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.")
        return body
    updates = [FeatureUpdate(u["feature"], u["max_version_level"], u["upgrade_type"])
               for u in request["feature_updates"]]
    validate_only = request["validate_only"]
    features = ctx.state.features
    code, message = features.update(updates, validate_only)
    if code:
        logger.warning("%s", message)
        body.update(error_code=code, error_message=message)
        return body
    if updates and not validate_only:
        logger.info("finalized features now %s (epoch %d), by %s", features.finalized(), features.epoch,
                    ctx.session.principal_name)
    if ctx.api_version <= 1:
        body["results"] = [{"feature": u.feature, "error_code": 0, "error_message": "NONE"} for u in updates]
    return body
