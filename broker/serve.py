"""``minibroker serve``: run the broker until SIGTERM/SIGINT, then shut down cleanly (exit 0).

A start that fails prints one line on stderr, never a traceback: ``minibroker: configuration
error: ...`` (a bad property, properties file or flag, a malformed ``--add-scram``; exit status
2), ``minibroker: cannot start: ...`` (a data directory that cannot be used or belongs to
another node, a corrupt SCRAM credentials file: 2; a listener that cannot bind, another I/O
error: 1).

``--add-scram`` (repeatable) stores SCRAM credentials in the data directory before the listener
opens, with ``kafka-storage format --add-scram``'s syntax
(``SCRAM-SHA-256=[name=alice,password=alice-secret]``, see
broker/security/scram_credentials.py's ``parse_add_scram``).

The first log line says what runs (``broker.build_info``):
``minibroker 0.1.0 (python=3.11.7 event_loop=uvloop codec=c record_future=c)``, followed by one
WARNING when a C fast path is on the pure-Python fallback, saying why and how to get it
(``_BuildInfoFirst``: logged before the broker's first record, or once it is ready)."""

from __future__ import annotations

import argparse
import logging
import sys
import threading

HELP = "run the broker (Kafka wire protocol), by default on 127.0.0.1:9092 with data in ./data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="server.properties-style file (Kafka's property names)")
    parser.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                        help="set one property, e.g. --override num.partitions=3 (repeatable)")
    parser.add_argument("--host", help="listen address of the first listener (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port of the first listener (default 9092; 0 = any free port)")
    parser.add_argument("--data-dir", metavar="DIR", help="data directory (sets log.dirs; default ./data)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve Prometheus metrics and /healthz on http://127.0.0.1:PORT (sets metrics.listeners;"
                             " off by default; 0 = any free port; a non-loopback address needs metrics.listeners)")
    parser.add_argument("--schema-registry", action="store_true",
                        help="serve the built-in schema registry (Confluent's REST API) on http://127.0.0.1:8081"
                             " (sets schema.registry.listeners unless it is set)")
    parser.add_argument("--add-scram", metavar="MECHANISM=[name=USER,password=PASSWORD]", action="append",
                        default=[], help="store a SCRAM credential before the listener opens, as kafka-storage format"
                                         " --add-scram (repeatable; also iterations=N, salt=BASE64, or"
                                         " saltedpassword=BASE64 with salt; replaces that user's credential)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="stderr log level (default INFO)")


class _BuildInfoFirst(logging.Filter):
    """Logs ``broker.build_info``'s lines (the summary at INFO, the fallback WARNING if any) just
    before the first record that reaches ``root``'s handlers, or at ``flush()`` (the broker is
    ready), whichever comes first.

    Why not simply log them at start: a start that fails before the broker logs anything (a bad
    property, an unusable data directory) is one line on stderr, and stays so. The cost: a
    start that fails that early does not say which paths it would have run (``minibroker
    --version`` does), and one attribute test per record until ``flush()`` removes the filter
    (not from inside ``filter``: the handler is iterating over its filters then)."""

    def __init__(self, root: logging.Logger) -> None:
        super().__init__()
        self.handlers = list(root.handlers)
        self.lock = threading.Lock()  # the log cleaner's thread may log first
        self.done = False
        for h in self.handlers:
            h.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.done:
            self._log()
        return True

    def flush(self) -> None:
        self._log()
        for h in self.handlers:
            h.removeFilter(self)

    def _log(self) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True  # before logging: these records pass through filter() too
        from .build_info import log_build_info
        log_build_info(logging.getLogger("broker"))


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from .broker import Broker
    from .config import BrokerConfig, ConfigError
    from .features import FeatureFileError
    from .quota import ClientQuotaFileError
    from .security.scram_credentials import ScramCredentialFileError, parse_add_scram
    from .storage.errors import InconsistentMetaPropertiesError, LogDirError

    logging.basicConfig(level=getattr(logging, args.log_level), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    build_lines = _BuildInfoFirst(logging.getLogger())
    try:
        cfg = BrokerConfig.load(args.config, args.override)
        if args.host is not None or args.port is not None:  # they change the first listener
            first, *rest = cfg.endpoints
            first = first._replace(host=args.host if args.host is not None else first.host,
                                   port=args.port if args.port is not None else first.port)
            cfg.set("listeners", ",".join(str(e) for e in (first, *rest)))
        if args.metrics_port is not None:
            cfg.set("metrics.listeners", f"http://127.0.0.1:{args.metrics_port}")
        if args.schema_registry and not cfg.props.get("schema.registry.listeners", "").strip():
            cfg.set("schema.registry.listeners", "http://127.0.0.1:8081")
        if args.data_dir is not None:
            cfg.set("log.dirs", args.data_dir)
        cfg.validate()
        seeds = []
        for value in args.add_scram:
            try:
                seeds.append(parse_add_scram(value))
            except ValueError as e:  # the message never quotes a password
                raise ConfigError(f"--add-scram: {e}") from None
    except (ConfigError, OSError) as e:
        print(f"minibroker: configuration error: {e}", file=sys.stderr)
        return 2

    async def main() -> int:
        broker = Broker(cfg, scram_seeds=seeds)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await broker.start()
        except (InconsistentMetaPropertiesError, LogDirError) as e:
            print(f"minibroker: cannot start: {e}", file=sys.stderr)
            return 2
        except (ScramCredentialFileError, FeatureFileError, ClientQuotaFileError) as e:  # found once the logs (and the cleaner) have started
            print(f"minibroker: cannot start: {e}", file=sys.stderr)
            await broker.stop()
            return 2
        except OSError as e:  # a listener that cannot bind, a data directory that fails while loading
            print(f"minibroker: cannot start: {e}", file=sys.stderr)
            try:
                await broker.stop()  # whatever did start (the Kafka listener, the logs) closes cleanly
            except Exception as stop_error:  # noqa: BLE001 - the line above says what went wrong
                logging.getLogger("broker").debug("stopping after a failed start: %s", stop_error)
            return 1
        build_lines.flush()  # if nothing was logged yet (e.g. --log-level WARNING)
        http = [(ls.name, ls.host, ls.port) for ls in broker.http]
        if broker.schema_registry is not None:
            registry = broker.schema_registry
            http.append((registry.name, registry.host, registry.port))
        for name, host, port in http:
            print(f"minibroker {name} listening on http://{host}:{port}", file=sys.stderr, flush=True)
        if broker.server is not None and len(broker.server.ports) > 1:  # each listener, before the ready line
            for ep in cfg.endpoints:
                print(f"minibroker listener {ep.name} ({ep.security_protocol}) on {ep.host}:{broker.server.ports[ep.name]}",
                      file=sys.stderr, flush=True)
        print(f"minibroker listening on {cfg.listener[0]}:{broker.port}", file=sys.stderr, flush=True)
        await stop.wait()
        logging.getLogger("broker").info("shutting down")
        await broker.stop()
        return 0

    try:
        import uvloop
    except ImportError:  # plain asyncio where uvloop is not installed
        return asyncio.run(main())
    return uvloop.run(main())
