"""MkDocs hooks (docs/mkdocs.yml ``hooks:``): parts of the pages generated at build time, so
that they cannot drift from what they describe.

- ``<!-- generated: broker-configs -->`` becomes the table of every broker property, from the
  broker's own tables (``broker.config``: BROKER_DEFAULTS, BROKER_TYPES, PERIOD_FLOORS,
  BROKER_CHOICES; the descriptions DescribeConfigs answers, ``broker.dynamic_config``).
- ``<!-- generated: topic-configs -->`` becomes the table of every topic config with its broker
  synonyms (``broker.storage.config.TOPIC_CONFIGS``).
- ``<!-- chart: column=2 unit="records/s" command="scripts/bench.py ..." -->`` placed right
  before a Markdown table draws that table's column(s) (``column=2,3``: grouped bars) as an
  inline SVG bar chart, captioned with the command that produced the figures. The table stays
  below it: the chart only redraws the figures given there.

``tests/docs/test_hooks.py`` checks that the tables name every config key and that the charts
keep their commands.
"""

from __future__ import annotations

import html
import re
import shlex
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


# --- the configuration reference ---------------------------------------------------------------

def _cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else "(none)"


def _human(name: str, value: str) -> str:
    """A readable gloss of a default: ``604800000`` ms is 7 days, ``104857600`` bytes 100 MiB."""
    try:
        n = int(value)
    except ValueError:
        return ""
    if n == LONG_MAX:
        return "Long.MAX_VALUE"
    if n == INT_MAX:
        return "Integer.MAX_VALUE"
    if n <= 0:
        return ""
    if name.endswith(".ms") or name.endswith(".minutes") or name.endswith(".hours"):
        ms = n * (60_000 if name.endswith(".minutes") else 3_600_000 if name.endswith(".hours") else 1)
        for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("s", 1000)):
            if ms >= size and ms % size == 0:
                count = ms // size
                if unit == "s":
                    return f"{count} s"
                return f"{count} {unit}{'s' if count != 1 else ''}"
        return ""
    if name.endswith(".bytes") or name.endswith(".size"):
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= size and n % size == 0:
                return f"{n // size} {unit}"
    return ""


def _default(name: str, value: str) -> str:
    gloss = _human(name, value)
    return _code(value) + (f" ({gloss})" if gloss else "")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _range(kind: str, lower: float | None, upper: float | None) -> str:
    if lower is not None and upper is not None:
        return f"{kind}, {_num(lower)} to {_num(upper)}" if lower != upper else f"{kind}, {_num(lower)} only"
    if lower is not None:
        return f"{kind}, at least {_num(lower)}"
    if upper is not None:
        return f"{kind}, at most {_num(upper)}"
    return kind


def broker_config_rows() -> list[tuple[str, str, str, str, str]]:
    """(name, default, type and valid values, dynamic, description) of every broker property
    that is not a topic config's default (those are in topic_config_rows)."""
    from broker.config import BROKER_CHOICES, BROKER_DEFAULTS, BROKER_TYPES, PERIOD_FLOORS
    from broker.dynamic_config import DYNAMIC_BROKER_CONFIGS, _broker_doc

    rows = []
    for name in sorted(BROKER_DEFAULTS):
        if name in BROKER_TYPES:
            kind, lower, upper = BROKER_TYPES[name]
            valid = _range(kind, lower, upper)
        elif name in BROKER_CHOICES:
            valid = "string: " + ", ".join(f"`{c}`" for c in BROKER_CHOICES[name])
        elif "listener" in name:
            valid = "listener URL" + ("" if name in ("listeners", "advertised.listeners") else " (`http://host:port`)")
        else:
            valid = "string"
        if name in PERIOD_FLOORS:
            floor, off = PERIOD_FLOORS[name]
            valid += f"; at least {floor} (minibroker's floor" + (f", or {off}" if off else "") + ")"
        dynamic = _dynamic_scope(name) if name in DYNAMIC_BROKER_CONFIGS else "no"
        rows.append((name, _default(name, BROKER_DEFAULTS[name]), valid, dynamic, _broker_doc(name)))
    return rows


def _dynamic_scope(name: str) -> str:
    """How a dynamic broker property may be changed: "yes" (per broker or cluster-wide), "per
    broker", or "per listener" (listener.name.<l>.<name>, per broker: the key and trust stores)."""
    from broker.dynamic_config import KAFKA_DYNAMIC, SSL_STORE_CONFIGS

    if name in SSL_STORE_CONFIGS:
        return "per listener"
    d = KAFKA_DYNAMIC.get(name)
    return "per broker" if d is not None and d.per_broker else "yes"


