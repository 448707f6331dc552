"""minibroker's Python client: the record format, the wire protocol codec, and the asyncio
``Producer``, ``Consumer`` and ``Admin`` (``client.sync`` wraps them for scripts). Never
imports ``broker``.

Each client takes ``bootstrap_servers="host:port[,host:port]"`` and keyword options with
Kafka's names in snake_case, and is used as ``async with Producer(...) as producer:`` (or
``await x.start()`` / ``await x.close()``).

The public names are imported on first use (PEP 562): the broker imports ``client.records``
and ``client.protocol`` and should not pay for loading the clients at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Admin": ".admin", "NewTopic": ".admin", "Consumer": ".consumer", "ConsumerRebalanceListener": ".consumer",
    "KafkaConnectionError": ".errors", "KafkaError": ".errors", "KafkaTimeoutError": ".errors",
    "Producer": ".producer", "RecordMetadata": ".producer",
    "OffsetAndMetadata": ".structs", "OffsetAndTimestamp": ".structs", "OffsetSpec": ".structs",
    "TopicPartition": ".structs",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .admin import Admin, NewTopic
    from .consumer import Consumer, ConsumerRebalanceListener
    from .errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
    from .producer import Producer, RecordMetadata
    from .structs import OffsetAndMetadata, OffsetAndTimestamp, OffsetSpec, TopicPartition


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
