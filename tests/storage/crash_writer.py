"""Crash writer: appends self-verifying records to partition ``crash-0`` until it is killed.

Run as a subprocess by ``test_crash.py`` (the working directory must be the repository root)::

    python -m tests.storage.crash_writer DIR --mode flush|noflush [--seed N] [--big]
        [--segment-bytes N] [--index-interval-bytes N] [--preallocate]
        [--checkpoint-probability P] [--pause-ms F] [--max-appends N]

It opens a LogManager on DIR (startup: recovery after an unclean stop), creates topic
``crash`` with one partition if missing, then loops: build one batch of 1-20 records (with
``--big``, 1-4 records of 64-400 KB, so that each append is a long write a kill can tear),
``Log.append`` it, and in ``--mode flush`` also ``Log.flush()``; only then write an ack. Now
and then it runs the broker's periodic tasks: ``LogManager.flush_dirty_logs()`` (which
flushes the segments rolls made inactive) and ``checkpoint_logs()``. ``--pause-ms F`` sleeps
a random 0-F ms after each ack (bounds how much a run writes; 0 = as fast as possible).
With ``--max-appends N`` it shuts the manager down cleanly after N appends and exits 0;
otherwise it runs until killed.

Protocol on stdout, one line per ``os.write`` (a pipe write under PIPE_BUF is atomic, so the
reader never sees half a line from a killed writer)::

    READY <leo> <next_seq> <log_start_offset> <recovery_point> <clean|unclean>
    ACK <last_offset> <seq_last> <first_offset>          after each append (+ flush) returned
    CLEAN <leo>                                           after --max-appends and a clean shutdown

Warnings (recovery truncations ...) are logged to stderr.

Record format (the helpers below are shared with the test). Record ``seq`` has key
``b"<seq>"`` and value ``b"<seq>:<len>:<digest>:" + payload`` where ``payload`` is a
deterministic function of ``seq`` and ``len`` alone and ``digest`` is its CRC-32C in 8 hex
digits (a hardware CRC: big payloads stay cheap to write and check). A reader can therefore
check every record by itself, independently of offsets (corruption, a record from elsewhere,
reordering), and check that sequence numbers are contiguous. The sequence of a new log
starts at ``SEQ_BASE`` (so that seq != offset) and a restarted writer continues after the
sequence of the last record in the log.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import random
import sys
import time

import crc32c

from broker.storage.config import LogConfig
from broker.storage.log import Log
from broker.storage.log_manager import LogManager
from client.records import build_batch, iter_records

__all__ = ["TOPIC", "SEQ_BASE", "default_length", "payload_for", "record_for", "check_record",
           "make_batch", "next_seq_of", "topic_configs"]

TOPIC = "crash"
SEQ_BASE = 1_000_000


def _seed_bytes(seq: int) -> bytes:
    return hashlib.blake2b(seq.to_bytes(8, "big"), digest_size=32).digest()


def default_length(seq: int) -> int:
    """Payload length of record ``seq`` by default: mostly 0-200 bytes, one in 16 up to 3 KB
    (so some appends span several pages and a kill can land in the middle of one)."""
    h = _seed_bytes(seq)
    return (h[1] << 8 | h[2]) % 3000 if h[0] % 16 == 0 else h[1] % 201


def payload_for(seq: int, length: int) -> bytes:
    """The payload of record ``seq`` with ``length`` bytes: a function of both alone."""
    h = _seed_bytes(seq)
    return (h * (length // 32 + 1))[:length]


def _digest(payload: bytes) -> bytes:
    return b"%08x" % crc32c.crc32c(payload)


def record_for(seq: int, length: int | None = None) -> tuple[bytes, bytes]:
    """(key, value) of record ``seq`` (payload length ``default_length(seq)`` unless given)."""
    payload = payload_for(seq, default_length(seq) if length is None else length)
    return b"%d" % seq, b"%d:%d:%s:" % (seq, len(payload), _digest(payload)) + payload


def check_record(key: bytes | None, value: bytes | None) -> int:
    """Verify one record by itself; returns its seq. Raises AssertionError when it is damaged."""
    assert key is not None and value is not None, f"null key or value: {key!r} {value!r}"
    parts = value.split(b":", 3)
    assert len(parts) == 4, f"value has no seq:len:digest: header: {value[:60]!r}"
    seq_s, len_s, digest, payload = parts
    seq = int(seq_s)
    assert key == seq_s, f"key {key!r} does not match the value's seq {seq_s!r}"
    assert int(len_s) == len(payload), f"seq {seq}: payload length {len(payload)} != {len_s!r}"
    assert digest == _digest(payload), f"seq {seq}: payload digest mismatch"
    assert payload == payload_for(seq, len(payload)), f"seq {seq}: payload differs from the deterministic one"
    return seq


def make_batch(first_seq: int, count: int, lengths: list[int] | None = None) -> bytearray:
    """A producer batch (baseOffset 0) of records first_seq .. first_seq+count-1."""
    if lengths is None:
        return build_batch([record_for(s) for s in range(first_seq, first_seq + count)])
    return build_batch([record_for(first_seq + i, lengths[i]) for i in range(count)])


def next_seq_of(log: Log) -> int:
    """The sequence number that follows the last record of ``log`` (SEQ_BASE when empty)."""
    leo = log.log_end_offset
    if leo <= log.log_start_offset:
        return SEQ_BASE
    data = log.read_bytes(leo - 1, 1)  # min_one_batch: the whole batch holding leo - 1
    last = None
    for rec in iter_records(data):
        last = rec
    assert last is not None and last.offset == leo - 1, f"the batch at {leo - 1} ends at {last}"
    return check_record(last.key, last.value) + 1


def topic_configs(segment_bytes: int, index_interval_bytes: int, preallocate: bool) -> dict[str, str]:
    # segment.index.bytes 4096: 512 offset / 341 time entries, far more than a 64 KiB segment
    # needs at one entry per 512 bytes, so rolls happen on size, as in production.
    return {
        "segment.bytes": str(segment_bytes),
        "index.interval.bytes": str(index_interval_bytes),
        "segment.index.bytes": "4096",
        "preallocate": "true" if preallocate else "false",
        "max.message.bytes": str(2 << 20),
    }


def _emit(line: str) -> None:
    os.write(1, (line + "\n").encode())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="crash_writer")
    p.add_argument("dir")
    p.add_argument("--mode", choices=("flush", "noflush"), required=True)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--segment-bytes", type=int, default=64 * 1024)
    p.add_argument("--index-interval-bytes", type=int, default=512)
    p.add_argument("--preallocate", action="store_true")
    p.add_argument("--checkpoint-probability", type=float, default=0.02)
    p.add_argument("--pause-ms", type=float, default=0.0)
    p.add_argument("--big", action="store_true",
                   help="batches of 1-4 records of 64-400 KB: long writes, so kills tear some")
    p.add_argument("--max-appends", type=int, default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    rng = random.Random(args.seed)

    manager = LogManager(args.dir, LogConfig())
    manager.startup()
    log = manager.get_log(TOPIC, 0)
    if log is None:
        manager.create_topic(TOPIC, 1, topic_configs(args.segment_bytes, args.index_interval_bytes,
                                                     args.preallocate))
        log = manager.log_or_raise(TOPIC, 0)
    seq = next_seq_of(log)
    expected = log.log_end_offset
    _emit(f"READY {expected} {seq} {log.log_start_offset} {log.recovery_point} "
          f"{'clean' if manager.had_clean_shutdown else 'unclean'}")
    flush = args.mode == "flush"
    appends = 0
    while args.max_appends is None or appends < args.max_appends:
        if args.big:
            n = rng.randint(1, 4)
            batch = make_batch(seq, n, [rng.randint(64 << 10, 400 << 10) for _ in range(n)])
        else:
            n = rng.randint(1, 20)
            batch = make_batch(seq, n)
        info = log.append(batch)
        if info.first_offset != expected or info.last_offset != expected + n - 1:
            _emit(f"ERROR offsets {info.first_offset}..{info.last_offset}, expected {expected}..{expected + n - 1}")
            return 2
        if flush:
            log.flush()
        _emit(f"ACK {info.last_offset} {seq + n - 1} {info.first_offset}")
        seq += n
        expected += n
        appends += 1
        if rng.random() < args.checkpoint_probability:  # the broker's periodic tasks
            manager.flush_dirty_logs()  # flushes rolled segments: moves the recovery point
            manager.checkpoint_logs()
        if args.pause_ms > 0:
            time.sleep(rng.random() * args.pause_ms / 1000)
    manager.shutdown()
    _emit(f"CLEAN {log.log_end_offset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
