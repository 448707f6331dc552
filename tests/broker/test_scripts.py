"""The README's `scripts/run`: installs (or updates) the venv and starts the broker with the
arguments it is given."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.broker_process import REPO


@pytest.mark.slow
def test_scripts_run_starts_the_broker_with_its_arguments(tmp_path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen([os.path.join(REPO, "scripts", "run"), "--port", "0", "--data-dir", str(data)],
                            cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("minibroker listening on 127.0.0.1:"):
                break
        else:
            raise AssertionError("scripts/run did not start the broker:\n" + "".join(lines))
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (data / ".kafka_cleanshutdown").exists()
