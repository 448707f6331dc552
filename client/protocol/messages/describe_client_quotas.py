"""DescribeClientQuotas (API key 48, KIP-546): request and response schemas (v0-1, flexible
from v1). A filter is a list of components, each naming an entity type (``user``,
``client-id``, ``ip``) and a match type: 0 exact name (``match``), 1 the default entity
(``match`` null), 2 any specified name (``match`` null); ``strict`` leaves out entities with
types the filter does not name. Each entry of the answer is an entity (a default entity's
name is null) and its quota values (float64)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeClientQuotasRequest = Message("DescribeClientQuotasRequest", 48, "0-1", "1+", [
    F("components", Array([
        F("entity_type", "string"),
        F("match_type", "int8"),
        F("match", "string", nullable="0+", default=NULL),
    ])),
    F("strict", "bool"),
])
DescribeClientQuotasResponse = Message("DescribeClientQuotasResponse", 48, "0-1", "1+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("entries", Array([
        F("entity", Array([
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=NULL),
        ])),
        F("values", Array([
            F("key", "string"),
            F("value", "float64"),
        ])),
    ]), nullable="0+", default=NULL),
])
