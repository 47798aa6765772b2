"""The static site: ``index.html``, one page per model, the per-item data and downloads.

Layout of a built site::

    index.html                 ranking (forest plot), table, judge and its biases, pairwise
                               differences, score versus size, per scenario, replies
    models/<id>.html           one entry: numbers, replies, provenance, metadata, downloads
    instances/items.js         every item's conversation and reference (loaded on demand)
    instances/<id>.js          one entry's replies and judgments (loaded on demand)
    downloads/<id>/...         the raw judgments.jsonl and a flat items.csv per entry
    leaderboard.json/.csv/.md  the numbers (:mod:`.exports`)

Pages are single files with inline CSS and JS (``assets/``) under a Content-Security-Policy
that allows no network request; the per-entry data files are loaded from beside the page
only when a reader opens an entry, so the index stays small on a board of any size. A page
is a list of :class:`~.html.Section`; :func:`~.html.render_section` makes one from any HTML
(a study report), and ``render_index(..., extra_sections=...)`` appends it. Every submitted
string is escaped here (:func:`~.html.esc`) or inserted as text by the browser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tide_bench.core.stats import format_estimate
from tide_bench.data.sources import SAMPLE_WORDING
from tide_bench.judging.rubric import Rubric
from tide_bench.leaderboard.scoring.columns import Column, shown_columns
from tide_bench.leaderboard.site.entry_view import (
    bias,
    heat_style,
    labelled_fields,
    metadata,
    other_fields,
    provenance,
    scenario_key,
    scenario_table,
    summary,
)
from tide_bench.leaderboard.site.equity import equity_entry, equity_section
from tide_bench.leaderboard.site.html import Section, esc, figure, fmt_block, page, render_section
from tide_bench.leaderboard.site.instances import FOLDER, keep_items
from tide_bench.leaderboard.site.plots import draw_charts, is_anchor
from tide_bench.leaderboard.site.safety import gate_banner, safety_notes
from tide_bench.leaderboard.site.table import board_table
from tide_bench.leaderboard.submission.layout import Submission

__all__ = [
    "Section",
    "bias_html",
    "browser_html",
    "entry_sections",
    "metric_label",
    "render_index",
    "render_model_page",
    "render_section",
    "write_site",
]


def metric_label(metric: str, rubric: Rubric) -> str:
    if metric == "empathy":
        return f"Empathy ({rubric.scale_min}-{rubric.scale_max}, mean of the {len(rubric.factors)} factors)"
    if metric == "safety_adjusted_empathy":
        return (
            f"Safety-adjusted empathy ({rubric.scale_min}-{rubric.scale_max}; a reply flagged as unsafe counts at "
            f"{rubric.scale_min})"
        )
    return "Cosine similarity to the reference"


CONTENT_NOTE = (
    '<div class="banner" role="note" id="content-note"><b>Content note.</b> This board shows conversations with '
    "people who live with the after-effects of trauma, and some mention <b>suicidal thoughts, self-harm</b>, violence "
    "or abuse. "
    "If reading them makes you feel unsafe, stop and contact your local emergency number or a crisis line.</div>"
)


def _header(board: Mapping[str, Any], title: str, back: str = "") -> str:
    out = [f"<header>{back}<h1>{esc(title)}</h1>", CONTENT_NOTE]
    synthetic = [w for w in board.get("synthetic") or [] if w != SAMPLE_WORDING]
    if synthetic:
        out.append(
            f'<div class="banner" role="note"><b>{"Demo board" if board.get("demo") else "Synthetic data"}.</b> '
            f"These entries are runs on <b>{esc('; '.join(synthetic))}</b>. They are not results and not a benchmark "
            "of any model.</div>"
        )
    elif board.get("demo"):
        out.append(
            '<div class="banner" role="note"><b>Demo board.</b> These entries are runs of the offline demo model on '
            "the "
            "built-in <b>synthetic sample</b>, written for tide-bench. They are not TIDE results and not a benchmark "
            "of any model.</div>"
        )
    return "".join(out) + "</header>"


def _judge_stamp(board: Mapping[str, Any], rubric: Rubric) -> str:
    judge = board.get("judge")
    if not judge:
        return (
            '<div class="stamp">No judge scores on this board: entries are ranked by embedding cosine similarity to '
            "the reference replies.</div>"
        )
    names = {f.key: f.name for f in rubric.factors}
    parts = [
        f"Judge: <b>{esc(judge.get('name'))}</b> ({esc(judge.get('provider'))} {esc(judge.get('model'))}), "
        f"configuration <code>{esc(judge.get('version'))}</code>, rubric {esc(judge.get('rubric'))}."
    ]
    stamp = board.get("judge_validation") or {}
    if stamp:
        link = f' (<a href="judges.html#{esc(stamp["anchor"])}">judges board</a>)' if stamp.get("anchor") else ""
        parts.append(f"Validation against public expert ratings: {esc(stamp.get('text'))}{link}.")
    audit = board.get("audit")
    if audit:
        items = []
        for dim, block in audit.items():
            with_judge = block.get("alpha_with_judge") or {}
            human = block.get("human_alpha") or {}
            items.append(
                f"{esc(names.get(dim, dim))}: human-human alpha {_fmt(human.get('value'))} "
                f"[{_fmt(human.get('ci_low'))}, {_fmt(human.get('ci_high'))}], with the judge "
                f"{_fmt(with_judge.get('value'))}; {esc(block.get('verdict') or '')}"
            )
        parts.append(
            "Agreement with human raters (audit, interval alpha): <ul><li>" + "</li><li>".join(items) + "</li></ul>"
        )
    else:
        parts.append("No human-agreement audit was attached to this build (<code>--audit agreement.json</code>).")
    return '<div class="stamp">' + " ".join(parts) + "</div>"


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _estimate(e: Any, digits: int = 2) -> str:
    return format_estimate(e, digits, key="value") or "undefined"


def bias_html(diagnostics: Mapping[str, Any] | None, rows: Sequence[Mapping[str, Any]]) -> str:
    """The judge-bias block: length, halo, preference leakage (board or run)."""
    if not diagnostics:
        return '<p class="muted">No judge scores: no judge-bias diagnostics.</p>'
    length, halo = diagnostics.get("length") or {}, diagnostics.get("halo") or {}
    verdict = str(length.get("verdict") or "")
    verdicts = {
        "scores rise with length": "<b>Scores rise with reply length</b> (the slope's interval lies above zero, within "
        "entries and items). An association: the judge may reward length, or longer replies may be better here; the "
        "padding probe tells them apart. The length-controlled score removes the association.",
        "scores fall with length": "<b>Scores fall with reply length</b> (the slope's interval lies below zero, within "
        "entries and items). An association, not a test of the judge (see the padding probe).",
        "no association with length shown": "No association of scores with length is shown (the slope's interval "
        "includes zero).",
    }
    out = [
        "<h3>Reply length</h3>",
        f"<p>Within entries, overall empathy correlates with reply length at r = {_estimate(length.get('r_within'))} "
        f"over {length.get('n_scored', 0)} scored items in {length.get('n_personas', 0)} personas. Slope of the "
        f"length term (entry and item effects removed, {length.get('n_items_in_slope', 0)} items every entry scored): "
        f"{_estimate(length.get('slope'))} points per unit of tanh(length difference to the reference "
        f"/ {length.get('length_scale_tokens', 0):.0f} tokens). "
        f"{verdicts.get(verdict, esc(verdict[:1].upper() + verdict[1:]) + '.')}</p>",
        '<p class="muted">Length-controlled empathy (table column) is the empathy an entry would have if its replies '
        "were as long as the references (AlpacaEval-LC style; model in <code>leaderboard.json</code>, "
        "<code>judge_bias.length.model</code>); n/a when the length term is not identified.</p>",
        "<h3>Halo between factors</h3>",
    ]
    pairs = halo.get("pairs") or []
    if pairs:
        cells = "".join(
            f'<tr><td class="l">{esc(p["a"])} &times; {esc(p["b"])}</td><td class="num">{_estimate(p["r"])}</td></tr>'
            for p in pairs
        )
        share = halo.get("identical_share") or {}
        identical = (
            f"{100 * share['mean']:.1f}% of scored items have the same score on every factor"
            + (
                f" (95% CI {100 * share['ci_low']:.1f}-{100 * share['ci_high']:.1f}%)"
                if share.get("ci_low") is not None
                else ""
            )
            + ". "
            if share.get("mean") is not None
            else ""
        )
        out.append(
            '<div class="table-wrap"><table class="small"><thead><tr><th scope="col" class="l">Factors</th>'
            f'<th scope="col" class="num">r [95% CI]</th></tr></thead><tbody>{cells}</tbody></table></div>'
            f'<p>{identical}<span class="muted">{esc(halo.get("note"))}</span></p>'
        )
    out.append("<h3>Preference leakage and self-preference</h3>")
    flagged = [
        r
        for r in rows
        if isinstance(r.get("preference_leakage"), dict) and r["preference_leakage"]["risk"] is not False
    ]
    flagged_self = [r for r in rows if (r.get("self_preference") or {}).get("risk")]
    if not flagged and not flagged_self:
        out.append(
            "<p>No fine-tuned entry was trained on references written by the judge's model family, and no entry shares "
            "the judge's family.</p>"
        )
    items = [f"<li><b>{esc(r.get('model_name'))}</b>: {esc(r['preference_leakage']['note'])}</li>" for r in flagged] + [
        f"<li><b>{esc(r.get('model_name'))}</b>: {esc(r['self_preference'].get('note'))}</li>" for r in flagged_self
    ]
    if items:
        out.append(f"<ul>{''.join(items)}</ul>")
    return "".join(out)


def browser_html(models: Sequence[tuple[str, str]], *, base: str, default: str, inline: bool = False) -> str:
    """The instance browser's controls (``assets/instances.js`` fills and drives them)."""
    options = "".join(f'<option value="{esc(i)}">{esc(n)}</option>' for i, n in models)
    choose = "" if default else '<option value="">choose a model</option>'
    pick = (
        f'<label>Model <select id="ib-model">{choose}{options}</select></label>'
        f'<label>Compare with <select id="ib-compare"><option value="">none</option>{options}</select></label>'
        if len(models) > 1
        else f'<select id="ib-model" hidden>{options}</select><select id="ib-compare" hidden></select>'
    )
    return (
        f'<div class="ib" id="ib" data-base="{esc(base)}" data-default="{esc(default)}" data-inline="{int(inline)}">'
        '<div class="controls" role="search" aria-label="Filter the replies">'
        f"{pick}"
        '<label>Search <input type="search" id="ib-search" autocomplete="off" '
        'placeholder="words in the turn, reply, reference or rationale"></label>'
        '<label>Scenario <select id="ib-scenario"><option value="">all</option></select></label>'
        '<label>Turn <select id="ib-turn"><option value="">all</option></select></label>'
        '<label>Empathy <select id="ib-score"><option value="">any</option></select></label>'
        '<label>Flag <select id="ib-flag"><option value="">any</option><option value="flagged">safety flag</option>'
        '<option value="unscored">unscored</option><option value="failure">model failure</option>'
        '<option value="clean">scored, no flag</option></select></label>'
        '<label>Order <select id="ib-sort"><option value="id">item id</option><option value="low">lowest first</option>'
        '<option value="high">highest first</option><option value="diff">largest difference first (comparison)</option>'
        "</select></label></div>"
        '<p id="ib-status" class="muted" aria-live="polite">Choose a model to read its replies.</p>'
        '<div id="ib-list"></div><button type="button" id="ib-more" hidden>Show more</button></div>'
    )


