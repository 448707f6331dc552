"""The package's import graph (module-level imports of broker/ and client/, including those
only for type checkers: they are dependencies a reader follows too) has no cycle, and
``client`` never imports ``broker``."""

from __future__ import annotations

import ast
import os

from tests.broker_process import REPO


def _modules() -> dict[str, str]:
    out = {}
    for top in ("broker", "client"):
        for root, _, files in os.walk(os.path.join(REPO, top)):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(root, f), REPO)[:-3].replace(os.sep, ".")
                    out[rel.removesuffix(".__init__")] = os.path.join(root, f)
    return out


def _imports(name: str, path: str, known: dict[str, str]) -> set[str]:
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found: set[str] = set()
    nodes = []
    for node in tree.body:  # module level only: imports inside functions are deferred on purpose
        nodes += node.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) else [node]
    for node in nodes:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def test_no_import_cycle_and_client_never_imports_broker() -> None:
    known = _modules()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    for name, deps in graph.items():
        if name.startswith("client"):
            assert not any(d.startswith("broker") for d in deps), (name, deps)
    # packages import their submodules by design (__init__ re-exports); cycles between a
    # package and its own submodules are Python's normal package loading, not a tangle
    def edges(n: str) -> set[str]:
        return {d for d in graph[n] if not (d.startswith(n + ".") or n.startswith(d + "."))}

    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        path.append(n)
        for d in edges(n):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d)
        path.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


#: broker/'s packages and top-level modules, lowest first: a unit imports only units of lower
#: layers (module level, TYPE_CHECKING imports included). A new unit must be placed here.
BROKER_LAYERS: list[set[str]] = [
    {"broker.errors", "broker.log_limiter", "broker.regex", "broker.build_info"},  # leaves: the error base, rate-limited log lines, RE2, what this install runs
    {"broker.storage"},  # the log engine: files and mmap, no asyncio
    {"broker.authorizer"},  # ACLs: the StandardAuthorizer's decisions and the durable ACL file
    {"broker.security"},  # listeners, TLS contexts, SASL mechanisms, SCRAM credentials, principals
    {"broker.config"},  # broker properties (topic configs are storage's)
    {"broker.dynamic_config", "broker.coordinator", "broker.features", "broker.fetch_session", "broker.http_listener",
     "broker.metrics", "broker.quota", "broker.testing"},
    {"broker.group", "broker.schema_registry"},  # the group coordinator; the schema registry over _schemas
    {"broker.txn", "broker.share"},  # the transaction coordinator (settles the groups' transactional offsets);
    # the share groups' durable state (places share-partitions with the group hash)
    {"broker.state"},  # what handlers share, the coordinators bound to it
    {"broker.request_context"},
    {"broker.handlers"},  # one module per API
    {"broker.socket_server"},
    {"broker.broker", "broker.healthcheck"},
    {"broker.serve", "broker.tools", "broker.__main__"},
]


def _unit(name: str) -> str | None:
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "broker" and len(parts) > 1 else None


def test_broker_layers_import_only_downwards() -> None:
    known = _modules()
    rank = {u: i for i, layer in enumerate(BROKER_LAYERS) for u in layer}
    units = {u for n in known if (u := _unit(n)) is not None}
    assert units <= set(rank), f"units missing from BROKER_LAYERS: {sorted(units - set(rank))}"
    upward = []
    for name, path in known.items():
        u = _unit(name)
        if u is None:
            continue
        for dep in _imports(name, path, known):
            v = _unit(dep)
            if v is not None and v != u and rank[v] >= rank[u]:
                upward.append(f"{name} -> {dep}")
    assert not upward, "imports that do not go down a layer: " + ", ".join(sorted(upward))
