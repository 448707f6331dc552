"""docker/Dockerfile, docker/entrypoint.sh, docker/compose.yaml and .dockerignore, tested without
a Docker engine.

What can be checked here is checked against the files themselves, not against copies of them:
the entrypoint script is found through the Dockerfile's ENTRYPOINT and COPY lines and run on
this machine (with MINIBROKER_* variables pointing the listener at 127.0.0.1 and the data at
tmp_path) so that a Kafka client produces and consumes through the advertised listener and
SIGTERM ends in a clean shutdown; the HEALTHCHECK command is parsed out of the Dockerfile and
run against that broker. The two build stages' steps (the builder's wheel, the runtime's
install of that wheel alone without a compiler, and its check that the C paths are in use) run
as scripts/image_steps. What cannot be checked here: the base images, useradd, the volume's
ownership, port publishing, and compose's own schema validation.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker" / "compose.yaml"
DOCKERIGNORE = REPO / ".dockerignore"
DATA_VOLUME = "/var/lib/minibroker"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"  # broker/storage/checkpoint.py
_LISTENING = re.compile(r"minibroker listening on ([\d.]+):(\d+)")


# --- reading the Dockerfile -------------------------------------------------------------------

def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comment lines dropped
    (also inside a continuation, as Docker does). Enough for this file; not a full parser
    (no escape directive, no heredocs)."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        name, _, args = buf.strip().partition(" ")
        out.append((name.upper(), args.strip()))
        buf = ""
    assert not buf, "the Dockerfile ends inside a line continuation"
    return out


DOCKERFILE_INSTRUCTIONS = parse_dockerfile(DOCKERFILE.read_text())


def instructions(name: str) -> list[str]:
    return [args for n, args in DOCKERFILE_INSTRUCTIONS if n == name]


def stages(instrs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The instructions of each build stage, each list starting with its FROM."""
    out: list[list[tuple[str, str]]] = []
    for name, args in instrs:
        if name == "FROM":
            out.append([])
        assert out, "an instruction before the first FROM"
        out[-1].append((name, args))
    return out


#: what a stage that must not compile anything must not install
_COMPILER_PACKAGES = re.compile(r"\b(gcc|g\+\+|clang|build-essential|python3?-dev|libc6-dev)\b")


def exec_form(args: str) -> list[str]:
    argv = json.loads(args)
    assert isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv), args
    return argv


def copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY from the build context (flags dropped)."""
    out = []
    for args in instructions("COPY"):
        words = exec_form(args) if args.startswith("[") else args.split()
        if any(w.startswith("--from") for w in words):
            continue
        words = [w for w in words if not w.startswith("--")]
        out.append((words[:-1], words[-1]))
    return out


def healthcheck_argv() -> list[str]:
    [args] = instructions("HEALTHCHECK")
    m = re.fullmatch(r"((?:--[\w-]+=\S+\s+)*)CMD\s+(.+)", args, re.S)
    assert m, f"HEALTHCHECK is not [OPTIONS] CMD ...: {args!r}"
    cmd = m.group(2)
    return exec_form(cmd) if cmd.startswith("[") else ["/bin/sh", "-c", cmd]


def host_healthcheck_argv() -> list[str]:
    """The HEALTHCHECK command as it can run here: the image's `python` is this interpreter,
    its `minibroker` console script this interpreter's ``-m broker``."""
    argv = healthcheck_argv()
    if argv[0] == "minibroker":
        return [sys.executable, "-m", "broker", *argv[1:]]
    return [sys.executable if argv[0] in ("python", "python3") else argv[0], *argv[1:]]


def entrypoint_script() -> Path:
    """The repository file the image runs as its ENTRYPOINT (found through the COPY to it)."""
    [args] = instructions("ENTRYPOINT")
    target = exec_form(args)[0]
    for sources, dest in copies():
        if dest == target:
            [src] = sources
            return REPO / src
    raise AssertionError(f"no COPY puts a file at the ENTRYPOINT {target}")


# --- the Dockerfile ---------------------------------------------------------------------------