def _scale(metric: str, rubric: Rubric) -> tuple[float, float]:
    """The shading range of a per-scenario cell: the rubric's scale for empathy, 0-1 for the cosine."""
    return (rubric.scale_min, rubric.scale_max) if scenario_key(metric) == "empathy" else (0.0, 1.0)


def _details(row: Mapping[str, Any], metric: str, rubric: Rubric) -> str:
    """The details row under an entry: per scenario, statistics, and links."""
    model = row.get("model") or {}
    notes = []
    block = row.get(metric) or {}
    if block.get("design_effect") is not None:
        notes.append(
            f"{esc(metric)}: n {block['n']} items in {block.get('n_clusters')} personas, design effect "
            f"{block['design_effect']:.2f}"
        )
    bounds = row.get("empathy_bounds") or {}
    if bounds.get("worst") is not None:
        notes.append(
            f"empathy if every unscored item scored lowest / highest: {bounds['worst']:.2f} / {bounds['best']:.2f}"
        )
    if row.get("n_model_failures") is not None:
        notes.append(
            f"{row['n_model_failures']} model failures (counted at the lowest score), "
            f"{row.get('n_infrastructure_unscored')} unscored for infrastructure reasons"
        )
    reasons = ", ".join(f"{esc(k)}: {v}" for k, v in sorted((row.get("unscored_reasons") or {}).items())) or "none"
    ident = esc(model.get("hub_id") or model.get("api_model_id") or "")
    return (
        f"<p><b>{esc(row.get('model_name'))}</b> {ident} {esc(model.get('revision') or '')}; licence "
        f"{esc(row.get('license'))}; unscored reasons: {reasons}.</p>"
        + (f"<p>{'; '.join(notes)}.</p>" if notes else "")
        + scenario_table(row, metric, _scale(metric, rubric))
        + f'<p><a href="models/{esc(row.get("id"))}.html">Model page: provenance, metadata, every reply with the '
        "judge's rationales, downloads</a></p>"
    )


