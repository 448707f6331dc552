"""Principals: who a connection is, as Kafka names it (``User:alice``), and how a mutual-TLS
client's certificate subject becomes one (``ssl.principal.mapping.rules``).

The subject is written as RFC 2253 does (Java's ``X500Principal.getName()``, which Kafka maps):
the most specific name first, ``CN=alice,OU=eng,O=example,C=GB``.

``ssl.principal.mapping.rules`` is a comma-separated list tried in order, the first that
matches gives the name:
- ``DEFAULT``: the whole subject;
- ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash (lower- or
  upper-case the result): the pattern (a Java regex; the subset Python's ``re`` shares) must
  match the whole subject, and the name is the replacement with ``$1``, ``$2``... replaced by
  its groups. ``\\/`` is a slash inside a pattern or replacement.
A subject no rule matches fails the handshake's authentication (Kafka: "No rules apply to ...").
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["KafkaPrincipal", "ANONYMOUS", "PrincipalMappingError", "SslPrincipalMapper", "certificate_subject"]


class KafkaPrincipal(NamedTuple):
    """A principal as Kafka writes it, ``<type>:<name>`` (``User:alice``)."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


#: the principal of an unauthenticated connection (Kafka's KafkaPrincipal.ANONYMOUS)
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class PrincipalMappingError(ValueError):
    """Bad ``ssl.principal.mapping.rules`` (at start-up), or a subject no rule matches."""


class _Rule(NamedTuple):
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str  # "", "L", "U"
    template: str = ""  # the replacement as a Python match template


_GROUP_REF = re.compile(r"\$(\d+)")


def _parse_rules(text: str) -> list[_Rule]:
    rules: list[_Rule] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\n,":
            i += 1
        if i >= n:
            break
        if text.startswith("DEFAULT", i):
            rules.append(_Rule(None, "", ""))
            i += len("DEFAULT")
            continue
        if not text.startswith("RULE:", i):
            raise PrincipalMappingError(f"ssl.principal.mapping.rules: invalid rule at {text[i:]!r}"
                                        " (expected DEFAULT or RULE:pattern/replacement/[LU])")
        i += len("RULE:")
        fields: list[str] = []
        for _ in range(2):  # the pattern, then the replacement, each ended by an unescaped /
            buf: list[str] = []
            while i < n and text[i] != "/":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "/":
                    buf.append("/")
                    i += 2
                    continue
                buf.append(text[i])
                i += 1
            if i >= n:
                raise PrincipalMappingError(f"ssl.principal.mapping.rules: unterminated rule {text!r}")
            fields.append("".join(buf))
            i += 1
        case = ""
        if i < n and text[i] in "LU":
            case = text[i]
            i += 1
        try:
            pattern = re.compile(fields[0])
        except re.error as e:
            raise PrincipalMappingError(f"ssl.principal.mapping.rules: bad pattern {fields[0]!r}: {e}") from None
        template = _GROUP_REF.sub(r"\\g<\1>", fields[1].replace("\\", "\\\\"))  # $1 -> \g<1>
        rules.append(_Rule(pattern, fields[1], case, template))
    if not rules:
        raise PrincipalMappingError("ssl.principal.mapping.rules: no rule given (DEFAULT keeps the whole subject)")
    return rules


class SslPrincipalMapper:
    """``name(subject)`` -> the principal name the first matching rule gives."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules = _parse_rules(rules)

    def name(self, subject: str) -> str:
        for rule in self.rules:
            if rule.pattern is None:
                return subject
            m = rule.pattern.fullmatch(subject)
            if m is None:
                continue
            out = m.expand(rule.template)
            return out.lower() if rule.case == "L" else out.upper() if rule.case == "U" else out
        raise PrincipalMappingError(f"No rules apply to {subject}, rules {self.rules_text()}")

    def rules_text(self) -> str:
        return ",".join("DEFAULT" if r.pattern is None else f"RULE:{r.pattern.pattern}/{r.replacement}/{r.case}"
                        for r in self.rules)


def certificate_subject(der: bytes) -> str:
    """The RFC 2253 subject of a DER certificate (most specific name first)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
