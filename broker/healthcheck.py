"""``minibroker healthcheck``: exit 0 if the broker on this host serves, 1 if not (the
container image's HEALTHCHECK).

With a metrics port (``--metrics-port``, else ``$MINIBROKER_METRICS_PORT``): ``GET /healthz``
must answer 200, which it does once the logs (and anything else loaded at start-up) are loaded.
Without one: an ApiVersions v0 request to the Kafka port (``--port``, else
``$MINIBROKER_PORT``, else 9092) must come back with its correlation id and error code 0 — a
bare TCP connect would also pass while the broker is stuck in its event loop. Everything on
127.0.0.1, within ``--timeout`` seconds (4).
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys

HELP = "exit 0 if the local broker answers (/healthz with a metrics port, else ApiVersions)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="Kafka port (default $MINIBROKER_PORT or 9092)")
    parser.add_argument("--metrics-port", type=int, help="metrics listener port (default $MINIBROKER_METRICS_PORT)")
    parser.add_argument("--timeout", type=float, default=4.0, help="seconds (default 4)")


def _healthz(port: int, timeout: float) -> bool:
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout) as r:
            return r.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _api_versions(port: int, timeout: float) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            # size, api_key 18, version 0, correlation id 7, client id "hc"
            s.sendall(struct.pack(">ihhih2s", 12, 18, 0, 7, 2, b"hc"))
            head = s.makefile("rb").read(10)
    except OSError:
        return False
    if len(head) < 10:
        return False
    _, corr, err = struct.unpack(">iih", head)
    return corr == 7 and err == 0


def run(args: argparse.Namespace) -> int:
    metrics_port = args.metrics_port
    if metrics_port is None and os.environ.get("MINIBROKER_METRICS_PORT"):
        metrics_port = int(os.environ["MINIBROKER_METRICS_PORT"])
    if metrics_port is not None:
        ok = _healthz(metrics_port, args.timeout)
    else:
        port = args.port if args.port is not None else int(os.environ.get("MINIBROKER_PORT") or 9092)
        ok = _api_versions(port, args.timeout)
    if not ok:
        print("minibroker: unhealthy", file=sys.stderr)
    return 0 if ok else 1