def _scenario_grid(rows: Sequence[Mapping[str, Any]], metric: str, rubric: Rubric) -> str:
    metric = scenario_key(metric)
    scenarios = sorted({s for r in rows for s in (r.get("per_scenario") or {})})
    if not scenarios:
        return ""
    scale = _scale(metric, rubric)
    digits = 2 if metric == "empathy" else 3
    head = "".join(f'<th scope="col" class="num">{esc(s)}</th>' for s in scenarios)
    body = []
    for r in rows:
        cells = []
        for s in scenarios:
            block = ((r.get("per_scenario") or {}).get(s) or {}).get(metric)
            cells.append(
                f'<td class="num"{heat_style((block or {}).get("mean"), *scale)}>{fmt_block(block, digits)}</td>'
            )
        body.append(f'<tr><th scope="row" class="l">{esc(r.get("model_name"))}</th>{"".join(cells)}</tr>')
    return (
        '<div class="table-wrap"><table class="small heat"><thead><tr><th scope="col" class="l">Model</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        '<p class="muted">Mean with 95% CI per scenario; darker cells are higher.</p>'
    )


def _ranking_html(label: str, drawn: Mapping[str, str]) -> str:
    """The ranking rule in words, then the forest plot."""
    return (
        f"<p>Ranked by <b>{esc(label)}</b>. Rank = 1 + the number of models significantly better in a paired "
        "comparison on the same items (persona-cluster bootstrap, corrected for testing every pair); models not shown "
        "to differ share a rank. The table shows each model's <b>rank interval</b>: where its rank falls in 95% of "
        "resamples. Empty replies and refusals count as the lowest score (failure rate).</p>"
        + figure(
            drawn["forest"],
            "Each entry's mean with its 95% CI, best first; the right axis gives the rank interval. Blue circles: "
            "zero-shot; green diamonds: fine-tuned; grey star and dotted line: reference anchor; hollow: not ranked.",
            "No entry has a score to plot.",
        )
    )


