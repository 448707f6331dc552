"""docs/hooks.py, the MkDocs hook that generates parts of the pages: the configuration
reference names every config of the broker's own tables, and the benchmark charts keep the
commands that produced their figures."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from broker.config import BROKER_DEFAULTS
from broker.storage.config import BROKER_SYNONYMS, TOPIC_CONFIGS

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minibroker_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _first_column(table: str) -> list[str]:
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return [re.match(r"\| `([^`]+)`", row).group(1) for row in rows]  # type: ignore[union-attr]


def test_broker_reference_lists_every_broker_property(hooks: ModuleType) -> None:
    table = hooks.render_broker_configs()
    assert sorted(_first_column(table)) == sorted(BROKER_DEFAULTS)
    for name, _default, _valid, _dynamic, doc in hooks.broker_config_rows():
        assert doc, f"broker property {name} has no description (broker/dynamic_config.py _BROKER_DOCS)"


def test_topic_reference_lists_every_topic_config_and_its_broker_synonyms(hooks: ModuleType) -> None:
    table = hooks.render_topic_configs()
    assert sorted(_first_column(table)) == sorted(TOPIC_CONFIGS)
    for name in BROKER_SYNONYMS:
        assert f"`{name}`" in table, f"broker property {name} (a topic config's default) is not in the reference"
    for name, d in TOPIC_CONFIGS.items():
        assert d.doc, f"topic config {name} has no doc"


def test_the_configuration_page_has_the_markers(hooks: ModuleType) -> None:
    page = (DOCS / "pages" / "configuration.md").read_text()
    for marker in hooks.GENERATED:
        assert marker in page
    rendered = hooks.on_page_markdown(page, None, None, None)
    assert "<!-- generated:" not in rendered
    for name in [*BROKER_DEFAULTS, *TOPIC_CONFIGS, *BROKER_SYNONYMS]:
        assert f"`{name}`" in rendered, name


def test_charts_are_drawn_from_their_tables_and_name_their_commands(hooks: ModuleType) -> None:
    page = (DOCS / "pages" / "benchmarks.md").read_text()
    markers = re.findall(r"^<!-- chart: (.*?) -->$", page, re.M)
    assert len(markers) >= 2
    rendered = hooks.on_page_markdown(page, None, None, None)
    assert rendered.count("<svg") == len(markers)
    for args in markers:
        command = hooks._parse_args(args)["command"]
        assert command.startswith("scripts/")
        assert f"<code>{command}</code>" in rendered


def test_a_chart_draws_the_numbers_of_its_table(hooks: ModuleType) -> None:
    table = "| what | rate | cost |\n|---|---|---|\n| `a` | 1,500 | 2.5 (1 + 1.5) |\n| b | 3,000 | n/a |\n"
    md = '<!-- chart: column=2,3 unit="x/s" command="scripts/bench.py --only a" -->\n' + table
    out = hooks.render_charts(md)
    assert out.endswith(table)  # the table stays, below the chart
    assert "1,500 x/s" in out and "3,000 x/s" in out and "2.5 x/s" in out
    assert out.count("<rect") == 3 + 2  # three bars (n/a has none) and a legend of two
    assert "<code>scripts/bench.py --only a</code>" in out
    with pytest.raises(ValueError, match="command"):
        hooks.render_charts("<!-- chart: column=2 -->\n" + table)
