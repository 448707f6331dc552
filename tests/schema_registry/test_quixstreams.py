"""quixstreams' schema-registry serializers (Avro, JSON, Protobuf with
``SchemaRegistryClientConfig``) round-trip through minibroker and its registry.

quixstreams pins confluent-kafka below 2.13, older than the one the other tests need
(ShareConsumer), so it lives in its own virtualenv, ``.venv-quixstreams`` (scripts/test creates
it from tests/schema_registry/quixstreams-requirements.txt), and runs in a subprocess
(quix_worker.py). Without that virtualenv the test skips and says how to make it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from broker.testing import BrokerProcess

from .conftest import Registry

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("QUIXSTREAMS_PYTHON", ROOT / ".venv-quixstreams" / "bin" / "python"))
WORKER = Path(__file__).with_name("quix_worker.py")


@pytest.mark.skipif(not PYTHON.exists(), reason=f"no {PYTHON}: run scripts/test, or python -m venv .venv-quixstreams "
                    "&& .venv-quixstreams/bin/pip install -r tests/schema_registry/quixstreams-requirements.txt")
def test_quixstreams_serializers_round_trip(registry_broker: BrokerProcess, registry: Registry) -> None:
    prefix = f"quix-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run([str(PYTHON), str(WORKER), registry_broker.bootstrap, registry.url, prefix],
                          capture_output=True, text=True, timeout=120, cwd=str(WORKER.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = [{"sensor": f"s{i}", "value": i + 0.5} for i in range(5)]
    for fmt, schema_type in (("avro", "AVRO"), ("json", "JSON"), ("protobuf", "PROTOBUF")):
        status, latest = registry.get(f"/subjects/{prefix}-{fmt}-value/versions/latest")
        assert status == 200 and latest.get("schemaType", "AVRO") == schema_type, latest
        assert sorted(out[fmt], key=lambda r: r["value"]["sensor"]) == [
            {"schema_id": latest["id"], "value": v} for v in expected], fmt
    assert sys.executable != str(PYTHON)
