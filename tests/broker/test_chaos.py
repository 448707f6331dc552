"""The 2-minute soak of scripts/chaos.py (docs/pages/benchmarks.md gives the command for a long one): two
idempotent producers with acks=all, a consumer group committing synchronously, a transactional
producer with read_committed readers and an admin client against a broker SIGKILLed every ~6 s,
with a bit of one ``__consumer_offsets`` batch flipped before every 5th restart.

Checked: no acknowledged record lost or reordered and none in the log twice (the broker
recognises retries of batches it wrote before a kill, from the rebuilt producer state); no
acknowledged commit lost or moved backwards (beyond the one a damaged batch held, counted
apart) and the final committed offsets equal the last acknowledged commits; committed
transactions read exactly once by read_committed, aborted ones never, none left hanging (the
last stable offset reaches the high watermark); the broker starts after every damage and its
log names the damaged batch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.broker_process import REPO


@pytest.mark.slow
def test_two_minutes_of_sigkills_lose_no_acknowledged_record_commit_or_transaction(tmp_path) -> None:
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
    # the group's commits
    assert result["commits_acknowledged"] >= 100, result
    assert result["commit_checks"] == result["kills"] and result["commit_checks_unanswered"] == 0, result
    assert result["commits_lost"] == 0 and result["commits_moved_backwards"] == 0, proc.stderr[-3000:]
    assert result["final_commits_mismatched"] == 0, proc.stderr[-3000:]
    # transactions
    assert result["transactions_committed"] >= 100 and result["transactions_aborted_on_purpose"] >= 20, result
    assert result["transactional_records_missing"] == 0 and result["transactional_records_duplicated"] == 0, result
    assert result["aborted_records_read"] == 0 and result["transactions_partially_visible"] == 0, result
    assert result["stray_transactional_records"] == 0, result
    assert result["live_read_committed_aborted_read"] == 0 and result["live_read_committed_duplicates"] == 0, result
    assert result["read_committed_partitions_short_of_lso"] == 0, result
    assert result["hanging_transactions"] == 0, result
    # damage in __consumer_offsets
    assert result["corruptions_injected"] >= 2, result
    assert result["corruptions_not_named_in_log"] == 0 and result["start_failures"] == 0, proc.stderr[-3000:]
