"""One module per Kafka API: ``API_KEY`` and ``handle(ctx, request)`` — ``ctx`` the request's
``RequestContext`` (its header's version, correlation id and client id, the connection's
session, the ``BrokerState``), ``request`` the decoded body.

A handler returns the response body as a dict (encoded by the server with the API's schema),
a coroutine that produces one (a request that must wait: acks=all, Fetch long-poll), a
``FetchReply`` (bytes and file slices written with sendfile), ``NO_RESPONSE`` (acks=0) or
``CLOSE`` (acks=0 with an error: Kafka closes the connection so the producer notices).

Adding an API is adding its module here (and its schema module in ``client.protocol.messages``):
``HANDLERS`` maps the ``API_KEY`` of every module of this package that defines one to its
``handle``. The broker advertises exactly the APIs with a handler, at the versions their schema
tables implement; the two sets must agree, which is checked at import.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from client.protocol.api import SUPPORTED_VERSIONS

from ..request_context import RequestContext
from .common import CLOSE, NO_RESPONSE, FetchReply

Handler = Callable[[RequestContext, dict[str, Any]], Any]
#: API key (a plain int: the server looks up each request's) -> its handler
HANDLERS: dict[int, Handler] = {}


def _collect() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        key = getattr(module, "API_KEY", None)
        if key is not None:
            if key in HANDLERS:
                raise ImportError(f"two handlers for {key.name}")
            HANDLERS[int(key)] = module.handle
    if set(HANDLERS) != set(SUPPORTED_VERSIONS):
        raise ImportError(f"APIs with a handler {sorted(HANDLERS)} != APIs with a schema {sorted(SUPPORTED_VERSIONS)}")


_collect()

__all__ = ["HANDLERS", "CLOSE", "NO_RESPONSE", "FetchReply", "Handler"]
