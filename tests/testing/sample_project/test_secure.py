# test_secure.py: the same client logged in with SCRAM-SHA-512 over TLS (minibroker_secure)
from confluent_kafka import Consumer, Producer, TopicPartition


def test_sasl_ssl_roundtrip(minibroker_secure):
    conf = {"bootstrap.servers": f"127.0.0.1:{minibroker_secure.listener_ports['SASL_SSL']}",
            **minibroker_secure.setup.client_properties("SASL_SSL", "SCRAM-SHA-512")}
    producer = Producer(conf)
    producer.produce("secure-topic", b"over TLS")
    assert producer.flush(10) == 0

    consumer = Consumer({**conf, "group.id": "unused"})
    consumer.assign([TopicPartition("secure-topic", 0, 0)])
    msg = consumer.poll(10)
    assert msg is not None and msg.error() is None and msg.value() == b"over TLS"
    consumer.close()
