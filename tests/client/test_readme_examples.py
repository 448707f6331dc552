"""README.md's "Python client" section: every ```python block runs, in order, against a live
broker (the address 127.0.0.1:9092 in the examples replaced by the test broker's), so the
documentation keeps matching the client's behaviour."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")


def python_client_blocks() -> list[str]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Python client\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, 'README.md has no "## Python client" section'
    return re.findall(r"^```python\n(.*?)^```", m.group(1), re.S | re.M)


def test_readme_has_examples() -> None:
    blocks = python_client_blocks()
    assert len(blocks) >= 4
    joined = "\n".join(blocks)
    for name in ("Producer", "Consumer", "Admin", "SyncConsumer", "getbatches", "send_nowait", "list_offsets"):
        assert name in joined, f"no README example uses {name}"


def test_readme_examples_run(broker) -> None:
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for i, code in enumerate(python_client_blocks()):
        code = code.replace("127.0.0.1:9092", broker.bootstrap)
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=60)
        if proc.returncode != 0:
            pytest.fail(f"README Python client example #{i + 1} failed ({proc.returncode}):\n{code}\n"
                        f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
