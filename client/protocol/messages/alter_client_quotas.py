"""AlterClientQuotas (API key 49, KIP-546): request and response schemas (v0-1, flexible from
v1). Each entry names an entity (entity types ``user``, ``client-id``, ``ip``; a null name is
the default entity) and its ops: set ``key`` to ``value`` (float64), or remove it
(``remove``); ``validate_only`` changes nothing. The response has one entry per entity."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

AlterClientQuotasRequest = Message("AlterClientQuotasRequest", 49, "0-1", "1+", [
    F("entries", Array([
        F("entity", Array([
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=NULL),
        ])),
        F("ops", Array([
            F("key", "string"),
            F("value", "float64"),
            F("remove", "bool"),
        ])),
    ])),
    F("validate_only", "bool"),
])
AlterClientQuotasResponse = Message("AlterClientQuotasResponse", 49, "0-1", "1+", [
    F("throttle_time_ms", "int32"),
    F("entries", Array([
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("entity", Array([
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=NULL),
        ])),
    ])),
])
