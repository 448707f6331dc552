"""Real Kafka clients (kcat, kafka-python, aiokafka, confluent-kafka) against a real broker
process; no mocks."""
