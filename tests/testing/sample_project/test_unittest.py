# test_unittest.py: unittest (or a script): the same broker as a context manager
import unittest

from confluent_kafka import Producer

import broker.testing


class RoundTrip(unittest.TestCase):
    def test_produce(self):
        with broker.testing.run() as b:
            broker.testing.create_topic(b.bootstrap_servers, "events", partitions=2)
            producer = Producer({"bootstrap.servers": b.bootstrap_servers})
            producer.produce("events", b"hello", partition=1)
            self.assertEqual(producer.flush(10), 0)
