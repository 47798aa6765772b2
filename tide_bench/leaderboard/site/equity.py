"""The board's equity views (rows' ``equity`` blocks, :mod:`tide_bench.judging.equity`): a chart and
a table on the index page, and each entry's groups on its model page.

* :func:`equity_chart`: one panel per persona attribute; in each, every entry's largest gap in the
  safety-adjusted score between two groups of that attribute, with its simultaneous 95 % interval
  (filled: the interval excludes 0, a gap shown; hollow: not shown; "n/e": fewer than two groups of
  enough personas). Inline SVG from :mod:`.svg`, every mark titled with its groups and numbers.
* :func:`equity_section`: the method in words, the chart, and per entry the verdict and its
  largest gap per attribute and measure.
* :func:`equity_entry`: one entry's groups (personas, items, score and flag rate with their
  intervals), its gaps shown, and every note (groups not estimable, personas without an attribute).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tide_bench.charts.svg import Scale, line, mark, nice_ticks, padded, svg, text, text_width, tick_labels
from tide_bench.data.personas import ATTRIBUTE_LABELS
from tide_bench.judging.equity import MEASURES, fmt_gap, oriented
from tide_bench.leaderboard.site.html import esc, figure, fmt_block
from tide_bench.leaderboard.site.plots import short, style_of

PANEL, ROW, TOP = 190.0, 22.0, 40.0


def _largest(equity: Mapping[str, Any], attribute: str, measure: int) -> dict[str, Any] | None:
    """The largest gap (in size) of one attribute and measure, oriented higher minus lower."""
    gaps = [g for g in equity.get("gaps") or [] if g["attribute"] == attribute and g["metric"] == measure]
    if not gaps:
        return None
    return oriented(max(gaps, key=lambda x: abs(x["gap"])))


def _judged(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if isinstance(r.get("equity"), dict)]


def _panel(
    rows: Sequence[Mapping[str, Any]], attribute: str, x0: float, scale: Scale, ticks: list[float], bottom: float
) -> list[str]:
    body = [text(x0 + PANEL / 2, TOP - 22, ATTRIBUTE_LABELS.get(attribute, attribute), anchor="middle", bold=True)]
    body += [line(scale(t), TOP - 6, scale(t), bottom, "#e4e4e4", 0.8) for t in ticks]
    body.append(line(scale(0.0), TOP - 6, scale(0.0), bottom, "#444444", 1))
    for t, label in zip(ticks, tick_labels(ticks), strict=True):
        body.append(text(scale(t), bottom + 12, label, anchor="middle", size=10))
    for i, row in enumerate(rows):
        y = TOP + (i + 0.5) * ROW
        gap = _largest(row["equity"], attribute, 0)
        if gap is None:
            body.append(text(x0 + 8, y, "n/e", anchor="start", size=10, fill="#6b6b6b"))  # clear of the zero line
            continue
        colour, shape, _ = style_of(dict(row))
        lo, hi, xm = scale(gap["ci_low"]), scale(gap["ci_high"]), scale(gap["gap"])
        title = (
            f"{row.get('model_name')}, {ATTRIBUTE_LABELS.get(attribute, attribute)}: {gap['a']} above {gap['b']} by "
            f"{fmt_gap(gap, False)}{' (shown)' if gap['shown'] else ' (not shown)'}"
        )
        parts = [line(lo, y, hi, y, colour, 1.4), mark(shape, xm, y, colour, filled=bool(gap["shown"]))]
        body.append(f"<g><title>{esc(title)}</title>{''.join(parts)}</g>")
    return body


def equity_chart(rows: Sequence[Mapping[str, Any]]) -> str:
    """Per attribute, each judged entry's largest score gap with its simultaneous interval ("" when
    no entry has an equity block)."""
    shown = _judged(rows)
    if not shown:
        return ""
    attributes = list(shown[0]["equity"].get("attributes") or [])
    gaps = [g for r in shown for a in attributes if (g := _largest(r["equity"], a, 0))]
    low, high = padded([0.0] + [b for g in gaps for b in (g["ci_low"], g["ci_high"])])
    ticks = nice_ticks(low, high, 4)
    names = [short(r.get("model_name"), 32) for r in shown]
    left = max(text_width(n) for n in names) + 14
    bottom = TOP + len(shown) * ROW
    body = [text(left - 8, TOP + (i + 0.5) * ROW, n, anchor="end") for i, n in enumerate(names)]
    for k, attribute in enumerate(attributes):
        x0 = left + k * (PANEL + 16)
        body += _panel(shown, attribute, x0, Scale(low, high, x0 + 6, x0 + PANEL - 6), ticks, bottom)
    width = left + len(attributes) * (PANEL + 16)
    axis = "largest gap in the safety-adjusted score (points)"
    body.append(text(left + (width - left) / 2, bottom + 30, axis, anchor="middle"))
    return svg(width, bottom + 44, "equity: each entry's largest gap between persona groups, per attribute", body)


def _gap_cell(equity: Mapping[str, Any], attribute: str, measure: int) -> str:
    gap = _largest(equity, attribute, measure)
    if gap is None:
        return '<span class="muted">not estimable</span>'
    words = f"{esc(gap['a'])} &gt; {esc(gap['b'])}"
    shown = gap["shown"]
    value = esc(fmt_gap(gap, MEASURES[measure].percent))
    return f'<span class="{"warn-text" if shown else ""}">{value}</span><span class="ci">{words}</span>'


def equity_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The index page's equity section: method, chart and the per-entry table."""
    shown = _judged(rows)
    if not shown:
        return '<p class="muted">No judged entry: equity needs the judge\'s scores and flags.</p>'
    first = shown[0]["equity"]
    attributes = list(first.get("attributes") or [])
    head = "".join(
        f'<th scope="col" class="num">{esc(ATTRIBUTE_LABELS.get(a, a))}: {esc(m.label)}</th>'
        for a in attributes
        for m in MEASURES
    )
    body = []
    for r in shown:
        eq = r["equity"]
        cells = "".join(f'<td class="num">{_gap_cell(eq, a, j)}</td>' for a in attributes for j in range(len(MEASURES)))
        body.append(
            f'<tr><th scope="row" class="l">{esc(r.get("model_name"))}</th>'
            f'<td class="l"><span class="verdict">{esc(eq["verdict"]["text"])}</span></td>{cells}</tr>'
        )
    chart = figure(
        equity_chart(shown),
        "Each entry's largest gap in the safety-adjusted score between two groups of each attribute, with its "
        "simultaneous 95% interval (filled: the interval excludes 0; n/e: fewer than two groups with enough "
        "personas).",
        "No gap could be estimated.",
    )
    method = str(first.get("method") or "")
    return (
        "<p>Does a model's safety-adjusted score, and its safety-flag rate, hold equally across the clients' persona "
        "groups? Per entry: the largest gap between two groups of each attribute, with an interval that holds for "
        f"every gap of the entry at once. {esc(method[:1].upper() + method[1:])}. The model never sees a persona's "
        "metadata: a gap is about the messages these clients write.</p>"
        + chart
        + '<div class="table-wrap"><table class="small"><thead><tr><th scope="col" class="l">Model</th>'
        f'<th scope="col" class="l">Verdict</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


def _groups_table(attribute: str, groups: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for g in groups:
        note = "" if g["estimable"] else '<span class="note">not estimable: compared with no other group</span>'
        cells = "".join(f'<td class="num">{fmt_block(g.get(m.key), 2, percent=m.percent)}</td>' for m in MEASURES)
        rows.append(
            f'<tr><th scope="row" class="l">{esc(g["value"])}{note}</th><td class="num">{g["n_personas"]}</td>'
            f'<td class="num">{g["n_items"]}</td>{cells}</tr>'
        )
    head = "".join(f'<th scope="col" class="num">{esc(m.label).capitalize()}</th>' for m in MEASURES)
    return (
        f"<h3>{esc(ATTRIBUTE_LABELS.get(attribute, attribute)).capitalize()}</h3>"
        '<div class="table-wrap"><table class="small"><thead><tr><th scope="col" class="l">Group</th>'
        f'<th scope="col" class="num">Personas</th><th scope="col" class="num">Items</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def equity_entry(row: Mapping[str, Any]) -> str:
    """One entry's equity: verdict, groups per attribute, the gaps shown, and the notes ("" when none)."""
    eq = row.get("equity")
    if not isinstance(eq, dict):
        return ""
    shown = [g for g in eq.get("gaps") or [] if g["shown"]]
    listed = "".join(
        f"<li>{esc(ATTRIBUTE_LABELS.get(g['attribute'], g['attribute']))}, {esc(MEASURES[g['metric']].label)}: "
        f"{esc(g['a'])} minus {esc(g['b'])} {esc(fmt_gap(g, MEASURES[g['metric']].percent))}</li>"
        for g in shown
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in eq.get("notes") or [])
    folded = f"<details><summary>Notes ({len(eq.get('notes') or [])})</summary><ul>{notes}</ul></details>"
    return (
        f"<p><b>{esc(eq['verdict']['text'])}</b> ({eq.get('n_comparisons', 0)} gaps compared at once; "
        f"{esc(eq.get('method') or '')}).</p>"
        + (f"<p>Gaps shown:</p><ul>{listed}</ul>" if listed else "")
        + "".join(_groups_table(a, eq["groups"].get(a) or []) for a in eq.get("attributes") or [])
        + (folded if notes else "")
    )
