"""Clients of a broker's HTTP endpoints (standard library only): the fault injection control
listener and the metrics listener."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from .faults import Fault, FaultControl

__all__ = ["RemoteFaults", "http_get", "parse_metrics"]


def http_get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class RemoteFaults(FaultControl):
    """Fault rules of a broker in another process, set through its ``fault.injection.listener``
    (``POST /faults`` one rule as JSON, ``DELETE /faults``, ``GET /faults``)."""

    def __init__(self, host: str, port: int) -> None:
        self.url = f"http://{host}:{port}/faults"

    def _call(self, method: str, body: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            result: list[dict[str, Any]] = json.loads(r.read())
            return result

    def add(self, fault: Fault) -> None:
        d = fault.to_json()
        d.pop("hits")
        self._call("POST", d)

    def clear(self) -> None:
        self._call("DELETE")

    def rules(self) -> list[dict[str, Any]]:
        return self._call("GET")


def parse_metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """{(sample name, frozenset of label pairs): value} of a Prometheus text exposition."""
    from prometheus_client.parser import text_string_to_metric_families
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out
