"""UpdateFeatures (API key 57): request and response schemas, v0-2 (flexible from v0).

v1 (KIP-778) replaces ``allow_downgrade`` with ``upgrade_type`` (1 upgrade, 2 safe downgrade,
3 unsafe downgrade) and adds ``validate_only``; v2 (Kafka 4.0) drops the per-feature
``results`` from the response."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

UpdateFeaturesRequest = Message("UpdateFeaturesRequest", 57, "0-2", "0+", [
    F("timeout_ms", "int32", default=60000),
    F("feature_updates", Array([
        F("feature", "string"),
        F("max_version_level", "int16"),
        F("allow_downgrade", "bool", "0"),
        F("upgrade_type", "int8", "1+", default=1),
    ])),
    F("validate_only", "bool", "1+"),
])
UpdateFeaturesResponse = Message("UpdateFeaturesResponse", 57, "0-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("results", Array([
        F("feature", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ]), "0-1"),
])
