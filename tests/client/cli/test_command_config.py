"""``--command-config FILE`` on every client command (client/cli/): Kafka's client properties
become the clients' security options; a bad file is one line on stderr and exit status 1."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import client.cli
from client.cli import client_options, run_client

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";'


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _parsers(sub)
    return out


@pytest.mark.parametrize("name", [i.name for i in pkgutil.iter_modules(client.cli.__path__)])
def test_every_command_takes_command_config(name: str) -> None:
    module = importlib.import_module(f"client.cli.{name}")
    parser = argparse.ArgumentParser(prog=name)
    module.add_arguments(parser)
    leaves = [p for p in _parsers(parser) if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)]
    for p in leaves:
        assert any("--command-config" in a.option_strings for a in p._actions), (name, p.prog)


def _args(path: Path) -> argparse.Namespace:
    return argparse.Namespace(request_timeout_ms=5000, command_config=str(path), bootstrap_server="127.0.0.1:1")


def test_client_options_from_a_properties_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    f"sasl.jaas.config={JAAS}\nclient.id=x\n")
    args = _args(path)
    opts = client_options(args)
    assert opts == {"request_timeout_ms": 5000, "connect_timeout_ms": 5000, "security_protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice",
                    "sasl_plain_password": "alice-secret"}
    assert client_options(args) == opts
    err = capsys.readouterr().err
    assert "not used here: client.id" in err and "alice-secret" not in err


@pytest.mark.parametrize("content,match", [(None, "No such file"),
                                           ("security.protocol=SASL_SSL\n", "ssl_context|sasl"),
                                           ("security.protocol=SSL\nssl.truststore.location=/nonexistent.pem\n"
                                            "ssl.truststore.type=PEM\n", "No such file")])
def test_bad_command_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
                                        match: str) -> None:
    path = tmp_path / "client.properties"
    if content is not None:
        path.write_text(content)
    args = _args(path)

    async def main() -> int:
        client_options(args)
        return 0

    assert run_client("topics", args, main) == 1
    err = capsys.readouterr().err
    assert err.startswith("minibroker topics: error: --command-config ") and err.count("\n") == 1
    assert re.search(match, err), err
