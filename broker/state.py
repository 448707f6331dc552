"""BrokerState: what the request handlers share — the LogManager, the advertised listener,
producer ids, fetch long-poll waiters and the group commit for acks=all.

Group commit (acks=all is answered only once an fsync covers the batch): ``await state.durable(log, offset)`` returns once
``log.recovery_point >= offset``. At most one ``Log.flush`` per log runs at a time, in a
worker thread; every acks=all request that arrives while it runs waits for the *next* flush,
which one fsync per file then covers for all of them. The event loop never fsyncs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
from typing import TYPE_CHECKING, Any

from client.clock import now_ms

from .authorizer import AclStore, StandardAuthorizer
from .config import BrokerConfig
from .dynamic_config import DynamicBrokerConfig
from .features import GROUP_VERSION, TRANSACTION_VERSION, FeatureStore
from .fetch_session import FetchSessionCache
from .group.group_configs import GroupConfigStore
from .group.runtime import GroupRuntime
from .log_limiter import LogLimiter
from .quota import ClientQuotaStore, QuotaManagers
from .security.scram_credentials import ScramCredentialStore
from .share.group import ShareGroupCoordinator
from .share.manager import RuntimePersister, SharePartitionManager
from .share.runtime import ShareStateRuntime
from .storage.fileutil import atomic_write
from .storage.inflation import InflationLimits
from .storage.log import Log
from .storage.log_manager import LogManager
from .txn.runtime import TransactionRuntime

if TYPE_CHECKING:
    from .metrics import BrokerMetrics

__all__ = ["BrokerState", "ProducerIdManager"]

logger = logging.getLogger(__name__)

PRODUCER_ID_BLOCK = 1000


class ProducerIdManager:
    """Producer ids unique across restarts: blocks of 1000 ids are reserved by writing the next
    block's start to ``<log.dir>/producer-id-block`` (fsync'd) before any id of a block is
    handed out, as Kafka's controller reserves ProducerIdsBlocks."""

    FILE = "producer-id-block"

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, self.FILE)
        self._next = 0
        self._block_end = 0
        try:
            with open(self.path, encoding="utf-8") as f:
                self._next = self._block_end = int(f.read().strip() or 0)
        except FileNotFoundError:
            pass
        except ValueError:
            logger.error("%s is corrupt; producer ids restart above a fresh block", self.path)
            self._next = self._block_end = 1 << 40

    def _reserve(self) -> None:
        end = self._next + PRODUCER_ID_BLOCK
        atomic_write(self.path, f"{end}\n".encode())
        self._block_end = end

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._reserve()
        pid = self._next
        self._next += 1
        return pid


#: Worker threads inflating compressed produce batches (each holds at most one batch's buffer).
INFLATE_THREADS = 2


