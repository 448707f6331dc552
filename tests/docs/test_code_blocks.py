"""The ```python blocks of the documentation pages that promise to run (Getting started, The
Python client) run against a real broker, so the documentation keeps matching the client.

Each page gets a broker of its own (``broker.testing.start``, what the pytest plugin's fixtures
start: a child process on a free port, test defaults). A page's blocks run in order in one
namespace (a later block may use names an earlier one defined), with the address the pages use,
127.0.0.1:9092, replaced by the broker's. One test per block, so pytest counts them; a block
whose predecessors have not run in this process (pytest-xdist spreads the tests over workers)
runs them first. A block preceded by a ``<!-- no-run -->`` line is only compiled.
"""

from __future__ import annotations

import contextlib
import gc
import io
import re
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import broker.testing

PAGES_DIR = Path(__file__).resolve().parents[2] / "docs" / "pages"
#: the pages whose python blocks are executed
PAGES = ("getting-started.md", "client.md")
DOC_BOOTSTRAP = "127.0.0.1:9092"
BLOCK_TIMEOUT_S = 120.0

_BLOCK = re.compile(r"^(?P<norun><!-- no-run -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M)


@dataclass
class Block:
    page: str
    index: int  # 1-based, in page order
    code: str
    run: bool


def page_blocks(page: str) -> list[Block]:
    text = (PAGES_DIR / page).read_text(encoding="utf-8")
    return [Block(page, i, m.group("code"), m.group("norun") is None)
            for i, m in enumerate(_BLOCK.finditer(text), 1)]


ALL_BLOCKS = [b for page in PAGES for b in page_blocks(page)]


@dataclass
class PageRun:
    """One page's broker and namespace, and how far its blocks have run."""

    bootstrap: str
    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__docs__"})
    done: int = 0  # blocks run so far
    failed: int | None = None  # the block that failed

    def run_through(self, block: Block, blocks: list[Block]) -> str:
        """Run the page's blocks up to ``block``; its output."""
        if self.failed is not None:
            pytest.skip(f"block #{self.failed} of {block.page} failed; the later blocks depend on it")
        output = ""
        for b in blocks[self.done:block.index]:
            try:
                output = self._run(b)
            except BaseException:
                self.failed = b.index
                raise
            self.done = b.index
        return output

    def _run(self, b: Block) -> str:
        code = compile(b.code.replace(DOC_BOOTSTRAP, self.bootstrap), f"{b.page} python block #{b.index}", "exec")
        if not b.run:
            return ""
        out = io.StringIO()
        error: list[BaseException] = []

        def target() -> None:
            try:
                with contextlib.redirect_stdout(out):
                    exec(code, self.namespace)
            except BaseException as e:  # noqa: BLE001 - reported by the test thread
                error.append(e)

        thread = threading.Thread(target=target, name=f"docs-{b.page}-{b.index}", daemon=True)
        thread.start()
        thread.join(BLOCK_TIMEOUT_S)
        if thread.is_alive():
            pytest.fail(f"{b.page} python block #{b.index} still running after {BLOCK_TIMEOUT_S:.0f} s:\n{b.code}"
                        f"\n--- output so far\n{out.getvalue()}")
        if error:
            tb = "".join(traceback.format_exception(error[0]))
            pytest.fail(f"{b.page} python block #{b.index} failed:\n{b.code}\n--- output\n{out.getvalue()}"
                        f"\n--- traceback\n{tb}", pytrace=False)
        return out.getvalue()


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PageRun]]:
    """A broker per page, started when the page's first block runs."""
    brokers: dict[str, Any] = {}

    class Runs(dict[str, PageRun]):
        def __missing__(self, page: str) -> PageRun:
            data = tmp_path_factory.mktemp("docs-" + page.removesuffix(".md")) / "data"
            b = brokers[page] = broker.testing.start("process", str(data), faults=False)
            run = self[page] = PageRun(b.bootstrap_servers)
            return run

    runs = Runs()
    try:
        yield runs
    finally:
        for run in runs.values():  # the examples' clients (a librdkafka producer would keep reconnecting)
            run.namespace.clear()
        gc.collect()
        failures = []
        for page, b in brokers.items():
            rc = b.stop()
            if rc != 0:
                failures.append(f"the broker of {page} exited with {rc}:\n{b.log_text()}")
        assert not failures, "\n".join(failures)


def test_the_pages_have_blocks() -> None:
    for page in PAGES:
        blocks = page_blocks(page)
        assert blocks, f"{page} has no python blocks"
        assert sum(not b.run for b in blocks) <= 1, f"{page}: keep no-run blocks rare"
    joined = "\n".join(b.code for b in ALL_BLOCKS)
    for name in ("Producer", "Consumer", "Admin", "SyncConsumer", "getbatches", "send_nowait", "list_offsets",
                 "transactional_id", "subscribe"):
        assert name in joined, f"no executed documentation example uses {name}"


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[f"{b.page.removesuffix('.md')}-{b.index}" for b in ALL_BLOCKS])
def test_code_block(block: Block, page_runs: dict[str, PageRun]) -> None:
    output = page_runs[block.page].run_through(block, [b for b in ALL_BLOCKS if b.page == block.page])
    print(output, end="")
