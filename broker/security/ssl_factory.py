"""TLS server contexts from Kafka's ``ssl.*`` properties, per listener.

Keystore (the broker's key and certificate chain), ``ssl.keystore.type``:
- ``PEM`` (KIP-651): ``ssl.keystore.location`` is a PEM file holding the private key and the
  certificate chain, or the two are given inline as ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain``; an encrypted key is opened with ``ssl.key.password``.
- ``PKCS12``: ``ssl.keystore.location`` with ``ssl.keystore.password`` (and ``ssl.key.password``
  if the key has its own).
- ``JKS`` (Kafka's default name) cannot be read here: a file whose content is PEM or PKCS12 is
  taken as such whatever the type says; a real JKS file is refused with how to convert it.
Truststore (the CAs whose client certificates are accepted, for ``ssl.client.auth``):
``ssl.truststore.location`` (PEM or PKCS12 with ``ssl.truststore.password``) or inline PEM
``ssl.truststore.certificates``; without one, the system's default CAs.

``ssl.client.auth``: ``none`` (no client certificate asked), ``requested`` (asked, optional),
``required`` (a connection without a valid one fails its handshake).
``ssl.enabled.protocols``: TLSv1.2 and/or TLSv1.3 (older versions are refused).
``ssl.cipher.suites``: TLS 1.2 suites, in OpenSSL's or IANA's spelling
(``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` or ``ECDHE-RSA-AES256-GCM-SHA384``); empty: the
defaults. TLS 1.3's suites are OpenSSL's defaults (Python cannot narrow them).

PKCS12 and inline PEM material reach OpenSSL (which loads only files) through a private
temporary file, removed as soon as it is loaded. Every failure is an ``SslConfigError`` naming
the property, raised at start-up (or by the AlterConfigs that sets a new keystore).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping

from .listeners import listener_property

__all__ = ["SslConfigError", "server_context", "KEYSTORE_PROPERTIES"]

#: the properties whose change (per listener) makes a new server context
KEYSTORE_PROPERTIES = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
                       "ssl.keystore.key", "ssl.keystore.certificate.chain")
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


class SslConfigError(ValueError):
    """A TLS property that cannot be used (the message names it)."""


def _read(path: str, prop: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise SslConfigError(f"{prop}: cannot read {path!r}: {e.strerror or e}") from None


def _kind(data: bytes, declared: str, prop: str) -> str:
    """``PEM`` or ``PKCS12``: what the file holds (a JKS file is refused)."""
    if data.lstrip().startswith(b"-----BEGIN"):
        return "PEM"
    if data.startswith(_JKS_MAGIC):
        raise SslConfigError(f"{prop}: a JKS keystore cannot be read here; convert it to PKCS12 (keytool"
                             " -importkeystore -deststoretype PKCS12) or PEM and set its type")
    if declared.upper() == "PEM":
        raise SslConfigError(f"{prop}: not a PEM file")
    return "PKCS12"


def _pkcs12(data: bytes, password: str, prop: str) -> tuple[bytes, bytes, list[bytes]]:
    """(key PEM, certificate PEM, extra certificates' PEM) of a PKCS12 file."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as e:
        raise SslConfigError(f"{prop}: cannot open the PKCS12 file (wrong password?): {e}") from None
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()) if key is not None else b""
    cert_pem = cert.public_bytes(Encoding.PEM) if cert is not None else b""
    return key_pem, cert_pem, [c.public_bytes(Encoding.PEM) for c in extra]


