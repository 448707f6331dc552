"""DescribeUserScramCredentials (API key 50, KIP-554): request and response schemas (v0,
flexible from v0). ``mechanism`` is Kafka's ScramMechanism type: 1 SCRAM-SHA-256,
2 SCRAM-SHA-512 (client.security.scram.MECHANISM_TYPES)."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

DescribeUserScramCredentialsRequest = Message("DescribeUserScramCredentialsRequest", 50, "0", "0+", [
    # null or empty: every user
    F("users", Array([
        F("name", "string"),
    ]), nullable="0+", default=NULL),
])
DescribeUserScramCredentialsResponse = Message("DescribeUserScramCredentialsResponse", 50, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=NULL),
    F("results", Array([
        F("user", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
        F("credential_infos", Array([
            F("mechanism", "int8"),
            F("iterations", "int32"),
        ])),
    ])),
])
