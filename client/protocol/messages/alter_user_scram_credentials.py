"""AlterUserScramCredentials (API key 51, KIP-554): request and response schemas (v0, flexible
from v0). An upsertion carries the salt and the salted password (PBKDF2 is the client's work),
never the password; ``mechanism`` is Kafka's ScramMechanism type (1 SCRAM-SHA-256,
2 SCRAM-SHA-512). The response has one result per user named in the request."""

from __future__ import annotations

from ..schema import NULL, Array, Message
from ..schema import Field as F

AlterUserScramCredentialsRequest = Message("AlterUserScramCredentialsRequest", 51, "0", "0+", [
    F("deletions", Array([
        F("name", "string"),
        F("mechanism", "int8"),
    ])),
    F("upsertions", Array([
        F("name", "string"),
        F("mechanism", "int8"),
        F("iterations", "int32"),
        F("salt", "bytes"),
        F("salted_password", "bytes"),
    ])),
])
AlterUserScramCredentialsResponse = Message("AlterUserScramCredentialsResponse", 51, "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("results", Array([
        F("user", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=NULL),
    ])),
])
