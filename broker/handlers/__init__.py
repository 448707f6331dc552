"""One module per Kafka API: ``handle(request, version, state)``.

A handler returns the response body as a dict (encoded by the server with the API's schema),
a coroutine that produces one (a request that must wait: acks=all, Fetch long-poll), a
``FetchReply`` (bytes and file slices written with sendfile), ``NO_RESPONSE`` (acks=0) or
``CLOSE`` (acks=0 with an error: Kafka closes the connection so the producer notices).
"""

from __future__ import annotations

from client.protocol.api import ApiKey

from . import (
    api_versions,
    create_topics,
    delete_topics,
    describe_configs,
    fetch,
    find_coordinator,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)
from .common import CLOSE, NO_RESPONSE, FetchReply

HANDLERS = {
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
}

__all__ = ["HANDLERS", "CLOSE", "NO_RESPONSE", "FetchReply"]
