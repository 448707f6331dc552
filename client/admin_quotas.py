"""Admin operations on client quotas (KIP-546; ``Admin`` inherits them): describe_client_quotas
and alter_client_quotas, as Kafka's Java admin's ``describeClientQuotas`` /
``alterClientQuotas``, with its structs (``ClientQuotaEntity``, ``ClientQuotaFilter``,
``ClientQuotaFilterComponent``, ``ClientQuotaAlteration``); ``minibroker configs
--entity-type users|clients|ips`` is built on them, as ``kafka-configs.sh`` is on the Java admin.

::

    async with Admin("127.0.0.1:9092") as admin:
        alice = ClientQuotaEntity({ClientQuotaEntity.USER: "alice"})
        await admin.alter_client_quotas([ClientQuotaAlteration(alice, [
            ClientQuotaAlteration.Op("producer_byte_rate", 1048576),
            ClientQuotaAlteration.Op("request_percentage", None)])])       # None: remove the key
        quotas = await admin.describe_client_quotas(ClientQuotaFilter.contains_only(
            [ClientQuotaFilterComponent.of_entity(ClientQuotaEntity.USER, "alice")]))
        # {ClientQuotaEntity(entries={'user': 'alice'}): {'producer_byte_rate': 1048576.0}}

An entity maps entity types (``user``, ``client-id``, ``ip``) to names, None being the type's
default entity. Both requests go to any broker, as the Java admin sends them. A refused filter
raises the ``KafkaError`` of its code with the broker's message (InvalidRequestError,
UnsupportedVersionError); the broker processes every entity of an alteration and refuses those
it must, the first refusal is then raised.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from client.cluster import Cluster
from client.conn import BrokerConnection
from client.errors import error_for_code
from client.protocol.api import ApiKey, error_name

__all__ = ["QuotaAdmin", "ClientQuotaEntity", "ClientQuotaFilter", "ClientQuotaFilterComponent",
           "ClientQuotaAlteration"]


class ClientQuotaEntity(Mapping[str, "str | None"]):
    """A quota entity: entity type -> name (None: the default entity of that type); hashable."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"

    __slots__ = ("_entries", "_key")

    def __init__(self, entries: Mapping[str, str | None]) -> None:
        self._entries = dict(entries)
        self._key = tuple(sorted(self._entries.items(), key=lambda kv: kv[0]))

    @property
    def entries(self) -> dict[str, str | None]:
        return dict(self._entries)

    def __getitem__(self, key: str) -> str | None:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClientQuotaEntity):
            return self._key == other._key
        return NotImplemented

    def __repr__(self) -> str:
        return f"ClientQuotaEntity(entries={self._entries!r})"


#: DescribeClientQuotas' match types
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class ClientQuotaFilterComponent(NamedTuple):
    """One entity type's part of a filter: its exact name (``match``), its default entity
    (``match_type`` MATCH_DEFAULT) or any name it has (MATCH_SPECIFIED)."""

    entity_type: str
    match: str | None
    match_type: int

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, name, MATCH_EXACT)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, None, MATCH_DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, None, MATCH_SPECIFIED)


class ClientQuotaFilter(NamedTuple):
    """Components the entities must match; ``strict``: and no entity type besides theirs."""

    components: tuple[ClientQuotaFilterComponent, ...]
    strict: bool

    @classmethod
    def contains(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        return cls(tuple(components), False)

    @classmethod
    def contains_only(cls, components: Iterable[ClientQuotaFilterComponent]) -> ClientQuotaFilter:
        return cls(tuple(components), True)

    @classmethod
    def all(cls) -> ClientQuotaFilter:
        return cls((), False)


class _Op(NamedTuple):
    """Set ``key`` to ``value``, or remove it (``value`` None)."""

    key: str
    value: float | None


@dataclass(frozen=True)
class ClientQuotaAlteration:
    """The ops to apply to one entity's quotas (``ClientQuotaAlteration.Op(key, value)``)."""

    entity: Mapping[str, str | None]
    ops: Sequence[_Op]

    Op: ClassVar[type[_Op]] = _Op


class QuotaAdmin(ABC):
    """The client quota operations of ``Admin``, which provides the connection plumbing."""

    _cluster: Cluster

    @abstractmethod
    async def _request(self, conn_getter: Callable[[], Awaitable[BrokerConnection]], api_key: ApiKey,
                       body: dict[str, Any]) -> dict[str, Any]:
        """One request on the connection ``conn_getter`` gives, answered with its body."""

    async def describe_client_quotas(self, quota_filter: ClientQuotaFilter | None = None
                                     ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of the entities ``quota_filter`` matches (None: every entity)."""
        f = ClientQuotaFilter.all() if quota_filter is None else quota_filter
        body = {"components": [{"entity_type": c.entity_type, "match_type": c.match_type, "match": c.match}
                               for c in f.components], "strict": f.strict}
        resp = await self._request(self._cluster.any_connection, ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
        if resp["error_code"]:
            raise error_for_code(resp["error_code"], "cannot describe client quotas: "
                                 + (resp["error_message"] or error_name(resp["error_code"])))
        return {ClientQuotaEntity({e["entity_type"]: e["entity_name"] for e in entry["entity"]}):
                {v["key"]: v["value"] for v in entry["values"]} for entry in resp["entries"] or []}

    async def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration], *,
                                  validate_only: bool = False) -> None:
        """Apply each alteration (an entity and its ops; ``validate_only``: check, change
        nothing); the first entity the broker refuses is raised."""
        entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in a.entity.items()],
                    "ops": [{"key": op.key, "value": 0.0 if op.value is None else float(op.value),
                             "remove": op.value is None} for op in a.ops]} for a in alterations]
        if not entries:
            return
        resp = await self._request(self._cluster.any_connection, ApiKey.ALTER_CLIENT_QUOTAS,
                                   {"entries": entries, "validate_only": validate_only})
        for r in resp["entries"]:
            if r["error_code"]:
                entity = ClientQuotaEntity({e["entity_type"]: e["entity_name"] for e in r["entity"]})
                raise error_for_code(r["error_code"], f"cannot alter the client quotas of {entity}: "
                                     + (r["error_message"] or error_name(r["error_code"])))