def test_dockerfile_structure() -> None:
    """Two stages: the builder (a compiler: the full python image) builds the wheel with
    scripts/build_wheel, which refuses one without the C extensions; the runtime stage (slim, no
    compiler) copies the wheel alone from it, installs it and fails the build unless the C paths
    are in use. The Python minor version is the same in both, the wheel being built for it."""
    builder, runtime = stages(DOCKERFILE_INSTRUCTIONS)
    assert builder[0] == ("FROM", "python:3.11 AS builder")
    assert runtime[0] == ("FROM", "python:3.11-slim")
    assert [a for n, a in builder if n == "RUN"] == ["scripts/build_wheel /wheels"]
    assert ("COPY", "scripts/build_wheel scripts/build_wheel") in builder
    assert ("COPY", "--from=builder /wheels/*.whl /tmp/wheels/") in runtime
    [install] = [a for n, a in runtime if n == "RUN" and "pip install" in a]
    assert install.startswith("pip install --no-cache-dir /tmp/wheels/minibroker-*.whl ")
    assert install.endswith("python -m broker.build_info --require-c")
    # Neither the sources nor a compiler in the image.
    runtime_sources = [w for n, a in runtime if n == "COPY" and not a.startswith("--from") for w in a.split()[:-1]]
    assert runtime_sources == ["docker/entrypoint.sh"]
    assert not [a for n, a in runtime if n == "RUN" and _COMPILER_PACKAGES.search(a)]
    [user] = instructions("USER")
    assert ("USER", user) in runtime
    assert user.split(":")[0] not in ("root", "0")
    assert instructions("EXPOSE") == ["9092"]
    assert DATA_VOLUME in exec_form(instructions("VOLUME")[0])
    assert len(instructions("HEALTHCHECK")) == 1 and healthcheck_argv()
    # Exec form: with the shell form, /bin/sh -c would be PID 1 and SIGTERM would not reach
    # the broker. The script must exec the broker in turn (checked in the tests that run it).
    assert len(exec_form(instructions("ENTRYPOINT")[0])) == 1
    assert instructions("STOPSIGNAL") in ([], ["SIGTERM"])
    assert not instructions("CMD"), "the entrypoint takes arguments; a CMD would replace them"


