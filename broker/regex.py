"""Regular expressions in Kafka 4's syntax: RE2 (Kafka uses Google's RE2/J for the patterns
clients send: ListTransactions' ``transactional_id_pattern``, KIP-848's
``SubscribedTopicRegex``), so a pattern accepted or refused here is accepted or refused by
Kafka, and matching takes time linear in the input whatever the pattern (no catastrophic
backtracking from a client's pattern).

``compile_pattern`` raises ``InvalidRegularExpression`` (Kafka's INVALID_REGULAR_EXPRESSION,
128) with RE2's reason; matches are whole-string (Java's ``Matcher.matches``)."""

from __future__ import annotations

from typing import Any, Protocol

import re2

__all__ = ["InvalidRegularExpression", "compile_pattern", "Pattern"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr


class Pattern(Protocol):
    """A compiled pattern: ``fullmatch(s)`` is truthy when the whole of ``s`` matches."""

    def fullmatch(self, text: str) -> Any: ...


class InvalidRegularExpression(ValueError):
    """A pattern RE2 refuses; the message is RE2's reason."""


def compile_pattern(pattern: str) -> Pattern:
    try:
        compiled: Pattern = re2.compile(pattern, _OPTIONS)
        return compiled
    except re2.error as e:
        reason = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise InvalidRegularExpression(f"Invalid regular expression {pattern!r}: {reason}") from None
