"""minibroker: a single-node Kafka-compatible broker."""
