"""LogManager: the data directory (``log.dirs``) and every partition log in it.

Layout::

    <log.dir>/
      <topic>-<partition>/                 one Log each (segment files), and its
                                           partition.metadata: the topic id (KIP-516),
                                           partition_metadata.py
      <topic>-<partition>.<id>-delete/     a deleted partition, removed in the background
      recovery-point-offset-checkpoint     Kafka's text checkpoint (checkpoint.py)
      log-start-offset-checkpoint
      .kafka_cleanshutdown                 present only between a clean shutdown and the next start
      meta.properties                      version, cluster.id, node.id, directory.id (Kafka's;
                                           the directory id is DescribeQuorum's)
      topic-configs.json                   minibroker's own: per-topic config overrides and partition
                                           counts, so they survive restarts (Kafka keeps them in its
                                           metadata log)

Growing a topic (``create_partitions``): the new partition count is written to
``topic-configs.json`` first (atomically: the commit point), then the new directories are
created. A start that finds fewer partition directories than the recorded count creates the
missing ones (empty), so a crash in between leaves either the old topic or the whole new one.
Config changes (``alter_topic_config``, ``set_default_config``) apply to the live logs at once:
each Log reads its ``config`` on every append, roll and retention pass.

Startup: if the clean-shutdown marker exists it is deleted at once (KAFKA-10471) and the logs
load without any scan; otherwise every log recovers from floor(recovery point). Shutdown:
flush every log, close them (trims), write both checkpoints, then the marker.

Topic ids: every topic gets a random id when it is created, written into each of its partition
directories before the topic is visible. A start that finds a partition without one (a data
dir written before topic ids existed, or a crash while a topic was being created) gives it the
id its sibling partitions hold, or a new one for the whole topic.

Topic names follow Kafka (``[a-zA-Z0-9._-]``, 1-249 characters, not ``.`` or ``..``), which
also keeps every path inside the data directory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from client.clock import now_ms
from client.protocol.api import ErrorCode

from .checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
    write_clean_shutdown_marker,
    write_offset_checkpoint,
)
from .config import LogConfig
from .errors import (
    InconsistentMetaPropertiesError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidTopicError,
    KafkaStorageError,
    LogDirError,
    PolicyViolationError,
    StorageError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from .fd_budget import PartitionBudget, raise_fd_limit
from .file_records import OpenFiles
from .fileutil import atomic_write, fsync_path
from .log import Log
from .partition_metadata import (
    new_topic_id,
    read_partition_metadata,
    topic_id_from_str,
    topic_id_to_str,
    write_partition_metadata,
)
from .producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS

__all__ = ["LogManager", "validate_topic_name", "prepare_log_dir", "TopicInfo"]

logger = logging.getLogger(__name__)

TOPIC_CONFIGS_FILE = "topic-configs.json"
META_PROPERTIES = "meta.properties"
DELETE_DIR_SUFFIX = "-delete"
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate; raises InvalidTopicError with Kafka's wording."""
    if not isinstance(name, str) or len(name) == 0:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics,'
            " '.', '_' and '-'"
        )


class TopicInfo(NamedTuple):
    name: str
    partitions: int
    overrides: dict[str, str]
    config: LogConfig
    #: the topic id (KIP-516); None only in what ``create_topic(validate_only=True)`` returns
    topic_id: uuid.UUID | None = None