def _table_html(
    board: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], metric: str, rubric: Rubric
) -> str:
    """The sortable table with each entry's details, under the safety rule when the board has one."""
    details = {str(r.get("id")): _details(r, metric, rubric) for r in rows}
    safety = (
        f'<p class="muted">Safety first: {esc(board["safety_rule"])}. &#9888; next to a model: its safety-flag rate\'s '
        "95% CI excludes 0 (the categories on hover).</p>" + safety_notes(board)
        if board.get("safety_rule")
        else ""
    )
    return gate_banner(board) + (
        '<p class="muted">Click a column header to sort (a score sorts best first); the rank interval is under '
        "<i>Rank</i>. Unknown sizes are hidden by a size filter.</p>" + safety + board_table(rows, columns, details)
    )


def _chart_sections(drawn: Mapping[str, str], metric: str) -> list[Section]:
    """The pairwise-differences and score-versus-size charts, each with its caption."""
    return [
        Section(
            "pairwise",
            "Pairwise differences",
            figure(
                drawn["pairwise"],
                f"Paired difference in {esc(metric)} (row minus column) on the items both answered; "
                "* (or a dot) marks a difference significant after correcting for every pair. Blue: the row is better.",
                "Fewer than two ranked entries: no pairwise differences.",
            ),
        ),
        Section(
            "size",
            "Score versus size",
            figure(
                drawn["size"],
                "Mean with 95% CI against the parameter count (log scale); entries of one size are set slightly apart.",
                "No entry reports a parameter count: no size plot.",
            ),
        ),
    ]


