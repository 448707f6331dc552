"""The copy-paste set-up of docs/pages/security.md works as written: its openssl commands make
the certificates, its ``secure.properties`` and ``minibroker serve --add-scram`` start a broker
with a SASL_SSL listener, and its kcat command, its Python block and its ``client.properties``
(through ``--command-config``) each log in with SCRAM-SHA-512 over TLS. Only the ports change
(free ones instead of 9092 and 9094) and the listener binds 127.0.0.1 (the test harness's)."""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from broker.testing.process import BrokerProcess
from client import Consumer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "pages" / "security.md"
REPO = PAGE.parents[2]


def _blocks(lang: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the page's certificates are made with openssl")
def test_the_secure_set_up_works_as_written(tmp_path: Path) -> None:
    certs, serve, kcat = _blocks("bash")
    server_props, client_props = _blocks("properties")
    (python_block,) = _blocks("python")
    tls, plain = _free_port(), _free_port()

    def ports(text: str) -> str:
        return text.replace(":9094", f":{tls}").replace(":9092", f":{plain}")

    subprocess.run(["bash", "-euc", certs], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    assert (tmp_path / "broker.pem").read_text().count("-----BEGIN") == 2
    (tmp_path / "secure.properties").write_text(ports(server_props).replace("broker.pem", str(tmp_path / "broker.pem")))
    argv = shlex.split(serve.replace("\\\n", " "))
    assert argv[:4] == ["minibroker", "serve", "--config", "secure.properties"]
    broker = BrokerProcess(str(tmp_path / "data"), port=tls,
                           extra_args=["--config", str(tmp_path / "secure.properties"), *argv[4:]])
    broker.start()
    try:
        if shutil.which("kcat"):
            out = subprocess.run(shlex.split(ports(kcat).replace("\\\n", " ").replace("ca.pem", str(tmp_path / "ca.pem"))),
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert f"localhost:{tls}" in out.stdout and "1 brokers" in out.stdout
        namespace: dict[str, object] = {}
        exec(compile(ports(python_block).replace('"ca.pem"', repr(str(tmp_path / "ca.pem"))), "security.md", "exec"),
             namespace)
        asyncio.run(namespace["main"]())  # type: ignore[operator]

        async def read_back() -> list[bytes]:
            async with Consumer(bootstrap_servers=f"127.0.0.1:{plain}", auto_offset_reset="earliest") as c:
                c.assign([("events", 0)])
                got = await c.getmany(timeout_ms=5000)
                return [r.value for records in got.values() for r in records]

        assert asyncio.run(read_back()) == [b"hello over TLS"]
        (tmp_path / "client.properties").write_text(client_props.replace("ca.pem", str(tmp_path / "ca.pem")))
        out = subprocess.run([sys.executable, "-m", "broker", "topics", "--list", "--bootstrap-server",
                              f"localhost:{tls}", "--command-config", str(tmp_path / "client.properties")],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "events" in out.stdout.split()
    finally:
        assert broker.stop() == 0
    assert "alice-secret" not in broker.log_text()
