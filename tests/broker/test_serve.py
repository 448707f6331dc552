"""`minibroker serve` as a process: configuration sources, persisted producer ids, shutdown."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest

from client.conn import BrokerConnection
from client.protocol.api import ApiKey
from tests.broker_process import REPO, BrokerProcess
from tests.server.wire import Conn, create_topic, metadata


async def _producer_ids(port: int, n: int) -> list[int]:
    conn = await BrokerConnection.connect("127.0.0.1", port)
    try:
        out = []
        for _ in range(n):
            resp = await conn.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
            assert resp["error_code"] == 0 and resp["producer_epoch"] == 0
            out.append(resp["producer_id"])
        return out
    finally:
        await conn.close()


def test_producer_ids_unique_across_clean_and_unclean_restarts(tmp_path) -> None:
    """InitProducerId never hands out an id twice, whether the broker stopped cleanly or was
    SIGKILLed (ids are reserved in fsync'd blocks before use)."""
    data = str(tmp_path / "data")
    seen: list[int] = []
    b = BrokerProcess(data).start()
    seen += asyncio.run(_producer_ids(b.port, 5))
    assert b.stop() == 0
    b = BrokerProcess(data).start()
    seen += asyncio.run(_producer_ids(b.port, 5))
    b.kill()  # unclean: no shutdown hook runs
    b = BrokerProcess(data).start()
    seen += asyncio.run(_producer_ids(b.port, 5))
    assert b.stop() == 0
    assert len(seen) == len(set(seen)) == 15
    assert all(pid >= 0 for pid in seen)


def test_config_file_and_overrides(tmp_path) -> None:
    """--config reads Kafka property names; --override wins over the file; the values reach the
    topics the broker creates (DescribeConfigs shows them)."""
    props = tmp_path / "server.properties"
    props.write_text("# a comment\nnum.partitions=3\nlog.retention.hours=2\nlog.segment.bytes = 123456\n")
    # BrokerProcess has no --config flag: start the command by hand with it.
    cmd = [sys.executable, "-m", "broker", "serve", "--config", str(props), "--port", "0",
           "--data-dir", str(tmp_path / "data"), "--override", "log.segment.bytes=654321"]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        assert proc.stderr is not None
        for line in proc.stderr:
            if "minibroker listening on" in line and line.startswith("minibroker"):
                port = int(line.rsplit(":", 1)[1])
                break
        assert port is not None

        async def check() -> None:
            conn = await BrokerConnection.connect("127.0.0.1", port)
            try:
                md = await conn.request(ApiKey.METADATA, 4, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": True})
                assert len(md["topics"][0]["partitions"]) == 3  # num.partitions from the file
                dc = await conn.request(ApiKey.DESCRIBE_CONFIGS, 1, {"resources": [
                    {"resource_type": 2, "resource_name": "auto", "configuration_keys": ["segment.bytes", "retention.ms"]}],
                    "include_synonyms": False})
                values = {c["name"]: c["value"] for c in dc["results"][0]["configs"]}
                assert values == {"segment.bytes": "654321", "retention.ms": str(2 * 3600 * 1000)}
            finally:
                await conn.close()

        asyncio.run(check())
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    assert os.path.exists(tmp_path / "data" / ".kafka_cleanshutdown")


def test_bad_configuration_exits_2_with_a_message(tmp_path) -> None:
    for override in ("num.partitions=zero", "log.segment.bytes=1", "listeners=SSL://127.0.0.1:9093",
                     "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                     "allow.everyone.if.no.acl.found=maybe"):
        proc = subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir",
                               str(tmp_path / "d"), "--override", override],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (override, proc.stderr)
        assert "configuration error" in proc.stderr


def _serve(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir",
                           str(tmp_path / "d"), *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_every_bad_broker_value_is_one_line_and_exit_2(tmp_path) -> None:
    """Kafka's validators for each broker property: a value that would refuse every request
    (socket.request.max.bytes=-1), hang every connection (queued.max.requests=0), spin the CPU
    (log.retention.check.interval.ms=0) or fail later with a traceback is refused at start."""
    cases = {
        "socket.request.max.bytes=-1": "Value must be at least 1",
        "queued.max.requests=0": "Value must be at least 1",
        "queued.max.requests=ten": "Not a number of type INT",
        "log.retention.check.interval.ms=0": "Value must be at least 1",
        "auto.create.topics.enable=maybe": "Expected value to be either true or false",
        "delete.topic.enable=1": "Expected value to be either true or false",
        "node.id=99999999999": "Not a number of type INT",
        "log.flush.offset.checkpoint.interval.ms=-5": "Value must be at least 0",
        "log.cleaner.mode=fork": "String must be one of: process, thread",
        "metrics.group.partition.series.max=-1": "Value must be at least 0",
        "metrics.connections.max=0": "Value must be at least 1",
        "metrics.connections.max.idle.ms=0": "Value must be at least 1",
    }
    for override, message in cases.items():
        proc = _serve(tmp_path, "--override", override)
        assert proc.returncode == 2, (override, proc.stderr)
        key, value = override.split("=")
        assert proc.stderr == f"minibroker: configuration error: Invalid value {value} for configuration {key}: {message}\n"


def test_garbage_or_foreign_meta_properties_refuses_to_start(tmp_path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "meta.properties").write_bytes(os.urandom(64) + b"\xff\xfe")
    proc = _serve(tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("minibroker: cannot start: cannot read ") and proc.stderr.count("\n") == 1
    (data / "meta.properties").write_text("version=1\ncluster.id=abc\nnode.id=3\n")
    proc = _serve(tmp_path)
    assert proc.returncode == 2
    assert "the configured node.id 0 does not match node.id 3" in proc.stderr
    assert os.listdir(data) == ["meta.properties"]  # nothing else created in a directory it refused


@pytest.mark.slow
def test_starts_with_more_partitions_than_the_soft_open_files_limit(tmp_path) -> None:
    """A soft RLIMIT_NOFILE of 1024 and 1,500 partitions (several files each): the broker raises
    its soft limit to the hard one, says so, and serves every partition after a restart."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 8192:
        pytest.skip(f"the hard open files limit ({hard}) is too low for this test")
    b = BrokerProcess(str(tmp_path / "d")).start()
    try:
        with Conn(b.port, timeout=120) as c:
            for t in range(3):
                r = c.call(ApiKey.CREATE_TOPICS, 3, create_topic(f"many{t}", 500))
                assert r["topics"][0]["error_code"] == 0, r
        assert b.stop() == 0
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))  # inherited by the broker
        try:
            b.start(timeout=60)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert "raised the open files limit (RLIMIT_NOFILE) from 1024" in b.log_text()
        with Conn(b.port) as c:
            md = c.call(ApiKey.METADATA, 4, metadata(None))
            assert sum(len(t["partitions"]) for t in md["topics"]) == 1500
    finally:
        b.stop()


#: every property that sets the period of a timer or loop, at minibroker's floor (config.py's
#: PERIOD_FLOORS); the value below the floor (or Kafka's "off" value next to it) that is refused
AT_THE_FLOOR = {
    "connections.max.idle.ms": ("100", "1"),
    "log.retention.check.interval.ms": ("10", "1"),
    "log.flush.offset.checkpoint.interval.ms": ("10", "1"),
    "producer.id.expiration.check.interval.ms": ("10", "9"),
    "offsets.retention.check.interval.ms": ("10", "1"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("10", "1"),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("10", "1"),
    "log.cleaner.backoff.ms": ("10", "0"),
}


def test_a_period_below_the_floor_is_one_line_naming_it(tmp_path) -> None:
    """Values Kafka accepts but that make a timer spin (connections.max.idle.ms=1 kept a core
    99% busy while idle, log.cleaner.backoff.ms=0 89%) are refused at start: one line naming the
    property, the value and the range, exit status 2, no traceback."""
    for key, (floor, bad) in AT_THE_FLOOR.items():
        proc = _serve(tmp_path, "--override", f"{key}={bad}")
        assert proc.returncode == 2, (key, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"minibroker: configuration error: Invalid value {bad} for configuration {key}:"
                                      f" Value must be at least {floor}"), proc.stderr


def _cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` (in clock ticks, /proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_every_period_at_its_floor_leaves_an_idle_broker_idle(tmp_path) -> None:
    """All the timers at their floor at once (and Kafka's "off" values: no idle timeout, no
    periodic checkpoint, in a second broker): the broker starts, and while idle uses a small
    share of one core (a busy loop uses all of it)."""
    overrides = [f"{k}={floor}" for k, (floor, _) in AT_THE_FLOOR.items()]
    offs = ["connections.max.idle.ms=-1", "log.flush.offset.checkpoint.interval.ms=0"]
    for settings in (overrides, offs):
        with BrokerProcess(str(tmp_path / f"d{len(settings)}"), settings) as b:
            with Conn(b.port) as c:  # a connection, served, then left idle
                assert c.call(ApiKey.METADATA, 4, metadata(None))["topics"] == []
                ticks_per_s = os.sysconf("SC_CLK_TCK")
                before, t0 = _cpu_ticks(b.pid), time.monotonic()
                time.sleep(2.0)
                used = (_cpu_ticks(b.pid) - before) / ticks_per_s
                elapsed = time.monotonic() - t0
            assert used < 0.3 * elapsed, f"{settings}: {used:.2f} s of CPU in {elapsed:.2f} s idle"
            assert b.stop() == 0


def test_every_start_up_failure_is_one_line_without_a_traceback(tmp_path) -> None:
    """A data directory that is a file, lies under a file or cannot be created, a properties
    file that is not text, a listener that does not parse or cannot bind: one line naming the
    property, a non-zero exit status, and the file given as a data directory left alone."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    not_text = tmp_path / "binary.properties"
    not_text.write_bytes(b"num.partitions=\xff\xfe\n")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    busy_port = taken.getsockname()[1]
    cases = [
        (["--override", f"log.dirs={a_file}"], 2, f"cannot start: log.dirs={a_file}: Failed to create or validate"
                                                   f" data directory {a_file}: Not a directory"),
        (["--data-dir", f"{a_file}/sub"], 2, f"cannot start: log.dirs={a_file}/sub: Failed to create or validate"),
        (["--config", str(not_text)], 2, f"configuration error: {not_text}: not UTF-8 text (byte 0xff at offset 15)"),
        (["--override", "advertised.listeners=PLAINTEXT://[zz:0"], 2,
         "configuration error: advertised.listeners: invalid listener 'PLAINTEXT://[zz:0': Invalid IPv6 URL"),
        (["--port", str(busy_port)], 1, f"cannot start: listeners: cannot listen on 127.0.0.1:{busy_port} (listener PLAINTEXT):"
                                         " Address already in use"),
    ]
    if os.geteuid() != 0:  # root may write anywhere: a read-only directory stops others only
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((["--data-dir", f"{locked}/data"], 2, f"cannot start: log.dirs={locked}/data: Failed to"))
    elif os.path.isdir("/proc/self"):  # nothing can be created at the top of /proc, not even by root
        cases.append((["--data-dir", "/proc/minibroker-data"], 2, "cannot start: log.dirs=/proc/minibroker-data:"
                                                                  " Failed to create or validate"))
    try:
        for args, status, message in cases:
            if "--data-dir" not in args and not args[-1].startswith("log.dirs="):
                args = ["--data-dir", str(tmp_path / "d"), *args]
            proc = subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--log-level", "WARNING",
                                   *args],
                                  cwd=REPO, capture_output=True, text=True, timeout=60)
            assert proc.returncode == status, (args, proc.stderr)
            assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, (args, proc.stderr)
            assert proc.stderr.startswith(f"minibroker: {message}"), (args, proc.stderr)
    finally:
        taken.close()
    assert a_file.read_text() == "not a directory\n"


def test_version_says_what_runs(tmp_path) -> None:
    """``minibroker --version``: the version, the Python, the event loop and each C fast path,
    as broker.build_info detects them; with ``MINIBROKER_PURE_PYTHON=1`` the pure-Python paths and
    a line saying they were requested."""
    from broker.build_info import detect

    def version(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "broker", "--version"], cwd=REPO, capture_output=True,
                              text=True, timeout=60, env={**os.environ, **env})

    proc = version(MINIBROKER_PURE_PYTHON="1")
    assert proc.returncode == 0 and proc.stderr == ""
    summary, warning = proc.stdout.splitlines()
    python = ".".join(map(str, sys.version_info[:3]))
    assert summary.startswith("minibroker ") and f"(python={python} event_loop=" in summary
    assert summary.endswith("codec=python record_future=python)")
    assert warning.startswith("WARNING: MINIBROKER_PURE_PYTHON is set")
    if detect().all_c:
        proc = version(MINIBROKER_PURE_PYTHON="0")
        assert proc.returncode == 0 and proc.stdout.endswith("codec=c record_future=c)\n"), proc.stdout


def test_first_log_line_is_the_build_info_and_the_fallback_warns_once(tmp_path, monkeypatch) -> None:
    """The broker's first log line is ``--version``'s summary; on the pure-Python fallback one
    WARNING follows, saying why (here: requested) — and none with the C paths."""
    from broker.build_info import detect

    info = detect()  # this process's choice, made at import: before the environment changes below
    monkeypatch.setenv("MINIBROKER_PURE_PYTHON", "1")
    with BrokerProcess(str(tmp_path / "slow")) as b:
        lines = b.log_text().splitlines()
        assert b.stop() == 0
    assert lines[0].endswith(" INFO broker: " + info.summary().replace("codec=c record_future=c",
                                                                       "codec=python record_future=python"))
    warnings = [line for line in lines if " WARNING " in line]
    assert len(warnings) == 1 and lines[1] == warnings[0], lines
    assert "WARNING broker: MINIBROKER_PURE_PYTHON is set: the pure-Python record codec and record futures" \
           " were requested" in warnings[0]
    # At --log-level WARNING, with nothing else logged, the WARNING still comes before the ready line.
    with BrokerProcess(str(tmp_path / "quiet"), log_level="WARNING") as b:
        lines = b.log_text().splitlines()
        assert b.stop() == 0
    assert [line.split(" ", 2)[2] for line in lines if " WARNING " in line] == [warnings[0].split(" ", 2)[2]]
    assert lines[-1].startswith("minibroker listening on ") and " WARNING " in lines[-2], lines
    # A start that fails before the broker logs anything is still one line.
    (tmp_path / "a-file").write_text("")
    proc = _serve(tmp_path, "--data-dir", str(tmp_path / "a-file" / "sub"))  # the last --data-dir wins
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    monkeypatch.setenv("MINIBROKER_PURE_PYTHON", "0")
    if not info.all_c:
        pytest.skip(f"the C fast paths are not built here: {info.summary()}")
    with BrokerProcess(str(tmp_path / "fast")) as b:
        lines = b.log_text().splitlines()
        assert b.stop() == 0
    assert lines[0].endswith(" INFO broker: " + info.summary()) and info.summary().endswith("codec=c record_future=c)")
    assert not [line for line in lines if " WARNING " in line], lines
