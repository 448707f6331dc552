"""DescribeConfigs (API key 32): request and response schemas.

v1+: config_source and synonyms (when asked for); v3+: config_type and documentation (when
asked for); v4: flexible."""

from __future__ import annotations

from ..schema import Array, Message
from ..schema import Field as F

DescribeConfigsRequest = Message("DescribeConfigsRequest", 32, "0-4", "4+", [
    F("resources", Array([
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configuration_keys", Array("string"), nullable="0+"),
    ])),
    F("include_synonyms", "bool", "1+"),
    F("include_documentation", "bool", "3+"),
])
DescribeConfigsResponse = Message("DescribeConfigsResponse", 32, "0-4", "4+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", Array([
            F("name", "string"),
            F("value", "string", nullable="0+"),
            F("read_only", "bool"),
            F("is_default", "bool", "0"),
            F("config_source", "int8", "1+", default=-1),
            F("is_sensitive", "bool"),
            F("synonyms", Array([
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("source", "int8"),
            ]), "1+"),
            F("config_type", "int8", "3+"),
            F("documentation", "string", "3+", nullable="0+"),
        ])),
    ])),
])
