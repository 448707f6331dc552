"""broker/security/jaas.py: one ``sasl.jaas.config`` entry — quoted values with escapes, bare
words, several options, and the errors (no ``;``, two entries, a bad flag, a missing value)
whose messages never repeat an option's value."""

from __future__ import annotations

import pytest

from broker.security.jaas import JaasEntry, JaasError, parse_jaas_config

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_plain_entry_with_several_users() -> None:
    entry = parse_jaas_config(f'{PLAIN} required username="admin" password="admin-secret"'
                              ' user_admin="admin-secret" user_alice="alice-secret";')
    assert entry == JaasEntry(PLAIN, "required", {"username": "admin", "password": "admin-secret",
                                                  "user_admin": "admin-secret", "user_alice": "alice-secret"})


def test_quotes_escapes_and_bare_words() -> None:
    entry = parse_jaas_config(f'{PLAIN}  Required\n  user_a="with \\"quotes\\" and \\\\ backslash"\n'
                              '  bare=word  spaced = "a b;c=d" empty="" ;  ')
    assert entry.flag == "required"  # case-insensitive
    assert entry.options == {"user_a": 'with "quotes" and \\ backslash', "bare": "word", "spaced": "a b;c=d",
                             "empty": ""}


def test_entry_without_options() -> None:
    entry = parse_jaas_config("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;")
    assert entry.options == {} and entry.flag == "required"


@pytest.mark.parametrize("flag", ["required", "requisite", "sufficient", "optional"])
def test_every_flag(flag: str) -> None:
    assert parse_jaas_config(f"{PLAIN} {flag};").flag == flag


@pytest.mark.parametrize("text, message", [
    (f'{PLAIN} required user_a="secret-value"', "must end with ';'"),
    (f'{PLAIN} required user_a="secret-value"; {PLAIN} required;', "exactly one login module entry"),
    (f'{PLAIN} mandatory user_a="secret-value";', "control flag 'mandatory' is not one of"),
    (f'{PLAIN} required user_a "secret-value";', "expected name=value after 'user_a'"),
    (f'{PLAIN} required user_a=;', "expected name=value after 'user_a'"),
    (f'{PLAIN} required user_a="secret-value;', "unterminated quoted value"),
    (f"{PLAIN}", "expected '<LoginModule> <flag>"),
    ("", "expected '<LoginModule> <flag>"),
])
def test_errors(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message) as e:
        parse_jaas_config(text)
    assert "secret-value" not in str(e.value)


def test_punctuation_is_never_a_value() -> None:
    # was: ``user_a=;`` took ";" as user_a's value and then complained about the missing ';'
    with pytest.raises(JaasError, match="expected name=value after 'user_a'"):
        parse_jaas_config(f"{PLAIN} required user_a=; ;")
    with pytest.raises(JaasError, match="expected name=value after '='"):
        parse_jaas_config(f"{PLAIN} required = = x;")
    assert parse_jaas_config(f'{PLAIN} required user_a=";";').options == {"user_a": ";"}
