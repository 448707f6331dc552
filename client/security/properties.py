"""Kafka's client security properties -> this client's options: one translation shared by the
command-line tools (``--command-config client.properties``) and the Spark source and sink
(``kafka.``-prefixed options).

``security_options(props)`` returns keyword options for Producer, Consumer and Admin
(``security_protocol``, ``ssl_context``, ``sasl_mechanism``, ``sasl_plain_username``,
``sasl_plain_password``, ``sasl_oauth_token_provider``); ``check_security_properties(props)``
checks the same properties without reading any file (Spark's driver checks what its executors
will build: an ``SSLContext`` cannot be pickled, so each process builds its own).

Properties (Kafka's names, defaults and meanings):

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL.
- ``sasl.mechanism``: Kafka's default is GSSAPI, which this client does not speak, so a SASL
  protocol needs it set: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER.
- ``sasl.jaas.config``: ``<login module> required key="value" ...;``.
  ``...plain.PlainLoginModule`` and ``...scram.ScramLoginModule`` give ``username`` and
  ``password``. ``...oauthbearer.OAuthBearerLoginModule`` makes Kafka's *unsecured* tokens
  (OAuthBearerUnsecuredLoginCallbackHandler): a JWT ``base64url(header).base64url(claims).``
  with header ``{"alg":"none"}``, claims ``exp`` (now + ``unsecuredLoginLifetimeSeconds``,
  default 3600), ``iat`` (now, seconds), and each ``unsecuredLoginStringClaim_<name>``,
  ``unsecuredLoginNumberClaim_<name>``, ``unsecuredLoginListClaim_<name>`` (its first
  character is the separator of the rest); ``unsecuredLoginExtension_<key>`` are SASL
  extensions. The module must match the mechanism (PLAIN, SCRAM-*, OAUTHBEARER).
- ``ssl.truststore.location`` + ``ssl.truststore.type`` (PEM, or PKCS12 with
  ``ssl.truststore.password``, read with ``cryptography``; JKS, Kafka's default type, is not
  readable here: a file given without a type is taken as PEM if it looks like PEM), or
  ``ssl.truststore.certificates`` (PEM text); none: the system's CAs, as the JVM's.
- ``ssl.keystore.location`` + ``ssl.keystore.type`` (PEM: the private key and the certificate
  chain in one file, the key encrypted with ``ssl.key.password`` if at all; or PKCS12 with
  ``ssl.keystore.password``): the client's certificate for mutual TLS.
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks the broker's host name
  against its certificate; the empty string turns that check off (the chain is still verified).

Other properties are not security's: callers decide what to do with them. Secrets are never
logged nor put in an error message.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.security.config import SASL_MECHANISMS, SECURITY_PROTOCOLS
from client.security.sasl import validate_extensions

__all__ = ["SECURITY_PROPERTIES", "parse_properties", "load_properties", "parse_jaas_config", "JaasConfig",
           "UnsecuredTokenProvider", "security_options", "check_security_properties", "ssl_context_from",
           "is_security_property", "security_items"]

#: The properties this module translates (others with a ``ssl.``/``sasl.`` prefix are refused).
SECURITY_PROPERTIES = (
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_MODULE_OF = {"PLAIN": PLAIN_MODULE, "SCRAM-SHA-256": SCRAM_MODULE, "SCRAM-SHA-512": SCRAM_MODULE,
              "OAUTHBEARER": OAUTHBEARER_MODULE}


def is_security_property(name: str) -> bool:
    """Whether a property is security's (``security.protocol``, ``ssl.*``, ``sasl.*``)."""
    return name == "security.protocol" or name.startswith(("ssl.", "sasl."))


