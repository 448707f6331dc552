"""ApiVersions (API key 18): request and response schemas."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

ApiVersionsRequest = Message("ApiVersionsRequest", 18, "0-4", "3+", [
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
])
ApiVersionsResponse = Message("ApiVersionsResponse", 18, "0-4", "3+", [
    F("error_code", "int16"),
    F("api_keys", Array([
        F("api_key", "int16"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ])),
    F("throttle_time_ms", "int32", "1+"),
    # Tagged fields (v3+): the broker sends none; a client reading a real Kafka's reply gets them.
    F("supported_features", Array([
        F("name", "string"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ]), "3+", tag=0),
    F("finalized_features_epoch", "int64", "3+", default=-1, tag=1),
    F("finalized_features", Array([
        F("name", "string"),
        F("max_version_level", "int16"),
        F("min_version_level", "int16"),
    ]), "3+", tag=2),
    F("zk_migration_ready", "bool", "3+", default=False, tag=3),
])
