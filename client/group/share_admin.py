"""The share-group half of ``client.admin.Admin`` (a mixin it inherits, next to ``GroupAdmin``):
list and describe share groups (KIP-932), read, set and delete their share-partitions' start
offsets, as Kafka's ``Admin.listGroups(type share)``, ``describeShareGroups``,
``listShareGroupOffsets``, ``alterShareGroupOffsets`` and ``deleteShareGroupOffsets`` do.

A share group's "offset" of a partition is its share-partition start offset (SPSO): every
record below it is done with (acknowledged or archived); records above it may be in flight.
``lag`` (Kafka 4.2, KIP-1226) counts the records from the start offset to the high watermark
that are not done with yet; None from a broker that does not serve DescribeShareGroupOffsets
v1. Changing or deleting offsets needs the group empty (NonEmptyGroupError otherwise), as
``kafka-share-groups.sh --reset-offsets`` does; ``reset_share_group_offsets`` works out the
offsets as that tool does (the log start, the log end, or an offset kept within them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from client.errors import error_for_code
from client.group.admin import GroupAdmin, GroupListing
from client.protocol.api import ApiKey, ErrorCode, error_name
from client.structs import OffsetSpec, TopicPartition

__all__ = ["ShareGroupAdmin", "ShareMemberDescription", "ShareGroupDescription", "ShareGroupOffset"]


class ShareMemberDescription(NamedTuple):
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topics: list[str]
    assignment: list[TopicPartition]
    rack_id: str | None = None


class ShareGroupDescription(NamedTuple):
    group_id: str
    state: str  # Empty, Stable, Dead (unknown group)
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ShareMemberDescription]
    coordinator: tuple[int, str, int] | None = None


class ShareGroupOffset(NamedTuple):
    start_offset: int  # -1: the share-partition has no state yet
    leader_epoch: int
    lag: int | None  # None: not known (no state, or a broker without v1)


class ShareGroupAdmin(GroupAdmin):
    """The share-group operations of ``Admin``."""

    async def list_share_groups(self) -> list[GroupListing]:
        """Every share group (ListGroups v5 with types_filter ["share"]), sorted by id."""
        await self.start()
        if not self._cluster.brokers:
            await self._cluster.refresh_metadata([])
        out: dict[str, GroupListing] = {}
        for node in sorted(self._cluster.brokers):
            conn = await self._cluster.node_connection(node)
            v = conn.pick_version(ApiKey.LIST_GROUPS)
            if v < 5:
                continue  # no group types: no share groups
            resp = await conn.request(ApiKey.LIST_GROUPS, v, {"states_filter": [], "types_filter": ["share"]})
            if resp["error_code"]:
                raise error_for_code(resp["error_code"], f"ListGroups: {error_name(resp['error_code'])}")
            for g in resp["groups"]:
                out[g["group_id"]] = GroupListing(g["group_id"], g["protocol_type"], g.get("group_state", ""))
        return [out[k] for k in sorted(out)]

    async def describe_share_groups(self, group_ids: Iterable[str]) -> dict[str, ShareGroupDescription]:
        """Each share group's state, epochs and members with their assignments
        (ShareGroupDescribe); one that does not exist is described as "Dead"."""
        out: dict[str, ShareGroupDescription] = {}
        for group in group_ids:
            _, resp = await self._group_request(group, ApiKey.SHARE_GROUP_DESCRIBE, {
                "group_ids": [group], "include_authorized_operations": False},
                code_of=lambda v, r: r["groups"][0]["error_code"])
            g = resp["groups"][0]
            if g["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
                out[group] = ShareGroupDescription(group, "Dead", 0, 0, "", [], await self._coordinator_node(group))
                continue
            if g["error_code"]:
                raise error_for_code(g["error_code"], f"ShareGroupDescribe {group!r}: "
                                                      f"{g.get('error_message') or error_name(g['error_code'])}")
            members = [ShareMemberDescription(
                m["member_id"], m["client_id"], m["client_host"], m["member_epoch"],
                list(m["subscribed_topic_names"]),
                sorted(TopicPartition(t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                       for p in t["partitions"]), m.get("rack_id")) for m in g["members"]]
            out[group] = ShareGroupDescription(g["group_id"], g["group_state"], g["group_epoch"],
                                               g["assignment_epoch"], g["assignor_name"], members,
                                               await self._coordinator_node(group))
        return out

    async def list_share_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]] | None = None
                                       ) -> dict[TopicPartition, ShareGroupOffset]:
        """Start offset, leader epoch and lag of the group's share-partitions (all those with
        state, or ``partitions``), DescribeShareGroupOffsets; GroupIdNotFoundError for an
        unknown group."""
        topics = None
        if partitions is not None:
            by: dict[str, list[int]] = {}
            for t, p in partitions:
                by.setdefault(t, []).append(p)
            topics = [{"topic_name": t, "partitions": ps} for t, ps in by.items()]
        v, resp = await self._group_request(group, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, {
            "groups": [{"group_id": group, "topics": topics}]}, code_of=lambda v, r: r["groups"][0]["error_code"])
        g = resp["groups"][0]
        if g["error_code"]:
            raise error_for_code(g["error_code"], f"DescribeShareGroupOffsets {group!r}: "
                                                  f"{g.get('error_message') or error_name(g['error_code'])}")
        out: dict[TopicPartition, ShareGroupOffset] = {}
        for t in g["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    raise error_for_code(p["error_code"], f"{t['topic_name']}-{p['partition_index']}: "
                                                          f"{p.get('error_message') or error_name(p['error_code'])}")
                lag = p.get("lag", -1) if v >= 1 else -1
                out[TopicPartition(t["topic_name"], p["partition_index"])] = ShareGroupOffset(
                    p["start_offset"], p["leader_epoch"], None if lag < 0 else lag)
        return dict(sorted(out.items()))

    async def alter_share_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Set start offsets (AlterShareGroupOffsets); the group must have no members. Raises
        the first error."""
        by: dict[str, list[dict[str, int]]] = {}
        for (t, p), o in offsets.items():
            by.setdefault(t, []).append({"partition_index": p, "start_offset": o})
        if not by:
            return
        _, resp = await self._group_request(group, ApiKey.ALTER_SHARE_GROUP_OFFSETS, {
            "group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by.items()]})
        code, message = resp["error_code"], resp.get("error_message")
        if not code:
            for t in resp["responses"]:
                for p in t["partitions"]:
                    if p["error_code"] and not code:
                        code = p["error_code"]
                        message = f"{t['topic_name']}-{p['partition_index']}: {p.get('error_message') or ''}"
        if code:
            raise error_for_code(code, f"cannot alter the share offsets of group {group!r}: "
                                       f"{message or error_name(code)}")

    async def reset_share_group_offsets(self, group: str, partitions: Iterable[tuple[str, int]], *,
                                        to_earliest: bool = False, to_latest: bool = False,
                                        to_offset: int | None = None, execute: bool = True
                                        ) -> dict[TopicPartition, int]:
        """Work out new start offsets for ``partitions`` (exactly one of: the log start, the log
        end, ``to_offset`` kept within them) and set them if ``execute``. Returns them."""
        if sum([to_earliest, to_latest, to_offset is not None]) != 1:
            raise ValueError("give exactly one of to_earliest, to_latest, to_offset")
        tps = sorted(TopicPartition(*tp) for tp in partitions)
        if not tps:
            return {}
        starts = {tp: v.offset for tp, v in (await self.list_offsets({tp: OffsetSpec.EARLIEST for tp in tps})).items()}
        ends = {tp: v.offset for tp, v in (await self.list_offsets({tp: OffsetSpec.LATEST for tp in tps})).items()}
        if to_earliest:
            target = starts
        elif to_latest:
            target = ends
        else:
            assert to_offset is not None
            target = {tp: min(max(to_offset, starts[tp]), ends[tp]) for tp in tps}
        target = {tp: target[tp] for tp in tps}
        if execute:
            await self.alter_share_group_offsets(group, {(tp.topic, tp.partition): o for tp, o in target.items()})
        return target

    async def delete_share_group_offsets(self, group: str, topics: Iterable[str]) -> None:
        """Forget the group's state of whole topics (DeleteShareGroupOffsets); the group must
        have no members. Raises the first error."""
        names = list(topics)
        if not names:
            return
        _, resp = await self._group_request(group, ApiKey.DELETE_SHARE_GROUP_OFFSETS, {
            "group_id": group, "topics": [{"topic_name": t} for t in names]})
        code, message = resp["error_code"], resp.get("error_message")
        if not code:
            for t in resp["responses"]:
                if t["error_code"] and not code:
                    code, message = t["error_code"], f"{t['topic_name']}: {t.get('error_message') or ''}"
        if code:
            raise error_for_code(code, f"cannot delete the share offsets of group {group!r}: "
                                       f"{message or error_name(code)}")
