# test_aiokafka.py: aiokafka
import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition


def test_roundtrip(minibroker, minibroker_topic):
    async def go():
        producer = AIOKafkaProducer(bootstrap_servers=minibroker.bootstrap_servers)
        await producer.start()
        await producer.send_and_wait(minibroker_topic, b"hello", partition=0)
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=minibroker.bootstrap_servers, auto_offset_reset="earliest")
        await consumer.start()
        consumer.assign([TopicPartition(minibroker_topic, 0)])
        msg = await asyncio.wait_for(consumer.getone(), 10)
        await consumer.stop()
        return msg.value

    assert asyncio.run(go()) == b"hello"
