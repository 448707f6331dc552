"""The pytest plugin, registered through the ``pytest11`` entry point (``pip install minibroker``
is enough; ``-p no:minibroker`` turns it off). Importing it costs nothing: the broker is only
imported when a fixture runs.

Fixtures:

- ``minibroker`` (session): one broker for the whole run, on a free port of 127.0.0.1, data in
  a temporary directory. ``minibroker.bootstrap_servers`` is the string clients take;
  ``minibroker.faults`` sets fault rules (cleared after each test that set any).
- ``minibroker_topic`` (function): a fresh topic on that broker, created before the test (its
  name is returned). One partition unless the test says otherwise::

      @pytest.mark.minibroker_topic(partitions=3, configs={"cleanup.policy": "compact"})
      def test_x(minibroker, minibroker_topic): ...

      @pytest.mark.parametrize("minibroker_topic", [1, 4], indirect=True)   # partitions
      def test_y(minibroker, minibroker_topic): ...

- ``minibroker_secure`` (session): a broker with PLAINTEXT, SSL (mutual TLS), SASL_SSL and
  SASL_PLAINTEXT listeners, throwaway certificates (``trustme``) and SCRAM/PLAIN users;
  ``.listener_ports[name]`` and ``.setup.client_properties(listener, mechanism)`` (see
  ``broker.testing.secure``)::

      def test_z(minibroker_secure):
          conf = {"bootstrap.servers": f"127.0.0.1:{minibroker_secure.listener_ports['SASL_SSL']}",
                  **minibroker_secure.setup.client_properties("SASL_SSL", "SCRAM-SHA-512")}

- ``minibroker_factory`` (function): ``minibroker_factory(overrides={...}, kind=...,
  metrics=True)`` starts a broker of the test's own (its own config, data dir and port),
  stopped after the test; the test fails if it did not shut down cleanly.

Options (command line or ini): ``--minibroker-kind`` / ``minibroker_kind`` = ``process``
(default; a child process) or ``inprocess`` (a thread of the test process; see
``broker.testing`` for which to pick), and the ini ``minibroker_overrides`` (one
``key=value`` broker property per line) for the session broker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_session: dict[str, Any] = {}  # the session broker, once started
_topic_counter = [0]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker")
    group.addoption("--minibroker-kind", choices=("process", "inprocess"), default=None,
                    help="how the minibroker fixtures run brokers: process (default) or inprocess")
    parser.addini("minibroker_kind", "process (default) or inprocess", default="process")
    parser.addini("minibroker_overrides", "broker properties (key=value, one per line) of the session broker",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "minibroker_topic(partitions=1, configs=None): partitions and topic configs of the"
                   " minibroker_topic fixture")


def _kind(config: pytest.Config) -> str:
    kind = config.getoption("--minibroker-kind") or config.getini("minibroker_kind")
    return str(kind)


def _check_stopped(b: Any) -> None:
    rc = b.stop()
    if rc != 0:
        log = b.log_text() if hasattr(b, "log_text") else ""
        raise RuntimeError(f"minibroker exited with status {rc}:\n{log}")


@pytest.fixture(scope="session")
def minibroker(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's broker (see the module docstring)."""
    from broker.testing import start
    data = tmp_path_factory.mktemp("minibroker") / "data"
    b = start(_kind(pytestconfig), str(data), list(pytestconfig.getini("minibroker_overrides")))
    _session["broker"] = b
    try:
        yield b
    finally:
        _session.pop("broker", None)
        _check_stopped(b)


@pytest.fixture(autouse=True)
def _minibroker_clear_faults() -> Iterator[None]:
    yield
    b = _session.get("broker")
    if b is not None and getattr(b, "_faults_used", True):
        b.faults.clear()
        b._faults_used = False


def _topic_name(nodeid: str) -> str:
    _topic_counter[0] += 1
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", nodeid.rsplit("::", 1)[-1]).strip("-.")[:180] or "topic"
    return f"{base}-{_topic_counter[0]}"


@pytest.fixture
def minibroker_topic(request: pytest.FixtureRequest, minibroker: Any) -> str:
    """A new topic on the session broker (see the module docstring)."""
    from broker.testing import create_topic
    partitions, configs = 1, None
    marker = request.node.get_closest_marker("minibroker_topic")
    if marker is not None:
        partitions = marker.kwargs.get("partitions", marker.args[0] if marker.args else 1)
        configs = marker.kwargs.get("configs")
    param = getattr(request, "param", None)
    if isinstance(param, int):
        partitions = param
    elif isinstance(param, dict):
        partitions = param.get("partitions", partitions)
        configs = param.get("configs", configs)
    name = _topic_name(request.node.name)
    create_topic(minibroker.bootstrap_servers, name, partitions, configs)
    return name


@pytest.fixture(scope="session")
def minibroker_secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A session broker with PLAINTEXT, SSL (mutual TLS), SASL_SSL and SASL_PLAINTEXT listeners
    (broker.testing.secure): ``.listener_ports[name]``, and ``.setup`` (its certificates, users,
    and ``client_properties(listener, mechanism)`` for librdkafka-style clients). Needs trustme."""
    from broker.testing.secure import secure_broker
    b, _ = secure_broker(str(tmp_path_factory.mktemp("minibroker-secure")))
    try:
        yield b
    finally:
        _check_stopped(b)


@pytest.fixture
def minibroker_factory(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Any]]:
    """``factory(overrides=None, *, kind=None, faults=True, metrics=False)`` -> a started broker."""
    from broker.testing import start
    started: list[Any] = []

    def factory(overrides: Any = None, *, kind: str | None = None, faults: bool = True, metrics: bool = False) -> Any:
        data = tmp_path_factory.mktemp("minibroker") / "data"
        b = start(kind or _kind(pytestconfig), str(data), overrides, faults=faults, metrics=metrics)
        started.append(b)
        return b

    yield factory
    errors = []
    for b in started:
        try:
            _check_stopped(b)
        except Exception as e:  # noqa: BLE001 - stop them all, then report
            errors.append(e)
    if errors:
        raise errors[0]


@pytest.fixture
def minibroker_share_consumer(minibroker: Any) -> Callable[..., Any]:
    """``minibroker_share_consumer(topics, group_id=None, **options)``: an async context manager
    giving a started ``client.share_consumer.ShareConsumer`` of the session broker, subscribed
    to ``topics``, in a share group (a fresh one unless ``group_id`` is given) whose start
    offsets were first set to each partition's log start, so that records produced before it
    are delivered (a share group otherwise starts at the log end: share.auto.offset.reset
    latest). Closed (acknowledgements sent, the group left) when the block ends::

        async with minibroker_share_consumer([minibroker_topic]) as consumer:
            records = await consumer.poll(timeout_ms=5000)
    """
    import contextlib
    from collections.abc import AsyncIterator

    @contextlib.asynccontextmanager
    async def factory(topics: list[str], group_id: str | None = None, **options: Any) -> AsyncIterator[Any]:
        import uuid

        from client.admin import Admin
        from client.share_consumer import ShareConsumer
        group = group_id or f"share-{uuid.uuid4().hex[:12]}"
        async with Admin(minibroker.bootstrap_servers) as admin:
            described = await admin.describe_topics(list(topics), include_configs=False)
            tps = [(t, p.partition) for t in topics for p in described[t].partitions]
            await admin.reset_share_group_offsets(group, tps, to_earliest=True)
        async with ShareConsumer(minibroker.bootstrap_servers, group_id=group, **options) as consumer:
            consumer.subscribe(topics)
            yield consumer

    return factory
