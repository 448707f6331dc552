"""SASL/PLAIN (RFC 4616) on the server, with users from the listener's JAAS configuration.

The client's one message is ``[authzid] NUL authcid NUL passwd`` (UTF-8). Users are the
``user_<name>="<password>"`` options of ``org.apache.kafka.common.security.plain.PlainLoginModule``
(Kafka's PlainServerCallbackHandler); passwords are compared in constant time. An authzid, if
sent, must equal the user name. Kafka's failure messages are kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from .sasl_mechanism import SaslAuthenticationError, SaslServerMechanism, constant_time_equal

__all__ = ["PlainServer", "plain_users"]


def plain_users(options: Mapping[str, str]) -> dict[str, bytes]:
    """{user: password} from a PlainLoginModule's ``user_<name>`` options."""
    return {k[len("user_"):]: v.encode() for k, v in options.items() if k.startswith("user_")}


class PlainServer(SaslServerMechanism):
    name = "PLAIN"

    def __init__(self, users: Mapping[str, bytes]) -> None:
        super().__init__()
        self.users = users

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Authentication failed: PLAIN authentication already complete")
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password") from None
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self.users.get(user)
        # compare against something of the same kind even for an unknown user: no timing hint
        ok = constant_time_equal(expected if expected is not None else b"\x00" * 16, password.encode())
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is"
                                          " different from username")
        self.authorization_id = user
        self.complete = True
        return b""
