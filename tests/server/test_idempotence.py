"""Idempotent Produce on the wire: a raw client sends the same batch twice, a gap, an old epoch,
and the same retry after the broker was SIGKILLed and restarted; 5 batches in flight at once."""

from __future__ import annotations

from client.protocol.api import ApiKey, ErrorCode
from client.records import RecordBatchBuilder
from tests.broker_process import BrokerProcess

from .wire import Conn, create_topic, partition_response, produce


def idem(seq: int, n: int = 2, *, pid: int, epoch: int = 0) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        b.append(b"v%d" % (seq + i), timestamp=1_000)
    return bytes(b.build())


def init_producer_id(c: Conn) -> tuple[int, int]:
    r = c.call(ApiKey.INIT_PRODUCER_ID, 0, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert r["error_code"] == 0
    return r["producer_id"], r["producer_epoch"]


def send(c: Conn, topic: str, records: bytes, acks: int = 1) -> tuple[int, int]:
    p = partition_response(c.call(ApiKey.PRODUCE, 7, produce(topic, 0, records, acks)))
    return p["error_code"], p["base_offset"]


def test_same_batch_twice_gap_and_old_epoch(broker: BrokerProcess) -> None:
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("idem"))["topics"][0]["error_code"] == 0
        pid, epoch = init_producer_id(c)
        assert send(c, "idem", idem(0, pid=pid)) == (0, 0)
        assert send(c, "idem", idem(2, pid=pid)) == (0, 2)
        assert send(c, "idem", idem(2, pid=pid)) == (0, 2)  # the retry: first offsets, no error
        assert send(c, "idem", idem(0, pid=pid), acks=-1) == (0, 0)
        assert send(c, "idem", idem(7, pid=pid))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert send(c, "idem", idem(0, pid=pid, epoch=1)) == (0, 4)  # a bumped epoch starts at 0
        assert send(c, "idem", idem(2, pid=pid, epoch=0))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
        other, _ = init_producer_id(c)
        assert other != pid
        assert send(c, "idem", idem(500, pid=other)) == (0, 6)  # unknown producer: any sequence
        lo = c.call(ApiKey.LIST_OFFSETS, 1, {"replica_id": -1, "topics": [
            {"name": "idem", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        assert lo["topics"][0]["partitions"][0]["offset"] == 8  # 4 batches of 2 written, no more


def test_a_retry_after_sigkill_and_restart_is_still_recognised(tmp_path) -> None:
    with BrokerProcess(str(tmp_path / "data"), ["log.segment.bytes=1024"]) as b:
        with Conn(b.port) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("crash"))["topics"][0]["error_code"] == 0
            pid, _ = init_producer_id(c)
            offsets = [send(c, "crash", idem(seq, pid=pid)) for seq in range(0, 60, 2)]
            assert offsets == [(0, o) for o in range(0, 60, 2)]
        b.kill()
        b.requested_port = b.port  # the same address: clients reconnect as to a restarted Kafka broker
        b.start()
        with Conn(b.port) as c:
            assert send(c, "crash", idem(58, pid=pid)) == (0, 58)  # the last batch: a duplicate
            assert send(c, "crash", idem(61, pid=pid))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert send(c, "crash", idem(60, pid=pid)) == (0, 60)


def test_five_batches_in_flight_are_all_written_and_their_retries_recognised(broker: BrokerProcess) -> None:
    """An idempotent producer may have 5 Produce requests in flight per partition (acks=all, each
    answered only after its fsync): all 5 are written in order and answered in order, and after
    a lost connection the retry of each of those 5 batches gets its first offsets back."""
    with Conn(broker.port) as c:
        assert c.call(ApiKey.CREATE_TOPICS, 3, create_topic("pipe"))["topics"][0]["error_code"] == 0
        pid, _ = init_producer_id(c)
        cids = [c.send(ApiKey.PRODUCE, 7, produce("pipe", 0, idem(seq, 3, pid=pid), acks=-1))
                for seq in range(0, 15, 3)]
        answers = [c.recv(ApiKey.PRODUCE, 7) for _ in cids]
        assert [cid for cid, _ in answers] == cids
        assert [(p["error_code"], p["base_offset"]) for p in (partition_response(r) for _, r in answers)] == \
            [(0, o) for o in range(0, 15, 3)]
    with Conn(broker.port) as c:  # the retries, pipelined again
        cids = [c.send(ApiKey.PRODUCE, 7, produce("pipe", 0, idem(seq, 3, pid=pid), acks=-1))
                for seq in range(0, 15, 3)]
        answers = [c.recv(ApiKey.PRODUCE, 7) for _ in cids]
        assert [(p["error_code"], p["base_offset"]) for p in (partition_response(r) for _, r in answers)] == \
            [(0, o) for o in range(0, 15, 3)]
        assert send(c, "pipe", idem(15, pid=pid)) == (0, 15)  # nothing written twice