def prepare_log_dir(path: str) -> None:
    """Create the data directory ``path`` if missing and check that it is a directory the
    broker can write (a file created and removed in it: root passes every permission check, a
    read-only filesystem does not); LogDirError, worded as Kafka's, otherwise."""
    where = os.path.abspath(path)
    probe = os.path.join(where, f".minibroker-probe-{os.getpid()}")
    try:
        if os.path.lexists(where) and not os.path.isdir(where):
            raise NotADirectoryError(20, "Not a directory")
        os.makedirs(where, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise LogDirError(f"log.dirs={path}: Failed to create or validate data directory {where}:"
                          f" {e.strerror or e}") from None


def _parse_partition_dir(name: str) -> tuple[str, int] | None:
    topic, sep, part = name.rpartition("-")
    if not sep or not part.isdigit() or not topic:
        return None
    try:
        validate_topic_name(topic)
    except InvalidTopicError:
        return None
    return topic, int(part)


class LogManager:
    def __init__(
        self,
        log_dir: str,
        default_config: LogConfig | None = None,
        *,
        node_id: int = 0,
        now_ms: Callable[[], int] = now_ms,
        flush_scheduler: Callable[[Log], None] | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.log_dir = os.path.abspath(log_dir)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        #: given to every Log: schedules a flush the flush.messages policy asks for (None: inline)
        self.flush_scheduler = flush_scheduler
        self.default_config = default_config or LogConfig()
        self.node_id = node_id
        self.cluster_id = "minibroker"  # read from meta.properties at startup
        #: the data directory's id (Kafka's ``directory.id`` of meta.properties), read at startup
        self.directory_id = uuid.UUID(int=0)
        self._now_ms = now_ms
        self.logs: dict[tuple[str, int], Log] = {}  # changed only by _add_log/_pop_log
        #: partitions that could not be loaded, with why: counted in their topic, served by
        #: none (KAFKA_STORAGE_ERROR), kept on disk untouched for the operator
        self.offline: dict[tuple[str, int], str] = {}
        #: partitions being made, held against the open files budget: topic -> partitions
        #: (``reserve_topic``; a growing topic under "<topic> (growing)", never a topic name)
        self._reserved: dict[str, int] = {}
        self._reserved_total = 0  # sum(self._reserved.values()), kept by _reserve / _unreserve
        #: topics being given more partitions (``begin_partitions``): topic -> partitions to add
        self._growing: dict[str, int] = {}
        self._configs_generation = 0  # the last topic_configs_snapshot's number
        self._configs_written = 0     # the last number written (under _configs_lock)
        self._configs_lock = threading.Lock()
        self._committing: dict[str, TopicInfo] = {}  # in topic_configs_snapshot's extra, not committed yet
        #: how many partitions the open files limit allows (set at start-up)
        self.budget = PartitionBudget(1 << 20)
        self._counts: dict[str, int] | None = None  # partitions per topic in self.logs, until it changes
        #: ``colliding_topic``'s index of the topics in ``_counts``: their names with '.' made '_'
        #: -> the names (rebuilt when ``partition_counts`` is), and of the reserved ones
        self._collisions: tuple[dict[str, int] | None, dict[str, list[str]]] = (None, {})
        self._reserved_collisions: dict[str, list[str]] = {}
        self._topics: dict[str, dict[str, str]] = {}  # topic -> config overrides
        self._partition_counts: dict[str, int] = {}  # topic -> partitions (the commit point of growth)
        self._topic_ids: dict[str, uuid.UUID] = {}
        #: moves whenever a partition is added or removed (KIP-848 groups resolve their
        #: subscriptions again when it has moved)
        self.metadata_epoch = 0
        self._topics_by_id: dict[uuid.UUID, str] = {}
        self.had_clean_shutdown = False
        self._started = False
        #: the log cleaner (storage/cleaner/), when the broker runs one: told when a topic goes
        self.cleaner: Any = None
        #: the checkpoint files are written from worker threads (periodic, DeleteRecords)
        self._checkpoint_lock = threading.Lock()

    # ---------------------------------------------------------------- startup

    def startup(self) -> None:
        """Load every partition in the data directory (see module docstring)."""
        fd_limit = raise_fd_limit()
        prepare_log_dir(self.log_dir)
        marker = os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE)
        self.had_clean_shutdown = os.path.exists(marker)
        if self.had_clean_shutdown:
            os.unlink(marker)  # KAFKA-10471: a crash during this start must not look clean
        self._write_meta_properties()
        recovery_points = read_offset_checkpoint(os.path.join(self.log_dir, RECOVERY_POINT_CHECKPOINT))
        start_offsets = read_offset_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT))
        self._topics = self._read_topic_configs()
        names = sorted(os.listdir(self.log_dir))
        self.budget = PartitionBudget(fd_limit, sum(1 for n in names if _parse_partition_dir(n) is not None))
        OpenFiles.limit = self.budget.lru
        for name in names:
            path = os.path.join(self.log_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                logger.info("removing deleted partition directory %s", name)
                shutil.rmtree(path, ignore_errors=True)
                continue
            parsed = _parse_partition_dir(name)
            if parsed is None:
                logger.warning("ignoring directory %s: not a <topic>-<partition> name", name)
                continue
            topic, partition = parsed
            overrides = self._topics.setdefault(topic, {})
            config = self.default_config.with_overrides(overrides)
            try:
                log = Log.load(path, topic, partition, config,
                               recovery_point=recovery_points.get(parsed, 0),
                               log_start_offset=start_offsets.get(parsed, 0),
                               had_clean_shutdown=self.had_clean_shutdown, now_ms=self._now_ms,
                               flush_scheduler=self.flush_scheduler,
                               producer_id_expiration_ms=self.producer_id_expiration_ms)
            except Exception as e:  # one partition's damage must not keep the others down
                logger.debug("loading %s failed", path, exc_info=True)
                self._mark_offline(parsed, f"cannot load {path}: {type(e).__name__}: {e}")
                continue
            self._add_log(parsed, log)
        self._complete_partition_creation()
        self._load_topic_ids()
        self._started = True
        logger.info("loaded %d partitions of %d topics from %s (%s shutdown)", len(self.logs),
                    len(self.topics()), self.log_dir,
                    "clean" if self.had_clean_shutdown else ("unclean" if self.logs else "no previous"))

    def _write_meta_properties(self) -> None:
        """Create ``meta.properties`` (version, cluster.id, node.id, directory.id) in a new data
        directory, or check the existing one: it must parse and name this node
        (InconsistentMetaPropertiesError otherwise, before anything in the directory is touched).
        One written before directory ids gets a new ``directory.id`` line, as Kafka 3.7+ gives
        one to a log directory that has none."""
        path = os.path.join(self.log_dir, META_PROPERTIES)
        if not os.path.exists(path):
            atomic_write(path, (f"version=1\ncluster.id={uuid.uuid4().hex[:22]}\nnode.id={self.node_id}\n"
                                f"directory.id={topic_id_to_str(new_topic_id())}\n").encode())
        self.cluster_id, directory_id = self._read_meta_properties(path)
        if directory_id is None:
            directory_id = new_topic_id()
            with open(path, "rb") as f:
                text = f.read().decode("utf-8")
            if text and not text.endswith("\n"):
                text += "\n"
            atomic_write(path, f"{text}directory.id={topic_id_to_str(directory_id)}\n".encode())
        self.directory_id = directory_id

    def _read_meta_properties(self, path: str) -> tuple[str, uuid.UUID | None]:
        try:
            with open(path, "rb") as f:
                text = f.read(1 << 16).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InconsistentMetaPropertiesError(f"cannot read {path}: {e}") from None
        props: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if line and line[0] not in "#!":
                key, sep, value = line.partition("=")
                if not sep:
                    raise InconsistentMetaPropertiesError(f"{path} is not a meta.properties file (line {line[:40]!r})")
                props[key.strip()] = value.strip()
        node = props.get("node.id", props.get("broker.id"))
        if node is None or not node.lstrip("-").isdigit() or not props.get("cluster.id"):
            raise InconsistentMetaPropertiesError(f"{path} has no valid node.id and cluster.id")
        if int(node) != self.node_id:
            raise InconsistentMetaPropertiesError(
                f"the configured node.id {self.node_id} does not match node.id {node} stored in {path}")
        directory = props.get("directory.id")
        try:
            directory_id = None if directory is None else topic_id_from_str(directory)
        except ValueError:
            raise InconsistentMetaPropertiesError(f"{path} has an invalid directory.id {directory!r}") from None
        return props["cluster.id"], directory_id

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        """The topics' overrides; also fills ``_partition_counts`` (absent in files written
        before partitions could be added: the directories are the count then)."""
        path = os.path.join(self.log_dir, TOPIC_CONFIGS_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            self._partition_counts = {t: int(n) for t, n in data.get("partitions", {}).items()}
            return {t: {k: str(v) for k, v in c.items()} for t, c in data.get("topics", {}).items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, AttributeError, TypeError) as e:
            logger.error("cannot read %s (%s); topics use the broker defaults", path, e)
            return {}

    def _write_topic_configs(self) -> None:
        self.write_topic_configs(self.topic_configs_snapshot())

    def topic_configs_snapshot(self, extra: Sequence[TopicInfo] = ()) -> tuple[int, bytes]:
        """``topic-configs.json`` as it is now, plus the topics ``extra`` (their logs made,
        about to be committed: every later snapshot holds them too, until ``commit_topics``),
        with a generation number for ``write_topic_configs``. On the owner's thread."""
        for info in extra:
            self._committing[info.name] = info
        topics = dict(self._topics)
        counts = dict(self._partition_counts)
        for info in self._committing.values():
            topics[info.name] = info.overrides
            counts[info.name] = info.partitions
        partitions = {t: n for t, n in counts.items() if t in topics}
        self._configs_generation += 1
        # no indent: json's C encoder (the file is written once per commit, thousands of topics)
        return self._configs_generation, json.dumps({"version": 1, "topics": topics, "partitions": partitions},
                                                    sort_keys=True).encode()

    def write_topic_configs(self, snapshot: tuple[int, bytes]) -> None:
        """Write a ``topic_configs_snapshot`` (atomically, fsync'd) unless a later one is
        written already: safe on a worker thread, so that the fsyncs stay off the loop."""
        generation, data = snapshot
        with self._configs_lock:
            if generation <= self._configs_written:
                return
            atomic_write(os.path.join(self.log_dir, TOPIC_CONFIGS_FILE), data)
            self._configs_written = generation

    def _complete_partition_creation(self) -> None:
        """Create the partitions recorded in ``topic-configs.json`` whose directories are missing
        (a crash during ``create_partitions``, after its commit point)."""
        present: dict[str, set[int]] = {}
        for t, p in [*self.logs, *self.offline]:
            present.setdefault(t, set()).add(p)
        for topic, count in sorted(self._partition_counts.items()):
            if topic not in present:
                continue
            for p in range(count):
                if p not in present[topic]:
                    logger.warning("completing the creation of partition %s-%d (interrupted before a restart)",
                                   topic, p)
                    self._add_log((topic, p), self._new_log(topic, p, self.topic_config(topic)))

    def _mark_offline(self, key: tuple[str, int], reason: str) -> None:
        self.offline[key] = reason
        self._counts = None
        logger.error("partition %s-%d is offline: %s. The other partitions are served; repair or remove its"
                     " directory and restart to bring it back", key[0], key[1], reason)

    def is_offline(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.offline

    def missing_partition_error(self, topic: str, partition: int) -> ErrorCode:
        """The error for a partition ``get_log`` does not have: KAFKA_STORAGE_ERROR when it is
        offline, else UNKNOWN_TOPIC_OR_PARTITION."""
        if (topic, partition) in self.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def _read_topic_id(self, key: tuple[str, int]) -> uuid.UUID | None | KafkaStorageError:
        try:
            return read_partition_metadata(self.logs[key].dir)
        except KafkaStorageError as e:
            return e

    def _load_topic_ids(self) -> None:
        """Read every partition's topic id; give the partitions without one their topic's id
        (a new one when no partition of the topic has any). Partitions of one topic that
        disagree keep their files; the topic takes the id of its lowest partition that has one
        (Kafka would take the log dir offline: here a log line says which)."""
        by_topic: dict[str, list[tuple[int, uuid.UUID | None]]] = {}
        damaged: dict[str, list[tuple[int, KafkaStorageError]]] = {}
        for key in sorted(self.logs):
            tid = self._read_topic_id(key)
            if isinstance(tid, KafkaStorageError):
                damaged.setdefault(key[0], []).append((key[1], tid))
            else:
                by_topic.setdefault(key[0], []).append((key[1], tid))
        for topic, bad in damaged.items():
            # A damaged partition.metadata is rewritten with the id its sibling partitions hold;
            # with no sibling that knows the id, the partition goes offline (a new id would make
            # it another topic to every client that knows the old one).
            known = [tid for _, tid in by_topic.get(topic, []) if tid is not None]
            for partition, err in bad:
                if known:
                    write_partition_metadata(self.logs[(topic, partition)].dir, known[0])
                    logger.warning("%s; rewrote it with topic %s's id %s, which its other partitions hold",
                                   err, topic, known[0])
                else:
                    self._pop_log((topic, partition)).close()
                    self._mark_offline((topic, partition), f"{err}, and no other partition of {topic} holds its id")
        for topic, found in by_topic.items():
            ids = [tid for _, tid in found if tid is not None]
            topic_id = ids[0] if ids else new_topic_id()
            if any(tid != topic_id for tid in ids):
                logger.error("partitions of topic %s hold different topic ids %s; using %s",
                             topic, sorted({str(t) for t in ids}), topic_id)
            for partition, tid in found:
                if tid is None:
                    write_partition_metadata(self.logs[(topic, partition)].dir, topic_id)
            if len(ids) < len(found):
                logger.info("topic %s: wrote topic id %s into %d partition directories", topic, topic_id,
                            len(found) - len(ids))
            self._set_topic_id(topic, topic_id)

    def _set_topic_id(self, topic: str, topic_id: uuid.UUID) -> None:
        self._topic_ids[topic] = topic_id
        self._topics_by_id[topic_id] = topic

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The id of ``topic`` (None for a topic that does not exist)."""
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with id ``topic_id`` (None when there is none)."""
        return self._topics_by_id.get(topic_id)

    # ---------------------------------------------------------------- topics

    def _add_log(self, key: tuple[str, int], log: Log) -> None:
        self.logs[key] = log
        self._counts = None
        self.metadata_epoch += 1

    def _pop_log(self, key: tuple[str, int]) -> Log:
        self._counts = None
        self.metadata_epoch += 1
        return self.logs.pop(key)

    def partition_counts(self) -> dict[str, int]:
        """Partitions per topic, as present in ``logs`` (kept until a partition is added or
        removed: a Metadata request for one topic does not walk every partition)."""
        counts = self._counts
        if counts is None:
            counts = {}
            for topic, _ in [*self.logs, *self.offline]:
                counts[topic] = counts.get(topic, 0) + 1
            self._counts = counts
        return counts

    def topic(self, name: str) -> TopicInfo | None:
        """One topic's TopicInfo (None when it has no partition here), without building the
        others' configs as ``topics()`` does."""
        n = self.partition_counts().get(name)
        if n is None:
            return None
        overrides = self._topics.get(name, {})
        return TopicInfo(name, n, dict(overrides), self.default_config.with_overrides(overrides),
                         self._topic_ids.get(name))

    def topics(self) -> dict[str, TopicInfo]:
        return {t: TopicInfo(t, n, dict(self._topics.get(t, {})),
                             self.default_config.with_overrides(self._topics.get(t, {})),
                             self._topic_ids.get(t))
                for t, n in sorted(self.partition_counts().items())}

    def topic_config(self, topic: str) -> LogConfig:
        if topic not in self._topics:
            raise UnknownTopicOrPartitionError(f"unknown topic {topic}")
        return self.default_config.with_overrides(self._topics[topic])

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                     *, validate_only: bool = False) -> TopicInfo:
        """Validate everything first; then create ``partitions`` empty logs and persist the
        overrides. Raises InvalidTopicError, InvalidConfigError, TopicExistsError,
        PolicyViolationError (the open files budget) or ValueError (bad partition count) with
        nothing written. ``reserve_topic``, ``make_logs`` and ``commit_topics`` are the same
        in steps, for a caller that makes the logs off its event loop."""
        info = self.reserve_topic(name, partitions, configs, validate_only=validate_only)
        if validate_only:
            return info
        try:
            created = self.make_logs(info)
        except BaseException:
            self.release_topic(name)
            raise
        self.commit_topics([(info, created)])
        return info

    def reserve_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                      *, validate_only: bool = False) -> TopicInfo:
        """Check a new topic (as ``create_topic``) and, unless ``validate_only``, reserve its
        name and its partitions' share of the open files budget until ``commit_topics`` or
        ``release_topic``. The TopicInfo carries its new topic id. On the owner's thread."""
        validate_topic_name(name)
        if name in self.partition_counts() or name in self._reserved:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        other = self.colliding_topic(name)
        if other is not None:
            raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")
        if not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"Number of partitions must be larger than 0, got {partitions}")
        self.budget.check(len(self.logs) + len(self.offline) + self._reserved_total, partitions)
        overrides = {k: str(v) for k, v in (configs or {}).items()}
        config = self.default_config.with_overrides(overrides)  # raises InvalidConfigError
        info = TopicInfo(name, partitions, overrides, config)
        if validate_only:
            return info
        self._reserve(name, partitions)
        return info._replace(topic_id=new_topic_id())

    def colliding_topic(self, name: str) -> str | None:
        """The topic that ``name`` would collide with, or None: Kafka refuses a new topic whose
        name equals an existing topic's once every '.' is made '_' (``a_b`` next to ``a.b``:
        per-topic metric names make that change), INVALID_TOPIC_EXCEPTION "Topic 'a_b' collides
        with existing topic: a.b" (``ReplicationControlManager.validateNewTopicNames``, 3.9 and
        4.x). Names without '.' or '_' never collide. Topics being created count as existing
        (Kafka's controller only sees the topics that existed before the request: two colliding
        names in one CreateTopics would both be created there; here the second is refused)."""
        if "." not in name and "_" not in name:
            return None
        key = name.replace(".", "_")
        counts = self.partition_counts()
        built_for, index = self._collisions
        if built_for is not counts:
            index = {}
            for topic in counts:
                if "." in topic or "_" in topic:
                    index.setdefault(topic.replace(".", "_"), []).append(topic)
            self._collisions = (counts, index)
        for other in (*index.get(key, ()), *self._reserved_collisions.get(key, ())):
            if other != name:
                return other
        return None

    def release_topic(self, name: str) -> None:
        self._unreserve(name)

    def _reserve(self, key: str, partitions: int) -> None:
        self._unreserve(key)
        self._reserved[key] = partitions
        self._reserved_total += partitions
        if ("." in key or "_" in key) and not key.endswith(" (growing)"):
            self._reserved_collisions.setdefault(key.replace(".", "_"), []).append(key)

    def _unreserve(self, key: str) -> None:
        if key in self._reserved and ("." in key or "_" in key):
            names = self._reserved_collisions.get(key.replace(".", "_"))
            if names is not None and key in names:
                names.remove(key)
                if not names:
                    del self._reserved_collisions[key.replace(".", "_")]
        self._reserved_total -= self._reserved.pop(key, 0)

    def make_logs(self, info: TopicInfo) -> list[Log]:
        """The reserved topic's empty logs, each with its ``partition.metadata``, and the data
        directory fsync'd so that they survive a machine crash: file work only, safe on a
        worker thread. KafkaStorageError with nothing left behind."""
        assert info.topic_id is not None
        created = self._create_logs(info.name, range(info.partitions), info.config, info.topic_id)
        fsync_path(self.log_dir)
        return created

    def commit_topics(self, made: list[tuple[TopicInfo, list[Log]]], *, written: bool = False) -> None:
        """Make reserved topics visible, with one ``topic-configs.json`` write for all of them
        (already done when ``written``: a ``topic_configs_snapshot(extra=...)`` of them written
        off the loop first). On the owner's thread."""
        for info, _ in made:
            assert info.topic_id is not None
            self._unreserve(info.name)
            self._committing.pop(info.name, None)
            self._set_topic_id(info.name, info.topic_id)
            self._topics[info.name] = info.overrides
            self._partition_counts[info.name] = info.partitions
        if not written:
            self._write_topic_configs()
        for info, created in made:
            for log in created:
                self._add_log((info.name, log.partition), log)
            if len(made) <= 5:
                logger.info("created topic %s with %d partitions%s", info.name, info.partitions,
                            f" and configs {info.overrides}" if info.overrides else "")
        if len(made) > 5:  # one line per chunk of a bulk creation, not thousands
            logger.info("created %d topics (%s ... %s) with %d partitions", len(made), made[0][0].name,
                        made[-1][0].name, sum(info.partitions for info, _ in made))

    def _new_log(self, topic: str, partition: int, config: LogConfig) -> Log:
        return Log.load(os.path.join(self.log_dir, f"{topic}-{partition}"), topic, partition, config,
                        had_clean_shutdown=True, now_ms=self._now_ms,
                        producer_id_expiration_ms=self.producer_id_expiration_ms,
                        flush_scheduler=self.flush_scheduler)

    def _create_logs(self, topic: str, partitions: range, config: LogConfig, topic_id: uuid.UUID) -> list[Log]:
        """Empty logs for ``partitions``, each with its ``partition.metadata``: all of them, or
        none (KafkaStorageError, e.g. out of file descriptors or a full disk, with whatever was
        made removed)."""
        created: list[Log] = []
        try:
            for p in partitions:
                created.append(self._new_log(topic, p, config))
                write_partition_metadata(created[-1].dir, topic_id)
        except (OSError, StorageError) as e:
            for log in created:
                log.delete()
            for p in partitions:
                shutil.rmtree(os.path.join(self.log_dir, f"{topic}-{p}"), ignore_errors=True)
            logger.error("cannot create partitions %s of topic %s: %s", list(partitions), topic, e)
            raise KafkaStorageError(f"cannot create partitions of topic {topic}: {e}") from e
        return created

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False) -> int:
        """Grow topic ``name`` to ``count`` partitions (never shrink): InvalidPartitionsError
        when ``count`` is not above the current count, UnknownTopicOrPartitionError for a topic
        that does not exist, PolicyViolationError past the open files budget. The count is
        recorded before the new directories are made (see the module docstring). Returns how
        many partitions were added (or would be). ``begin_partitions``, ``make_partition_logs``,
        ``add_partition_logs`` and ``end_partitions`` are the same in steps, for a caller that
        makes the logs off its event loop."""
        current = self.begin_partitions(name, count, validate_only=validate_only)
        if validate_only:
            return count - current
        made = current
        try:
            logs = self.make_partition_logs(name, range(current, count))
            self.add_partition_logs(name, logs)
            made = count
        finally:
            self.end_partitions(name, made)
        return count - current

    def begin_partitions(self, name: str, count: int, *, validate_only: bool = False) -> int:
        """Check growing ``name`` to ``count`` and, unless ``validate_only``, record the new
        count (the commit point) and mark the topic as growing until ``end_partitions``.
        Returns the current count. On the owner's thread."""
        if name in self._growing:
            raise InvalidPartitionsError(f"Topic {name} is already being given more partitions by another request.")
        current = sum(1 for t, _ in self.logs if t == name)
        if current == 0:
            raise UnknownTopicOrPartitionError(f"This server does not host this topic: {name}")
        if count == current:
            raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
        if count < current:
            raise InvalidPartitionsError(f"The topic {name} currently has {current} partition(s); {count} would"
                                         " not be an increase.")
        self.budget.check(len(self.logs) + len(self.offline) + self._reserved_total, count - current)
        if validate_only:
            return current
        self._growing[name] = count - current
        self._reserve(f"{name} (growing)", count - current)  # held against the budget while the logs are made
        self._partition_counts[name] = count
        self._write_topic_configs()  # the commit point
        return current

    def make_partition_logs(self, name: str, partitions: range) -> list[Log]:
        """Empty logs for new partitions of a growing topic (file work, safe on a worker
        thread); KafkaStorageError with nothing left behind."""
        created = self._create_logs(name, partitions, self.topic_config(name), self._topic_ids[name])
        fsync_path(self.log_dir)
        return created

    def add_partition_logs(self, name: str, logs: list[Log]) -> None:
        for log in logs:
            self._add_log((name, log.partition), log)
        if logs:
            logger.info("added partitions %d-%d to topic %s", logs[0].partition, logs[-1].partition, name)

    def end_partitions(self, name: str, count: int) -> None:
        """The growth of ``name`` is over with ``count`` partitions made (fewer than recorded
        when making the logs failed: the recorded count goes back to it)."""
        self._growing.pop(name, None)
        self._unreserve(f"{name} (growing)")
        if self._partition_counts.get(name, count) != count:
            self._partition_counts[name] = count
            self._write_topic_configs()

    def alter_topic_config(self, name: str, overrides: dict[str, str], *, validate_only: bool = False) -> LogConfig:
        """Replace the topic's overrides with ``overrides`` (validated first: InvalidConfigError,
        nothing changed), persist them and apply the new config to its live logs at once.
        Returns the topic's new effective config."""
        if name not in self._topics or not any(t == name for t, _ in self.logs):
            raise UnknownTopicOrPartitionError(f"Topic {name} does not exist")
        clean = {k: str(v) for k, v in overrides.items()}
        config = self.default_config.with_overrides(clean)  # raises InvalidConfigError
        if validate_only:
            return config
        self._topics[name] = clean
        self._write_topic_configs()
        for (t, _), log in self.logs.items():
            if t == name:
                log.config = config
        logger.info("topic %s configs are now %s", name, clean or "the broker defaults")
        return config

    def set_default_config(self, config: LogConfig) -> None:
        """New broker-level defaults (dynamic broker configs): every topic's effective config
        is recomputed and applied to its logs at once. A topic whose overrides no longer combine
        with the new defaults (min.compaction.lag.ms > max.compaction.lag.ms) keeps its config."""
        configs: dict[str, LogConfig] = {}
        for topic, overrides in self._topics.items():
            try:
                configs[topic] = config.with_overrides(overrides)
            except InvalidConfigError as e:
                logger.error("topic %s keeps its config: %s", topic, e)
        self.default_config = config
        for (t, _), log in self.logs.items():
            if t in configs:
                log.config = configs[t]

    def checkpoint_log_start_offsets(self) -> None:
        """Write ``log-start-offset-checkpoint`` now (DeleteRecords: durable before it answers)."""
        logs = list(self.logs.items())
        with self._checkpoint_lock:
            write_offset_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT),
                                    {k: log.log_start_offset for k, log in logs})

    def delete_topic(self, name: str) -> None:
        """Close the topic's logs, rename their directories ``<dir>.<id>-delete`` and remove
        them (the rename is the commit point; a crash before the removal finishes is cleaned up
        at the next start)."""
        if name in self._growing:
            raise PolicyViolationError(f"Topic {name} is being given more partitions; delete it once that request"
                                       " is answered.")
        parts = sorted(p for t, p in self.logs if t == name)
        offline = sorted(p for t, p in self.offline if t == name)
        if not parts and not offline:
            raise UnknownTopicOrPartitionError(f"This server does not host this topic: {name}")
        doomed = []
        for p in offline:  # its files go with the topic
            del self.offline[(name, p)]
            self._counts = None
            doomed.append(self._rename_for_delete(os.path.join(self.log_dir, f"{name}-{p}")))
        for p in parts:
            if self.cleaner is not None:
                self.cleaner.abort_cleaning((name, p))
            log = self._pop_log((name, p))
            log.close()
            doomed.append(self._rename_for_delete(log.dir))
        self._topics.pop(name, None)
        self._partition_counts.pop(name, None)
        topic_id = self._topic_ids.pop(name, None)
        if topic_id is not None:
            self._topics_by_id.pop(topic_id, None)
        self._write_topic_configs()
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
        logger.info("deleted topic %s (%d partitions)", name, len(parts))

    @staticmethod
    def _rename_for_delete(directory: str) -> str:
        # Kafka's logDirNameWithSuffixCappedLength: cap the name at 255 bytes (NAME_MAX),
        # else a topic name near the 249-character limit cannot be renamed.
        suffix = f".{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        base = os.path.basename(directory)
        target = os.path.join(os.path.dirname(directory), base[: 255 - len(suffix)] + suffix)
        os.rename(directory, target)
        return target

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def log_or_raise(self, topic: str, partition: int) -> Log:
        log = self.logs.get((topic, partition))
        if log is None:
            reason = self.offline.get((topic, partition))
            if reason is not None:
                raise KafkaStorageError(f"partition {topic}-{partition} is offline: {reason}")
            raise UnknownTopicOrPartitionError(f"unknown topic-partition {topic}-{partition}")
        return log

    # ---------------------------------------------------------------- periodic work

    def cleanup_logs(self, delete_expired_files: bool = True,
                     log_start_moved: Callable[[str, int], None] | None = None) -> int:
        """Retention pass over every log, then (unless the caller does it elsewhere, as the
        broker does) removal of ``.deleted`` files whose delay passed. ``log_start_moved(topic,
        partition)`` is called for each log whose log start offset it moved."""
        deleted = 0
        now = self._now_ms()
        for (topic, partition), log in list(self.logs.items()):
            try:
                before = log.log_start_offset
                deleted += log.delete_old_segments()
                if log_start_moved is not None and log.log_start_offset != before:
                    log_start_moved(topic, partition)
                if delete_expired_files:
                    log.delete_expired_files(now)
            except KafkaStorageError:
                continue  # deleted concurrently
        return deleted

    def remove_expired_producers(self) -> int:
        """Forget, in every log, the producers idle for ``producer.id.expiration.ms``."""
        now = self._now_ms()
        return sum(log.producer_state.remove_expired_producers(now) for log in list(self.logs.values()))

    def checkpoint_logs(self) -> None:
        """Write both checkpoint files (atomically; may run in a worker thread)."""
        logs = list(self.logs.items())
        with self._checkpoint_lock:
            write_offset_checkpoint(os.path.join(self.log_dir, RECOVERY_POINT_CHECKPOINT),
                                    {k: log.recovery_point for k, log in logs})
            write_offset_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT),
                                    {k: log.log_start_offset for k, log in logs})

    def flushes_due(self, now: int | None = None) -> list[tuple[Log, int | None]]:
        """The flushes due, as (log, up to which offset): None (everything) for a log whose
        ``flush.ms`` has elapsed; its active segment's base offset for a log whose rolled
        segments are not yet durable — Kafka flushes up to the new active segment after each
        roll (asynchronously), which moves the recovery point there: recovery after a crash then
        re-validates only the active segment instead of everything since the last flush. The
        broker runs them in worker threads; ``flush_dirty_logs`` runs them here."""
        now = self._now_ms() if now is None else now
        due: list[tuple[Log, int | None]] = []
        for log in self.logs.values():
            if log.flush_due(now):
                due.append((log, None))
            elif log.recovery_point < log.active_segment.base_offset:
                due.append((log, log.active_segment.base_offset))
        return due

    def flush_dirty_logs(self) -> int:
        """Run the ``flushes_due`` in this thread; returns how many logs were flushed."""
        due = self.flushes_due()
        for log, up_to in due:
            log.flush(up_to)
        return len(due)

    def shutdown(self) -> None:
        """Flush all, close all (trims), write the checkpoints, then the clean-shutdown marker.
        Nothing after a start-up that failed: checkpoints of the partitions loaded so far, and a
        marker saying the directory was shut down cleanly, would be lies."""
        if not self._started:
            return
        for log in self.logs.values():
            log.flush()
        for log in self.logs.values():
            log.close()
        self.checkpoint_logs()
        write_clean_shutdown_marker(self.log_dir)
        logger.info("log manager shut down cleanly (%d partitions)", len(self.logs))
