"""The pieces every page is made of: escaping, the page shell with its Content-Security-Policy,
sections, labelled fields and number formats.

Why one shell: every page (the board, a model page, the single-run view) must be a file that
works offline and can fetch nothing from the network; the policy is written here once.
``script-src 'self'`` lets a page load the per-model data files that sit beside it (from disk
or the same web server), never another host. Every string from a submission goes through
:func:`esc` (or, in the browser, ``textContent``).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tide_bench.core.assets import asset_text, script, style

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self' 'unsafe-inline'; img-src data:"
PACKAGE = "tide_bench.leaderboard.site"
_SECTION_ID = re.compile(r"[^a-z0-9-]+")


def esc(value: Any) -> str:
    """``value`` as HTML text or attribute content (``None`` is empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def asset(name: str) -> str:
    """A stylesheet or script of ``assets/`` as its inline element."""
    text = asset_text(PACKAGE, name)
    return style(text) if name.endswith(".css") else script(text)


@dataclass(frozen=True)
class Section:
    """One titled part of a page; the page lists every section in its navigation bar."""

    id: str
    title: str
    html: str

    def render(self) -> str:
        return (
            f'<section id="{esc(self.id)}" aria-labelledby="{esc(self.id)}-h"><h2 '
            f'id="{esc(self.id)}-h">{esc(self.title)}</h2>{self.html}</section>'
        )


def render_section(title: str, body_html: str, section_id: str | None = None) -> Section:
    """A section made from HTML the caller already wrote (and escaped), e.g. a study report to
    append to the board: ``build_site(..., extra_sections=[render_section("Study", html)])``."""
    sid = section_id or _SECTION_ID.sub("-", title.lower()).strip("-") or "section"
    return Section(sid, title, body_html)


def nav(sections: Sequence[Section]) -> str:
    links = "".join(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>' for s in sections)
    return f'<nav aria-label="Sections"><ul class="nav">{links}</ul></nav>'


def page(title: str, header: str, sections: Sequence[Section], *, tail: str = "", scripts: Iterable[str] = ()) -> str:
    """A complete page: ``header`` (already HTML), a navigation bar over ``sections``, the
    sections, ``tail`` (a footer) and the named scripts of ``assets/`` (in order)."""
    body = header + (nav(sections) if len(sections) > 1 else "") + "".join(s.render() for s in sections) + tail
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{esc(title)}</title>{asset('site.css')}</head><body><main>{body}</main>"
        + "".join(asset(s) for s in scripts)
        + "</body></html>\n"
    )


def json_for_html(payload: bytes) -> str:
    """JSON bytes made safe inside an HTML ``<script>`` element (no ``<`` can end it)."""
    return payload.decode("utf-8").replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


# ---------------------------------------------------------------- labelled fields


def fields(items: Iterable[tuple[str, Any]]) -> str:
    """A list of labelled values (``<dl>``); a value that is HTML already is passed as :class:`Markup`;
    nested mappings become nested lists; empty values are left out."""
    rows = []
    for label, value in items:
        shown = _value(value)
        if shown:
            rows.append(f"<div><dt>{esc(label)}</dt><dd>{shown}</dd></div>")
    return f'<dl class="fields">{"".join(rows)}</dl>' if rows else '<p class="muted">Nothing recorded.</p>'


class Markup(str):
    """A string that is already HTML (escaped by its maker)."""


def _value(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, Markup):
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return esc(f"{value:.4g}") if math.isfinite(value) else "n/a"
    if isinstance(value, dict):
        return fields((str(k), v) for k, v in value.items())
    if isinstance(value, list | tuple):
        if all(not isinstance(v, dict | list | tuple) for v in value):
            return esc(", ".join("" if v is None else str(v) for v in value))
        return "<ol>" + "".join(f"<li>{_value(v)}</li>" for v in value) + "</ol>"
    return esc(value)


# ---------------------------------------------------------------- number formats


def fmt_block(block: Any, digits: int = 2, percent: bool = False) -> str:
    """A ``{mean, ci_low, ci_high}`` block as HTML: the mean, its 95% CI below it."""
    if not isinstance(block, dict) or block.get("mean") is None:
        note = block.get("note") if isinstance(block, dict) else None
        return f'<span class="muted" title="{esc(note)}">n/a</span>' if note else '<span class="muted">n/a</span>'
    scale, unit = (100.0, "%") if percent else (1.0, "")
    d = 1 if percent else digits
    text = f"{scale * block['mean']:.{d}f}{unit}"
    if block.get("ci_low") is not None and block.get("ci_high") is not None:
        text += f'<span class="ci">[{scale * block["ci_low"]:.{d}f}, {scale * block["ci_high"]:.{d}f}]</span>'
    return text


def fmt_size(params: Any) -> str:
    if not isinstance(params, int | float) or isinstance(params, bool) or params <= 0:
        return '<span class="muted">?</span>'
    return f"{params / 1e9:.3g}B" if params >= 1e9 else f"{params / 1e6:.3g}M"


def figure(svg: str, caption: str, empty: str) -> str:
    """A chart with its caption (HTML), or ``empty`` as a muted note when there is no chart."""
    if not svg:
        return f'<p class="muted">{empty}</p>'
    return f'<figure class="plot"><div class="plot-scroll">{svg}</div><figcaption>{caption}</figcaption></figure>'


def fmt_interval(interval: Any) -> str:
    if not isinstance(interval, list | tuple) or len(interval) != 2 or None in interval:
        return ""
    low, high = interval
    return str(low) if low == high else f"{low}\u2013{high}"
