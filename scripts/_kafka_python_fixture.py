"""A pytest plugin that runs kafka-python's integration suite against minibroker processes.

Loaded by scripts/kafka_python_suite.sh (``-p _kafka_python_fixture``) from outside the suite's
tree; the suite's files are not modified. Its fixtures (``test/integration/fixtures.py``) start
a Kafka from a distribution: they render the broker settings the suite uses
(``servers/<version>/resources/kafka.properties``, else ``servers/resources/1.0`` before Kafka
4, ``servers/resources/default`` from 4) and run ``kafka-run-class.sh kafka.Kafka`` with them.
This plugin replaces only the part that runs Java, in ``KafkaFixture`` and ``ZookeeperFixture``:

- ``KafkaFixture.start`` renders that same template with the fixture's own values (listener of
  the transport asked for, SASL mechanism, the StandardAuthorizer with
  ``allow.everyone.if.no.acl.found=true``, ``num.partitions`` ...) and starts
  ``minibroker serve --config`` with it (before Kafka 4 the suite names ZooKeeper's
  ``AclAuthorizer``, whose rules are the StandardAuthorizer's: that one is named instead): minibroker reads Kafka's property names and warns about
  the ones it has no use for (the KRaft controller settings, thread counts, replica settings,
  ``zookeeper.connect``). The SASL users are what the suite gives Kafka: a PLAIN user from the
  JAAS entry it renders (``listener.name.<listener>.plain.sasl.jaas.config``), a SCRAM user as
  ``kafka-storage format --add-scram`` stores it (``minibroker serve --add-scram``).
- ``ZookeeperFixture`` starts nothing (minibroker needs no ZooKeeper; the suite needs one for
  Kafka before 4.0 only to start its brokers).
- ``KafkaFixture.get_topic_names`` (``kafka-topics.sh --list``) runs ``minibroker topics --list``
  with the same ``--command-config``.
- An SSL listener is skipped: the suite makes the broker's JKS keystore with ``keytool``.

Environment: ``MINIBROKER_PYTHON`` (the interpreter with minibroker's dependencies),
``MINIBROKER_ROOT`` (the directory holding the ``broker`` package), ``MINIBROKER_SUITE_LOGS``
(each broker's log is written there when it stops).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

_LISTENING = re.compile(r"^minibroker listening on ")
_STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class MinibrokerService:
    """The ``child`` of a KafkaFixture: a ``minibroker serve`` process and its captured log."""

    def __init__(self, args: list[str], env: dict[str, str], log_name: str) -> None:
        self.args = args
        self.env = env
        self.log_name = log_name
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.listening = False
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> bool:
        self.proc = subprocess.Popen(self.args, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self.ready.wait(timeout) and self.listening

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if _LISTENING.search(line):
                self.listening = True
                self.ready.set()
        self.ready.set()

    def wait_for(self, pattern: str, timeout: float = 30) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if re.search(pattern, "".join(self.lines), re.IGNORECASE):
                return True
            time.sleep(0.1)
        return False

    def dump_logs(self) -> None:
        sys.stderr.write("".join(self.lines))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        logs = os.environ.get("MINIBROKER_SUITE_LOGS")
        if logs:
            os.makedirs(logs, exist_ok=True)
            with open(os.path.join(logs, self.log_name), "w") as f:
                f.write("".join(self.lines))


def _minibroker_env() -> dict[str, str]:
    env = dict(os.environ)
    root = os.environ["MINIBROKER_ROOT"]
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _install(fixtures: Any) -> None:
    kafka_fixture = fixtures.KafkaFixture
    zookeeper_fixture = fixtures.ZookeeperFixture
    counter = iter(range(1, 1_000_000))

    def start(self: Any) -> None:
        if self.running:
            return
        if self.ssl_enabled:
            pytest.skip("SSL: the suite makes the broker's JKS keystore with keytool (a JVM tool)")
        self.sasl_config = self._sasl_config()
        self.ssl_config = ""
        self.acl_config = self._acl_config()
        self.jaas_config = self._jaas_config()
        properties = self.tmp_dir.join("kafka.properties")
        py = os.environ.get("MINIBROKER_PYTHON", sys.executable)
        for attempt in range(3):
            if attempt and self.auto_port:
                self.port = fixtures.get_open_port()
                self.controller_port = fixtures.get_open_port()
            self.render_template(self.test_resource("kafka.properties"), properties, vars(self))
            args = [py, "-m", "broker", "serve", "--config", properties.strpath]
            if "AclAuthorizer" in self.acl_config:  # Kafka 3's ZooKeeper authorizer: the same rules
                args += ["--override", f"authorizer.class.name={_STANDARD_AUTHORIZER}"]
            if self.sasl_mechanism == "PLAIN":
                listener = self.transport.lower()
                args += ["--override", f"listener.name.{listener}.plain.sasl.jaas.config={self.jaas_config.strip()}"]
            elif self.sasl_mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                args += ["--add-scram",
                         f"{self.sasl_mechanism}=[name={self.broker_user},password={self.broker_password}]"]
            name = f"minibroker-{next(counter)}-{self.transport}-{self.sasl_mechanism or 'none'}.log"
            self.child = MinibrokerService(args, _minibroker_env(), name)
            if self.child.start():
                self.running = True
                return
            self.child.dump_logs()
            self.child.stop()
        raise RuntimeError("minibroker did not start")

    def open(self: Any) -> None:
        if self.running:
            return
        if self.tmp_dir is None:
            import py as pylib  # type: ignore[import-untyped]

            self.tmp_dir = pylib.path.local.mkdtemp()
        self.tmp_dir.ensure(dir=True)
        self.tmp_dir.ensure("logs", dir=True)
        self.tmp_dir.ensure("data", dir=True)
        self.start()

    def stop(self: Any) -> None:
        if self.external or not self.running:
            return
        self.child.stop()
        self.child = None
        self.running = False

    def get_topic_names(self: Any) -> list[str]:
        py = os.environ.get("MINIBROKER_PYTHON", sys.executable)
        args = [py, "-m", "broker", "topics", "--list"]
        connect = self._cli_connect_args()
        if connect and connect[0] == "--zookeeper":  # Kafka before 3.0: the suite asks ZooKeeper
            connect = ["--bootstrap-server", self.bootstrap_server()]
        out = subprocess.run(args + connect, env=_minibroker_env(), capture_output=True, check=True, text=True)
        return out.stdout.splitlines()

    def _cli_connect_args(self: Any) -> list[str]:
        args = ["--bootstrap-server", f"{self.host}:{self.port}"]
        if self.sasl_enabled:
            command_conf = self.tmp_dir.join("sasl_command.conf")
            self.render_template(self.test_resource("sasl_command.conf"), command_conf, vars(self))
            args += ["--command-config", command_conf.strpath]
        return args

    def zk_open(self: Any) -> None:
        self.running = True

    def zk_close(self: Any) -> None:
        self.running = False

    kafka_fixture.start = start
    kafka_fixture.open = open
    kafka_fixture.stop = stop
    kafka_fixture.get_topic_names = get_topic_names
    kafka_fixture._cli_connect_args = _cli_connect_args
    kafka_fixture.dump_logs = lambda self: self.child and self.child.dump_logs()
    zookeeper_fixture.open = zk_open
    zookeeper_fixture.close = zk_close


def pytest_configure(config: pytest.Config) -> None:
    root = str(config.rootpath)
    if root not in sys.path:
        sys.path.insert(0, root)
    from test.integration import fixtures  # type: ignore[import-not-found]

    _install(fixtures)


#: tests that check, with KAFKA_VERSION before 4.0, that the broker is a Kafka 3 (ZooKeeper mode):
#: minibroker is a Kafka 4.2 whatever KAFKA_VERSION says, so they fail, as they would against a
#: real Kafka 4.2 (strict: one that passes is reported)
_KAFKA_3_ONLY = {
    "test_kafka_version_infer": "ApiVersions is Kafka 4.2's: kafka-python infers (4, 2), not KAFKA_VERSION",
    "test_describe_configs_broker_resource_returns_configs":
        "advertised.listeners is read-only, as in Kafka 4 (KRaft); a Kafka 3 ZooKeeper broker could change it",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from test.testutil import env_kafka_version  # type: ignore[import-not-found]

    if env_kafka_version() >= (4, 0):
        return
    for item in items:
        reason = _KAFKA_3_ONLY.get(getattr(item, "originalname", item.name))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=f"minibroker is a Kafka 4.2: {reason}", strict=True))
