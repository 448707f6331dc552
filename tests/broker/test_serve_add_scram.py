"""``minibroker serve --add-scram`` (broker/serve.py, Broker's ``scram_seeds``): credentials in
kafka-storage format's syntax are stored before the listener opens and replace an existing
one; a malformed value, or a corrupt credentials file, stops start-up with one line."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

from broker.security.scram_credentials import CREDENTIALS_FILE, ScramCredentialStore
from client import Admin
from client.admin import ScramCredentialInfo, ScramMechanism
from client.security.scram import make_credential
from tests.broker_process import REPO, BrokerProcess

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def _serve(data: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir", data, *args],
                          cwd=REPO, capture_output=True, text=True, timeout=30, check=False)


async def test_seeded_credentials_are_there_when_the_listener_opens(tmp_path) -> None:
    data = str(tmp_path / "data")
    salt = base64.b64encode(b"pepper").decode()
    seeds = ["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
             "--add-scram", f"SCRAM-SHA-512=[name=alice,password=other,iterations=8192,salt={salt}]",
             "--add-scram", "SCRAM-SHA-256=[name=bob,password=bob-secret,iterations=16384]"]
    with BrokerProcess(data, extra_args=seeds).start() as b:
        async with Admin(b.bootstrap) as admin:  # the first request already sees them
            described = await admin.describe_user_scram_credentials()
        assert {u: d.credential_infos for u, d in described.items()} == {
            "alice": [ScramCredentialInfo(SHA256, 4096), ScramCredentialInfo(SHA512, 8192)],
            "bob": [ScramCredentialInfo(SHA256, 16384)]}
        assert "alice-secret" not in b.log_text() and "alice (SCRAM-SHA-256)" in b.log_text()
    store = ScramCredentialStore(data)
    assert store.get("alice", "SCRAM-SHA-512") == make_credential("SCRAM-SHA-512", b"other", b"pepper", 8192)
    first = store.get("alice", "SCRAM-SHA-256")
    assert first == make_credential("SCRAM-SHA-256", b"alice-secret", first.salt, 4096)

    # seeding again replaces that user's credential for that mechanism, and keeps the others
    with BrokerProcess(data, extra_args=["--add-scram", "SCRAM-SHA-256=[name=alice,password=new,iterations=5000]"]
                       ).start():
        pass
    store = ScramCredentialStore(data)
    replaced = store.get("alice", "SCRAM-SHA-256")
    assert replaced == make_credential("SCRAM-SHA-256", b"new", replaced.salt, 5000)
    assert store.describe(None)["bob"] == [("SCRAM-SHA-256", 16384)] and len(store) == 3


def test_a_malformed_add_scram_is_one_line_and_exit_2(tmp_path) -> None:
    data = str(tmp_path / "data")
    for value, message in [
        ("SCRAM-SHA-256=[name=alice]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
        ("SCRAM-SHA-1=[name=alice,password=x]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
        ("SCRAM-SHA-256=[name=alice,password=x,iterations=99]", "The 'iterations' value must be >= 4096"),
        ("SCRAM-SHA-256=[name=alice,password=hunter2,secret]", "No equals sign found in a SCRAM component"),
    ]:
        proc = _serve(data, "--add-scram", value)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"minibroker: configuration error: --add-scram: {message}"), proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and "hunter2" not in proc.stderr and "Traceback" not in proc.stderr
    assert not os.path.exists(os.path.join(data, CREDENTIALS_FILE))


def test_a_corrupt_credentials_file_refuses_to_start(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / CREDENTIALS_FILE).write_text('{"version": 1, "credentials": [{"user": "alice"')
    proc = _serve(str(data), "--log-level", "WARNING")
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("minibroker:")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith(f"minibroker: cannot start: the SCRAM credentials file {data / CREDENTIALS_FILE}"
                               " is corrupt")
    # the file is left for the operator: a broker never replaces credentials it could not read
    assert (data / CREDENTIALS_FILE).read_text() == '{"version": 1, "credentials": [{"user": "alice"'
