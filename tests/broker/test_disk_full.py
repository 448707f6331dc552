"""A full filesystem under a live broker: produce requests get KAFKA_STORAGE_ERROR, the broker
stays up (no SIGBUS from an mmap'd index page that cannot be allocated), and every
acknowledged record is still there, in order, after the disk filled."""

from __future__ import annotations

import os
import subprocess

import pytest

from client.protocol.api import ApiKey, ErrorCode
from client.records import build_batch, decode_batch
from tests.broker_process import BrokerProcess
from tests.server.wire import Conn, create_topic, fetch, produce


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 2 MiB tmpfs (needs root and mount; skipped elsewhere, saying why)."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(directory) -> None:
    """Take every free page of the filesystem."""
    with open(directory / "filler", "wb", buffering=0) as f:
        chunk = b"\0" * 4096
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass


def test_disk_full_answers_storage_error_and_keeps_acked_records(small_tmpfs) -> None:
    """513 batches of 128 bytes (index.interval.bytes 0: an offset index entry for every batch
    but the first) fill exactly the first 4 KiB page of the ``.index``; the ``.log``'s last page
    still has room. With the filesystem then full, the next append needs a new index page:
    mapped and never allocated, touching it would kill the broker with SIGBUS."""
    b = BrokerProcess(str(small_tmpfs / "data"), overrides=["log.index.interval.bytes=0"]).start()
    try:
        with Conn(b.port) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic("full", 1, {}))
            assert r["topics"][0]["error_code"] == 0, r

            def send(i: int) -> int:
                batch = bytes(build_batch([(None, b"%058d-" % i)]))
                assert len(batch) == 128
                resp = c.call(ApiKey.PRODUCE, 7, produce("full", 0, batch, 1))
                return int(resp["responses"][0]["partition_responses"][0]["error_code"])

            for i in range(513):
                assert send(i) == 0
            _fill(small_tmpfs)
            acked = 513
            errors: list[int] = []
            for i in range(513, 2000):
                code = send(i)
                if code == 0:
                    acked += 1
                else:
                    errors.append(code)
                    if len(errors) >= 3:
                        break
            assert errors and set(errors) == {ErrorCode.KAFKA_STORAGE_ERROR}, errors
            assert b.proc is not None and b.proc.poll() is None  # still running
            got: list[int] = []
            while len(got) < acked:
                p = c.call(ApiKey.FETCH, 11, fetch("full", 0, len(got)))["responses"][0]["partitions"][0]
                assert p["error_code"] == 0 and p["records"], p["error_code"]
                got += [int(rec.value[:58]) for rec in decode_batch(p["records"]) if rec.offset >= len(got)]
            assert got[:acked] == list(range(acked))
            assert p["high_watermark"] == acked
    finally:
        b.kill()
