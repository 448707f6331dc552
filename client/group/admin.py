"""The consumer-group half of ``client.admin.Admin`` (a mixin it inherits): list, describe and
delete groups, read and change their committed offsets.

Group requests go to the group's coordinator (FindCoordinator, retried while the answer is
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS); ListGroups to
every broker. Changing offsets (``alter_group_offsets``, ``reset_group_offsets``) is a
*simple* OffsetCommit (generation -1, no member), which Kafka accepts only while the group has
no members: for an active group it fails with UnknownMemberIdError, as Kafka's
``kafka-consumer-groups.sh --reset-offsets`` does. Lag is the log end offset (ListOffsets
LATEST) minus the committed offset.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import KafkaError, UnstableOffsetCommitError, error_for_code
from client.group.protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment, decode_subscription
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.protocol.primitives import DecodeError
from client.structs import OffsetAndMetadata, OffsetAndTimestamp, OffsetSpec, TopicPartition

__all__ = ["GroupAdmin", "GroupListing", "GroupDescription", "MemberDescription", "GroupOffset"]

E = ErrorCode
_RETRY = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR}


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str  # "consumer"; "" for a group that only ever had simple commits
    state: str  # Empty, PreparingRebalance, CompletingRebalance, Stable, Dead ("" from old brokers)


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition]  # decoded when the group is a consumer group
    topics: list[str]  # the member's subscription, when decodable
    #: KIP-848 groups: the member's epoch and the assignment it is reconciling towards
    member_epoch: int | None = None
    target_assignment: list[TopicPartition] | None = None


class GroupDescription(NamedTuple):
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # the assignor chosen ("range", ...)
    members: list[MemberDescription]
    coordinator: tuple[int, str, int] | None = None  # (node id, host, port)
    group_type: str = "classic"  # "consumer" for a KIP-848 group (ConsumerGroupDescribe)
    group_epoch: int | None = None  # KIP-848 groups
    assignment_epoch: int | None = None  # KIP-848 groups: the target assignment's epoch


class GroupOffset(NamedTuple):
    """A partition's committed offset in a group, its log end offset, and the lag between them
    (None when either is unknown)."""

    committed: int
    metadata: str
    log_end_offset: int | None
    lag: int | None


class GroupAdmin(ABC):
    """The group operations of ``Admin``, which provides the connection plumbing."""

    _cluster: Cluster
    request_timeout_ms: int

    @abstractmethod
    async def start(self) -> None:
        """Connect (``Admin.start``)."""

    @abstractmethod
    async def list_offsets(self, specs: Mapping[TopicPartition | tuple[str, int], OffsetSpec | int]
                           ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """``Admin.list_offsets``."""

    async def _group_request(self, group: str, key: ApiKey, body: dict[str, Any],
                             code_of: Any = None, max_version: int | None = None) -> tuple[int, dict[str, Any]]:
        """Send to ``group``'s coordinator (at the highest common version, at most
        ``max_version``), retrying the coordinator errors (found in the response by
        ``code_of(resp)``, default its ``error_code``) until the request timeout."""
        await self.start()
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            try:
                conn = await self._find_coordinator(group)
                v = conn.pick_version(key)
                if max_version is not None and v > max_version:
                    v = max_version
                resp = await conn.request(key, v, body)
            except KafkaError as e:
                if not e.retriable or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
                continue
            code = code_of(v, resp) if code_of is not None else resp.get("error_code", 0)
            if code in _RETRY and time.monotonic() < deadline:
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
                continue
            return v, resp

    async def _coordinator_node(self, group: str) -> tuple[int, str, int]:
        """(node id, host, port) of ``group``'s coordinator (FindCoordinator)."""
        return await self._cluster.find_coordinator(group, 0)

    async def _find_coordinator(self, group: str) -> BrokerConnection:
        return await self._cluster.coordinator_connection(*await self._coordinator_node(group))

    # ------------------------------------------------------------------ groups

    async def list_groups(self, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group on every broker (sorted by id); ``states`` keeps those in the given
        states (ListGroups v4's filter, case-insensitive)."""
        await self.start()
        wanted = None if states is None else [s for s in states]
        conns = []
        if not self._cluster.brokers:
            await self._cluster.refresh_metadata([])
        for node in sorted(self._cluster.brokers):
            conns.append(await self._cluster.node_connection(node))
        out: dict[str, GroupListing] = {}
        for conn in conns:
            v = conn.pick_version(ApiKey.LIST_GROUPS)
            resp = await conn.request(ApiKey.LIST_GROUPS, v, {"states_filter": wanted or [], "types_filter": []})
            if resp["error_code"]:
                raise error_for_code(resp["error_code"], f"ListGroups: {error_name(resp['error_code'])}")
            for g in resp["groups"]:
                state = g.get("group_state", "")
                if wanted is not None and v < 4 and state.lower() not in {s.lower() for s in wanted}:
                    continue
                out[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"], state)
        return [out[k] for k in sorted(out)]

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """State, chosen assignor and members (client id, host, assignment) of each group; a
        group that does not exist is described as state "Dead" with no members, as Kafka 3.9
        answers (a v6 broker answers GROUP_ID_NOT_FOUND instead, read here as the same)."""
        out: dict[str, GroupDescription] = {}
        for group in group_ids:
            _, resp = await self._group_request(group, ApiKey.DESCRIBE_GROUPS, {
                "groups": [group], "include_authorized_operations": False},
                code_of=lambda v, r: r["groups"][0]["error_code"])
            g = resp["groups"][0]
            if g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
                described = await self._describe_consumer_group(group)
                if described is not None:
                    out[group] = described
                    continue
                g = {**g, "error_code": 0, "group_state": "Dead"}
            if g["error_code"]:
                raise error_for_code(g["error_code"], f"DescribeGroups {group!r}: {error_name(g['error_code'])}")
            members = []
            for m in g["members"]:
                assignment: list[TopicPartition] = []
                topics: list[str] = []
                if g["protocol_type"] == CONSUMER_PROTOCOL_TYPE:
                    try:
                        assignment = sorted(decode_assignment(m["member_assignment"]).partitions)
                        if len(m["member_metadata"]):
                            topics = list(decode_subscription(m["member_metadata"]).topics)
                    except DecodeError:
                        pass
                members.append(MemberDescription(m["member_id"], m.get("group_instance_id"), m["client_id"],
                                                 m["client_host"], assignment, topics))
            out[group] = GroupDescription(g["group_id"], g["group_state"], g["protocol_type"], g["protocol_data"],
                                          members, await self._coordinator_node(group))
        return out

    async def _describe_consumer_group(self, group: str) -> GroupDescription | None:
        """ConsumerGroupDescribe of a KIP-848 group; None when the broker has no such API or
        no such group."""
        conn = await self._find_coordinator(group)
        if conn.api_versions.get(ApiKey.CONSUMER_GROUP_DESCRIBE) is None:
            return None
        _, resp = await self._group_request(group, ApiKey.CONSUMER_GROUP_DESCRIBE, {
            "group_ids": [group], "include_authorized_operations": False},
            code_of=lambda v, r: r["groups"][0]["error_code"])
        g = resp["groups"][0]
        if g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        if g["error_code"]:
            raise error_for_code(g["error_code"], f"ConsumerGroupDescribe {group!r}: {error_name(g['error_code'])}")

        def tps(a: dict[str, Any]) -> list[TopicPartition]:
            return sorted(TopicPartition(t["topic_name"], p) for t in a["topic_partitions"] for p in t["partitions"])

        members = [MemberDescription(m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
                                     tps(m["assignment"]), list(m["subscribed_topic_names"]), m["member_epoch"],
                                     tps(m["target_assignment"]))
                   for m in g["members"]]
        return GroupDescription(group, g["group_state"], CONSUMER_PROTOCOL_TYPE, g["assignor_name"], members,
                                await self._coordinator_node(group), "consumer", g["group_epoch"],
                                g["assignment_epoch"])

    async def delete_groups(self, group_ids: Iterable[str]) -> None:
        """Delete groups and their committed offsets; only groups with no members can be
        (NonEmptyGroupError; GroupIdNotFoundError for one that does not exist). Every group
        named is tried; the first failure is raised."""
        first: KafkaError | None = None
        for group in group_ids:
            _, resp = await self._group_request(group, ApiKey.DELETE_GROUPS, {"groups_names": [group]},
                                                code_of=lambda v, r: r["results"][0]["error_code"])
            code = resp["results"][0]["error_code"]
            if code and first is None:
                first = error_for_code(code, f"cannot delete group {group!r}: {error_name(code)}")
        if first is not None:
            raise first

    # ------------------------------------------------------------------ offsets

    async def fetch_group_offsets(self, group: str, partitions: list[TopicPartition] | None, *,
                                  require_stable: bool = False) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (of ``partitions``, or all); with ``require_stable`` an
        offset pending in an open transaction is waited for (UNSTABLE_OFFSET_COMMIT is retried
        for up to 30 s) instead of answering the last committed one."""
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            try:
                return await self._fetch_group_offsets(group, partitions, require_stable)
            except UnstableOffsetCommitError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def _fetch_group_offsets(self, group: str, partitions: list[TopicPartition] | None,
                                   require_stable: bool = False) -> dict[TopicPartition, OffsetAndMetadata]:
        topics: list[dict[str, Any]] | None = None
        ids: dict[str, uuid.UUID] | None = None
        if partitions is not None:
            by: dict[str, list[int]] = {}
            for tp in partitions:
                by.setdefault(tp.topic, []).append(tp.partition)
            await self.start()
            ids = await self._cluster.topic_ids(by)
            topics = [{"name": t, "topic_id": ids[t] if ids else None, "partition_indexes": ps} for t, ps in by.items()]

        def code_of(v: int, r: dict[str, Any]) -> int:
            return int(r["groups"][0]["error_code"] if v >= 8 else r.get("error_code", 0))

        # v10 names topics by id: asked for with the ids of every topic, or for all of them
        v, resp = await self._group_request(group, ApiKey.OFFSET_FETCH, {
            "group_id": group, "topics": topics, "require_stable": require_stable,
            "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}]},
            code_of=code_of, max_version=9 if topics is not None and ids is None else None)
        code = code_of(v, resp)
        if code:
            raise error_for_code(code, f"OffsetFetch for group {group!r}: {error_name(code)}")
        rtopics = resp["groups"][0]["topics"] if v >= 8 else resp["topics"]
        if v >= 10:  # answered by id; a topic gone since has no name and is left out
            names = {i: t for t, i in ids.items()} if ids is not None else \
                await self._cluster.topic_names(t["topic_id"] for t in rtopics)
            for t in rtopics:
                t["name"] = names.get(t["topic_id"], "")
            rtopics = [t for t in rtopics if t["name"]]
        out = {}
        for t in rtopics:
            for p in t["partitions"]:
                if p["error_code"]:
                    raise error_for_code(p["error_code"], f"OffsetFetch {group!r} {t['name']}-{p['partition_index']}:"
                                                          f" {error_name(p['error_code'])}")
                if p["committed_offset"] >= 0:
                    out[TopicPartition(t["name"], p["partition_index"])] = OffsetAndMetadata(
                        p["committed_offset"], p["metadata"] or "", p.get("committed_leader_epoch", -1))
        return out

    async def list_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]] | None = None
                                 ) -> dict[TopicPartition, GroupOffset]:
        """The group's committed offsets (all of them, or those of ``partitions`` that have one),
        with each partition's log end offset and lag."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        committed = await self._fetch_group_offsets(group, wanted)
        ends: dict[TopicPartition, int] = {}
        for tp in committed:
            try:
                ends.update({k: v.offset for k, v in (await self.list_offsets({tp: OffsetSpec.LATEST})).items()})
            except KafkaError:
                pass  # the topic was deleted since: no log end, no lag
        return {tp: GroupOffset(om.offset, om.metadata, ends.get(tp),
                                None if tp not in ends else max(ends[tp] - om.offset, 0))
                for tp, om in sorted(committed.items())}

    async def alter_group_offsets(self, group: str,
                                  offsets: Mapping[tuple[str, int], int | OffsetAndMetadata]) -> None:
        """Set committed offsets of a group with no active members (UnknownMemberIdError while
        it has some); the group is created if it does not exist."""
        by: dict[str, list[dict[str, Any]]] = {}
        for tp, o in offsets.items():
            om = o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(int(o))
            if om.offset < 0:
                raise ValueError(f"offset must be >= 0, not {om.offset}")
            by.setdefault(tp[0], []).append({"partition_index": tp[1], "committed_offset": om.offset,
                                             "committed_leader_epoch": om.leader_epoch, "commit_timestamp": -1,
                                             "committed_metadata": om.metadata})
        if not by:
            return

        def first_code(v: int, r: dict[str, Any]) -> int:
            return next((p["error_code"] for t in r["topics"] for p in t["partitions"] if p["error_code"]), 0)

        await self.start()
        ids = await self._cluster.topic_ids(by)  # v10 names topics by id; without every id: v9, by name
        v, resp = await self._group_request(group, ApiKey.OFFSET_COMMIT, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "retention_time_ms": -1, "topics": [{"name": t, "topic_id": ids[t] if ids else None, "partitions": ps}
                                                for t, ps in by.items()]},
            code_of=first_code, max_version=None if ids is not None else 9)
        code = first_code(v, resp)
        if code:
            hint = " (the group has active members: stop them first)" if code in (
                E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.REBALANCE_IN_PROGRESS) else ""
            raise error_for_code(code, f"cannot alter the offsets of group {group!r}: {error_name(code)}{hint}")

    async def reset_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]], *,
                                  to_earliest: bool = False, to_latest: bool = False, to_offset: int | None = None,
                                  to_timestamp_ms: int | None = None, execute: bool = True) -> dict[TopicPartition, int]:
        """Work out new committed offsets for ``partitions`` (exactly one of: the log start, the
        log end, ``to_offset`` kept within [log start, log end], or the first record at or after
        ``to_timestamp_ms``, else the log end), as ``kafka-consumer-groups.sh --reset-offsets``
        does; commit them if ``execute``. Returns them."""
        chosen = sum([to_earliest, to_latest, to_offset is not None, to_timestamp_ms is not None])
        if chosen != 1:
            raise ValueError("give exactly one of to_earliest, to_latest, to_offset, to_timestamp_ms")
        tps = [TopicPartition(*tp) for tp in partitions]
        if not tps:
            return {}
        starts = {tp: v.offset for tp, v in (await self.list_offsets({tp: OffsetSpec.EARLIEST for tp in tps})).items()}
        ends = {tp: v.offset for tp, v in (await self.list_offsets({tp: OffsetSpec.LATEST for tp in tps})).items()}
        if to_earliest:
            target = starts
        elif to_latest:
            target = ends
        elif to_offset is not None:
            target = {tp: min(max(to_offset, starts[tp]), ends[tp]) for tp in tps}
        else:
            assert to_timestamp_ms is not None
            found = await self.list_offsets({tp: to_timestamp_ms for tp in tps})
            target = {tp: found[tp].offset if found[tp].offset >= 0 else ends[tp] for tp in tps}
        target = {tp: target[tp] for tp in sorted(tps)}
        if execute:
            await self.alter_group_offsets(group, {(tp.topic, tp.partition): o for tp, o in target.items()})
        return target

    async def delete_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]]) -> None:
        """Delete committed offsets of a group (OffsetDelete); refused for partitions of topics
        the group's members subscribe to (GroupSubscribedToTopicError)."""
        by: dict[str, list[dict[str, int]]] = {}
        for t, p in partitions:
            by.setdefault(t, []).append({"partition_index": p})
        if not by:
            return
        _, resp = await self._group_request(group, ApiKey.OFFSET_DELETE, {
            "group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in by.items()]})
        code = resp["error_code"] or next(
            (p["error_code"] for t in resp["topics"] for p in t["partitions"] if p["error_code"]), 0)
        if code:
            raise error_for_code(code, f"cannot delete offsets of group {group!r}: {error_name(code)}")