def test_copy_sources_exist_and_are_in_the_build_context() -> None:
    patterns = [p.strip() for p in DOCKERIGNORE.read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    assert not any(p.startswith("!") for p in patterns), "exceptions are not modelled here"
    copied = []
    for sources, _ in copies():
        for src in sources:
            path = src.rstrip("/")
            assert (REPO / path).exists(), f"COPY source {src} is not in the repository"
            # A source (or a directory above it) matched by .dockerignore is missing from the
            # build context. fnmatch is close enough to Go's filepath.Match for these patterns.
            parts = path.split("/")
            prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
            hits = [p for p in patterns for pre in prefixes if fnmatch(pre, p.removeprefix("**/"))]
            assert not hits, f"COPY source {src} is excluded by .dockerignore {hits}"
            copied.append(path)
    # What `pip install .` needs: pyproject.toml names README.md as the readme, and the
    # packages broker* and client*.
    assert {"pyproject.toml", "README.md", "broker", "client"} <= set(copied)
    for ignored in (".venv", ".git", "data"):
        assert ignored in patterns


def test_entrypoint_script_file() -> None:
    script = entrypoint_script()
    assert script == REPO / "docker" / "entrypoint.sh"
    assert script.stat().st_mode & stat.S_IXUSR, "the entrypoint must be executable"
    assert b"\r" not in script.read_bytes(), "CRLF line endings break the shebang"
    subprocess.run(["bash", "-n", str(script)], check=True)


# --- the entrypoint's command line (a stub `minibroker` that reports how it was run) -----------

def run_with_stub(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[dict, int]:
    stub_dir = tmp_path / "bin"
    stub_dir.mkdir(exist_ok=True)
    stub = stub_dir / "minibroker"
    stub.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    "print(json.dumps({'pid': os.getpid(), 'argv': sys.argv[1:]}))\n")
    stub.chmod(0o755)
    proc = subprocess.Popen([str(entrypoint_script()), *args], stdout=subprocess.PIPE, text=True,
                            env={"PATH": f"{stub_dir}:{os.defpath}", **env})
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    return json.loads(out), proc.pid


def test_entrypoint_defaults_fit_the_image(tmp_path: Path) -> None:
    report, pid = run_with_stub(tmp_path, {})
    assert report["pid"] == pid, "the entrypoint must exec the broker (so it gets SIGTERM)"
    assert report["argv"] == [
        "serve", "--host", "0.0.0.0", "--port", "9092", "--data-dir", DATA_VOLUME,
        "--log-level", "INFO", "--override", "advertised.listeners=PLAINTEXT://localhost:9092",
    ]
    assert instructions("EXPOSE") == ["9092"]
    assert DATA_VOLUME in exec_form(instructions("VOLUME")[0])


def test_entrypoint_settings_overrides_and_arguments(tmp_path: Path) -> None:
    report, _ = run_with_stub(
        tmp_path,
        {"MINIBROKER_PORT": "19092", "MINIBROKER_LOG_LEVEL": "DEBUG",
         "MINIBROKER_OVERRIDES": " num.partitions=3\n log.segment.bytes=1048576 *"},
        "--override", "num.partitions=5", "--config", "/etc/minibroker/server.properties")
    assert report["argv"] == [
        "serve", "--host", "0.0.0.0", "--port", "19092", "--data-dir", DATA_VOLUME,
        "--log-level", "DEBUG",
        # follows the port unless MINIBROKER_ADVERTISED_LISTENERS is set
        "--override", "advertised.listeners=PLAINTEXT://localhost:19092",
        "--override", "num.partitions=3", "--override", "log.segment.bytes=1048576",
        "--override", "*",  # split on whitespace only: no glob expansion
        # the container's arguments come last, so they win (later overrides win)
        "--override", "num.partitions=5", "--config", "/etc/minibroker/server.properties",
    ]
    report, _ = run_with_stub(tmp_path, {"MINIBROKER_ADVERTISED_LISTENERS": "PLAINTEXT://broker:9092"})
    assert "advertised.listeners=PLAINTEXT://broker:9092" in report["argv"]


def test_entrypoint_metrics_port(tmp_path: Path) -> None:
    report, _ = run_with_stub(tmp_path, {"MINIBROKER_METRICS_PORT": "9404"})
    assert report["argv"][-2:] == ["--override", "metrics.listeners=http://0.0.0.0:9404"]
    report, _ = run_with_stub(tmp_path, {"MINIBROKER_METRICS_PORT": "9404", "MINIBROKER_HOST": "127.0.0.1"})
    assert report["argv"][-2:] == ["--override", "metrics.listeners=http://127.0.0.1:9404"]


def test_entrypoint_runs_another_command(tmp_path: Path) -> None:
    report, pid = run_with_stub(tmp_path, {}, "minibroker", "dump-log", "x.log")
    assert report == {"pid": pid, "argv": ["dump-log", "x.log"]}


# --- the entrypoint running the real broker ---------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class EntrypointBroker:
    proc: subprocess.Popen[str]
    port: int
    data_dir: Path
    metrics_port: int
    output: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return "".join(self.output)


@pytest.fixture
def entrypoint_broker(tmp_path: Path) -> Iterator[EntrypointBroker]:
    """docker/entrypoint.sh on this machine: listener 127.0.0.1:<free port>, advertised as the
    same address, data in tmp_path. `minibroker` is the console script next to this Python."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "minibroker").exists():
        pytest.skip(f"no minibroker console script in {bin_dir} (pip install -e .)")
    port = free_port()  # a small race with other processes; port 0 would not test advertising
    metrics_port = free_port()
    data_dir = tmp_path / "data"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', os.defpath)}",
           "MINIBROKER_HOST": "127.0.0.1", "MINIBROKER_PORT": str(port),
           "MINIBROKER_DATA_DIR": str(data_dir),
           "MINIBROKER_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
           "MINIBROKER_OVERRIDES": "num.partitions=1", "MINIBROKER_METRICS_PORT": str(metrics_port)}
    env.pop("MINIBROKER_LOG_LEVEL", None)
    proc = subprocess.Popen([str(entrypoint_script())], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
    b = EntrypointBroker(proc, port, data_dir, metrics_port)
    listening = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            b.output.append(line)
            if _LISTENING.search(line):
                listening.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not listening.wait(20):
            raise RuntimeError("broker did not start:\n" + b.log_text())
        yield b
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(5)


def run_healthcheck(port: int, metrics_port: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MINIBROKER_METRICS_PORT"}
    env["MINIBROKER_PORT"] = str(port)
    if metrics_port is not None:
        env["MINIBROKER_METRICS_PORT"] = str(metrics_port)
    return subprocess.run(host_healthcheck_argv(), env=env, capture_output=True, text=True, timeout=30)


def test_entrypoint_serves_through_the_advertised_listener(entrypoint_broker: EntrypointBroker) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

    b = entrypoint_broker
    cmdline = Path(f"/proc/{b.proc.pid}/cmdline")
    if cmdline.exists():  # exec'd: the entrypoint's process is now the broker, not bash
        argv = cmdline.read_bytes().split(b"\0")
        assert any(a.endswith(b"minibroker") for a in argv) and b"serve" in argv, argv

    assert run_healthcheck(b.port).returncode == 0  # ApiVersions
    assert run_healthcheck(free_port(), b.metrics_port).returncode == 0  # /healthz (the Kafka port is not used)
    assert run_healthcheck(b.port, free_port()).returncode != 0  # a metrics port that does not answer
    with urllib.request.urlopen(f"http://127.0.0.1:{b.metrics_port}/metrics", timeout=10) as r:
        assert b"kafka_brokers 1.0" in r.read()

    topic = "docker-entrypoint"
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    try:
        sent = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(10)]
        producer.flush(30)
        assert [f.get(timeout=30).offset for f in sent] == list(range(10))
    finally:
        producer.close(timeout=10)
    # After bootstrap clients connect to what the broker advertises.
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    assert [(m["broker_id"], m["host"], m["port"]) for m in brokers] == [(0, "127.0.0.1", b.port)]

    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=10000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [(r.key, r.value) for r in records]
        assert got == [(b"k%d" % i, b"v%d" % i) for i in range(10)]
    finally:
        consumer.close()

    b.proc.send_signal(signal.SIGTERM)
    assert b.proc.wait(30) == 0, b.log_text()
    assert (b.data_dir / CLEAN_SHUTDOWN_FILE).exists(), b.log_text()
    assert (b.data_dir / f"{topic}-0").is_dir()
    assert "stopped cleanly" in b.log_text()
    assert run_healthcheck(b.port).returncode != 0  # nothing listens any more
    assert run_healthcheck(b.port, b.metrics_port).returncode != 0


@pytest.mark.slow
def test_healthcheck_fails_without_an_answer(tmp_path: Path) -> None:
    # Nothing listening.
    assert run_healthcheck(free_port()).returncode != 0
    # Listening but never answering (a broker stuck in its event loop): the kernel completes
    # the connection, so only the request/response shows the broker is not serving.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        t0 = time.monotonic()
        assert run_healthcheck(s.getsockname()[1]).returncode != 0
        assert time.monotonic() - t0 < 10  # within the HEALTHCHECK's --timeout=5s, roughly


# --- compose.yaml -----------------------------------------------------------------------------

def seconds(duration: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def test_compose_file() -> None:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(COMPOSE.read_text())
    broker = doc["services"]["broker"]
    context = (COMPOSE.parent / broker["build"]["context"]).resolve()
    assert context == REPO
    assert (context / broker["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert "9092:9092" in broker["ports"]
    metrics_port = broker["environment"]["MINIBROKER_METRICS_PORT"]
    assert f"127.0.0.1:{metrics_port}:{metrics_port}" in broker["ports"], "metrics published on loopback only"

    [volume] = broker["volumes"]
    name, target = volume.split(":")[:2]
    assert target == DATA_VOLUME
    assert name in doc["volumes"], "a named volume, declared at the top level"

    hc = broker["healthcheck"]
    assert hc["test"] == ["CMD", *healthcheck_argv()], "compose and Dockerfile healthchecks differ"
    for key in ("interval", "timeout", "start_period"):
        seconds(hc[key])
    assert seconds(broker["stop_grace_period"]) >= 30
    assert broker["environment"]["MINIBROKER_ADVERTISED_LISTENERS"] == "PLAINTEXT://localhost:9092"


SPARK_DOCKERFILE = REPO / "docker" / "spark.Dockerfile"


def test_compose_spark_job_service() -> None:
    """The spark-job service: built from docker/spark.Dockerfile (whose COPY sources exist and
    are in the build context), started once the broker is healthy, in the broker's network
    namespace (the advertised listener is localhost:9092), running scripts/spark_consume.py."""
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(COMPOSE.read_text())
    assert set(doc["services"]) == {"broker", "spark-job"}
    job = doc["services"]["spark-job"]
    context = (COMPOSE.parent / job["build"]["context"]).resolve()
    assert context == REPO
    assert (context / job["build"]["dockerfile"]).resolve() == SPARK_DOCKERFILE
    assert SPARK_DOCKERFILE.is_file()
    assert job["depends_on"] == {"broker": {"condition": "service_healthy"}}
    assert job["network_mode"] == "service:broker"
    assert "ports" not in job  # not allowed with network_mode: service:...

    spark_instr = parse_dockerfile(SPARK_DOCKERFILE.read_text())
    [entrypoint] = [a for n, a in spark_instr if n == "ENTRYPOINT"]
    argv = exec_form(entrypoint) + job["command"]
    assert argv[:2] == ["python", "/src/scripts/spark_consume.py"]
    assert argv[2:4] == ["--bootstrap-server", "broker:9092"] and "--topic" in argv
    patterns = [p.strip() for p in DOCKERIGNORE.read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    copied = {}
    for n, args in spark_instr:
        if n == "COPY" and not args.startswith("--from="):
            *sources, dest = args.split()
            for src in sources:
                path = src.rstrip("/")
                assert (REPO / path).exists(), f"COPY source {src} is not in the repository"
                assert not any(fnmatch(path.split("/")[0], p) for p in patterns), src
                copied[path] = dest
    assert copied.get("scripts/spark_consume.py") == "scripts/spark_consume.py"  # WORKDIR /src
    assert {"pyproject.toml", "README.md", "broker", "client", "scripts/build_wheel"} <= set(copied)
    # As the broker's image: a builder stage on the same base (the same Python) builds the wheel,
    # the runtime stage installs it with the spark extra, without a compiler, C paths checked.
    builder, runtime = stages(spark_instr)
    assert builder[0] == ("FROM", "eclipse-temurin:17-jre-noble AS builder")
    assert runtime[0] == ("FROM", "eclipse-temurin:17-jre-noble")
    assert ("RUN", "scripts/build_wheel /wheels") in builder
    assert ("COPY", "--from=builder /wheels/*.whl /tmp/wheels/") in runtime
    [install] = [a for n, a in runtime if n == "RUN" and "pip install" in a]
    assert install.startswith('pip install --no-cache-dir "$(echo /tmp/wheels/minibroker-*.whl)[spark]" ')
    assert install.endswith("python -m broker.build_info --require-c")
    assert not [a for n, a in runtime if n == "RUN" and _COMPILER_PACKAGES.search(a)]
    assert ("COPY", "scripts/spark_consume.py scripts/spark_consume.py") in runtime


@pytest.mark.slow
def test_image_steps_without_docker() -> None:
    """scripts/image_steps: the builder stage's COPY sources and its scripts/build_wheel, then the
    runtime stage's install of the wheel alone, PATH without a compiler, and its C-path check."""
    proc = subprocess.run([str(REPO / "scripts" / "image_steps")], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr[-4000:]
    python = re.escape(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert re.fullmatch(rf"minibroker \S+ \(python={python}\.\d+ event_loop=uvloop codec=c record_future=c\)\n",
                        proc.stdout), proc.stdout
    assert "no compiler" in proc.stderr
