"""The 2-minute soak of scripts/chaos.py (the README gives the command for a long one): two
idempotent producers with acks=all and an admin client against a broker SIGKILLed every ~6 s;
no acknowledged record may be lost or reordered, and no record may be in the log twice (the
broker recognises retries of batches it wrote before a kill, from the rebuilt producer state)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.broker_process import REPO


@pytest.mark.slow
def test_two_minutes_of_sigkills_lose_no_acknowledged_record_and_write_none_twice(tmp_path) -> None:
    out = tmp_path / "chaos.json"
    proc = subprocess.run([sys.executable, "scripts/chaos.py", "--duration", "120", "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["kills"] >= 10
    assert result["idempotence"] is True
    assert result["lost"] == 0 and result["reordered"] == 0 and result["offset_gaps"] == 0
    assert result["duplicates"] == 0, proc.stderr[-3000:]
    assert all(n > 1000 for n in result["acknowledged"].values()), result
