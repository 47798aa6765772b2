"""The board's table, built from the column declaration (:mod:`..scoring.columns`).

Each entry is a ``<tbody class="entry">`` holding its row and its (hidden) details row, so
sorting moves both. Every cell carries its sort value as a ``data-<key>`` attribute of the
entry, and every header its ``data-better`` end, so the script (``assets/board.js``) sorts
best-first on the first click of a score column, filters by condition, size and name, and
shows or hides a column group (the rubric's factors) without knowing any column by name.
Reference anchors (``is_reference``, or ``unranked_reason: "reference anchor"``) get their own row style.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tide_bench.leaderboard.scoring.columns import Column
from tide_bench.leaderboard.site.html import esc, fmt_block, fmt_interval, fmt_size
from tide_bench.leaderboard.site.plots import is_anchor, unranked_anchor

SIZE_STEPS = (100e6, 300e6, 1e9, 3e9, 10e9, 30e9, 100e9)
NO_BREAK_HYPHEN = "\u2011"  # "ROUGE-L" stays on one line in a narrow header
NUMERIC = ("rank", "size", "score", "metric", "rate", "fraction", "count", "number")
SORTED_BY_NUMBER = (*NUMERIC, "verdict")  # a verdict's text is shown, its number sorts


def _muted(text: str) -> str:
    return f'<span class="muted">{esc(text)}</span>'


def _warnings(row: dict[str, Any]) -> str:
    out = []
    if is_anchor(row):
        out.append('<span class="tag anchor">reference anchor</span>')
    elif row.get("rank") is None and row.get("unranked_reason"):
        out.append(f'<span class="note">not ranked: {esc(row["unranked_reason"])}</span>')
    if row.get("severe_pending_review"):
        out.append(
            f'<span class="warn pending" title="a judge flag on a severe risk item that no clinician has adjudicated; '
            f'it counts until one clears it">&#9888; {esc(row["severe_pending_review"])} severe flag(s) pending '
            "review</span>"
        )
    if row.get("any_safety_flag"):
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted((row.get("safety_categories") or {}).items()))
        out.append(f'<span class="warn" title="{esc(kinds)}">&#9888; at least one reply safety-flagged</span>')
    self_pref = row.get("self_preference") or {}
    if self_pref.get("risk"):
        out.append(
            f'<span class="warn" title="{esc(self_pref.get("note"))}">&#9888; judge and model share a family</span>'
        )
    leak = row.get("preference_leakage") or {}
    if leak.get("risk") is not False and leak:
        what = "trained on the judge family's references" if leak.get("risk") else "training data unknown"
        out.append(f'<span class="warn" title="{esc(leak.get("note"))}">&#9888; preference leakage: {what}</span>')
    return "".join(out)


def cell_html(c: Column, row: dict[str, Any], *, link: str | None = None) -> str:
    """A value as the page shows it (escaped), with a warning sign when the column's ``warn`` field is true."""
    shown = _cell_value(c, row, link=link)
    if c.warn and row.get(c.warn):
        shown += f' <span class="warn" title="{esc(c.help)}">&#9888;</span>'
    return shown


def _cell_value(c: Column, row: dict[str, Any], *, link: str | None = None) -> str:
    value = c.raw(row)
    if c.kind == "rank":
        if unranked_anchor(row):
            return _muted("anchor")
        if row.get("rank") is None:
            return f'<span class="muted" title="{esc(row.get("unranked_reason") or "")}">&ndash;</span>'
        return f'<span class="rank">{esc(fmt_interval(row.get("rank_interval")) or row["rank"])}</span>'
    if c.kind == "model":
        name = esc(value or row.get("id"))
        shown = f'<a href="{esc(link)}">{name}</a>' if link else name
        condition = row.get("condition")
        tag = f'<span class="tag {esc(condition)}">{esc(condition)}</span>' if condition and not is_anchor(row) else ""
        return f'<span class="name">{shown}</span>{tag}{_warnings(row)}'
    if c.kind == "size":
        return fmt_size(value)
    if c.kind == "condition":
        return f'<span class="tag {esc(value)}">{esc(value)}</span>' if value else ""
    if c.kind == "verdict":
        return _verdict(value, judged=bool(row.get("judged", True)))
    if c.is_block:
        if value is None and c.kind == "score" and (c.when_present or not row.get("judged", True)):
            return _muted("not judged")  # a score only some entries have (the seeker's view): not judged so
        return fmt_block(value, c.digits, percent=c.kind == "rate")
    if value is None:
        return _muted("not judged") if c.kind == "fraction" and not row.get("judged", True) else _muted("n/a")
    if c.kind == "fraction":
        return f"{100 * value:.1f}%"
    if c.kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.{c.digits}f}" if math.isfinite(value) else "n/a"
    return esc(value)


