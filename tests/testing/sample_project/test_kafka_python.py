# test_kafka_python.py: kafka-python; the test runs once per partition count
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition


@pytest.mark.parametrize("minibroker_topic", [1, 2], indirect=True)
def test_roundtrip(minibroker, minibroker_topic):
    producer = KafkaProducer(bootstrap_servers=minibroker.bootstrap_servers)
    producer.send(minibroker_topic, b"hello", partition=0).get(timeout=10)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=minibroker.bootstrap_servers, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(minibroker_topic, 0)])
    consumer.seek_to_beginning()
    assert next(consumer).value == b"hello"
    consumer.close()