def topic_config_rows() -> list[tuple[str, str, str, str, str]]:
    """(topic config, default, type and valid values, broker properties, description)."""
    from broker.dynamic_config import DYNAMIC_BROKER_CONFIGS
    from broker.storage.config import TOPIC_CONFIGS, _text

    rows = []
    for name in sorted(TOPIC_CONFIGS):
        d = TOPIC_CONFIGS[name]
        if d.choices:
            valid = d.kind + ": " + ", ".join(f"`{c}`" for c in d.choices)
        else:
            valid = _range(d.kind, d.minimum, d.maximum)
        synonyms = []
        for s in d.synonyms:
            text = f"`{s.name}`"
            if s.factor != 1:
                text += f" (x {s.factor:,} ms)" if s.factor >= 60_000 else f" (x {s.factor})"
            if s.name in DYNAMIC_BROKER_CONFIGS:
                text += " (dynamic)"
            synonyms.append(text)
        rows.append((name, _default(name, _text(d.default)), valid, ", ".join(synonyms) or "(none)", d.doc))
    return rows


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], code_first: bool = True) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        first = f"`{row[0]}`" if code_first else row[0]
        out.append("| " + " | ".join(_cell(c) for c in (first, *row[1:])) + " |")
    return "\n".join(out) + "\n"


def render_broker_configs() -> str:
    return _table(("property", "default", "type, valid values", "dynamic", "description"), broker_config_rows())


def render_topic_configs() -> str:
    return _table(("topic config", "default", "type, valid values", "broker default set by", "description"),
                  topic_config_rows())


# --- the benchmark charts -----------------------------------------------------------------------

_CHART = re.compile(r"^<!-- chart: (?P<args>.*?) -->\n(?P<table>(?:\|.*\|\n)+)", re.M)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_COLOURS = ("#3f51b5", "#ff9800", "#009688", "#e91e63")


def _parse_args(text: str) -> dict[str, str]:
    out = {}
    for item in shlex.split(text):
        key, _, value = item.partition("=")
        out[key] = value
    return out


def _plain(cell: str) -> str:
    return re.sub(r"[`*]", "", cell).strip()


def parse_table(table: str) -> tuple[list[str], list[list[str]]]:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.strip().splitlines()]
    return rows[0], [r for r in rows[2:]]


def chart_svg(args: dict[str, str], table: str) -> str:
    """An inline SVG of horizontal bars: one group per table row, one bar per chosen column."""
    header, rows = parse_table(table)
    columns = [int(c) - 1 for c in args.get("column", "2").split(",")]
    unit = args.get("unit", "")
    series = []
    for row in rows:
        values = []
        for c in columns:
            m = _NUMBER.search(row[c]) if c < len(row) else None
            values.append(float(m.group().replace(",", "")) if m else None)
        series.append((_plain(row[0]), values))
    top = max((v for _, vs in series for v in vs if v is not None), default=1.0) or 1.0
    longest = max((len(label) for label, _ in series), default=10)
    label_w, bar_w, bar_h, gap = int(16 + 6.8 * longest), 330, 14, 10  # ~6.8 px a character at 12 px
    group_h = bar_h * len(columns) + gap
    legend_h = 22 if len(columns) > 1 else 0
    height = legend_h + group_h * len(series) + 6
    width = label_w + bar_w + 90
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {width} {height}" '
             f'width="100%" style="max-width:{width}px" font-family="sans-serif" font-size="12">',
             f"<title>{html.escape(args.get('title', _plain(header[0])))}</title>"]
    if len(columns) > 1:
        x = label_w
        for i, c in enumerate(columns):
            name = html.escape(_plain(header[c]))
            parts.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{_COLOURS[i % len(_COLOURS)]}"/>'
                         f'<text x="{x + 16}" y="14">{name}</text>')
            x += 20 + 7 * len(name)
    for g, (label, values) in enumerate(series):
        y0 = legend_h + g * group_h
        parts.append(f'<text x="{label_w - 8}" y="{y0 + bar_h * len(columns) / 2}" text-anchor="end" '
                     f'dominant-baseline="middle">{html.escape(label)}</text>')
        for i, v in enumerate(values):
            if v is None:
                continue
            y = y0 + i * bar_h
            w = max(1.0, bar_w * v / top)
            parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                         f'fill="{_COLOURS[i % len(_COLOURS)]}"/>'
                         f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h / 2}" dominant-baseline="middle">'
                         f"{v:,g} {html.escape(unit)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def render_chart(args: dict[str, str], table: str) -> str:
    command = args.get("command", "")
    if not command:
        raise ValueError("a chart must name the command that produced its figures (command=...)")
    caption = f"The table below, drawn; figures from <code>{html.escape(command)}</code>"
    return f"<figure>\n{chart_svg(args, table)}\n<figcaption>{caption}</figcaption>\n</figure>\n\n"


def render_charts(markdown: str) -> str:
    return _CHART.sub(lambda m: render_chart(_parse_args(m.group("args")), m.group("table")) + m.group("table"),
                      markdown)


# --- the hook -----------------------------------------------------------------------------------

GENERATED = {
    "<!-- generated: broker-configs -->": render_broker_configs,
    "<!-- generated: topic-configs -->": render_topic_configs,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, render in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return render_charts(markdown)