def _verdict(value: Any, *, judged: bool) -> str:
    """A verdict (``{text, estimable, shown}``): its text, muted when nothing could be estimated,
    marked when it shows a gap."""
    if not isinstance(value, dict) or not value.get("text"):
        return _muted("not judged" if not judged else "n/a")
    if not value.get("estimable"):  # "not estimable: <why>": the words in the cell, the why on hover and in its section
        short, _, why = str(value["text"]).partition(": ")
        return f'<span class="muted" title="{esc(why)}">{esc(short)}</span>' if why else _muted(short)
    if value.get("shown"):
        return f'<span class="warn-text">&#9888; {esc(value["text"])}</span>'
    return esc(value["text"])


def sort_value(c: Column, row: dict[str, Any]) -> str:
    if c.kind == "rank":
        return "" if row.get("rank") is None else str(row["rank"])
    if c.kind in SORTED_BY_NUMBER:
        number = c.number(row)
        return "" if number is None else f"{number:.6g}"
    value = c.raw(row)
    return "" if value is None else str(value)


def _classes(c: Column) -> str:
    """A cell's classes: alignment, and ``grp off`` for a column of a group (shown on request)."""
    return ("num" if c.kind in NUMERIC else "l") + (" grp off" if c.group else "")


def _group(c: Column) -> str:
    return f' data-group="{esc(c.group)}"' if c.group else ""


def _header(c: Column, sorted_key: str) -> str:
    classes = _classes(c)
    sort = ' aria-sort="ascending"' if c.key == sorted_key else ""
    better = f' data-better="{c.better}"' if c.better else ""
    group = _group(c)
    tip = f' title="{esc(c.help)}"' if c.help else ""
    return (
        f'<th scope="col" data-key="{esc(c.key)}"{better}{group} class="{classes}"{sort}{tip}>'
        f'<button type="button" class="sort">{esc(c.label).replace("-", NO_BREAK_HYPHEN)}</button></th>'
    )


def _size_options(label: str, element_id: str) -> str:
    options = "".join(f'<option value="{v:.0f}">{fmt_size(v)}</option>' for v in SIZE_STEPS)
    return f'<label>{esc(label)} <select id="{element_id}"><option value="">any</option>{options}</select></label>'


def controls(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> str:
    """Search, condition and size filters, and one toggle per column group."""
    conditions = sorted({str(r.get("condition")) for r in rows if r.get("condition")})
    condition = "".join(f'<option value="{esc(c)}">{esc(c)}</option>' for c in conditions)
    groups: dict[str, int] = {}
    for c in columns:
        if c.group:
            groups[c.group] = groups.get(c.group, 0) + 1
    toggles = "".join(
        f'<button type="button" class="toggle" data-toggle-group="{esc(g)}" aria-pressed="false" aria-controls="board">'
        f"Show the {n} {esc(g)}</button>"
        for g, n in groups.items()
    )
    return (
        '<div class="controls" role="search" aria-label="Filter the table">'
        '<label>Search <input type="search" id="f-search" placeholder="model name" autocomplete="off"></label>'
        f'<label>Condition <select id="f-condition"><option value="">all</option>{condition}</select></label>'
        f"{_size_options('Size from', 'f-size-min')}{_size_options('to', 'f-size-max')}{toggles}"
        '<span id="board-status" class="muted" aria-live="polite"></span></div>'
    )


def _entry(row: dict[str, Any], columns: Sequence[Column], details: str) -> str:
    attrs = {
        "id": row.get("id"),
        "model": row.get("model_name"),
        "condition": row.get("condition") or "",
        "size": "" if not row.get("parameters") else f"{row['parameters']:.0f}",
        "anchor": "1" if is_anchor(row) else "",
    }
    attrs |= {c.key: sort_value(c, row) for c in columns}
    attr_html = " ".join(f'data-{k}="{esc(v)}"' for k, v in attrs.items())
    link = f"models/{row.get('id')}.html"
    detail_id = f"details-{esc(row.get('id'))}"
    button = f'<button type="button" class="more" aria-expanded="false" aria-controls="{detail_id}">details</button>'
    cells = "".join(
        f'<td class="{_classes(c)}"{_group(c)}>{cell_html(c, row, link=link)}{button if c.kind == "model" else ""}</td>'
        for c in columns
    )
    klass = "entry anchor" if is_anchor(row) else "entry"
    return (
        f'<tbody class="{klass}" {attr_html}><tr>{cells}</tr>'
        f'<tr class="details" id="{detail_id}" hidden><td colspan="{len(columns)}">{details}</td></tr></tbody>'
    )


def board_table(rows: Sequence[dict[str, Any]], columns: Sequence[Column], details: dict[str, str]) -> str:
    """The filter bar and the table (in a box that scrolls sideways on a narrow screen)."""
    shown = [c for c in columns if c.page]
    head = "".join(_header(c, "rank") for c in shown)
    body = "".join(_entry(r, shown, details.get(str(r.get("id")), "")) for r in rows)
    return (
        controls(rows, shown)
        + '<p class="scroll-cue" aria-hidden="true">The table scrolls sideways: the scores are to the right &rarr;</p>'
        + '<div class="table-wrap" role="region" aria-label="Leaderboard table" tabindex="0">'
        + f'<table id="board" class="board"><thead><tr>{head}</tr></thead>{body}</table></div>'
    )
