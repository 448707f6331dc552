"""Creating topics for CreateTopics and Metadata's auto-creation without stalling the event loop.

A topic's partitions cost file work (a directory, three files, ``partition.metadata``, fsyncs)
of a few milliseconds each: 8,000 topics named in one Metadata request held the loop for about
a minute. A request whose new partitions number at most ``INLINE_PARTITIONS`` is created inline
(the common case: one topic, answered in the same turn, as before). A larger one is reserved
on the loop (names and the open files budget, so concurrent requests see them taken), made in
a worker thread ``CHUNK_PARTITIONS`` partitions at a time, and committed on the loop chunk by
chunk (one ``topic-configs.json`` write per chunk): other clients are served between chunks,
and the request is answered when its last chunk is committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from ..storage.errors import KafkaStorageError, StorageError
from ..storage.log import Log
from ..storage.log_manager import LogManager, TopicInfo

__all__ = ["INLINE_PARTITIONS", "CHUNK_PARTITIONS", "create_reserved"]

#: a request adding at most this many partitions creates them inline
INLINE_PARTITIONS = 64
#: partitions made per worker-thread call (and committed per loop turn)
CHUNK_PARTITIONS = 256


def _chunks(infos: list[TopicInfo]) -> Iterator[list[TopicInfo]]:
    chunk: list[TopicInfo] = []
    size = 0
    for info in infos:
        chunk.append(info)
        size += info.partitions
        if size >= CHUNK_PARTITIONS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _make(logs: LogManager, chunk: list[TopicInfo]) -> list[tuple[TopicInfo, list[Log] | StorageError]]:
    out: list[tuple[TopicInfo, list[Log] | StorageError]] = []
    for info in chunk:
        try:
            out.append((info, logs.make_logs(info)))
        except StorageError as e:
            out.append((info, e))
        except OSError as e:
            out.append((info, KafkaStorageError(f"cannot create topic {info.name}: {e}")))
    return out


async def create_reserved(logs: LogManager, infos: list[TopicInfo]) -> dict[str, StorageError | None]:
    """Make and commit topics reserved with ``reserve_topic``, chunk by chunk off the loop;
    each topic's error (None when created). Every reservation is committed or released: the
    work goes on to its end when the request is cancelled (its connection closed)."""
    return await asyncio.shield(_create(logs, infos))


async def _create(logs: LogManager, infos: list[TopicInfo]) -> dict[str, StorageError | None]:
    loop = asyncio.get_running_loop()
    results: dict[str, StorageError | None] = {}
    pending = list(infos)
    try:
        for chunk in _chunks(infos):
            made = await loop.run_in_executor(None, _make, logs, chunk)
            ok: list[tuple[TopicInfo, list[Log]]] = []
            for info, got in made:
                pending.remove(info)
                if isinstance(got, StorageError):
                    logs.release_topic(info.name)
                    results[info.name] = got
                else:
                    ok.append((info, got))
                    results[info.name] = None
            if ok:  # the topics' configs are made durable off the loop, then they become visible
                snapshot = logs.topic_configs_snapshot([info for info, _ in ok])
                await loop.run_in_executor(None, logs.write_topic_configs, snapshot)
                logs.commit_topics(ok, written=True)
    finally:
        for info in pending:  # an unexpected error: nothing was made for these
            logs.release_topic(info.name)
    return results


def reserve_all(logs: LogManager, wanted: list[tuple[str, int, dict[str, str]]]
                ) -> tuple[list[TopicInfo], dict[str, StorageError | ValueError]]:
    """``reserve_topic`` for each (name, partitions, configs): the reserved topics and the
    errors of those refused."""
    reserved: list[TopicInfo] = []
    errors: dict[str, StorageError | ValueError] = {}
    for name, partitions, configs in wanted:
        try:
            reserved.append(logs.reserve_topic(name, partitions, configs))
        except (StorageError, ValueError) as e:
            errors[name] = e
    return reserved, errors


def total_partitions(items: list[Any]) -> int:
    return sum(p for _, p, _ in items)
