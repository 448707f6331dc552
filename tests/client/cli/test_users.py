"""``minibroker users`` (client/cli/users.py) run as a real subprocess against a broker process:
add, replace, describe and delete SCRAM credentials with kafka-configs.sh's output, the password
from each source and never printed, and the errors a user sees."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from broker.security.scram_credentials import ScramCredentialStore
from client.security.scram import make_credential
from tests.broker_process import REPO


def mb(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "MINIBROKER_SCRAM_PASSWORD"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "broker", "users", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=30, check=False, env=full_env, stdin=subprocess.DEVNULL)


def test_add_describe_delete_round_trip(broker, tmp_path) -> None:
    bs = ["--bootstrap-server", broker.bootstrap]
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    r = mb("--add-scram", alice, "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", "--password", "s3cret-one",
           *bs)
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for user {alice}.\n"), r.stderr
    r = mb("--add-scram", alice, "--mechanism", "SCRAM-SHA-256", *bs, env={"MINIBROKER_SCRAM_PASSWORD": "s3cret-two"})
    assert r.returncode == 0, r.stderr
    secret_file = tmp_path / "pw"
    secret_file.write_text("s3cret-three\nignored\n")
    r = mb("--add-scram", bob, "--mechanism", "SCRAM-SHA-256", "--password-file", str(secret_file), *bs)
    assert r.returncode == 0, r.stderr

    r = mb("--describe", "--user", alice, *bs)
    assert r.returncode == 0 and r.stdout == (f"SCRAM credential configs for user-principal '{alice}' are"
                                              " SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192\n")
    every = mb("--describe", *bs).stdout.splitlines()
    assert every == sorted(every) and len(every) == 2
    assert f"SCRAM credential configs for user-principal '{bob}' are SCRAM-SHA-256=iterations=4096" in every
    assert mb("--describe", "--user", "nobody", *bs).stdout == ""  # as kafka-configs.sh: skipped

    r = mb("--delete-scram", alice, "--mechanism", "SCRAM-SHA-512", *bs)
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for user {alice}.\n")
    assert mb("--describe", "--user", alice, *bs).stdout.endswith("are SCRAM-SHA-256=iterations=4096\n")
    r = mb("--delete-scram", alice, "--mechanism", "SCRAM-SHA-512", *bs)
    assert r.returncode == 1 and "Attempt to delete a user credential that does not exist" in r.stderr
    r = mb("--add-scram", alice, "--mechanism", "SCRAM-SHA-256", "--iterations", "100", "--password", "x", *bs)
    assert r.returncode == 1 and "Too few iterations" in r.stderr
    assert not any(secret in out for secret in ("s3cret", "x") for out in (r.stdout, r.stderr.split(": ", 1)[1]))

    broker.stop()
    store = ScramCredentialStore(broker.data_dir)
    bob_cred = store.get(bob, "SCRAM-SHA-256")
    assert bob_cred is not None
    assert bob_cred == make_credential("SCRAM-SHA-256", b"s3cret-three", bob_cred.salt, 4096)
    alice_cred = store.get(alice, "SCRAM-SHA-256")
    assert alice_cred == make_credential("SCRAM-SHA-256", b"s3cret-two", alice_cred.salt, 4096)
    broker.start()


def test_command_line_errors() -> None:
    bs = ["--bootstrap-server", "127.0.0.1:1"]
    assert mb(*bs).returncode == 2  # an action is required
    assert mb("--describe", "--add-scram", "a", *bs).returncode == 2
    r = mb("--add-scram", "a", "--password", "x", *bs)
    assert r.returncode == 1 and "--mechanism is required" in r.stderr
    r = mb("--add-scram", "a", "--mechanism", "SCRAM-SHA-256", *bs)  # no password and no terminal to ask on
    assert r.returncode == 1 and "no password" in r.stderr
    r = mb("--add-scram", "a", "--mechanism", "SCRAM-SHA-1", "--password", "x", *bs)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = mb("--add-scram", "a", "--user", "b", "--mechanism", "SCRAM-SHA-256", "--password", "x", *bs)
    assert r.returncode == 1 and "--user goes with --describe" in r.stderr
    r = mb("--describe", *bs)
    assert r.returncode == 1 and "cannot reach" in r.stderr
