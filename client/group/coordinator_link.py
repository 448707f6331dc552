"""The connection of a group member to its group's coordinator, shared by the classic member
(coordinator.py), the KIP-848 member (consumer_member.py) and the share-group member
(share_member.py): FindCoordinator (key type group) names it, a connection of its own carries
the member's requests (they never queue behind fetches), and a broken connection forgets the
coordinator so that the next request looks it up again."""

from __future__ import annotations

from typing import Any

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import KafkaConnectionError
from client.protocol.api import ApiKey

__all__ = ["CoordinatorLink"]


class CoordinatorLink:
    cluster: Cluster
    group_id: str
    _coordinator: tuple[int, str, int] | None

    async def _connection(self) -> BrokerConnection:
        if self._coordinator is None:
            self._coordinator = await self.cluster.find_coordinator(self.group_id, 0)
        try:
            return await self.cluster.coordinator_connection(*self._coordinator)
        except KafkaConnectionError:
            self._coordinator = None
            raise

    async def _request(self, key: ApiKey, body: dict[str, Any], timeout: float | None = None,
                       max_version: int | None = None) -> tuple[int, dict[str, Any]]:
        """(version, response) from the coordinator, at the highest common version (at most
        ``max_version``); a broken connection forgets it."""
        conn = await self._connection()
        v = conn.pick_version(key)
        if max_version is not None and v > max_version:
            v = max_version
        try:
            return v, await conn.request(key, v, body, timeout=timeout)
        except KafkaConnectionError:
            self._coordinator = None
            raise
