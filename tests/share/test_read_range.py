"""What a ShareFetch returns of the log (broker/share/manager.py ``_read_range``): whole batches
covering the acquired offsets, even when the batches are close to the 1 MiB read budget and
the acquired range crosses from one batch into the next (a partial batch in the middle of the
records made clients stop there; its bytes read as a batch header made the broker loop)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from broker.share.manager import _not_delivered, _read_range
from broker.testing import create_topic
from broker.testing.inprocess import InProcessBroker


def batches(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of each batch; asserts they are whole and fill ``data``."""
    out, pos = [], 0
    while pos < len(data):
        base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        assert pos + 12 + length <= len(data), "a partial batch"
        out.append((base, base + int.from_bytes(data[pos + 23:pos + 27], "big", signed=True)))
        pos += 12 + length
    return out


def test_whole_batches_cover_the_acquired_offsets(tmp_path: Path) -> None:
    with InProcessBroker(str(tmp_path / "d")) as b:
        bs = f"127.0.0.1:{b.port}"
        create_topic(bs, "big", 1)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 50, "batch.num.messages": 100000})
        for _ in range(30000):
            while True:
                try:
                    p.produce("big", b"x" * 100)
                    break
                except BufferError:
                    p.poll(0.05)
        assert p.flush(30) == 0
        log = b.broker.state.logs.logs[("big", 0)]
        first_batch_end = batches(_read_range(log, 0, 0))[0][1]
        assert first_batch_end > 1000  # big batches: a few per MiB
        for first, last in [(0, 499), (first_batch_end - 100, first_batch_end + 400), (29500, 29999)]:
            data = _read_range(log, first, last)
            got = batches(data)
            assert got[0][0] <= first and got[-1][1] >= last
            assert all(a[1] + 1 == b_[0] for a, b_ in zip(got, got[1:]))  # contiguous
            assert _not_delivered(data, []) == set()  # producer batches: nothing to skip
