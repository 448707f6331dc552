"""InitProducerId (22), v0-5 (Kafka 3.9): a producer id unique across restarts
(state.ProducerIdManager), epoch 0. Transactional ids are not supported (no transaction
coordinator). v3+ may carry the producer's current id and epoch, asking for a new epoch
(KIP-360); without a transactional id Kafka answers such a request with a fresh producer id,
as here. v4 and v5 change only which errors a client may be sent."""

from __future__ import annotations

from typing import Any

from client.protocol.api import ApiKey, ErrorCode

API_KEY = ApiKey.INIT_PRODUCER_ID


def handle(request: dict[str, Any], version: int, state: Any) -> dict[str, Any]:
    if request["transactional_id"] is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": state.producer_ids.next_id(),
            "producer_epoch": 0}
