"""scan_segment (broker/storage/batch_scan.py): every damaged batch costs only itself, whatever
byte of it is damaged, and the scan finds the next batch again after a broken length field.

The property test writes a file of batches, damages one batch in one of the ways a disk or an
operator can (a flipped bit anywhere in it, a length field set to junk, bytes cut out, junk or
zeros appended), and checks that the scan yields every other batch exactly, in order, and
reports the damage as one or more skips that cover the damaged batch and nothing else."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from broker.storage.batch_scan import SkippedBatch, ValidBatch, scan_segment
from broker.storage.file_records import FileRecords

from .conftest import describe, make_batch


def _file(tmp_path, data: bytes) -> FileRecords:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return FileRecords.open(str(path), file_already_exists=True)


def _batches(n: int, seed: int) -> list[bytearray]:
    rng = random.Random(seed)
    out, offset = [], 0
    for _ in range(n):
        count = rng.randint(1, 5)
        out.append(make_batch(count, offset, value_size=rng.randint(1, 300)))
        offset += count
    return out


def _scan(records: FileRecords, max_offset: int = 1 << 40, **kw: int) -> tuple[list[ValidBatch], list[SkippedBatch]]:
    valid: list[ValidBatch] = []
    skipped: list[SkippedBatch] = []
    for item in scan_segment(records, 0, min_offset=0, max_offset=max_offset, **kw):
        (skipped if isinstance(item, SkippedBatch) else valid).append(item)
    return valid, skipped


def test_intact_file_yields_every_batch(tmp_path) -> None:
    batches = _batches(40, 1)
    records = _file(tmp_path, b"".join(batches))
    valid, skipped = _scan(records)
    assert skipped == []
    assert [(v.position, v.base_offset, v.last_offset) for v in valid] == [
        (b.position, b.base_offset, b.last_offset) for b in describe(batches)]
    assert [bytes(v.data) for v in valid] == [bytes(b) for b in batches]
    records.close()


DAMAGES = ["flip_crc_covered", "flip_length", "junk_length", "zero_length", "cut_middle", "flip_base_offset"]


@settings(max_examples=150, deadline=None)
@given(n=st.integers(3, 30), seed=st.integers(0, 1 << 16), which=st.integers(0, 1 << 16),
       damage=st.sampled_from(DAMAGES))
def test_one_damaged_batch_costs_only_itself(tmp_path_factory, n: int, seed: int, which: int, damage: str) -> None:
    tmp_path = tmp_path_factory.mktemp("scan")
    batches = _batches(n, seed)
    infos = describe(batches)
    i = which % n
    bad = bytearray(batches[i])
    rng = random.Random(which)
    if damage == "flip_crc_covered":
        pos = rng.randrange(21, len(bad))
        bad[pos] ^= 1 << rng.randrange(8)
    elif damage == "flip_length":
        bad[8 + rng.randrange(4)] ^= 0x80
    elif damage == "junk_length":
        struct.pack_into(">i", bad, 8, rng.randrange(-(1 << 31), 1 << 31))
    elif damage == "zero_length":
        struct.pack_into(">i", bad, 8, 0)
    elif damage == "cut_middle":
        cut = rng.randrange(1, len(bad) - 1)
        del bad[cut:cut + rng.randrange(1, len(bad) - cut)]
    else:  # bytes 0-7 are outside the CRC: an offset out of order is what gives it away
        struct.pack_into(">q", bad, 0, infos[i].base_offset + (1 << 35))
    data = b"".join(batches[:i]) + bytes(bad) + b"".join(batches[i + 1:])
    start = infos[i].position
    # Bytes cut out of a run of equal bytes, with the same bytes following, leave the batch
    # whole: the damage then lies in the next batch, not the one this example names.
    assume(data[start:start + len(batches[i])] != bytes(batches[i]))
    records = _file(tmp_path, data)
    valid, skipped = _scan(records, max_offset=infos[-1].last_offset + 1)  # the log end offset, as readers pass
    expected = [b for j, b in enumerate(infos) if j != i]
    got = [(v.base_offset, v.last_offset) for v in valid]
    if bytes(bad) == bytes(batches[i]) or (damage == "junk_length" and got == [(b.base_offset, b.last_offset)
                                                                               for b in infos]):
        return  # the damage happened to leave the batch valid
    assert got == [(b.base_offset, b.last_offset) for b in expected]
    assert skipped, "the damage was not reported"
    assert skipped[0].position == start
    assert skipped[0].expected_offset == (infos[i - 1].last_offset + 1 if i else 0)
    assert sum(s.size for s in skipped) == len(bad)  # exactly the damaged batch's bytes
    records.close()


@pytest.mark.parametrize("tail", [b"\0" * 4096, bytes(range(256)) * 3, b"\0" * 20])
def test_junk_after_the_last_batch_is_one_skip_to_the_end(tmp_path, tail: bytes) -> None:
    batches = _batches(10, 3)
    end = sum(map(len, batches))
    records = _file(tmp_path, b"".join(batches) + tail)
    valid, skipped = _scan(records)
    assert len(valid) == 10
    assert [(s.position, s.size) for s in skipped] == [(end, len(tail))]
    records.close()


def test_framing_only_before_verify_from(tmp_path) -> None:
    """Batches before ``verify_from`` are not CRC-checked (a framing walk); after it they are."""
    batches = _batches(6, 4)
    infos = describe(batches)
    bad = bytearray(batches[1])
    bad[-1] ^= 0xFF
    batches[1] = bad
    records = _file(tmp_path, b"".join(batches))
    assert len(_scan(records, verify_from=infos[2].position)[0]) == 6
    valid, skipped = _scan(records, verify_from=0)
    assert len(valid) == 5 and [s.position for s in skipped] == [infos[1].position]
    records.close()


def test_framing_holds_on_whole_batches_only(tmp_path) -> None:
    """The start-up fast path: True for whole batches in order, False for any break in the
    framing (junk after them, a broken length, base offsets out of order, a cut tail)."""
    from broker.storage.batch_scan import framing_holds

    batches = _batches(12, 8)
    data = b"".join(batches)
    records = _file(tmp_path, data)
    assert framing_holds(records, 0, len(data), 0)
    records.close()
    infos = describe(batches)
    broken_length = bytearray(data)
    struct.pack_into(">i", broken_length, infos[5].position + 8, 7)
    out_of_order = bytearray(data)
    struct.pack_into(">q", out_of_order, infos[5].position, 0)
    for bad in (data + bytes(100), bytes(broken_length), bytes(out_of_order), data[:-10]):
        (tmp_path / "00000000000000000000.log").unlink()
        records = _file(tmp_path, bad)
        assert not framing_holds(records, 0, len(bad), 0)
        records.close()
