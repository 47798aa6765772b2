"""``leaderboard.json``, ``leaderboard.csv`` and ``leaderboard.md``: the same numbers as the page.

The CSV and Markdown columns come from the one declaration in ``columns.yaml``
(:mod:`..scoring.columns`): a mean block becomes ``KEY``, ``KEY_ci_low`` and ``KEY_ci_high``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.core.spreadsheet import spreadsheet_safe
from tide_bench.leaderboard.scoring.columns import Column, shown_columns
from tide_bench.leaderboard.site.html import fmt_interval


def csv_fields(columns: Sequence[Column]) -> list[str]:
    out: list[str] = []
    for c in columns:
        if c.csv:
            out += [c.key, f"{c.key}_ci_low", f"{c.key}_ci_high"] if c.is_block else [c.key]
    return out


def flat_row(row: dict[str, Any], columns: Sequence[Column]) -> dict[str, Any]:
    """One CSV row: every ``csv`` column, a block as its mean and CI bounds."""
    out: dict[str, Any] = {}
    for c in columns:
        if not c.csv:
            continue
        value = c.raw(row)
        if c.is_block:
            block = value if isinstance(value, dict) else {}
            out[c.key], out[f"{c.key}_ci_low"], out[f"{c.key}_ci_high"] = (
                block.get("mean"),
                block.get("ci_low"),
                block.get("ci_high"),
            )
        elif c.kind == "verdict":
            out[c.key] = spreadsheet_safe(value.get("text") if isinstance(value, dict) else None)
        else:
            out[c.key] = spreadsheet_safe(value)  # a model name like "=HYPERLINK(...)" stays text
    return out


def md_escape(text: str) -> str:
    """Text that Markdown shows as written: no links, emphasis, code, HTML or table breaks."""
    text = re.sub(r"([\\`*_\[\]#!|~>])", r"\\\1", str(text))
    return text.replace("<", "&lt;").replace("\n", " ")


def md_cell(row: dict[str, Any], c: Column) -> str:
    """One Markdown table cell (escaped), with "(warning)" when the column's ``warn`` field is true."""
    text = _md_value(row, c)
    return f"{text} (warning)" if c.warn and row.get(c.warn) else text


def _md_value(row: dict[str, Any], c: Column) -> str:
    value = c.raw(row)
    if c.kind == "rank":
        interval = fmt_interval(row.get("rank_interval"))
        return f"{row['rank']} ({interval})" if row.get("rank") and interval else (str(row.get("rank") or "-"))
    if c.kind == "size":
        return "" if not value else f"{value / 1e9:.2f}B"
    if c.is_block:
        if not isinstance(value, dict) or value.get("mean") is None:
            return "not judged" if c.kind == "score" else ""
        if c.kind == "rate":
            return f"{100 * value['mean']:.1f}%"
        text = f"{value['mean']:.{c.digits}f}"
        if value.get("ci_low") is not None and c.kind == "score":
            text += f" [{value['ci_low']:.{c.digits}f}, {value['ci_high']:.{c.digits}f}]"
        return text
    if c.kind == "fraction":
        return "" if value is None else f"{100 * value:.1f}%"
    if c.kind == "verdict":
        return md_escape(value.get("text") or "") if isinstance(value, dict) else ""
    return md_escape("" if value is None else value)


def write_exports(out: Path, board: dict[str, Any], columns: Sequence[Column]) -> None:
    write_json(out / "leaderboard.json", board)
    columns = shown_columns(columns, board["rows"])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_fields(columns))
    writer.writeheader()
    writer.writerows(flat_row(r, columns) for r in board["rows"])
    atomic_write_text(out / "leaderboard.csv", buffer.getvalue())
    shown = [c for c in columns if c.md]
    md = [f"# {md_escape(board['name'])}", ""]
    if board.get("demo"):
        md += ["> Demo board: the offline demo model on the built-in synthetic sample. Not TIDE results.", ""]
    labels = [f"{c.label} [95% CI]" if c.kind == "score" else c.label for c in shown]
    md += [
        f"Ranked by {board['ranking_metric']}; {board['rank_rule']}.",
        "",
        "| " + " | ".join(labels) + " |",
        "|" + "---|" * len(shown),
    ]
    md += ["| " + " | ".join(md_cell(r, c) for c in shown) + " |" for r in board["rows"]]
    atomic_write_text(out / "leaderboard.md", "\n".join(md) + "\n")
