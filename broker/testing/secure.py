"""A broker with every kind of listener, for tests of clients' security settings.

``SecureSetup(directory)`` makes, with ``trustme`` (a test dependency), a throwaway CA, the
broker's certificate (for 127.0.0.1 and localhost), a client certificate signed by that CA
(subject ``CN=alice,OU=clients,O=minibroker``) and one signed by *another* CA, as PEM files in
``directory``; ``overrides()`` are the broker properties of four listeners::

    PLAINTEXT://127.0.0.1:0        anonymous
    SSL://127.0.0.1:0              mutual TLS required; principal = the certificate's CN
    SASL_SSL://127.0.0.1:0         PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER over TLS
    SASL_PLAINTEXT://127.0.0.1:0   the same mechanisms without TLS

with the users of ``USERS`` (PLAIN from the JAAS entry, SCRAM from ``scram_seeds()``, given to
``minibroker serve --add-scram``) and unsecured OAUTHBEARER tokens (``unsecured_token``).
``client_properties(listener, mechanism, user)`` are the Kafka client properties (librdkafka's
names, which kcat and confluent-kafka take) to connect there.

``secure_broker(directory)`` starts such a broker in a child process (``BrokerProcess``;
``.listener_ports[name]`` is each listener's port).
"""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

from .process import BrokerProcess

__all__ = ["SecureBroker", "SecureSetup", "USERS", "unsecured_token", "secure_broker"]

#: user -> password, for PLAIN and both SCRAM mechanisms
USERS = {"alice": "alice-secret", "admin": "admin-secret"}
LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def unsecured_token(sub: str, lifetime_s: float = 3600, scope: str | None = None) -> str:
    """An unsecured JWT (``alg: none``) as Kafka's unsecured login module makes one."""
    def b64(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = time.time()
    claims: dict[str, Any] = {"sub": sub, "iat": int(now), "exp": now + lifetime_s}
    if scope is not None:
        claims["scope"] = scope
    return f"{b64({'alg': 'none'})}.{b64(claims)}."


class SecureSetup:
    def __init__(self, directory: str) -> None:
        import trustme

        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.ca = trustme.CA()
        self.other_ca = trustme.CA()
        server = self.ca.issue_cert("127.0.0.1", "localhost")
        client = self.ca.issue_cert("alice@clients", common_name="alice", organization_unit_name="clients",
                                    organization_name="minibroker")
        stranger = self.other_ca.issue_cert("mallory@clients", common_name="mallory")
        self.ca_pem = self._write("ca.pem", self.ca.cert_pem.bytes())
        self.other_ca_pem = self._write("other-ca.pem", self.other_ca.cert_pem.bytes())
        self.server_pem = self._write("server.pem", server.private_key_pem.bytes() +
                                      b"".join(c.bytes() for c in server.cert_chain_pems))
        self.client_cert = self._write("client-cert.pem", b"".join(c.bytes() for c in client.cert_chain_pems))
        self.client_key = self._write("client-key.pem", client.private_key_pem.bytes())
        self.stranger_cert = self._write("stranger-cert.pem", b"".join(c.bytes() for c in stranger.cert_chain_pems))
        self.stranger_key = self._write("stranger-key.pem", stranger.private_key_pem.bytes())

    def _write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.directory, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def overrides(self, **extra: str) -> list[str]:
        users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        plain = f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
        props = {
            "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": self.server_pem,
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.ssl.ssl.truststore.type": "PEM",
            "listener.name.ssl.ssl.truststore.location": self.ca_pem,
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
            "connection.failed.authentication.delay.ms": "100",
            **extra,
        }
        return [f"{k}={v}" for k, v in props.items()]

    @staticmethod
    def scram_seeds() -> list[str]:
        return [f"{m}=[name={u},password={p}]" for u, p in USERS.items() for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]

    def client_properties(self, listener: str, mechanism: str | None = None, user: str = "alice",
                          password: str | None = None) -> dict[str, str]:
        """librdkafka's properties for ``listener`` (and ``mechanism`` on a SASL one)."""
        props = {"security.protocol": listener.lower()}
        if listener in ("SSL", "SASL_SSL"):
            props["ssl.ca.location"] = self.ca_pem
        if listener == "SSL":
            props["ssl.certificate.location"] = self.client_cert
            props["ssl.key.location"] = self.client_key
        if mechanism is not None:
            props["sasl.mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                props["sasl.oauthbearer.config"] = f"principal={user}"
                props["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
            else:
                props["sasl.username"] = user
                props["sasl.password"] = USERS.get(user, "") if password is None else password
        return props


class SecureBroker(BrokerProcess):
    """A BrokerProcess with its ``SecureSetup`` (``.setup``)."""

    def __init__(self, data_dir: str, setup: SecureSetup, overrides: list[str], **kwargs: Any) -> None:
        args: list[str] = []
        for seed in setup.scram_seeds():
            args += ["--add-scram", seed]
        super().__init__(data_dir, [*setup.overrides(), *overrides], extra_args=args, **kwargs)
        self.setup = setup


def secure_broker(directory: str, *extra_overrides: str, **kwargs: Any) -> tuple[SecureBroker, SecureSetup]:
    """A started broker with the four listeners of ``SecureSetup`` (data in ``directory``/data)."""
    setup = SecureSetup(os.path.join(directory, "tls"))
    broker = SecureBroker(os.path.join(directory, "data"), setup, list(extra_overrides), **kwargs)
    broker.start()
    return broker, setup
