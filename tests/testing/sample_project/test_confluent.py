# test_confluent.py: confluent-kafka (librdkafka); three partitions for this test
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition


@pytest.mark.minibroker_topic(partitions=3)
def test_roundtrip(minibroker, minibroker_topic):
    producer = Producer({"bootstrap.servers": minibroker.bootstrap_servers})
    for p in range(3):
        producer.produce(minibroker_topic, b"value-%d" % p, partition=p)
    assert producer.flush(10) == 0

    consumer = Consumer({"bootstrap.servers": minibroker.bootstrap_servers, "group.id": "unused"})
    consumer.assign([TopicPartition(minibroker_topic, p, 0) for p in range(3)])
    got = []
    while len(got) < 3:
        msg = consumer.poll(10)
        assert msg is not None and msg.error() is None
        got.append(msg.value())
    consumer.close()
    assert sorted(got) == [b"value-0", b"value-1", b"value-2"]
