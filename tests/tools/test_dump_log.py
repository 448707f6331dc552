"""Tests of broker/tools/dump_log.py (``minibroker dump-log``), Kafka's DumpLogSegments.

Segments are built with the real LogSegment and client.records; expected lines are computed
here from what was written (positions, CRCs, offsets), not by calling the tool's helpers.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.__main__ import main
from broker.storage.segment import LogSegment
from broker.storage.time_index import TimeIndex
from broker.tools.dump_log import dump_files
from client.records import Record, build_batch, compute_crc, set_base_offset

T0 = 1_700_000_000_000
NAME = "00000000000000000000"


# -- helpers --


@dataclass
class Written:
    position: int
    base_offset: int
    data: bytes

    @property
    def crc(self) -> int:
        return struct.unpack_from(">I", self.data, 17)[0]


def batch(records: list[tuple[bytes | None, bytes | None]], base_offset: int, *,
          codec: str = "none", ts: int = T0, headers=(), **kwargs) -> bytearray:
    """A batch of ``records`` (key, value) with timestamps ts, ts+1, ..., offsets from base."""
    recs = [Record(i, ts + i, k, v, tuple(headers)) for i, (k, v) in enumerate(records)]
    data = build_batch(recs, codec, **kwargs)
    set_base_offset(data, base_offset)
    return data


def write_segment(directory: Path, batches: list[bytearray], *, base: int = 0, close: bool = True,
                  index_interval_bytes: int = 0, max_index_size: int = 4096,
                  ) -> tuple[LogSegment, list[Written]]:
    """Append ``batches`` one at a time. With index_interval_bytes=0 every batch after the
    first gets an index entry. ``close`` trims the indexes as a roll or shutdown does."""
    directory.mkdir(parents=True, exist_ok=True)
    seg = LogSegment.open(str(directory), base, index_interval_bytes=index_interval_bytes,
                          max_index_size=max_index_size)
    written = []
    for data in batches:
        written.append(Written(seg.size, struct.unpack_from(">q", data)[0], bytes(data)))
        seg.append(data)
    if close:
        seg.close()
    return seg, written


def five_codec_batches(base: int = 0) -> list[bytearray]:
    out, off = [], base
    for i, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"]):
        recs = [(f"k{i}{j}".encode(), f"value-{i}-{j}".encode()) for j in range(3)]
        out.append(batch(recs, off, codec=codec, ts=T0 + 100 * i))
        off += 3
    return out


def dump(*paths: Path | str, **kwargs) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    rc = dump_files([str(p) for p in paths], out=out, err=err, **kwargs)
    return rc, out.getvalue().splitlines(), err.getvalue().splitlines()


def expected_batch_line(w: Written, *, count: int, codec: str = "none", max_ts: int,
                        ts_type: str = "CreateTime", isvalid: str = "true") -> str:
    last = w.base_offset + count - 1
    return (
        f"baseOffset: {w.base_offset} lastOffset: {last} count: {count} baseSequence: -1"
        f" lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1"
        f" isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"
        f" position: {w.position} {ts_type}: {max_ts} size: {len(w.data)} magic: 2"
        f" compresscodec: {codec} crc: {w.crc} isvalid: {isvalid}"
    )


def fingerprint(paths: list[str]) -> dict[str, tuple[str, int, int]]:
    result = {}
    for p in paths:
        st = os.stat(p)
        result[p] = (hashlib.sha256(Path(p).read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return result


@pytest.fixture
def closed_segment(tmp_path: Path) -> tuple[Path, list[Written], list, list]:
    """A rolled/closed segment of five batches, one per codec; returns its entries too."""
    d = tmp_path / "t-0"
    seg, written = write_segment(d, five_codec_batches(), close=False)
    offset_entries = [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)]
    seg.close()  # writes the final time index entry and trims both indexes
    time_index = TimeIndex(str(d / f"{NAME}.timeindex"), 0, writable=False)
    time_entries = [time_index.entry(i) for i in range(time_index.entries)]
    time_index.close_handler()
    assert os.path.getsize(d / f"{NAME}.index") == 8 * len(offset_entries)
    return d, written, offset_entries, time_entries


# -- .log --


def test_log_batch_lines(closed_segment):
    d, written, _, _ = closed_segment
    rc, out, err = dump(d / f"{NAME}.log")
    codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {d / NAME}.log",
        "Log starting offset: 0",
        *[expected_batch_line(w, count=3, codec=c, max_ts=T0 + 100 * i + 2)
          for i, (w, c) in enumerate(zip(written, codecs))],
    ]
    assert [w.position for w in written] == [sum(len(x.data) for x in written[:i]) for i in range(5)]


def test_deep_iteration_and_print_data_log(closed_segment):
    d, _, _, _ = closed_segment
    rc, out, _ = dump(d / f"{NAME}.log", deep_iteration=True)
    records = [line for line in out if line.startswith("| ")]
    assert len(records) == 15
    assert records[4] == ("| offset: 4 CreateTime: 1700000000101 keySize: 3 valueSize: 9"
                          " sequence: -1 headerKeys: []")
    rc, out2, _ = dump(d / f"{NAME}.log", print_data_log=True)  # implies deep iteration
    records2 = [line for line in out2 if line.startswith("| ")]
    assert records2[4] == records[4] + " key: k11 payload: value-1-1"
    assert [line for line in out2 if not line.startswith("| ")] == [
        line for line in out if not line.startswith("| ")]
    # Record lines follow their batch line.
    assert out2[2].startswith("baseOffset: 0 ") and out2[3].startswith("| offset: 0 ")


def test_record_fields_headers_nulls_and_utf8(tmp_path):
    data = build_batch([
        Record(0, T0, None, None, ()),
        Record(1, T0 + 5, b"k", b"\xffok", (("a", b"1"), ("b", None))),
    ])
    set_base_offset(data, 40)
    d = tmp_path / "p-0"
    write_segment(d, [data], base=40)
    rc, out, _ = dump(d / "00000000000000000040.log", print_data_log=True)
    assert out[1] == "Log starting offset: 40"
    assert out[3] == ("| offset: 40 CreateTime: 1700000000000 keySize: -1 valueSize: -1"
                      " sequence: -1 headerKeys: []")
    assert out[4] == ("| offset: 41 CreateTime: 1700000000005 keySize: 1 valueSize: 3"
                      " sequence: -1 headerKeys: [a,b] key: k payload: \ufffdok")


def test_producer_fields_sequences_and_control_batch(tmp_path):
    txn = batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], 0, producer_id=42, producer_epoch=3,
                base_sequence=2**31 - 2, is_transactional=True, partition_leader_epoch=7)
    marker = build_batch([Record(0, T0 + 9, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))],
                         producer_id=42, producer_epoch=3, is_transactional=True, is_control=True)
    set_base_offset(marker, 3)
    d = tmp_path / "p-0"
    write_segment(d, [txn, marker])
    rc, out, _ = dump(d / f"{NAME}.log", print_data_log=True)
    assert rc == 0
    assert out[2].startswith(
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 2147483646 lastSequence: 0"
        " producerId: 42 producerEpoch: 3 partitionLeaderEpoch: 7 isTransactional: true"
        " isControl: false ")
    assert [line.split(" sequence: ")[1].split()[0] for line in out[3:6]] == ["2147483646", "2147483647", "0"]
    assert out[6].startswith("baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1"
                             " producerId: 42 producerEpoch: 3 partitionLeaderEpoch: -1"
                             " isTransactional: true isControl: true ")
    # Control records show the marker, never key/payload.
    assert out[7] == ("| offset: 3 CreateTime: 1700000000009 keySize: 4 valueSize: 6 sequence: -1"
                      " headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5")


def test_log_append_time_and_delete_horizon(tmp_path):
    lat = batch([(None, b"x"), (None, b"y")], 0, log_append_time=True)
    horizon = batch([(None, b"z")], 2, ts=T0 + 50)
    horizon[22] |= 0x40  # deleteHorizon flag (low byte of the attributes), then re-sign
    struct.pack_into(">I", horizon, 17, compute_crc(horizon))
    d = tmp_path / "p-0"
    write_segment(d, [lat, horizon])
    rc, out, _ = dump(d / f"{NAME}.log", deep_iteration=True)
    assert " deleteHorizonMs: OptionalLong.empty position: 0 LogAppendTime: 1700000000001 " in out[2]
    # LogAppendTime records carry the batch's max timestamp.
    assert out[3].startswith("| offset: 0 LogAppendTime: 1700000000001 ")
    assert out[4].startswith("| offset: 1 LogAppendTime: 1700000000001 ")
    assert " deleteHorizonMs: OptionalLong[1700000000050] position: " in out[5]
    assert out[5].endswith("isvalid: true")


def test_torn_tail_prints_invalid_bytes(closed_segment, tmp_path):
    d, written, _, _ = closed_segment
    extra = bytes(batch([(b"k", b"v" * 100)], 15))
    for tail in (extra[:10], extra[:30], extra[:-1]):  # < 17 bytes, < header, mid-records
        copy = tmp_path / f"torn{len(tail)}"
        copy.mkdir()
        log = copy / f"{NAME}.log"
        log.write_bytes((d / f"{NAME}.log").read_bytes() + tail)
        rc, out, err = dump(log, deep_iteration=True)
        assert rc == 1 and err == []  # invalid bytes: shown, and the exit status says so
        assert out[-1] == f"Found {len(tail)} invalid bytes at the end of {NAME}.log"
        assert sum(line.startswith("baseOffset: ") for line in out) == 5
        # --max-bytes cuts the log anywhere: Kafka then prints no "invalid bytes" line.
        rc, out, _ = dump(log, max_bytes=written[1].position + 10)
        assert sum(line.startswith("baseOffset: ") for line in out) == 1
        assert not any(line.startswith("Found ") for line in out)


def test_zero_filled_tail_is_reported_not_fatal(closed_segment, tmp_path):
    d, _, _, _ = closed_segment
    log = tmp_path / f"{NAME}.log"
    log.write_bytes((d / f"{NAME}.log").read_bytes() + bytes(100))  # a preallocated tail
    rc, out, err = dump(log, log)
    assert rc == 1
    assert out.count(f"Found 100 invalid bytes at the end of {NAME}.log") == 2
    assert len(err) == 2 and "smaller than the minimum record batch overhead" in err[0]


def test_crc_failure_prints_isvalid_false(closed_segment, tmp_path):
    d, written, _, _ = closed_segment
    raw = bytearray((d / f"{NAME}.log").read_bytes())
    # The last byte of a record is its header count: flip the value's last byte before it.
    raw[written[0].position + len(written[0].data) - 2] ^= 0x01  # "value-0-2" -> "value-0-3"
    raw[written[1].position + 61] ^= 0xFF  # the gzip magic of the compressed records
    log = tmp_path / f"{NAME}.log"
    log.write_bytes(raw)
    rc, out, err = dump(log)
    assert rc == 1 and err == []  # isvalid: false is shown, and the exit status says so
    valid = [line.rsplit(" ", 1)[1] for line in out if line.startswith("baseOffset: ")]
    assert valid == ["false", "false", "true", "true", "true"]
    # Deep iteration still shows the uncompressed batch; the broken gzip one is reported and
    # the dump goes on with the next batches.
    rc, out, err = dump(log, print_data_log=True)
    assert rc == 1
    assert "| offset: 2 CreateTime: 1700000000002 keySize: 3 valueSize: 9 sequence: -1 headerKeys: []" \
        " key: k02 payload: value-0-3" in out
    assert err[0].startswith(
        f"Cannot decode the records of the batch at position {written[1].position} of {log}: ")
    # The undecodable batch's offsets are missing from the deep iteration.
    assert err[1:] == [f"Non-consecutive offsets in {log}", "  2 is followed by 6"]
    assert sum(line.startswith("| ") for line in out) == 12
    assert sum(line.startswith("baseOffset: ") for line in out) == 5


def test_non_consecutive_offsets(tmp_path):
    d = tmp_path / "p-0"
    write_segment(d, [batch([(None, b"a")] * 3, 0), batch([(None, b"b")] * 2, 10),
                      batch([(None, b"c")], 20)])
    rc, out, err = dump(d / f"{NAME}.log")
    assert err == []  # only deep iteration looks at record offsets
    rc, out, err = dump(d / f"{NAME}.log", deep_iteration=True)
    assert rc == 0
    # Kafka prepends each pair to a list, so the last gap comes first.
    assert err == [f"Non-consecutive offsets in {(d / NAME).absolute()}.log",
                   "  11 is followed by 20", "  2 is followed by 10"]


# -- .index and .timeindex --


def test_index_entries_equal_segment_entries(closed_segment):
    d, written, offset_entries, time_entries = closed_segment
    assert len(offset_entries) == 4  # every batch but the first is indexed
    rc, out, err = dump(d / f"{NAME}.index", d / f"{NAME}.timeindex")
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {d / NAME}.index",
        *[f"offset: {o} position: {p}" for o, p in offset_entries],
        f"Dumping {d / NAME}.timeindex",
        *[f"timestamp: {t} offset: {o}" for t, o in time_entries],
    ]
    assert [p for _, p in offset_entries] == [w.position for w in written[1:]]
    assert time_entries[-1] == (T0 + 402, 14)


def test_empty_index(tmp_path):
    d = tmp_path / "p-0"
    write_segment(d, [batch([(None, b"only")], 0)])  # the first batch is never indexed
    assert os.path.getsize(d / f"{NAME}.index") == 0
    rc, out, err = dump(d / f"{NAME}.index", d / f"{NAME}.timeindex")
    assert rc == 0 and err == []
    assert out == [f"Dumping {d / NAME}.index", f"{d / NAME}.index is empty.",
                   f"Dumping {d / NAME}.timeindex", f"timestamp: {T0} offset: 0"]
    # Kafka prints nothing (not "is empty.") for an empty time index.
    (d / f"{NAME}.timeindex").write_bytes(b"")
    assert dump(d / f"{NAME}.timeindex")[1] == [f"Dumping {d / NAME}.timeindex"]


def test_index_without_log_is_dumped_unverified(closed_segment, tmp_path):
    d, _, offset_entries, time_entries = closed_segment
    for suffix in (".index", ".timeindex"):
        shutil.copy(d / f"{NAME}{suffix}", tmp_path)
    rc, out, err = dump(tmp_path / f"{NAME}.index", tmp_path / f"{NAME}.timeindex")
    assert rc == 0 and err == []
    assert len(out) == 2 + len(offset_entries) + len(time_entries)


def test_sanity_check_passes(closed_segment):
    d, _, _, _ = closed_segment
    rc, out, err = dump(d / f"{NAME}.index", d / f"{NAME}.timeindex", index_sanity_check=True)
    assert rc == 0 and err == []
    assert out == [f"Dumping {d / NAME}.index", f"{d / NAME}.index passed sanity check.",
                   f"Dumping {d / NAME}.timeindex", f"{d / NAME}.timeindex passed sanity check."]


def test_sanity_check_fails(tmp_path):
    index = tmp_path / f"{NAME}.index"
    index.write_bytes(struct.pack(">ii", 3, 100) + b"\x00")  # 9 bytes: not a multiple of 8
    time_index = tmp_path / f"{NAME}.timeindex"
    time_index.write_bytes(struct.pack(">qi", T0, 3) + b"\x00")  # 13 bytes
    below_base = tmp_path / "00000000000000000100.index"
    below_base.write_bytes(struct.pack(">ii", -1, 0))  # last offset 99 < base 100
    before = fingerprint([str(index), str(time_index), str(below_base)])
    rc, out, err = dump(index, time_index, below_base, index_sanity_check=True)
    assert rc == 1
    assert out == [f"Dumping {index}", f"Dumping {time_index}", f"Dumping {below_base}"]
    assert len(err) == 3
    assert str(index) in err[0] and "found 9 bytes" in err[0]
    assert str(time_index) in err[1] and "found 13 bytes" in err[1]
    assert "last offset is 99 which is less than the base offset 100" in err[2]
    # A corrupt index is still dumped entry by entry without the sanity flag.
    rc, out, _ = dump(index)
    assert rc == 0 and out[1:] == ["offset: 3 position: 100"]
    assert fingerprint([str(index), str(time_index), str(below_base)]) == before


def _copy_segment(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(src / f"{NAME}{suffix}", dst)
    return dst


def test_offset_index_mismatches(closed_segment, tmp_path):
    d, written, offset_entries, _ = closed_segment
    bad = _copy_segment(d, tmp_path / "bad")
    raw = bytearray((bad / f"{NAME}.index").read_bytes())
    struct.pack_into(">i", raw, 4, written[0].position)  # entry 0 -> first batch (last offset 2)
    struct.pack_into(">i", raw, 12, written[4].position)  # entry 1 -> last batch (last offset 14)
    (bad / f"{NAME}.index").write_bytes(raw)
    rc, out, err = dump(bad / f"{NAME}.index")
    assert rc == 0
    assert out[1:3] == ["offset: 5 position: 0", f"offset: 8 position: {written[4].position}"]
    # Kafka's order: last mismatch first.
    assert err == [f"Mismatches in :{(bad / NAME).absolute()}.index",
                   "  Index offset: 8, log offset: 14", "  Index offset: 5, log offset: 2"]
    rc, out, err2 = dump(bad / f"{NAME}.index", verify_index_only=True)
    assert out == [f"Dumping {bad / NAME}.index"] and err2 == err


def test_time_index_mismatch_out_of_order_and_not_found(closed_segment, tmp_path):
    d, _, _, time_entries = closed_segment
    bad = _copy_segment(d, tmp_path / "bad")
    (t0, o0), (t1, o1), (t2, o2) = time_entries[:3]
    raw = bytearray((bad / f"{NAME}.timeindex").read_bytes())
    struct.pack_into(">q", raw, 0, t1 + 1000)  # entry 0: wrong ts, and entry 1 now goes back
    struct.pack_into(">i", raw, 2 * 12 + 8, o2 - 1)  # entry 2: an offset inside a batch
    (bad / f"{NAME}.timeindex").write_bytes(raw)
    rc, out, err = dump(bad / f"{NAME}.timeindex", verify_index_only=True)
    assert rc == 0 and out == [f"Dumping {bad / NAME}.timeindex"]
    abs_path = f"{(bad / NAME).absolute()}.timeindex"
    assert err == [
        f"Found timestamp mismatch in :{abs_path}",
        f"  Index timestamp: {t1 + 1000}, log timestamp: {t0}",
        f"Found out of order timestamp in :{abs_path}",
        f"  Index timestamp: {t1}, Previously indexed timestamp: {t1 + 1000}",
        "The following indexed offsets are not found in the log.",
        f"Indexed offset: {o2 - 1}, found log offset: {o2}",
    ]


# -- files, names, errors --


def test_unknown_missing_and_badly_named_files(tmp_path):
    junk = tmp_path / f"{NAME}.log.deleted"
    junk.write_bytes(b"")
    rc, out, err = dump(junk)
    assert rc == 0 and out == [f"Dumping {junk}"] and err == [f"Ignoring unknown file {junk}"]
    for suffix in (".index", ".timeindex", ".log"):
        rc, out, err = dump(tmp_path / f"{NAME}{suffix}")
        assert rc == 1 and err == [f"Error while dumping {tmp_path / NAME}{suffix}: No such file or directory"]
        assert not (tmp_path / f"{NAME}{suffix}").exists()  # read-only: never creates a file
    named = tmp_path / "segment.log"
    named.write_bytes(b"")
    rc, out, err = dump(named)
    assert rc == 1 and "cannot parse a base offset" in err[0]


# -- read-only on a live segment --


def test_live_segment_is_never_modified(tmp_path):
    d = tmp_path / "live-0"
    batches = [batch([(b"k%d" % i, b"v" * 50)] * 4, 4 * i, ts=T0 + i) for i in range(30)]
    seg, written = write_segment(d, batches, close=False, index_interval_bytes=500,
                                 max_index_size=10 * 1024 * 1024)  # Kafka's default size
    files = [str(d / f"{NAME}{s}") for s in (".log", ".index", ".timeindex")]
    assert os.path.getsize(files[1]) == 10 * 1024 * 1024  # active: preallocated, untrimmed
    n_offset, n_time = seg.offset_index.entries, seg.time_index.entries
    assert 0 < n_offset < 30 and 0 < n_time
    before = fingerprint(files)

    rc, out, err = dump(*files, print_data_log=True)
    assert rc == 0 and err == []
    offset_lines = [line for line in out if line.startswith("offset: ")]
    assert offset_lines == [f"offset: {o} position: {p}"
                            for o, p in (seg.offset_index.entry(i) for i in range(n_offset))]
    time_lines = [line for line in out if line.startswith("timestamp: ")]
    assert time_lines == [f"timestamp: {t} offset: {o}"
                          for t, o in (seg.time_index.entry(i) for i in range(n_time))]
    assert sum(line.startswith("baseOffset: ") for line in out) == 30
    rc, out, err = dump(*files, verify_index_only=True)
    assert rc == 0 and err == [] and len(out) == 4 + 30  # Dumping x3, Log starting offset
    # Kafka's sanity check on an active segment: the offset index passes (its zero padding
    # reads as entries at the base offset), the time index fails (its last "entry" has
    # timestamp 0). This is the known pitfall of untrimmed indexes, faithfully reproduced.
    rc, out, err = dump(*files[1:], index_sanity_check=True)
    assert rc == 1 and out[1] == f"{files[1]} passed sanity check."
    assert "the last timestamp is 0 which is less than the first timestamp" in err[0]
    assert _cli([sys.executable, "-m", "broker", "dump-log", "--deep-iteration", *files]).returncode == 0
    assert fingerprint(files) == before

    # The live segment's own mappings still work: append, then everything is consistent.
    seg.append(batch([(None, b"after")], 120))
    assert seg.offset_index.entries in (n_offset, n_offset + 1)
    seg.close()


def test_untrimmed_index_without_entries_shows_kafkas_padding_entry(tmp_path):
    """An active segment's preallocated index loads as full of (base, 0) entries; like Kafka
    the tool prints entry 0 and stops at entry 1 (documented in dump_log's docstring)."""
    d = tmp_path / "live-0"
    seg, _ = write_segment(d, [batch([(None, b"x")] * 3, 0)], close=False)
    rc, out, err = dump(d / f"{NAME}.index")
    assert out[1:] == ["offset: 0 position: 0"]
    assert err[1:] == ["  Index offset: 0, log offset: 2"]
    seg.close()


# -- the command line, in-process and as a real subprocess --


def _cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _console_script() -> str:
    script = Path(sys.executable).parent / "minibroker"
    if not script.exists():
        pytest.skip(f"{script} missing: pip install -e /work/main")
    return str(script)


def test_subprocess_output_equals_in_process(closed_segment):
    d, _, _, _ = closed_segment
    files = [str(d / f"{NAME}{s}") for s in (".log", ".index", ".timeindex")]
    out = io.StringIO()
    assert dump_files(files, print_data_log=True, out=out, err=io.StringIO()) == 0
    for argv in ([_console_script()], [sys.executable, "-m", "broker"]):
        proc = _cli([*argv, "dump-log", *files, "--print-data-log"])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == out.getvalue() and proc.stderr == ""


def test_subprocess_exit_status_and_stderr(tmp_path):
    bad = tmp_path / f"{NAME}.index"
    bad.write_bytes(bytes(9))
    proc = _cli([_console_script(), "dump-log", "--index-sanity-check", str(bad)])
    assert proc.returncode == 1
    assert proc.stdout == f"Dumping {bad}\n" and "found 9 bytes" in proc.stderr


def test_closed_pipe_stops_quietly(tmp_path):
    """`minibroker dump-log x.log | head -1`: no traceback, no "Error while dumping"."""
    d = tmp_path / "p-0"
    write_segment(d, [batch([(b"k", b"v" * 10)] * 20, 20 * i) for i in range(100)])
    proc = subprocess.Popen([_console_script(), "dump-log", "--print-data-log", str(d / f"{NAME}.log")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"Dumping ")
    proc.stdout.close()  # > 64 KiB of output remain: the tool hits EPIPE
    assert proc.wait(timeout=60) == 1
    assert proc.stderr.read() == b""
    proc.stderr.close()


def test_no_subcommand_prints_usage_and_exits_0(capsys):
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "dump-log" in text and "serve" in text
    proc = _cli([_console_script()])
    assert proc.returncode == 0 and proc.stdout == text


def test_cli_argument_errors(capsys, closed_segment):
    with pytest.raises(SystemExit) as e:
        main(["dump-log"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["dump-log", "x.log", "--max-message-size", "0"])
    assert e.value.code == 2
    d, _, _, _ = closed_segment
    capsys.readouterr()
    assert main(["dump-log", str(d / f"{NAME}.index"), "--verify-index-only"]) == 0
    assert capsys.readouterr().out == f"Dumping {d / NAME}.index\n"


# ---------------------------------------------------------------------- .snapshot


def _snapshot_file(path: Path, entries: list[tuple[int, int, int, int, int, int, int, int]]) -> None:
    """Kafka's producer snapshot layout, written here independently of the broker's writer."""
    import crc32c

    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    path.write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)


def test_snapshot_files_are_dumped_as_kafka_does(tmp_path: Path) -> None:
    p = tmp_path / "00000000000000000042.snapshot"
    #              pid, epoch, lastSeq, lastOffset, offsetDelta, timestamp, coordinatorEpoch, txnFirstOffset
    _snapshot_file(p, [(1000, 2, 9, 41, 4, 1_700_000_000_000, -1, -1),
                       (1001, 0, -1, -1, 0, 1_700_000_000_005, 7, 30)])
    rc, out, err = dump(p)
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {p}",
        "producerId: 1000 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty"
        " lastTimestamp: 1700000000000 firstSequence: 5 lastSequence: 9 lastOffset: 41 offsetDelta: 4"
        " timestamp: 1700000000000",
        "producerId: 1001 producerEpoch: 0 coordinatorEpoch: 7 currentTxnFirstOffset: OptionalLong[30]"
        " lastTimestamp: 1700000000005 ",
    ]


def test_a_corrupt_snapshot_is_reported(tmp_path: Path) -> None:
    p = tmp_path / "00000000000000000042.snapshot"
    _snapshot_file(p, [(1000, 2, 9, 41, 4, 1, -1, -1)])
    data = bytearray(p.read_bytes())
    data[20] ^= 1
    p.write_bytes(bytes(data))
    rc, out, err = dump(p)
    assert rc == 1 and len(err) == 1 and "corrupt" in err[0] and "crc" in err[0]
