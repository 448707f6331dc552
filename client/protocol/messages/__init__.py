"""Schema tables of the APIs minibroker serves, one module per API, at the versions it implements.

Each module (``produce.py``, ``fetch.py``, ...) defines ``<Api>Request`` and ``<Api>Response``
``Message`` tables written from Kafka's JSON message specs
(``clients/src/main/resources/common/message/<Api>Request.json`` of Kafka 3.9): field names are
the specs' names in snake_case, ``valid`` is the range minibroker implements (and advertises,
see ``client.protocol.api.SUPPORTED_VERSIONS``), ``flexible`` the specs' flexibleVersions.
Versions outside ``valid`` are refused before decoding.

Adding an API is adding its module here: every ``Message`` defined by a module of this package
is collected into ``REQUESTS`` / ``RESPONSES`` (keyed by API key) when the package is imported.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..schema import Message

__all__ = ["REQUESTS", "RESPONSES"]

REQUESTS: dict[int, Message] = {}
RESPONSES: dict[int, Message] = {}


def _collect() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if not isinstance(value, Message):
                continue
            table = REQUESTS if value.name.endswith("Request") else RESPONSES
            if value.api_key in table and table[value.api_key] is not value:
                raise ImportError(f"two schemas for API key {value.api_key}: {value.name}")
            table[value.api_key] = value


_collect()
