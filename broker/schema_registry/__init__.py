"""A schema registry in the broker process, compatible with Confluent Schema Registry's REST
API and keeping its state in ``_schemas`` in Confluent's format (``schema.registry.listeners``;
``minibroker serve --schema-registry``).

- errors.py: Confluent's error codes and messages;
- records.py: the keys and values of ``_schemas``;
- schema_types.py: the types (AVRO, JSON, PROTOBUF) and ``parse_schema``;
- avro.py, avro_compat.py: AVRO schemas and the Avro resolution rules;
- json_schema.py, json_compat.py: JSON schemas (Draft 4 to 2020-12) and Confluent's JSON rules;
- protobuf.py (protobuf_parse.py, protobuf_print.py), protobuf_compat.py: PROTOBUF schemas as
  descriptors, ``.proto`` text parsed and printed, and Confluent's Protobuf rules;
- compatibility.py: the levels, over the checker of each type;
- state.py: the registry's state and every request's decision, without I/O;
- store.py: ``_schemas`` loaded at start-up and written with fsync'd appends;
- rest.py: the REST API (aiohttp);
- auth.py: HTTP Basic authentication against the broker's SCRAM users
  (``schema.registry.authentication=basic``).

``SchemaRegistry`` runs them on the broker's event loop: it loads ``_schemas`` first, then
listens.
"""

from __future__ import annotations

import logging

from aiohttp import web

from ..coordinator.internal_topic import CoordinatorHost
from .auth import BasicAuthenticator, CredentialLookup
from .rest import make_app
from .store import SCHEMAS_TOPIC, SchemaStore

__all__ = ["SCHEMAS_TOPIC", "SchemaRegistry"]

logger = logging.getLogger("broker.schema_registry")


class SchemaRegistry:
    """The registry on ``host:port`` (port 0: any free port, ``port`` once started);
    ``credentials``: the SCRAM credentials HTTP Basic authentication checks (None: no
    authentication)."""

    name = "schema registry"

    def __init__(self, broker: CoordinatorHost, host: str, port: int,
                 credentials: CredentialLookup | None = None) -> None:
        self.host = host
        self.port = port
        self.store = SchemaStore(broker)
        self.authenticator = BasicAuthenticator(credentials) if credentials is not None else None
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        await self.store.start()
        runner = web.AppRunner(make_app(self.store, self.authenticator), access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as e:  # the line an operator sees names the listener and the address
            await runner.cleanup()
            error = OSError(f"schema registry listener: cannot listen on {self.host}:{self.port}: {e.strerror or e}")
            error.errno = e.errno
            raise error from None
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