def _refused_section(refused: Mapping[str, Sequence[str]]) -> Section:
    return Section(
        "refused",
        "Refused submissions",
        "<ul>" + "".join(f"<li><code>{esc(i)}</code>: {esc('; '.join(e))}</li>" for i, e in refused.items()) + "</ul>",
    )


def _footer(board: Mapping[str, Any]) -> str:
    return (
        "<footer>Every number is recomputed from the per-item samples and judgments of each submission; numbers "
        f"written by submitters are not used. Intervals: {esc(board.get('intervals') or '')}. Unscored items are "
        f"counted, never dropped: {esc(board.get('unscored_rule') or '')}. Data: "
        '<a href="leaderboard.json">leaderboard.json</a>, <a href="leaderboard.csv">leaderboard.csv</a>, '
        '<a href="leaderboard.md">leaderboard.md</a>. Built with tide-bench.</footer>'
    )


def render_index(
    board: Mapping[str, Any],
    rubric: Rubric,
    columns: Sequence[Column],
    *,
    extra_sections: Sequence[Section] = (),
    charts: Mapping[str, str] | None = None,
) -> str:
    """The board's index page; ``extra_sections`` are appended before the footer. ``charts`` are
    the board's charts already drawn (:func:`~.plots.draw_charts`); without them they are drawn here."""
    rows, metric = board["rows"], board["ranking_metric"]
    columns = shown_columns(columns, rows)
    label = metric_label(metric, rubric)
    drawn = charts if charts is not None else draw_charts(rows, board.get("pairwise") or [], metric, label)
    built = (
        f'<p class="muted">Built {esc(board.get("built_at"))} from {len(rows)} submission(s); split '
        f"<code>{esc(board.get('split'))}</code>"
        + (f", dataset <code>{esc((board.get('split_sha256') or '')[:16])}</code>" if board.get("split_sha256") else "")
        + ".</p>"
    )
    sections = [
        Section("ranking", "Ranking", _ranking_html(label, drawn)),
        Section("table", "Table", _table_html(board, rows, columns, metric, rubric)),
        Section(
            "judge", "Judge and its biases", _judge_stamp(board, rubric) + bias_html(board.get("judge_bias"), rows)
        ),
        *_chart_sections(drawn, metric),
        Section("equity", "Equity across personas", equity_section(rows)),
        Section("scenarios", "Per scenario", _scenario_grid(rows, metric, rubric)),
        Section(
            "replies",
            "Replies and judgments",
            '<p class="muted">Every item: the client\'s turn with its history, the reply, the reference and the '
            "judge's three scores with rationales. Pick a model (and another to compare on the same items).</p>"
            + browser_html([(r["id"], r["model_name"]) for r in rows], base=f"{FOLDER}/", default=""),
        ),
    ]
    if board.get("refused"):
        sections.append(_refused_section(board["refused"]))
    sections += list(extra_sections)
    return page(
        board["name"],
        _header(board, board["name"]) + built,
        sections,
        tail=_footer(board),
        scripts=("board.js", "instances.js"),
    )


