"""Kafka's ``sasl.jaas.config`` value: one JAAS login module entry.

Syntax (Java's JAAS configuration file, one entry)::

    <LoginModuleClass> <flag> name="value" name2=value2 ... ;

``flag`` is required, requisite, sufficient or optional; values may be double-quoted (``\\"``
and ``\\\\`` escape inside quotes) or bare words. The entry ends with ``;``. A broker reads it
per listener and mechanism: ``listener.name.sasl_ssl.plain.sasl.jaas.config=...``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["JaasEntry", "JaasError", "parse_jaas_config"]

_FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasError(ValueError):
    """A ``sasl.jaas.config`` that does not parse (the message never repeats option values)."""


class JaasEntry(NamedTuple):
    login_module: str
    flag: str
    options: dict[str, str]


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Words, ``=`` and ``;`` as tokens; (token, was_quoted)."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            out.append((c, False))
            i += 1
        elif c == '"':
            buf: list[str] = []
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(text[i])
                i += 1
            if i >= n:
                raise JaasError("sasl.jaas.config: unterminated quoted value")
            out.append(("".join(buf), True))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '=;"':
                j += 1
            out.append((text[i:j], False))
            i = j
    return out


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login module entry of ``text``; JaasError if it is not exactly one entry."""
    tokens = _tokens(text)
    if len(tokens) < 3:
        raise JaasError("sasl.jaas.config: expected '<LoginModule> <flag> [name=value ...];'")
    (module, _), (flag, _) = tokens[0], tokens[1]
    if flag.lower() not in _FLAGS:
        raise JaasError(f"sasl.jaas.config: login module control flag {flag!r} is not one of {', '.join(_FLAGS)}")
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i] != (";", False):
        # an unquoted "=" or ";" is punctuation, never a name or a value (``user_a=;`` has no value)
        if (i + 2 >= len(tokens) or tokens[i + 1] != ("=", False) or tokens[i] == ("=", False)
                or tokens[i + 2] in (("=", False), (";", False))):
            raise JaasError(f"sasl.jaas.config: expected name=value after {tokens[i][0]!r}")
        options[tokens[i][0]] = tokens[i + 2][0]
        i += 3
    if i >= len(tokens):
        raise JaasError("sasl.jaas.config: the entry must end with ';'")
    if i + 1 != len(tokens):
        raise JaasError("sasl.jaas.config: exactly one login module entry is expected")
    return JaasEntry(module, flag.lower(), options)