# ---------------------------------------------------------------- .properties files

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """A Java ``.properties`` text: ``key=value``, ``key: value`` or ``key value``; ``#``/``!``
    comment lines; a line ending in an odd number of backslashes continues on the next (whose
    leading blanks are dropped); ``\\t \\n \\r \\f \\uXXXX`` escapes; the last of a repeated key wins."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
        m = re.match(r"((?:\\.|[^\\=: \t\f])*)[ \t\f]*[=:]?[ \t\f]*(.*)\Z", line, re.S)
        assert m is not None  # the pattern matches any line
        out[_unescape(m.group(1))] = _unescape(m.group(2))
    return out


def load_properties(path: str) -> dict[str, str]:
    """``parse_properties`` of a file (UTF-8; OSError if it cannot be read)."""
    with open(path, encoding="utf-8") as f:
        return parse_properties(f.read())


# ---------------------------------------------------------------- sasl.jaas.config


@dataclass(frozen=True)
class JaasConfig:
    """One login module entry: its class name, control flag and options."""

    module: str
    flag: str
    options: dict[str, str]

    def __repr__(self) -> str:  # options hold passwords
        return f"JaasConfig({self.module}, {self.flag}, options={sorted(self.options)})"


_JAAS_TOKEN = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([^\s=;"]+)|(=)|(;))', re.S)


def parse_jaas_config(text: str) -> JaasConfig:
    """``<module class> <required|requisite|sufficient|optional> [name=value ...];`` with values
    bare or double-quoted (``\\"`` and ``\\\\`` escaped); exactly one entry, as Kafka's clients
    require. ValueError names what is wrong, never a value."""
    tokens: list[tuple[str, str]] = []  # (kind, text): word, str, =, ;
    pos = 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _JAAS_TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"sasl.jaas.config: cannot parse at character {pos}")
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("str", re.sub(r"\\(.)", r"\1", m.group(1), flags=re.S)))
        elif m.group(2) is not None:
            tokens.append(("word", m.group(2)))
        else:
            tokens.append((m.group(3) or m.group(4), ""))
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word" or tokens[-1][0] != ";":
        raise ValueError("sasl.jaas.config must be '<LoginModule class> required name=\"value\" ...;'")
    flag = tokens[1][1].lower()
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise ValueError(f"sasl.jaas.config: invalid control flag {tokens[1][1]!r}")
    body = tokens[2:-1]
    if any(kind == ";" for kind, _ in body):
        raise ValueError("sasl.jaas.config must contain exactly one login module entry")
    options: dict[str, str] = {}
    if len(body) % 3:
        raise ValueError("sasl.jaas.config: options are name=value pairs")
    for j in range(0, len(body), 3):
        (k_kind, key), (eq, _), (v_kind, value) = body[j:j + 3]
        if k_kind != "word" or eq != "=" or v_kind not in ("word", "str"):
            raise ValueError(f"sasl.jaas.config: invalid option near {key!r}")
        options[key] = value
    return JaasConfig(tokens[0][1], flag, options)


# ---------------------------------------------------------------- unsecured OAUTHBEARER tokens

_OPT = "unsecuredLogin"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _list_claim(value: str) -> list[str]:
    """Kafka's list option: the first character separates the rest (``|a|b`` -> [a, b]).
    Empty items are kept (Kafka keeps one trailing empty item where any occur)."""
    if len(value) <= 1:
        return []
    return value[1:].split(value[0])


class UnsecuredTokenProvider:
    """Kafka's unsecured OAUTHBEARER login (OAuthBearerUnsecuredLoginCallbackHandler) from the
    OAuthBearerLoginModule's options: a fresh unsigned JWT at every ``token()``. For
    development and tests only: brokers accept these only with the unsecured validator."""

    def __init__(self, options: Mapping[str, str], clock: Any = time.time) -> None:
        self._options = dict(options)
        self._clock = clock
        principal_claim = self._options.get(f"{_OPT}PrincipalClaimName", "").strip() or "sub"
        if not self._options.get(f"{_OPT}StringClaim_{principal_claim}", "").strip():
            raise ValueError(f"OAuthBearerLoginModule needs {_OPT}StringClaim_{principal_claim}=\"<principal>\"")
        try:
            self._lifetime = int(self._options.get(f"{_OPT}LifetimeSeconds", "3600"))
        except ValueError:
            raise ValueError(f"{_OPT}LifetimeSeconds must be an integer") from None
        for key in self._options:
            if key.startswith((f"{_OPT}StringClaim_", f"{_OPT}NumberClaim_", f"{_OPT}ListClaim_")) \
                    and key.rpartition("_")[2] in ("iat", "exp"):
                raise ValueError(f"Cannot explicitly set the '{key.rpartition('_')[2]}' claim")
        self._extensions = {k[len(f"{_OPT}Extension_"):]: v for k, v in self._options.items()
                            if k.startswith(f"{_OPT}Extension_")}
        validate_extensions(self._extensions)

    def claims(self) -> dict[str, Any]:
        now = self._clock()
        claims: dict[str, Any] = {"exp": now + self._lifetime, "iat": now}
        for key, value in self._options.items():
            prefix, sep, name = key.partition("_")
            if not sep or not name:
                continue
            if prefix == f"{_OPT}StringClaim":
                claims[name] = value
            elif prefix == f"{_OPT}NumberClaim":
                claims[name] = float(value)
            elif prefix == f"{_OPT}ListClaim":
                claims[name] = _list_claim(value)
        return claims

    async def token(self) -> str:
        header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
        claims = _b64url(json.dumps(self.claims(), separators=(",", ":")).encode())
        return f"{header}.{claims}."

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    def __repr__(self) -> str:
        return "UnsecuredTokenProvider()"


# ---------------------------------------------------------------- TLS


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _store_type(props: Mapping[str, str], which: str, location: str, *, read: bool) -> str:
    given = props.get(f"ssl.{which}.type", "").strip().upper()
    if given in ("PEM", "PKCS12"):
        return given
    if given and given != "JKS":
        raise ValueError(f"ssl.{which}.type {given!r} is not supported; expected PEM or PKCS12")
    if given == "JKS":
        raise ValueError(f"ssl.{which}.type JKS is not readable by this client: convert the store to PKCS12 "
                         "(keytool -importkeystore -deststoretype PKCS12) or PEM")
    if not read:
        return "PEM"
    if b"-----BEGIN" in _read(location)[:4096]:
        return "PEM"
    raise ValueError(f"ssl.{which}.location is not PEM and ssl.{which}.type is not set (Kafka's default JKS "
                     "is not readable by this client): set it to PKCS12 or convert the store to PEM")


def _pkcs12(path: str, password: str | None, what: str) -> tuple[Any, Any, list[Any]]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_key_and_certificates(_read(path), password.encode() if password else None)
    except ValueError:
        raise ValueError(f"{what}: not a PKCS12 store, or the wrong password") from None


def ssl_context_from(props: Mapping[str, str]) -> ssl.SSLContext:
    """The client's ``SSLContext`` from Kafka's ``ssl.*`` properties (reads the stores)."""
    from cryptography.hazmat.primitives import serialization

    # PROTOCOL_TLS_CLIENT: certificate and host name checks on; only the truststore is
    # trusted when one is given (as Kafka), the system's CAs otherwise.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    trust = props.get("ssl.truststore.location", "").strip()
    if trust:
        if _store_type(props, "truststore", trust, read=True) == "PEM":
            ctx.load_verify_locations(cafile=trust)
        else:
            key, cert, others = _pkcs12(trust, props.get("ssl.truststore.password"), "ssl.truststore.location")
            pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in [cert, *others] if c)
            if not pem:
                raise ValueError("ssl.truststore.location holds no certificate")
            ctx.load_verify_locations(cadata=pem)
    elif props.get("ssl.truststore.certificates", "").strip():
        ctx.load_verify_locations(cadata=props["ssl.truststore.certificates"])
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    keystore = props.get("ssl.keystore.location", "").strip()
    if keystore:
        if _store_type(props, "keystore", keystore, read=True) == "PEM":
            ctx.load_cert_chain(keystore, password=props.get("ssl.key.password") or None)
        else:
            key, cert, chain = _pkcs12(keystore, props.get("ssl.keystore.password"), "ssl.keystore.location")
            if key is None or cert is None:
                raise ValueError("ssl.keystore.location holds no private key and certificate")
            # ssl loads a certificate chain from files only: a private temporary file (0600),
            # removed at once; the key in it is encrypted with a random one-off password.
            secret = os.urandom(24).hex().encode()
            pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.BestAvailableEncryption(secret))
            pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *chain])
            fd, path = tempfile.mkstemp(suffix=".pem")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(pem)
                ctx.load_cert_chain(path, password=secret)
            finally:
                os.unlink(path)
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm == "":
        ctx.check_hostname = False
    return ctx


# ---------------------------------------------------------------- the translation


def _sasl_options(props: Mapping[str, str], protocol: str) -> dict[str, Any]:
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip()
    if mechanism not in SASL_MECHANISMS:
        raise ValueError(f"sasl.mechanism {mechanism} is not supported (GSSAPI is Kafka's default); set it to one "
                         "of " + ", ".join(SASL_MECHANISMS))
    jaas_text = props.get("sasl.jaas.config", "").strip()
    if not jaas_text:
        raise ValueError(f"security.protocol {protocol} needs sasl.jaas.config")
    jaas = parse_jaas_config(jaas_text)
    if jaas.module != _MODULE_OF[mechanism]:
        raise ValueError(f"sasl.mechanism {mechanism} needs the login module {_MODULE_OF[mechanism]}, "
                         f"not {jaas.module}")
    if mechanism == "OAUTHBEARER":
        return {"sasl_mechanism": mechanism, "sasl_oauth_token_provider": UnsecuredTokenProvider(jaas.options)}
    if "username" not in jaas.options or "password" not in jaas.options:
        raise ValueError(f"sasl.jaas.config for {mechanism} needs username and password")
    return {"sasl_mechanism": mechanism, "sasl_plain_username": jaas.options["username"],
            "sasl_plain_password": jaas.options["password"]}


def _protocol(props: Mapping[str, str]) -> str:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"Invalid value {props['security.protocol']} for configuration security.protocol: "
                         "String must be one of: " + ", ".join(SECURITY_PROTOCOLS))
    return protocol


def _unknown(props: Mapping[str, str]) -> None:
    unknown = sorted(k for k in props if is_security_property(k) and k not in SECURITY_PROPERTIES)
    if unknown:
        raise ValueError("not supported by this client: " + ", ".join(unknown))


def check_security_properties(props: Mapping[str, str]) -> None:
    """ValueError for what ``security_options`` would refuse, reading no file."""
    _unknown(props)
    protocol = _protocol(props)
    if protocol.startswith("SASL_"):
        _sasl_options(props, protocol)
    if protocol.endswith("SSL"):
        for which in ("truststore", "keystore"):
            if props.get(f"ssl.{which}.location", "").strip():
                _store_type(props, which, "", read=False)


def security_options(props: Mapping[str, str]) -> dict[str, Any]:
    """Keyword options for Producer, Consumer and Admin from Kafka's security properties (the
    others in ``props`` are ignored); reads the TLS stores. ValueError for a bad value."""
    _unknown(props)
    protocol = _protocol(props)
    out: dict[str, Any] = {"security_protocol": protocol}
    if protocol.endswith("SSL"):
        out["ssl_context"] = ssl_context_from(props)
    if protocol.startswith("SASL_"):
        out.update(_sasl_options(props, protocol))
    return out


def security_items(props: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The security properties of ``props``, checked (no file read) and sorted: a hashable,
    picklable form to carry to where the clients are made (Spark's executors), which then call
    ``security_options(dict(items))``."""
    items = tuple(sorted((k, v) for k, v in props.items() if is_security_property(k)))
    check_security_properties(dict(items))
    return items