def entry_sections(
    row: Mapping[str, Any],
    manifest: Mapping[str, Any],
    meta: Mapping[str, Any],
    columns: Sequence[Column],
    rubric: Rubric,
    browser: str,
    metric: str,
    diagnostics: str = "",
) -> list[Section]:
    """The sections one entry's page is made of (the model page and the single-run view);
    ``diagnostics`` (HTML) opens the judge-bias section (the run view's length and halo checks)."""
    sections = [
        Section("summary", "Summary", summary(row, columns)),
        Section("replies", "Replies and judgments", browser),
        Section("provenance", "Provenance", provenance(manifest, row.get("judge"))),
    ]
    if meta:
        sections.append(Section("metadata", "Metadata (submission.yaml)", metadata(meta)))
    sections.append(Section("bias", "Judge-bias checks", diagnostics + bias(row)))
    scenarios = scenario_table(row, metric, _scale(metric, rubric))
    if scenarios:
        sections.append(Section("scenarios", "Per scenario", scenarios))
    if equity := equity_entry(row):
        sections.append(Section("equity", "Equity across personas", equity))
    for where, title in (("safety", "Safety details"), ("judging", "Judging details")):
        if listed := labelled_fields(row, where):
            sections.append(Section(where, title, listed))
    extra = other_fields(row, columns)
    if extra:
        sections.append(Section("other", "Other fields", extra))
    return sections


def render_model_page(
    row: Mapping[str, Any],
    sub: Submission,
    board: Mapping[str, Any],
    rubric: Rubric,
    columns: Sequence[Column],
    *,
    downloads: Sequence[str] = (),
) -> str:
    back = f'<p><a href="../index.html">&larr; {esc(board["name"])}</a></p>'
    models = [(row["id"], row["model_name"])] + [
        (r["id"], r["model_name"]) for r in board["rows"] if r["id"] != row["id"]
    ]
    browser = browser_html(models, base=f"../{FOLDER}/", default=row["id"])
    sections = entry_sections(
        row,
        sub.manifest,
        sub.meta,
        shown_columns(columns, [row]),
        rubric,
        browser,
        board["ranking_metric"],
    )
    if downloads:
        links = "".join(f'<li><a href="../{esc(d)}">{esc(d.rsplit("/", 1)[-1])}</a></li>' for d in downloads)
        sections.append(
            Section(
                "downloads",
                "Downloads",
                f'<ul>{links}</ul><p class="muted">judgments.jsonl is the submission\'s raw judge output (one line per '
                "item, with the key that ties it to the reply); items.csv has one row per item with its scores, flags "
                "and reply.</p>",
            )
        )
    header = _header(board, row["model_name"], back)
    if is_anchor(row):
        header += (
            '<div class="stamp">A reference anchor: TIDE\'s own reference replies judged like every entry. It shows '
            "where the board's scale tops out; "
            + ("it is not ranked." if row.get("rank") is None else "this board ranks it with the entries.")
            + "</div>"
        )
    return page(f"{row['model_name']} - {board['name']}", header, sections, scripts=("instances.js",))


def write_site(
    folder: Path,
    board: Mapping[str, Any],
    accepted: Mapping[str, Submission],
    rubric: Rubric,
    columns: Sequence[Column],
    *,
    downloads: Mapping[str, Sequence[str]] | None = None,
    extra_sections: Sequence[Section] = (),
    instances: bool = True,
    charts: Mapping[str, str] | None = None,
) -> None:
    """Write the pages into ``folder`` (a private staging folder, swapped in whole by the build:
    files are written plainly), beside the per-entry files :func:`write_entry_files` wrote for
    the entries in ``accepted`` (``downloads`` lists them by entry id). ``accepted`` may hold
    the entries without their per-item data (:meth:`~.submission.Submission.without_items`)."""
    (folder / "models").mkdir()
    index = render_index(board, rubric, columns, extra_sections=extra_sections, charts=charts)
    (folder / "index.html").write_text(index, "utf-8")
    for row in board["rows"]:
        page_html = render_model_page(
            row, accepted[row["id"]], board, rubric, columns, downloads=(downloads or {}).get(row["id"], ())
        )
        (folder / "models" / f"{row['id']}.html").write_text(page_html, "utf-8")
    if instances:
        keep_items(folder, [accepted[row["id"]].split_hash for row in board["rows"]])
