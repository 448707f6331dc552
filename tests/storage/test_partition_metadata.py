"""Topic ids and ``partition.metadata``: Kafka's file format byte for byte, one id per topic in
every partition dir, kept across restarts, and given at start-up to data dirs written before
topic ids existed."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from broker.storage.errors import KafkaStorageError
from broker.storage.log_manager import LogManager
from broker.storage.partition_metadata import (
    PARTITION_METADATA_FILE,
    new_topic_id,
    read_partition_metadata,
    topic_id_from_str,
    topic_id_to_str,
    write_partition_metadata,
)


@pytest.fixture
def start(tmp_path) -> Iterator[Callable[[], LogManager]]:
    made: list[LogManager] = []

    def factory() -> LogManager:
        m = LogManager(str(tmp_path / "data"))
        m.startup()
        made.append(m)
        return m

    yield factory
    for m in made:
        for log in m.logs.values():
            log.close()


def _file(m: LogManager, topic: str, partition: int) -> str:
    return os.path.join(m.log_dir, f"{topic}-{partition}", PARTITION_METADATA_FILE)


def test_file_is_kafkas_format(tmp_path) -> None:
    tid = uuid.UUID("2ab64b6c-f054-4532-9709-a0a9ff48e418")
    write_partition_metadata(str(tmp_path), tid)
    with open(tmp_path / PARTITION_METADATA_FILE, "rb") as f:
        raw = f.read()
    # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding; no trailing newline
    assert raw == b"version: 0\ntopic_id: " + base64.urlsafe_b64encode(tid.bytes).rstrip(b"=")
    assert raw == b"version: 0\ntopic_id: KrZLbPBURTKXCaCp_0jkGA"
    assert read_partition_metadata(str(tmp_path)) == tid
    assert not os.path.exists(tmp_path / (PARTITION_METADATA_FILE + ".tmp"))


def test_reads_a_file_kafka_wrote(tmp_path) -> None:
    (tmp_path / PARTITION_METADATA_FILE).write_bytes(b"version: 0\ntopic_id: 9gF7SJn-TwOYVPyrWmVdlw")
    assert topic_id_to_str(read_partition_metadata(str(tmp_path))) == "9gF7SJn-TwOYVPyrWmVdlw"  # type: ignore[arg-type]


@pytest.mark.parametrize("content", [b"", b"version: 1\ntopic_id: KrZLbPBURTKXCaCp_0TkGA", b"version: 0\n",
                                     b"version: 0\ntopic: KrZLbPBURTKXCaCp_0TkGA", b"version: 0\ntopic_id: abc",
                                     b"\xff\xfe"])
def test_malformed_file_is_a_storage_error(tmp_path, content: bytes) -> None:
    (tmp_path / PARTITION_METADATA_FILE).write_bytes(content)
    with pytest.raises(KafkaStorageError):
        read_partition_metadata(str(tmp_path))


def test_no_file_is_no_id(tmp_path) -> None:
    assert read_partition_metadata(str(tmp_path)) is None


def test_new_ids_are_never_reserved_nor_look_like_options() -> None:
    for _ in range(2000):
        tid = new_topic_id()
        assert tid.int not in (0, 1)
        text = topic_id_to_str(tid)
        assert len(text) == 22 and not text.startswith("-")
        assert topic_id_from_str(text) == tid


def test_every_partition_of_a_topic_holds_its_id_across_restarts(start) -> None:
    m = start()
    info = m.create_topic("t", 3)
    other = m.create_topic("u", 1)
    assert info.topic_id is not None and other.topic_id is not None and info.topic_id != other.topic_id
    assert [read_partition_metadata(os.path.dirname(_file(m, "t", p))) for p in range(3)] == [info.topic_id] * 3
    assert m.topic_id("t") == info.topic_id and m.topic_name(info.topic_id) == "t"
    assert m.topics()["t"].topic_id == info.topic_id
    m.create_partitions("t", 5)
    assert read_partition_metadata(os.path.dirname(_file(m, "t", 4))) == info.topic_id
    m.shutdown()
    m2 = start()
    assert m2.topic_id("t") == info.topic_id and m2.topic_id("u") == other.topic_id
    m2.delete_topic("u")
    assert m2.topic_id("u") is None and m2.topic_name(other.topic_id) is None
    # a topic created again under the same name is another topic: a new id
    assert m2.create_topic("u", 1).topic_id != other.topic_id


def test_validate_only_creates_no_id(start) -> None:
    m = start()
    assert m.create_topic("t", 1, validate_only=True).topic_id is None
    assert m.topic_id("t") is None


def test_data_dir_without_ids_gains_them_at_startup(start) -> None:
    m = start()
    m.create_topic("old", 2)
    m.create_topic("half", 2)
    half_id = m.topic_id("half")
    m.shutdown()
    # as written before topic ids: no partition.metadata at all / in one partition only
    os.unlink(_file(m, "old", 0))
    os.unlink(_file(m, "old", 1))
    os.unlink(_file(m, "half", 1))
    m2 = start()
    old_id = m2.topic_id("old")
    assert old_id is not None
    assert read_partition_metadata(os.path.dirname(_file(m2, "old", 0))) == old_id
    assert read_partition_metadata(os.path.dirname(_file(m2, "old", 1))) == old_id
    assert m2.topic_id("half") == half_id  # the id a sibling partition had
    assert read_partition_metadata(os.path.dirname(_file(m2, "half", 1))) == half_id
    m2.shutdown()
    assert start().topic_id("old") == old_id  # written once, then kept
