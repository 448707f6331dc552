"""The raw-socket Kafka client the server tests use lives in broker.testing.wire (the benchmark
scripts use it too); re-exported here for the tests that import it from this path."""

from broker.testing.wire import *  # noqa: F403
from broker.testing.wire import CLOSED, Conn, decode_response, request_bytes  # noqa: F401
