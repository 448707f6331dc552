"""broker/security/principal.py: ``ssl.principal.mapping.rules`` with the examples of Kafka's
documentation and SslPrincipalMapperTest, invalid rules, no match, an escaped slash, and the
RFC 2253 subject of a real certificate."""

from __future__ import annotations

import pytest
import trustme
from cryptography import x509

from broker.security.principal import (
    ANONYMOUS,
    KafkaPrincipal,
    PrincipalMappingError,
    SslPrincipalMapper,
    certificate_subject,
)

SERVICE = "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
ADMIN = "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"


def test_principal_strings() -> None:
    assert str(KafkaPrincipal("User", "alice")) == "User:alice"
    assert str(ANONYMOUS) == "User:ANONYMOUS"


def test_kafka_documentation_examples() -> None:
    rules = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
             "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
             "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,"
             "DEFAULT")
    m = SslPrincipalMapper(rules)
    assert m.name(SERVICE) == "serviceuser"
    assert m.name(ADMIN) == "adminuser@admin"
    assert m.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"  # DEFAULT


def test_upper_case_rule() -> None:
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U")
    assert m.name(ADMIN) == "ADMINUSER@ADMIN"


def test_default_alone_keeps_the_whole_subject() -> None:
    assert SslPrincipalMapper("DEFAULT").name(SERVICE) == SERVICE
    assert SslPrincipalMapper().name("CN=x") == "CN=x"


def test_first_matching_rule_wins_and_the_pattern_matches_the_whole_subject() -> None:
    m = SslPrincipalMapper("RULE:CN=(.*?),OU=Admin/$1/,RULE:^CN=([^,]*),.*$/other-$1/")
    # the first pattern is not anchored but must match the whole subject: it does not
    assert m.name(ADMIN) == "other-adminUser"


def test_no_rule_matches_is_an_error_naming_the_subject() -> None:
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(PrincipalMappingError, match=r"No rules apply to CN=adminUser,OU=Admin"):
        m.name(ADMIN)


def test_comma_with_whitespace_in_a_name() -> None:
    # SslPrincipalMapperTest.testCommaWithWhitespace
    m = SslPrincipalMapper(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
    assert m.name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz") == r"Tkac\, Adam"


def test_escaped_slash_in_pattern_and_replacement() -> None:
    m = SslPrincipalMapper(r"RULE:^CN=(.*?)\/(.*?),.*$/$2\/$1/L")
    assert m.name("CN=team/Alice,O=x") == "alice/team"


def test_rules_with_whitespace_and_newlines_between() -> None:
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/ ,\n  DEFAULT")
    assert m.name(SERVICE) == "serviceuser" and m.name(ADMIN) == ADMIN
    assert m.rules_text() == "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT"


@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
    "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/LU",
    "RULE:^CN=(.*?/$1/",  # a pattern that does not compile
    "", " , ",
])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(PrincipalMappingError, match="ssl.principal.mapping.rules"):
        SslPrincipalMapper(rules)


def test_certificate_subject_is_rfc2253_most_specific_first() -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("alice@clients", common_name="alice", organization_unit_name="clients",
                         organization_name="minibroker")
    der = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes()).public_bytes(
        __import__("cryptography.hazmat.primitives.serialization", fromlist=["Encoding"]).Encoding.DER)
    subject = certificate_subject(der)
    assert subject.startswith("CN=alice,")
    assert "OU=clients" in subject and "O=minibroker" in subject
    assert SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/,DEFAULT").name(subject) == "alice"
