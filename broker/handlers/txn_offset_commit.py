"""TxnOffsetCommit (28), v0-5: a transactional producer commits a group's offsets as part of
its transaction. The group coordinator writes them in a transactional batch of the producer
to ``__consumer_offsets`` and holds them as pending; they become the group's committed
offsets when the transaction commits (dropped if it aborts). Answered once the batch is
fsync'd. The group's partition must have been added (AddOffsetsToTxn) first:
INVALID_TXN_STATE otherwise; a fenced producer gets PRODUCER_FENCED (v0-1:
INVALID_PRODUCER_EPOCH). Partitions that do not exist: UNKNOWN_TOPIC_OR_PARTITION, checked first
and never written, as for OffsetCommit.

v5 is transactions V2 (Kafka's txnOffsetCommitRequestVersionToTransactionSupportedOperation:
ADD_PARTITION above v4): while ``transaction.version`` 2 is finalized the group's
``__consumer_offsets`` partition joins the transaction here, at the producer's epoch, as
AddOffsetsToTxn did (CONCURRENT_TRANSACTIONS while the previous transaction's markers are
written is retried for up to 100 ms first, as Kafka's brokers do); its errors answer every
partition. Otherwise v5 is v4."""

from __future__ import annotations

import asyncio
from typing import Any

from client.protocol.api import ApiKey, ErrorCode

from ..authorizer.acl import AclOperation, ResourceType
from ..group.records import CONSUMER_OFFSETS
from ..request_context import RequestContext
from ..state import BrokerState
from .offset_commit import Errors, _response, reply_after_commit, split_denied, split_unknown

API_KEY = ApiKey.TXN_OFFSET_COMMIT
AUTHORIZATION = "WRITE on the transactional id; READ on the group; READ on each topic"


def _txn_error(request: dict[str, Any], version: int, state: BrokerState) -> int:
    if state.txn.loading:
        return int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    partition = state.groups.coordinator.partition_for(request["group_id"])
    code = state.txn.verify_produce(request["transactional_id"], request["producer_id"], request["producer_epoch"],
                                    CONSUMER_OFFSETS, partition, 0)
    if code == 0 and request["producer_epoch"] < state.txn.txns[request["transactional_id"]].producer_epoch:
        code = ErrorCode.PRODUCER_FENCED
    if code == ErrorCode.PRODUCER_FENCED and version < 2:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return int(code)


def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    state, version = ctx.state, ctx.api_version
    denied: Errors = {}
    full = request
    if state.authorizer is not None:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request["transactional_id"]):
            return _response(request, {}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"]):
            return _response(request, {}, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        request, denied = split_denied(request, ctx)
        if not request["topics"]:
            return _response(full, denied, 0)
    known, unknown = split_unknown(request, state)
    unknown.update(denied)
    request = full
    if not known["topics"]:
        return _response(request, unknown, 0)
    if version >= 5 and state.txn.client_tv(True) >= 2 and not state.txn.loading:
        return _add_then_commit(request, known, unknown, version, state)
    code = _txn_error(request, version, state)
    if code:
        return _response(request, unknown, code)
    return reply_after_commit(request, lambda durable: state.groups.coordinator.offsets.commit_txn_offsets(known, durable),
                              unknown)


async def _add_then_commit(request: dict[str, Any], known: dict[str, Any], unknown: Errors, version: int,
                           state: BrokerState) -> Any:
    """Transactions V2: add the group's offsets partition to the transaction, then commit."""
    partition = state.groups.coordinator.partition_for(request["group_id"])
    code = await state.txn.add_for_v2(request["transactional_id"], request["producer_id"], request["producer_epoch"],
                                      [(CONSUMER_OFFSETS, partition)])
    if not code:
        code = _txn_error(request, version, state)
    if code:
        return _response(request, unknown, code)
    reply = reply_after_commit(request, lambda durable: state.groups.coordinator.offsets.commit_txn_offsets(
        known, durable), unknown)
    return await reply if asyncio.iscoroutine(reply) else reply
