# test_faults.py: fault injection, and a broker with a config of its own
from confluent_kafka import Producer


def test_producer_retries_through_errors_and_a_dropped_connection(minibroker, minibroker_topic):
    # the next 2 Produce requests get NOT_LEADER_OR_FOLLOWER, the one after loses its connection
    minibroker.faults.fail("PRODUCE", "NOT_LEADER_OR_FOLLOWER", count=2)
    minibroker.faults.drop("PRODUCE", count=1)
    delivered = []
    producer = Producer({"bootstrap.servers": minibroker.bootstrap_servers, "retry.backoff.ms": 10,
                         "on_delivery": lambda err, msg: delivered.append(err)})
    producer.produce(minibroker_topic, b"hello")
    assert producer.flush(30) == 0
    assert delivered == [None]
    assert minibroker.faults.rules() == []  # every fault was hit


def test_slow_broker(minibroker, minibroker_topic):
    minibroker.faults.delay("METADATA", 200, count=1)
    producer = Producer({"bootstrap.servers": minibroker.bootstrap_servers})
    producer.produce(minibroker_topic, b"late")
    assert producer.flush(30) == 0


def test_own_broker(minibroker_factory):
    b = minibroker_factory({"num.partitions": 4, "log.segment.bytes": 1048576}, metrics=True)
    producer = Producer({"bootstrap.servers": b.bootstrap_servers})
    producer.produce("auto-created", b"x")
    assert producer.flush(10) == 0
    assert 'kafka_topic_partitions{topic="auto-created"} 4.0' in b.scrape()
