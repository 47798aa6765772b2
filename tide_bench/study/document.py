"""A study report as blocks, written once and rendered twice: Markdown for the file, HTML for the board.

The study's reports (``report.md``, ``people.md``) used to be written as Markdown and then parsed
back for the board's page, and the parser missed what it had not been told of (an alignment row
``---:``, ``**bold**``), so the section that carried the study's answer rendered broken. Now a
report is a list of blocks made from its results (``report.json``, ``people.json``), and each
renderer turns the same blocks into its format: nothing is parsed back.

Text in blocks may hold two marks, in both renderers: `` `code` `` and ``**bold**``. Every other
character is text (escaped for HTML; table cells have ``|`` escaped for Markdown).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Banner:
    """A notice that belongs to the report itself (synthetic data, a scorer not validated)."""

    text: str


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    numeric: Sequence[bool] = field(default_factory=tuple)  # right-aligned columns


@dataclass(frozen=True)
class Figure:
    name: str  # an SVG beside the report
    caption: str


Block = Heading | Paragraph | Banner | Table | Figure


def to_markdown(title: str, blocks: Sequence[Block]) -> str:
    lines = [f"# {title}", ""]
    for block in blocks:
        if isinstance(block, Heading):
            lines += [f"## {block.text}", ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Banner):
            lines += [f"> **{block.text}**", ""]
        elif isinstance(block, Table):
            numeric = list(block.numeric) + [False] * (len(block.header) - len(block.numeric))
            lines.append("| " + " | ".join(_cell(c) for c in block.header) + " |")
            lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        else:
            lines += [f"![{block.caption}]({block.name})", "", f"*{block.caption}*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def to_html(blocks: Sequence[Block], figures: Mapping[str, str] | None = None) -> str:
    """The blocks as an HTML fragment for a board section; a figure inline as the SVG drawing
    ``figures`` holds under its name (the board's own charts are inline SVG too), left out when
    there is none."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"<h3>{inline(block.text)}</h3>")
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{inline(block.text)}</p>")
        elif isinstance(block, Banner):
            parts.append(f'<p class="banner" role="note">{inline(block.text)}</p>')
        elif isinstance(block, Table):
            parts.append(_table_html(block))
        elif figures and block.name in figures:
            parts.append(f"<figure>{figures[block.name]}<figcaption>{inline(block.caption)}</figcaption></figure>")
    return "\n".join(parts)


def _table_html(table: Table) -> str:
    numeric = list(table.numeric) + [False] * (len(table.header) - len(table.numeric))
    align = [' class="num"' if n else "" for n in numeric]
    head = "".join(f'<th scope="col"{a}>{inline(c)}</th>' for c, a in zip(table.header, align, strict=False))
    body = "".join(
        "<tr>" + "".join(f"<td{a}>{inline(c)}</td>" for c, a in zip(row, align, strict=False)) + "</tr>"
        for row in table.rows
    )
    return (
        f'<div class="table-wrap" tabindex="0"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def inline(text: str) -> str:
    """Escaped text with its `code` and **bold** marks as HTML."""
    return _BOLD.sub(r"<b>\1</b>", _CODE.sub(r"<code>\1</code>", html.escape(text)))
