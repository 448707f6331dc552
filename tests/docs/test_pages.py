"""The documentation pages against what they describe: the architecture map names every
module, the README's example is the one Getting started runs, and the README links to pages
that exist. (``mkdocs build --strict``, run by scripts/test, checks the links between pages.)"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = REPO / "docs" / "pages"

#: directories whose every module and package the architecture page's map must name
#: (broker/handlers/ is one module per API, client/cli/ one per command: named as a whole)
MAPPED = ("broker", "broker/storage", "broker/storage/cleaner", "broker/authorizer", "broker/quota", "broker/security", "broker/group",
          "broker/txn", "broker/schema_registry", "broker/testing", "broker/tools", "client", "client/records", "client/protocol", "client/group", "client/spark")
NOT_MODULES = {"__init__.py", "__pycache__", "py.typed"}


def _layers_block() -> str:
    text = (PAGES / "architecture.md").read_text()
    m = re.search(r"^## Layers\n.*?^```\n(.*?)^```", text, re.S | re.M)
    assert m, "architecture.md has no code block under ## Layers"
    return m.group(1)


def test_architecture_map_names_every_module() -> None:
    block = _layers_block()
    missing = []
    for d in MAPPED:
        for entry in sorted((REPO / d).iterdir()):
            name = entry.name
            if name in NOT_MODULES or name.endswith((".so", ".pyi")) or name.startswith("."):
                continue
            if entry.is_dir():
                name += "/"
            elif not name.endswith((".py", ".c")):
                continue
            if not re.search(rf"(?<![\w.]){re.escape(name)}", block):
                missing.append(f"{d}/{name}")
    assert not missing, f"architecture.md's Layers map does not name: {missing}"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_readme_example_is_the_first_getting_started_block() -> None:
    readme = _python_blocks((REPO / "README.md").read_text())
    assert len(readme) == 1
    assert readme[0] == _python_blocks((PAGES / "getting-started.md").read_text())[0]


def test_readme_links_point_at_pages() -> None:
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((docs/pages/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(set(links)) >= 12
    for link in links:
        assert (REPO / link).is_file(), link
    # every page is linked from the README
    assert {p.name for p in PAGES.glob("*.md")} <= {Path(link).name for link in links}


def test_readme_stays_short() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 200
