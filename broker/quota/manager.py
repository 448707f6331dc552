"""Client quota enforcement, sans-IO: Kafka's ``ClientQuotaManager`` (produce and fetch byte
rates), ``ClientRequestQuotaManager`` (request time), ``ControllerMutationQuotaManager``
(partition mutations, KIP-599) and the per-IP connection rate of ``ConnectionQuotas``. The
socket server asks them what to throttle (broker/handlers/quotas.py); the quota configs come
from the ClientQuotaStore (store.py), whose changes they follow.

**Which quota applies** to a request of user U (the principal's name) and client id C, for one
quota type, is the first set of (Kafka's order, ``ClientQuotaManager``):

    1. /config/users/U/clients/C        5. /config/users/<default>/clients/<default>
    2. /config/users/U/clients/<default> 6. /config/users/<default>
    3. /config/users/U                   7. /config/clients/C
    4. /config/users/<default>/clients/C 8. /config/clients/<default>

**Whose traffic it counts** (Kafka's metric tags): a rate is measured per (user tag, client-id
tag). While only one kind of entity has ever been given this quota type (client-id ones,
user ones, or (user, client-id) ones) the tags are that kind's: (\"\", C), (U, \"\") or (U, C).
Once several kinds have been, the tags are those of the level that applies: levels 1, 2, 4, 5
measure (U, C), levels 3 and 6 (U, \"\"), levels 7 and 8 (\"\", C). So a default entity's quota
applies to each user (or client id, or pair) on its own, never to all of them together. A
kind once used stays counted until a restart, as in Kafka (``quotaTypesEnabled``); until a
quota type has been given to any entity, nothing of it is measured. An empty client id with
client-id tags has no quota (Kafka's: neither name is set).

**Measures**: byte rates and request time are ``Rate`` (rate.py) over ``quota.window.num``
samples of ``quota.window.size.seconds``; the throttle time is (observed - quota) / quota x
window, unbounded for byte rates and at most one window for request time (Kafka's
``boundedThrottleTime``). Request time is a percentage of one thread: handling time in ns x
100 / 1e9 per second. Controller mutations use a ``TokenBucket`` over
``controller.quota.window.num`` samples of ``controller.quota.window.size.seconds``: strict
(CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) refuses a topic once the bucket is
exhausted, permissive (older versions) accepts it and throttles. A measure idle for an hour is
dropped (Kafka's sensor expiry).

**Connections**: a ``connection_creation_rate`` for an ip (or the default ip entity) bounds the
connections accepted per second from that address; one above it is counted out again and
closed after the throttle time (at most one window), as Kafka's acceptor does.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import Final

from .rate import Rate, TokenBucket
from .store import CLIENT_ID, IP, USER, Entity

__all__ = ["ClientQuotaManager", "MutationQuota", "ConnectionQuotas", "QuotaManagers", "DEFAULT", "QuotaKind",
           "now_ms"]

logger = logging.getLogger(__name__)


class _Default:
    """The default entity of a type (Kafka's ``<default>``), never a name."""

    def __repr__(self) -> str:
        return "<default>"


DEFAULT: Final = _Default()
#: an entity name in the overrides: a name, the default, or None (the type is absent)
Name = str | _Default | None

#: Kafka's QuotaTypes bits
_CLIENT_ID_ENABLED, _USER_ENABLED, _USER_CLIENT_ENABLED = 1, 2, 4
#: Kafka's InactiveSensorExpirationTimeSeconds
SENSOR_EXPIRY_MS = 3600 * 1000


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class QuotaKind:
    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"
    CONTROLLER_MUTATION = "controller_mutation_rate"


class _Sensor:
    """One measure of a (user tag, client-id tag) and the quota it is held to (recomputed when
    the quotas change)."""

    __slots__ = ("stat", "limit", "version")

    def __init__(self, stat: Rate | TokenBucket) -> None:
        self.stat = stat
        self.limit: float | None = None
        self.version = -1


class ClientQuotaManager:
    """One quota type: its quotas by entity, the sensors measuring it, its throttle times."""

    def __init__(self, kind: str, samples: int, window_s: int, *, max_throttle_ms: int | None = None,
                 token_bucket: bool = False, clock: Callable[[], int] = now_ms) -> None:
        self.kind = kind
        self.samples = samples
        self.window_ms = window_s * 1000
        self.max_throttle_ms = max_throttle_ms
        self.token_bucket = token_bucket
        self.clock = clock
        #: (user, client id) -> quota: names, DEFAULT, or None for a type the entity does not have
        self.overrides: dict[tuple[Name, Name], float] = {}
        self.enabled = 0
        self._version = 0
        self.sensors: dict[tuple[str, str], _Sensor] = {}

    @property
    def quotas_enabled(self) -> bool:
        return self.enabled != 0

    def update(self, user: Name, client_id: Name, quota: float | None) -> None:
        """Set (or remove, None) the quota of an entity; a kind of entity given one is counted
        from now on (see the module docstring)."""
        if user is not None:
            self.enabled |= _USER_CLIENT_ENABLED if client_id is not None else _USER_ENABLED
        elif client_id is not None:
            self.enabled |= _CLIENT_ID_ENABLED
        if quota is None:
            self.overrides.pop((user, client_id), None)
        else:
            self.overrides[(user, client_id)] = quota
        self._version += 1

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Kafka's ``quotaMetricTags``: whose measure a request of (user, client_id) counts in."""
        enabled = self.enabled
        if enabled in (0, _CLIENT_ID_ENABLED):
            return "", client_id
        if enabled == _USER_ENABLED:
            return user, ""
        if enabled == _USER_CLIENT_ENABLED:
            return user, client_id
        o = self.overrides
        if (user, client_id) in o or (user, DEFAULT) in o:
            return user, client_id
        if (user, None) in o:
            return user, ""
        if (DEFAULT, client_id) in o or (DEFAULT, DEFAULT) in o:
            return user, client_id
        if (DEFAULT, None) in o:
            return user, ""
        return "", client_id

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        """Kafka's ``quotaLimit``: the quota of a measure, by the order of the module docstring
        (None: no quota)."""
        user, client_id = tags
        o = self.overrides
        if user and client_id:
            for key in ((user, client_id), (user, DEFAULT), (DEFAULT, client_id), (DEFAULT, DEFAULT)):
                q = o.get(key)
                if q is not None:
                    return q
        elif user:
            q = o.get((user, None))
            return q if q is not None else o.get((DEFAULT, None))
        elif client_id:
            q = o.get((None, client_id))
            return q if q is not None else o.get((None, DEFAULT))
        return None

    def quota(self, user: str, client_id: str) -> float:
        """The quota a request of (user, client_id) is held to (inf: none)."""
        limit = self.quota_limit(self.metric_tags(user, client_id))
        return math.inf if limit is None else limit

    def _sensor(self, user: str, client_id: str) -> _Sensor:
        tags = self.metric_tags(user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is None:
            stat = TokenBucket(self.samples, self.window_ms) if self.token_bucket else Rate(self.samples, self.window_ms)
            sensor = self.sensors[tags] = _Sensor(stat)
        if sensor.version != self._version:
            sensor.limit = self.quota_limit(tags)
            sensor.version = self._version
        return sensor

    def record(self, user: str, client_id: str, value: float, now: int | None = None) -> int:
        """Count ``value`` for a request of (user, client_id): the throttle time in ms (0 when
        within the quota, or when no quota of this type was ever set)."""
        if not self.enabled:
            return 0
        now = self.clock() if now is None else now
        sensor = self._sensor(user, client_id)
        stat = sensor.stat
        assert isinstance(stat, Rate)
        stat.record(value, now)
        limit = sensor.limit
        if limit is None:
            return 0
        throttle = stat.throttle_time(limit, now)
        if self.max_throttle_ms is not None and throttle > self.max_throttle_ms:
            throttle = self.max_throttle_ms
        return throttle

    def record_no_throttle(self, user: str, client_id: str, value: float, now: int | None = None) -> None:
        """Count ``value`` without a throttle (Kafka's ``recordNoThrottle``; a negative value
        takes back what was counted: ``unrecordQuotaSensor``)."""
        if not self.enabled:
            return
        stat = self._sensor(user, client_id).stat
        assert isinstance(stat, Rate)
        stat.record(value, self.clock() if now is None else now)

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """The most that can be counted at once without a throttle whatever came before
        (Kafka's ``getMaxValueInQuotaWindow``: quota x (samples - 1) x window)."""
        if not self.enabled:
            return math.inf
        limit = self._sensor(user, client_id).limit
        if limit is None:
            return math.inf
        return limit * (self.samples - 1) * self.window_ms / 1000

    def expire(self, now: int) -> None:
        """Drop the measures idle for an hour."""
        idle = [tags for tags, s in self.sensors.items() if now - s.stat.last_recorded > SENSOR_EXPIRY_MS]
        for tags in idle:
            del self.sensors[tags]

    # -------------------------------------------------------------- controller mutations

    def mutation_quota(self, user: str, client_id: str, strict: bool) -> MutationQuota:
        """A request's controller mutation quota (Kafka's ``newQuotaFor``): strict or permissive;
        unbounded while no controller_mutation_rate was ever set."""
        if not self.enabled:
            return MutationQuota(None, None, strict, self.clock)
        sensor = self._sensor(user, client_id)
        stat = sensor.stat
        assert isinstance(stat, TokenBucket)
        return MutationQuota(stat, sensor.limit, strict, self.clock)


class MutationQuota:
    """One request's controller mutation quota (Kafka's Strict/PermissiveControllerMutationQuota):
    ``record(partitions)`` per topic; False when a strict quota refuses it (the bucket was
    already exhausted: THROTTLING_QUOTA_EXCEEDED). ``throttle_time()``: the ms the client must
    wait, less the time since it was computed."""

    __slots__ = ("bucket", "limit", "strict", "clock", "_throttle", "_at")

    def __init__(self, bucket: TokenBucket | None, limit: float | None, strict: bool, clock: Callable[[], int]) -> None:
        self.bucket, self.limit, self.strict, self.clock = bucket, limit, strict, clock
        self._throttle = 0
        self._at = 0

    @property
    def bounded(self) -> bool:
        """Whether this client has a controller_mutation_rate at all."""
        return self.bucket is not None and self.limit is not None

    def record(self, permits: float) -> bool:
        bucket, limit = self.bucket, self.limit
        if bucket is None:
            return True
        now = self.clock()
        if limit is None:  # no quota for this client: counted, never exhausted
            return True
        if self.strict:
            tokens = bucket.measure(limit, now)
            if tokens < 0:
                self._throttle, self._at = TokenBucket.throttle_time(tokens, limit), now
                return False
            bucket.record(permits, limit, now)
            return True
        bucket.record(permits, limit, now)
        if bucket.tokens < 0:
            self._throttle, self._at = TokenBucket.throttle_time(bucket.tokens, limit), now
        return True

    def throttle_time(self) -> int:
        if not self._throttle:
            return 0
        return max(0, self._throttle - (self.clock() - self._at))


class ConnectionQuotas:
    """``connection_creation_rate`` per ip: overrides by ip entity (an address, or a host name
    once resolved: ``resolved``), and the default ip entity's."""

    def __init__(self, samples: int, window_s: int, clock: Callable[[], int] = now_ms) -> None:
        self.samples = samples
        self.window_ms = window_s * 1000
        self.clock = clock
        self.default: float | None = None
        #: ip entity name -> rate
        self.by_entity: dict[str, float] = {}
        #: host name -> the addresses it resolved to
        self.addresses: dict[str, list[str]] = {}
        self._by_address: dict[str, float] = {}
        self.rates: dict[str, Rate] = {}

    def update(self, ip: str | None, rate: float | None) -> None:
        """Set (or remove, None) the rate of ip entity ``ip`` (None: the default)."""
        if ip is None:
            self.default = rate
            return
        if rate is None:
            self.by_entity.pop(ip, None)
        else:
            self.by_entity[ip] = rate
        self._index()

    def resolved(self, host: str, addresses: list[str]) -> None:
        """What host name ``host`` resolves to (an ip entity naming it applies to these)."""
        self.addresses[host] = addresses
        self._index()

    def hosts(self) -> list[str]:
        """The ip entities that name a host, not an address."""
        return [name for name in self.by_entity if not _is_address(name)]

    def _index(self) -> None:
        index: dict[str, float] = {}
        for name, rate in self.by_entity.items():
            for address in self.addresses.get(name, [name]):
                index[_normal(address)] = rate
        self._by_address = index

    def accept(self, address: str, now: int | None = None) -> int:
        """Count a new connection from ``address``: 0 to accept it, else the ms after which to
        close it (it is not counted)."""
        if self.default is None and not self._by_address:
            return 0
        key = _normal(address)
        limit = self._by_address.get(key, self.default)
        if limit is None:
            return 0
        now = self.clock() if now is None else now
        rate = self.rates.get(key)
        if rate is None:
            rate = self.rates[key] = Rate(self.samples, self.window_ms)
        rate.record(1.0, now)
        throttle = min(rate.throttle_time(limit, now), self.window_ms)
        if throttle > 0:
            rate.record(-1.0, now)
        return throttle

    def expire(self, now: int) -> None:
        for key in [k for k, r in self.rates.items() if now - r.last_recorded > SENSOR_EXPIRY_MS]:
            del self.rates[key]


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _normal(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


class QuotaManagers:
    """The broker's quota managers (Kafka's QuotaFactory.QuotaManagers), fed by the quota
    store: ``active`` is False until some quota was set (the socket server then skips them)."""

    def __init__(self, samples: int = 11, window_s: int = 1, controller_samples: int = 11,
                 controller_window_s: int = 1, clock: Callable[[], int] = now_ms) -> None:
        self.produce = ClientQuotaManager(QuotaKind.PRODUCE, samples, window_s, clock=clock)
        self.fetch = ClientQuotaManager(QuotaKind.FETCH, samples, window_s, clock=clock)
        self.request = ClientQuotaManager(QuotaKind.REQUEST, samples, window_s, max_throttle_ms=window_s * 1000,
                                          clock=clock)
        self.controller_mutation = ClientQuotaManager(QuotaKind.CONTROLLER_MUTATION, controller_samples,
                                                      controller_window_s, token_bucket=True, clock=clock)
        self.connections = ConnectionQuotas(samples, window_s, clock)
        self.by_key = {m.kind: m for m in (self.produce, self.fetch, self.request, self.controller_mutation)}
        self.clock = clock
        #: a quota of some type was set: requests are measured (and throttled)
        self.active = False
        self._last_expiry = 0

    def on_change(self, entity: Entity, key: str, value: float | None) -> None:
        """A quota set (``value``) or removed (None) in the store."""
        pairs = dict(entity)
        if IP in pairs:
            if key == "connection_creation_rate":
                self.connections.update(pairs[IP], value)
            return
        manager = self.by_key.get(key)
        if manager is None:
            logger.warning("ignoring unexpected quota key %s for entity %s", key, pairs)
            return
        user = (DEFAULT if pairs[USER] is None else pairs[USER]) if USER in pairs else None
        client = (DEFAULT if pairs[CLIENT_ID] is None else pairs[CLIENT_ID]) if CLIENT_ID in pairs else None
        manager.update(user, client, value)
        self.active = any(m.enabled for m in self.by_key.values())

    def expire(self) -> None:
        """Drop idle measures (at most once a minute)."""
        now = self.clock()
        if now - self._last_expiry < 60_000:
            return
        self._last_expiry = now
        for m in self.by_key.values():
            m.expire(now)
        self.connections.expire(now)