class BrokerState:
    def advertised_endpoint(self, listener_name: str) -> tuple[str, int]:
        """(host, port) to tell a client that came in on ``listener_name``."""
        e = self.advertised.get(listener_name)
        return (self.host, self.port) if e is None else (e.host, e.port)

    def __init__(self, config: BrokerConfig, logs: LogManager, dynamic: DynamicBrokerConfig | None = None) -> None:
        self.config = config
        self.logs = logs
        #: dynamic broker configs (AlterConfigs on the broker resource) and DescribeConfigs' view
        self.dynamic = dynamic if dynamic is not None else DynamicBrokerConfig(config, logs.log_dir)
        self.node_id = config.node_id
        #: the handlers' log lines that a client can repeat at will (a rejected produce), per cause
        self.log_limiter = LogLimiter(logger)
        self.host, self.port = config.advertised_listener
        #: per listener name, the endpoint its clients are told about (Metadata, FindCoordinator,
        #: DescribeCluster answer with the one of the listener the request came in on)
        self.advertised = config.advertised_endpoints
        self.cluster_id = logs.cluster_id
        self.num_partitions = config.int("num.partitions")
        self.auto_create_topics = config.bool("auto.create.topics.enable")
        self.producer_ids = ProducerIdManager(logs.log_dir)
        #: SCRAM credentials (KIP-554): <log.dir>/scram-credentials.json; ScramCredentialFileError
        #: if that file is corrupt (the broker does not start)
        self.scram_credentials = ScramCredentialStore(logs.log_dir)
        #: finalized feature levels (ApiVersions, UpdateFeatures): <log.dir>/finalized-features.json;
        #: FeatureFileError if that file cannot be used (the broker does not start)
        self.features = FeatureStore(logs.log_dir, self.node_id)
        #: client quota configs (KIP-546): <log.dir>/client-quotas.json; ClientQuotaFileError if that
        #: file is corrupt (the broker does not start); and the managers enforcing them (broker/quota/)
        self.client_quotas = ClientQuotaStore(logs.log_dir)
        self.quotas = QuotaManagers(config.int("quota.window.num"), config.int("quota.window.size.seconds"),
                                    config.int("controller.quota.window.num"),
                                    config.int("controller.quota.window.size.seconds"))
        for entity, values in self.client_quotas.quotas.items():
            for key, value in values.items():
                self.quotas.on_change(entity, key, value)
        self.client_quotas.listeners.append(self.quotas.on_change)
        #: the StandardAuthorizer when ``authorizer.class.name`` names it, else None (every request
        #: allowed; ``RequestContext.authorize`` tests this one attribute), and the ACL set it is
        #: fed from, <log.dir>/acls.json (AclFileError if that file is corrupt: no start)
        self.authorizer: StandardAuthorizer | None = None
        self.acls: AclStore | None = None
        if config.authorizer_enabled:
            self.authorizer = StandardAuthorizer.from_properties(config.props)
            self.acls = AclStore(logs.log_dir)
            self.acls.attach(self.authorizer)
            logger.info("authorizer on (StandardAuthorizer): %d ACLs, super users %s, allow.everyone.if.no.acl.found=%s",
                        len(self.acls), ", ".join(sorted(self.authorizer.super_users)) or "none",
                        str(self.authorizer.allow_everyone_if_no_acl_found).lower())
        #: per-group configs (KIP-848/KIP-932 group overrides): <log.dir>/group-configs.json;
        #: GroupConfigError if that file is corrupt (the broker does not start)
        self.group_configs = GroupConfigStore(logs.log_dir, config)
        #: the group coordinator bound to this state (broker/group/runtime.py); loads at Broker.start
        self.groups = GroupRuntime(self)
        self.groups.coordinator.consumer.enabled = lambda: self.features.level(GROUP_VERSION) >= 1
        #: the share-partition state of share groups (broker/share/runtime.py, __share_group_state);
        #: loads at Broker.start
        self.share_state = ShareStateRuntime(self)
        #: share groups (KIP-932): their membership and their share-partitions (broker/share/)
        coordinator = self.groups.coordinator
        self.share_groups = ShareGroupCoordinator(  # group configs override the timeouts per group
            logs, self.groups.timer, now_ms, session_timeout_ms=config.int("group.share.session.timeout.ms"),
            heartbeat_interval_ms=config.int("group.share.heartbeat.interval.ms"),
            max_size=config.int("group.share.max.size"),
            is_other_group=lambda g: g in coordinator.groups and (bool(coordinator.groups[g].members)
                                                                  or coordinator.groups[g].consumer is not None))
        self.shares = SharePartitionManager(
            self, RuntimePersister(self.share_state), lock_duration_ms=config.int("group.share.record.lock.duration.ms"),
            delivery_count_limit=config.int("group.share.delivery.count.limit"),
            max_in_flight=config.int("group.share.partition.max.record.locks"),
            max_sessions=config.int("group.share.max.share.sessions"), is_member=self.share_groups.is_member,
            group_config=self.group_configs.get)
        self.share_groups.on_member_gone = self.shares.release_member
        self.share_groups.group_config = self.group_configs.get
        self.groups.coordinator.consumer.group_config = self.group_configs.get
        #: the transaction coordinator (broker/txn/); loads at Broker.start. It reads the finalized
        #: transaction.version at each request (UpdateFeatures changes it at run time).
        features = self.features
        self.txn = TransactionRuntime(self, self.producer_ids.next_id, self.groups.coordinator.offsets.complete_txn,
                                      transaction_version=lambda: features.level(TRANSACTION_VERSION))
        #: BrokerMetrics when ``metrics.listeners`` is set, else None (handlers test for None)
        self.metrics: BrokerMetrics | None = None
        self._flushes: dict[int, asyncio.Future[Any]] = {}
        self._waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = {}
        #: appends notified so far (any partition): a long poll that read before it registered
        #: reads again only if this moved in between
        self.appends = 0
        #: incremental fetch sessions (KIP-227), bounded by max.incremental.fetch.session.cache.slots
        self.fetch_sessions = FetchSessionCache(config.int("max.incremental.fetch.session.cache.slots"),
                                                config.int("min.incremental.fetch.session.eviction.ms"))
        #: the broker's decompression bounds (storage/inflation.py), which no topic config raises
        self.inflation = InflationLimits.of(config.int("message.max.decompressed.bytes"),
                                            config.int("request.max.decompressed.bytes"),
                                            config.int("broker.max.decompressed.bytes"))
        #: the threads that validate (inflate) compressed produce batches off the event loop
        self.inflate_executor = concurrent.futures.ThreadPoolExecutor(INFLATE_THREADS, thread_name_prefix="inflate")
        #: per log (by id): the last produce append still being validated off the loop; appends
        #: to the log made after it wait for it, so a log takes appends in arrival order
        self.append_tails: dict[int, asyncio.Future[None]] = {}

    # -- acks=all: group commit --

    async def durable(self, log: Log, offset: int) -> None:
        loop = asyncio.get_running_loop()
        key = id(log)
        while log.recovery_point < offset:
            fut = self._flushes.get(key)
            # A finished flush stays in the map until its done-callback runs (call_soon), and
            # awaiting a done future does not yield: without the done() check this loop spun
            # forever on a flush that ended before ``offset`` was appended.
            if fut is None or fut.done():
                fut = loop.run_in_executor(None, log.flush)
                self._flushes[key] = fut
                fut.add_done_callback(functools.partial(self._flush_done, key))
            await asyncio.shield(fut)

    def _flush_done(self, key: int, fut: asyncio.Future[Any]) -> None:
        if self._flushes.get(key) is fut:
            del self._flushes[key]

    # -- fetch long-poll --

    def add_waiter(self, keys: list[tuple[str, int]], fut: asyncio.Future[None]) -> None:
        for k in keys:
            self._waiters.setdefault(k, set()).add(fut)

    def remove_waiter(self, keys: list[tuple[str, int]], fut: asyncio.Future[None]) -> None:
        for k in keys:
            s = self._waiters.get(k)
            if s is not None:
                s.discard(fut)
                if not s:
                    del self._waiters[k]

    def notify_append(self, topic: str, partition: int) -> None:
        """An append to (or another change of: its log start offset moved, it was deleted) a
        partition: wake the fetches long-polling it, and tell the fetch sessions holding it."""
        self.appends += 1
        self.fetch_sessions.changed(topic, partition)
        s = self._waiters.get((topic, partition))
        if s:
            for fut in s:
                if not fut.done():
                    fut.set_result(None)