def _load_chain(ctx: ssl.SSLContext, pem: bytes, password: str | None, prop: str) -> None:
    """Load a PEM key + chain through a private temporary file (OpenSSL reads files only)."""
    fd, path = tempfile.mkstemp(prefix="minibroker-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=password or None)
    except ssl.SSLError as e:
        raise SslConfigError(f"{prop}: cannot load the key and certificate chain ({e.reason or e};"
                             " a wrong ssl.key.password?)") from None
    finally:
        os.unlink(path)


def _load_keystore(ctx: ssl.SSLContext, props: Mapping[str, str], listener: str) -> None:
    def get(key: str) -> str:
        return listener_property(props, listener, key)

    declared = get("ssl.keystore.type") or "JKS"
    location, key_password = get("ssl.keystore.location"), get("ssl.key.password")
    inline_key, inline_chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
    if inline_key or inline_chain:
        if not (inline_key and inline_chain):
            raise SslConfigError(f"listener {listener}: ssl.keystore.key and ssl.keystore.certificate.chain go together")
        if location:
            raise SslConfigError(f"listener {listener}: ssl.keystore.location cannot be set with ssl.keystore.key")
        _load_chain(ctx, (inline_key.strip() + "\n" + inline_chain.strip() + "\n").encode(), key_password,
                    "ssl.keystore.key")
        return
    if not location:
        raise SslConfigError(f"listener {listener}: a TLS listener needs ssl.keystore.location (or ssl.keystore.key"
                             " and ssl.keystore.certificate.chain)")
    data = _read(location, "ssl.keystore.location")
    if _kind(data, declared, "ssl.keystore.location") == "PEM":
        _load_chain(ctx, data, key_password, "ssl.keystore.location")
        return
    key_pem, cert_pem, extra = _pkcs12(data, get("ssl.keystore.password"), "ssl.keystore.location")
    if not key_pem or not cert_pem:
        raise SslConfigError("ssl.keystore.location: the PKCS12 file holds no private key and certificate")
    _load_chain(ctx, key_pem + cert_pem + b"".join(extra), None, "ssl.keystore.location")


def _load_truststore(ctx: ssl.SSLContext, props: Mapping[str, str], listener: str) -> None:
    location = listener_property(props, listener, "ssl.truststore.location")
    inline = listener_property(props, listener, "ssl.truststore.certificates")
    try:
        if inline:
            ctx.load_verify_locations(cadata=inline)
        elif location:
            data = _read(location, "ssl.truststore.location")
            declared = listener_property(props, listener, "ssl.truststore.type") or "JKS"
            if _kind(data, declared, "ssl.truststore.location") == "PEM":
                ctx.load_verify_locations(cadata=data.decode("ascii", "replace"))
            else:
                from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

                password = listener_property(props, listener, "ssl.truststore.password")
                try:
                    store = pkcs12.load_pkcs12(data, password.encode() if password else None)
                except ValueError as e:
                    raise SslConfigError(f"ssl.truststore.location: cannot open the PKCS12 file: {e}") from None
                certs = [c.certificate for c in store.additional_certs]
                if store.cert is not None:
                    certs.append(store.cert.certificate)
                if not certs:
                    raise SslConfigError("ssl.truststore.location: the PKCS12 file holds no certificate")
                ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))
        else:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except ssl.SSLError as e:
        raise SslConfigError(f"ssl.truststore: cannot load the certificates: {e.reason or e}") from None


def _openssl_cipher(name: str) -> str:
    """IANA's ``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` -> OpenSSL's ``ECDHE-RSA-AES256-GCM-SHA384``
    (a name already in OpenSSL's spelling is returned as is)."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, _, cipher = name[4:].partition("_WITH_")
    kx = kx.replace("_", "-")
    parts = cipher.split("_")
    if parts[0] == "AES" and len(parts) >= 3:  # AES_256_GCM_SHA384 -> AES256-GCM-SHA384
        parts = ["AES" + parts[1], *parts[2:]]
    elif parts[0] == "CHACHA20":  # CHACHA20_POLY1305_SHA256 -> CHACHA20-POLY1305
        parts = ["CHACHA20", "POLY1305"]
    return f"{kx}-{'-'.join(parts)}" if kx not in ("RSA",) else "-".join(parts)


def server_context(props: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """A TLS server context for ``listener`` from its ``ssl.*`` properties (listener-prefixed
    first); SslConfigError names a property that cannot be used."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in listener_property(props, listener, "ssl.enabled.protocols").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _PROTOCOLS]
    if unknown or not enabled:
        raise SslConfigError(f"ssl.enabled.protocols: {', '.join(unknown) or 'none given'}: one or both of TLSv1.2,"
                             " TLSv1.3 (older protocols are insecure and refused)")
    versions = sorted(_PROTOCOLS[p] for p in enabled)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    suites = [c.strip() for c in listener_property(props, listener, "ssl.cipher.suites").split(",") if c.strip()]
    if suites:
        try:
            ctx.set_ciphers(":".join(_openssl_cipher(c) for c in suites))
        except ssl.SSLError:
            raise SslConfigError(f"ssl.cipher.suites: none of {', '.join(suites)} is available") from None
    _load_keystore(ctx, props, listener)
    auth = (listener_property(props, listener, "ssl.client.auth") or "none").strip().lower()
    if auth not in ("none", "requested", "required"):
        raise SslConfigError(f"ssl.client.auth: {auth!r} is not one of none, requested, required")
    if auth != "none":
        _load_truststore(ctx, props, listener)
        ctx.verify_mode = ssl.CERT_REQUIRED if auth == "required" else ssl.CERT_OPTIONAL
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    return ctx
