"""ListConfigResources (API key 74): request and response schemas, v0-1 (flexible from v0).

v0 is KIP-1000's ListClientMetricsResources (client-metrics resources only); v1 (KIP-1142,
Kafka 4.1) asks for the resources of the config resource types listed (all when none is) and
answers each resource's type."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ListConfigResourcesRequest = Message("ListConfigResourcesRequest", 74, "0-1", "0+", [
    F("resource_types", Array("int8"), "1+"),
])
ListConfigResourcesResponse = Message("ListConfigResourcesResponse", 74, "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("config_resources", Array([
        F("resource_name", "string"),
        F("resource_type", "int8", "1+", default=16),
    ])),
])
