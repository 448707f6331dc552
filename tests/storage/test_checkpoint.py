"""Offset checkpoint files and the clean-shutdown marker (broker/storage/checkpoint.py).

Conformance check 31 (Kafka's OffsetCheckpointFile): the exact text format
``0\\n<N>\\n<topic> <partition> <offset>\\n…`` and the atomic replace (write ``.tmp``, fsync,
rename). A file that does not parse reads as empty.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    read_offset_checkpoint,
    write_clean_shutdown_marker,
    write_offset_checkpoint,
)


def read_text(path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_check_31_exact_format(tmp_path) -> None:
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    write_offset_checkpoint(path, {("b", 1): 5, ("a", 0): 10, ("a", 12): 2**63 - 1})
    assert read_text(path) == "0\n3\na 0 10\na 12 9223372036854775807\nb 1 5\n"
    write_offset_checkpoint(path, {})
    assert read_text(path) == "0\n0\n"


def test_check_31_replace_is_atomic_and_leaves_no_tmp(tmp_path) -> None:
    path = str(tmp_path / "log-start-offset-checkpoint")
    write_offset_checkpoint(path, {("t", 0): 1})
    old_inode = os.stat(path).st_ino
    with open(path, encoding="utf-8") as reader:  # a reader holding the old file
        # a leftover .tmp from an earlier crash is simply overwritten
        with open(path + ".tmp", "w") as f:
            f.write("garbage from a crash")
        write_offset_checkpoint(path, {("t", 0): 2, ("u", 3): 4})
        assert reader.read() == "0\n1\nt 0 1\n"  # the old file was replaced, not rewritten
    assert os.stat(path).st_ino != old_inode
    assert read_text(path) == "0\n2\nt 0 2\nu 3 4\n"
    assert sorted(os.listdir(tmp_path)) == ["log-start-offset-checkpoint"]


def test_crash_before_the_rename_leaves_the_old_checkpoint(tmp_path) -> None:
    """A ``.tmp`` written but never renamed is ignored by the reader."""
    path = str(tmp_path / "cp")
    write_offset_checkpoint(path, {("t", 0): 7})
    with open(path + ".tmp", "w") as f:
        f.write("0\n1\nt 0 999\n")
    assert read_offset_checkpoint(path) == {("t", 0): 7}


topic_names = st.from_regex(r"[a-zA-Z0-9._-]{1,30}", fullmatch=True)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.tuples(topic_names, st.integers(0, 10_000)), st.integers(0, 2**63 - 1), max_size=20))
def test_write_then_read_round_trips(tmp_path_factory, entries) -> None:
    path = str(tmp_path_factory.mktemp("cp") / "cp")
    write_offset_checkpoint(path, entries)
    assert read_offset_checkpoint(path) == entries
    lines = read_text(path).split("\n")
    assert lines[0] == "0" and int(lines[1]) == len(entries) and lines[-1] == ""
    assert len(lines) == len(entries) + 3


def test_missing_file_reads_as_empty(tmp_path) -> None:
    assert read_offset_checkpoint(str(tmp_path / "nope")) == {}


def test_no_trailing_newline_is_accepted(tmp_path) -> None:
    path = tmp_path / "cp"
    path.write_bytes(b"0\n2\nt 0 5\nt-x.y_z 3 6")
    assert read_offset_checkpoint(str(path)) == {("t", 0): 5, ("t-x.y_z", 3): 6}


MALFORMED = {
    "empty": b"",
    "version_only": b"0\n",
    "unknown_version": b"1\n1\nt 0 5\n",
    "bad_count": b"0\nx\nt 0 5\n",
    "too_few_entries": b"0\n2\nt 0 5\n",
    "too_many_entries": b"0\n1\nt 0 5\nt 1 6\n",
    "extra_blank_line": b"0\n1\nt 0 5\n\n",
    "missing_field": b"0\n1\nt 0\n",
    "extra_field": b"0\n1\nt 0 5 6\n",
    "double_space": b"0\n1\nt  0 5\n",
    "bad_offset": b"0\n1\nt 0 five\n",
    "bad_partition": b"0\n1\nt p 5\n",
    "binary": b"\x00\xff\xfe\x01garbage",
    "json": b'{"t": 5}',
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_checkpoint_reads_as_empty(tmp_path, caplog, kind) -> None:
    path = tmp_path / "cp"
    path.write_bytes(MALFORMED[kind])
    with caplog.at_level("WARNING"):
        assert read_offset_checkpoint(str(path)) == {}
    assert any("checkpoint" in r.getMessage() for r in caplog.records)


def test_unreadable_checkpoint_reads_as_empty(tmp_path) -> None:
    path = tmp_path / "cp"
    path.mkdir()  # reading a directory raises IsADirectoryError
    assert read_offset_checkpoint(str(path)) == {}


@pytest.mark.parametrize("epoch", [-1, 0, 42])
def test_clean_shutdown_marker_content(tmp_path, epoch) -> None:
    if epoch == -1:
        write_clean_shutdown_marker(str(tmp_path))
    else:
        write_clean_shutdown_marker(str(tmp_path), epoch)
    text = read_text(tmp_path / CLEAN_SHUTDOWN_FILE)
    assert text == f'{{"version":0,"brokerEpoch":{epoch}}}'
    assert json.loads(text) == {"version": 0, "brokerEpoch": epoch}
    assert os.listdir(tmp_path) == [CLEAN_SHUTDOWN_FILE]
