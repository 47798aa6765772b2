"""The static site: ``index.html`` and one page per model, self-contained (inline CSS and JS,
no CDN, nothing fetched at view time). Every submitted string goes through :func:`esc`."""

from __future__ import annotations

import html
import math
from typing import Any

from tide_bench.leaderboard.scores import FACTORS
from tide_bench.leaderboard.submission import Submission

FACTOR_LABELS = {"emotion_recognition": "Emotion recognition", "distress_normalization": "Distress normalization", "supportive_reflection": "Supportive reflection"}
SAMPLES_PER_MODEL = 12

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1b1f24;background:#fafafa;line-height:1.45}
main{max-width:1200px;margin:0 auto;padding:1.5rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem}
.banner{background:#fff3cd;border:1px solid #e0c36a;padding:.7rem 1rem;border-radius:6px;margin:1rem 0}
.stamp{background:#eef3fb;border:1px solid #c5d5ee;padding:.7rem 1rem;border-radius:6px;font-size:.92rem}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.9rem}
th,td{border-bottom:1px solid #e3e3e3;padding:.4rem .5rem;text-align:right;vertical-align:top}
th{background:#f0f2f5;cursor:pointer;user-select:none;position:sticky;top:0}
th:focus{outline:2px solid #3b6fd8}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.l,th.l{text-align:left}.ci{color:#667;font-size:.8rem;white-space:nowrap}
.tag{display:inline-block;font-size:.72rem;border-radius:4px;padding:0 .35rem;margin-left:.3rem;background:#e6e9ef}
.tag.ft{background:#dff3e4}.warn{color:#9a5b00;font-size:.8rem}
button.more{font-size:.8rem;padding:.1rem .5rem;cursor:pointer}
tr.details td{background:#fbfcfe;text-align:left}
.dialogue{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:.8rem 1rem;margin:.8rem 0}
.turn{margin:.3rem 0}.who{font-weight:600}.muted{color:#667}
footer{margin-top:2rem;font-size:.85rem;color:#556}
"""

SORT_JS = """
(function(){
  var table=document.getElementById('board');
  var heads=table.querySelectorAll('th[data-key]');
  heads.forEach(function(th){
    th.tabIndex=0;
    function sort(){
      var key=th.getAttribute('data-key');
      var asc=th.getAttribute('aria-sort')!=='ascending';
      heads.forEach(function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var bodies=Array.prototype.slice.call(table.querySelectorAll('tbody.entry'));
      bodies.sort(function(a,b){
        var x=a.getAttribute('data-'+key),y=b.getAttribute('data-'+key);
        var nx=parseFloat(x),ny=parseFloat(y);
        var bothNum=!isNaN(nx)&&!isNaN(ny);
        if(x===''||x===null){return 1;} if(y===''||y===null){return -1;}
        var c=bothNum?(nx-ny):x.localeCompare(y);
        return asc?c:-c;
      });
      bodies.forEach(function(b){table.appendChild(b);});
    }
    th.addEventListener('click',sort);
    th.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();sort();}});
  });
  table.querySelectorAll('button.more').forEach(function(btn){
    btn.addEventListener('click',function(){
      var row=document.getElementById(btn.getAttribute('aria-controls'));
      var open=row.hasAttribute('hidden');
      if(open){row.removeAttribute('hidden');}else{row.setAttribute('hidden','');}
      btn.setAttribute('aria-expanded',open?'true':'false');
      btn.textContent=open?'hide':'details';
    });
  });
})();
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(block: dict[str, Any] | None, digits: int = 2) -> tuple[str, str]:
    """(display HTML, sort value) for a {mean, ci_low, ci_high} block."""
    if not block or block.get("mean") is None:
        return '<span class="muted">n/a</span>', ""
    ci = f'<div class="ci">[{block["ci_low"]:.{digits}f}, {block["ci_high"]:.{digits}f}]</div>' if block.get("ci_low") is not None else ""
    return f"{block['mean']:.{digits}f}{ci}", f"{block['mean']:.6f}"


def _pct(block: dict[str, Any] | None) -> tuple[str, str]:
    """A rate block shown in percent, with its CI."""
    if not block or block.get("mean") is None:
        return '<span class="muted">n/a</span>', ""
    ci = f'<div class="ci">[{100 * block["ci_low"]:.1f}%, {100 * block["ci_high"]:.1f}%]</div>' if block.get("ci_low") is not None else ""
    return f"{100 * block['mean']:.1f}%{ci}", f"{block['mean']:.6f}"


def _size(params: Any) -> tuple[str, str]:
    if not params:
        return '<span class="muted">?</span>', ""
    return f"{params / 1e9:.2f}B" if params >= 1e8 else f"{params / 1e6:.0f}M", str(params)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body><main>{body}</main></body></html>\n"
    )


def _judge_stamp(board: dict[str, Any]) -> str:
    judge = board.get("judge")
    if not judge:
        return '<div class="stamp">No judge scores on this board: entries are ranked by embedding cosine similarity to the reference replies.</div>'
    parts = [f"Judge: <b>{esc(judge.get('name'))}</b> ({esc(judge.get('provider'))} {esc(judge.get('model'))}), configuration <code>{esc(judge.get('version'))}</code>, rubric {esc(judge.get('rubric'))}."]
    audit = board.get("audit")
    if audit:
        items = []
        for dim, block in audit.items():
            a = block.get("alpha_with_judge") or block.get("human_alpha") or {}
            h = block.get("human_alpha") or {}
            items.append(
                f"{esc(FACTOR_LABELS.get(dim, dim))}: human-human alpha {_fmt(h.get('value'))} [{_fmt(h.get('ci_low'))}, {_fmt(h.get('ci_high'))}], "
                f"with the judge {_fmt(a.get('value'))}; {esc(block.get('verdict') or '')}"
            )
        parts.append("Agreement with human raters (audit, interval alpha): <ul><li>" + "</li><li>".join(items) + "</li></ul>")
    else:
        parts.append("No human-agreement audit was attached to this build (<code>--audit agreement.json</code>).")
    return '<div class="stamp">' + " ".join(parts) + "</div>"


def _stats_note(r: dict[str, Any], metric: str) -> str:
    """Details row: bounds, design effect, failures and why an entry is unranked."""
    parts = []
    block = r.get(metric) or {}
    if block.get("design_effect") is not None:
        parts.append(f"{esc(metric)}: n {block['n']} items in {block['n_clusters']} personas, design effect {block['design_effect']:.2f}")
    bounds = r.get("empathy_bounds")
    if bounds and bounds.get("worst") is not None:
        parts.append(f"empathy if every unscored item scored lowest / highest: {bounds['worst']:.2f} / {bounds['best']:.2f}")
    if r.get("n_model_failures") is not None:
        parts.append(f"{r['n_model_failures']} model failures (counted at the lowest score), {r['n_infrastructure_unscored']} unscored for infrastructure reasons")
    if r.get("unranked_reason"):
        parts.append(f"not ranked: {esc(r['unranked_reason'])}")
    return f"<p>{'; '.join(parts)}.</p>" if parts else ""


def _fmt(x: Any) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _plot(rows: list[dict[str, Any]], metric: str) -> str:
    """Score vs model size (log scale), as inline SVG."""
    points = [r for r in rows if r.get("parameters") and r.get(metric) and r[metric]["mean"] is not None]
    if not points:
        return '<p class="muted">No entry reports a parameter count: no size plot.</p>'
    w, h, pad = 720, 320, 50
    xs = [math.log10(r["parameters"]) for r in points]
    lows = [r[metric]["ci_low"] if r[metric]["ci_low"] is not None else r[metric]["mean"] for r in points]
    highs = [r[metric]["ci_high"] if r[metric]["ci_high"] is not None else r[metric]["mean"] for r in points]
    x0, x1 = min(xs) - 0.2, max(xs) + 0.2
    y0, y1 = min(lows), max(highs)
    y0, y1 = (y0 - 0.1, y1 + 0.1) if y1 - y0 < 1e-9 else (y0 - 0.05 * (y1 - y0), y1 + 0.05 * (y1 - y0))

    def px(x: float) -> float:
        return pad + (x - x0) / (x1 - x0) * (w - 2 * pad)

    def py(y: float) -> float:
        return h - pad - (y - y0) / (y1 - y0) * (h - 2 * pad)

    out = [f'<svg role="img" aria-label="{esc(metric)} versus model size" width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg" style="background:#fff;border:1px solid #e3e3e3">']
    out.append(f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#999"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#999"/>')
    for exp in range(math.floor(x0), math.ceil(x1) + 1):
        if x0 <= exp <= x1:
            label = f"{10 ** exp / 1e9:g}B" if exp >= 9 else f"{10 ** exp / 1e6:g}M"
            out.append(f'<text x="{px(exp):.1f}" y="{h - pad + 16}" font-size="11" text-anchor="middle">{label}</text>')
    for k in range(5):
        y = y0 + (y1 - y0) * k / 4
        out.append(f'<text x="{pad - 6}" y="{py(y) + 4:.1f}" font-size="11" text-anchor="end">{y:.2f}</text>')
    out.append(f'<text x="{w / 2}" y="{h - 8}" font-size="12" text-anchor="middle">parameters (log scale)</text>')
    out.append(f'<text x="14" y="{h / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {h / 2})">{esc(metric)}</text>')
    for r, x, lo, hi in zip(points, xs, lows, highs, strict=True):
        color = "#2e8b57" if r["condition"] == "fine-tuned" else "#3b6fd8"
        out.append(f'<line x1="{px(x):.1f}" y1="{py(lo):.1f}" x2="{px(x):.1f}" y2="{py(hi):.1f}" stroke="{color}"/>')
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(r[metric]["mean"]):.1f}" r="4.5" fill="{color}"><title>{esc(r["model_name"])}</title></circle>')
        out.append(f'<text x="{px(x) + 7:.1f}" y="{py(r[metric]["mean"]) - 6:.1f}" font-size="10">{esc(r["model_name"])}</text>')
    out.append("</svg>")
    return "".join(out) + '<p class="muted">Blue: zero-shot. Green: fine-tuned. Bars: 95% CI.</p>'


def _safety_cell(row: dict[str, Any]) -> tuple[str, str]:
    """The flag rate, with a warning (its categories on hover) when its interval excludes 0."""
    shown, sort = _pct(row["safety_flag_rate"])
    if row.get("safety_warning"):
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted((row.get("safety_categories") or {}).items()))
        shown += f'<div class="warn" title="{esc(kinds)}">&#9888; flags above 0</div>'
    return shown, sort


def render_index(board: dict[str, Any]) -> str:
    rows, metric = board["rows"], board["ranking_metric"]
    body = [f"<h1>{esc(board['name'])}</h1>"]
    if board.get("demo"):
        body.append('<div class="banner" role="note"><b>Demo board.</b> These entries are runs of the offline demo model on the built-in '
                    "<b>synthetic sample</b>, written for tide-bench. They are not TIDE results and not a benchmark of any model.</div>")
    body.append(f'<p class="muted">Built {esc(board["built_at"])} from {len(rows)} submission(s); split <code>{esc(board["split"])}</code>'
                + (f', dataset <code>{esc((board.get("split_sha256") or "")[:16])}</code>' if board.get("split_sha256") else "") + ".</p>")
    body.append(_judge_stamp(board))
    body.append(f"<h2>Ranking</h2><p>Ranked by <b>{esc('overall empathy (mean of the three factors, 1-5)' if metric == 'empathy' else 'cosine similarity to the reference reply')}</b>. "
                "A model's rank is 1 + the number of models significantly better in a paired comparison on the same items "
                "(persona-cluster bootstrap, corrected for testing every pair); models not shown to differ share a rank. "
                "The range under the rank is where the rank falls in 95% of resamples. "
                "Empty replies and refusals count as the lowest score (failure rate). Click a column header to sort. "
                "Every pairwise difference with its interval is in <code>leaderboard.json</code> (<code>pairwise</code>).</p>")
    if board.get("safety_rule"):
        body.append(f'<p class="muted">Safety: {esc(board["safety_rule"])}. '
                    "&#9888; next to a safety-flag rate: its 95% CI excludes 0.</p>")
    head = [("rank", "Rank", False), ("model", "Model", True), ("size", "Size", False), ("condition", "Condition", True)]
    head += [("prompt", "Prompt", True), ("empathy", "Empathy", False), ("safety_adjusted", "Safety-adjusted", False)]
    head += [(f, FACTOR_LABELS[f], False) for f in FACTORS]
    head += [("cosine", "Cosine", False), ("rouge", "ROUGE-L", False), ("failures", "Failures", False), ("unscored", "Unscored", False),
             ("safety", "Safety flags", False), ("n", "Items", False)]
    body.append('<table id="board"><thead><tr>' + "".join(f'<th scope="col" data-key="{k}" class="{"l" if left else ""}">{esc(label)}</th>' for k, label, left in head) + '<th scope="col">More</th></tr></thead>')
    for r in rows:
        cells: dict[str, tuple[str, str]] = {}
        interval = r.get("rank_interval")
        rank_range = f'<div class="ci">{interval[0]}-{interval[1]}</div>' if interval else ""
        cells["rank"] = ((str(r["rank"]) + rank_range) if r["rank"] else f'<span class="muted" title="{esc(r.get("unranked_reason") or "")}">-</span>',
                         str(r["rank"] or ""))
        tag = f'<span class="tag{" ft" if r["condition"] == "fine-tuned" else ""}">{esc(r["condition"])}</span>'
        warn = ""
        if r.get("self_preference") and r["self_preference"].get("risk"):
            warn = f'<div class="warn" title="{esc(r["self_preference"]["note"])}">&#9888; judge and model share a family</div>'
        cells["model"] = (f'<a href="models/{esc(r["id"])}.html">{esc(r["model_name"])}</a>{warn}', r["model_name"])
        cells["size"] = _size(r["parameters"])
        cells["condition"] = (tag, r["condition"])
        cells["prompt"] = (esc(r.get("prompt_condition") or ""), r.get("prompt_condition") or "")
        cells["empathy"] = _num(r["empathy"])
        cells["safety_adjusted"] = _num(r.get("safety_adjusted_empathy"))
        for f in FACTORS:
            cells[f] = _num((r["factors"] or {}).get(f))
        cells["cosine"] = _num(r["cosine_sim"], 3)
        cells["rouge"] = _num(r["rouge_l"], 3)
        cells["unscored"] = (f"{100 * r['unscored_rate']:.1f}%", f"{r['unscored_rate']:.6f}") if r["unscored_rate"] is not None else ('<span class="muted">not judged</span>', "")
        cells["failures"] = _pct(r.get("failure_rate"))
        cells["safety"] = _safety_cell(r)
        cells["n"] = (str(r["n_items"]), str(r["n_items"]))
        attrs = " ".join(f'data-{k}="{esc(v)}"' for k, (_, v) in cells.items())
        tds = "".join(f'<td class="{"l" if left else ""}">{cells[k][0]}</td>' for k, _, left in head)
        detail_id = f"details-{esc(r['id'])}"
        scen = "".join(
            f"<tr><td class=\"l\">{esc(s)}</td><td>{v['n']}</td><td>{_num(v['empathy'])[0]}</td><td>{_num(v['cosine_sim'], 3)[0]}</td></tr>"
            for s, v in r["per_scenario"].items()
        )
        reasons = ", ".join(f"{esc(k)}: {v}" for k, v in sorted(r["unscored_reasons"].items())) or "none"
        stats_note = _stats_note(r, metric)
        details = (f'<tr class="details" id="{detail_id}" hidden><td colspan="{len(head) + 1}">'
                   f"<p><b>{esc(r['model_name'])}</b>: {esc(r['model'].get('hub_id') or r['model'].get('api_model_id') or '')} "
                   f"{esc(r['model'].get('revision') or '')}; licence {esc(r['license'])}; unscored reasons: {reasons}.</p>{stats_note}"
                   f'<table><thead><tr><th class="l">Scenario</th><th>Items</th><th>Empathy</th><th>Cosine</th></tr></thead><tbody>{scen}</tbody></table>'
                   f'<p><a href="models/{esc(r["id"])}.html">Sample dialogues, replies and the judge\'s rationales</a></p></td></tr>')
        body.append(f'<tbody class="entry" {attrs}><tr>{tds}<td><button type="button" class="more" aria-expanded="false" aria-controls="{detail_id}">details</button></td></tr>{details}</tbody>')
    body.append("</table>")
    scenarios = sorted({s for r in rows for s in r["per_scenario"]})
    if scenarios:
        key = "empathy" if metric == "empathy" else "cosine_sim"
        body.append(f"<h2>Per scenario ({esc('empathy' if key == 'empathy' else 'cosine similarity')})</h2><table><thead><tr><th class=\"l\">Model</th>"
                    + "".join(f"<th>{esc(s)}</th>" for s in scenarios) + "</tr></thead><tbody>")
        for r in rows:
            body.append(f'<tr><td class="l">{esc(r["model_name"])}</td>' + "".join(
                f"<td>{_num((r['per_scenario'].get(s) or {}).get(key), 2 if key == 'empathy' else 3)[0]}</td>" for s in scenarios) + "</tr>")
        body.append("</tbody></table>")
    body.append(f"<h2>Score versus model size</h2>{_plot(rows, metric if metric == 'empathy' else 'cosine_sim')}")
    if board.get("refused"):
        body.append("<h2>Refused submissions</h2><ul>" + "".join(f"<li><code>{esc(i)}</code>: {esc('; '.join(e))}</li>" for i, e in board["refused"].items()) + "</ul>")
    body.append("<footer>Every number is recomputed from the per-item samples and judgments of each submission; numbers written by submitters are not used. "
                f"Intervals: {esc(board.get('intervals') or '')}. Unscored items are counted, never dropped: {esc(board.get('unscored_rule') or '')}. "
                "Data: <code>leaderboard.json</code>, <code>leaderboard.csv</code>, <code>leaderboard.md</code>. Built with tide-bench.</footer>")
    body.append(f"<script>{SORT_JS}</script>")
    return _page(board["name"], "\n".join(body))


def render_model_page(row: dict[str, Any], sub: Submission, board: dict[str, Any]) -> str:
    body = [f'<p><a href="../index.html">&larr; {esc(board["name"])}</a></p><h1>{esc(row["model_name"])}</h1>']
    if board.get("demo"):
        body.append('<div class="banner">Demo entry: the offline demo model on the synthetic sample (not TIDE data).</div>')
    meta = {k: v for k, v in sub.meta.items() if k not in ("schema_version",)}
    body.append("<table>" + "".join(f'<tr><th class="l" scope="row">{esc(k)}</th><td class="l">{esc(v)}</td></tr>' for k, v in meta.items()) + "</table>")
    body.append(f"<h2>Sample dialogues ({min(SAMPLES_PER_MODEL, len(sub.generations))} of {len(sub.generations)})</h2>")
    for gen in sorted(sub.generations, key=lambda g: g.item_id)[:SAMPLES_PER_MODEL]:
        rec = sub.judgments.get(gen.item_id)
        turns = "".join(f'<div class="turn"><span class="who">{"Client" if m.get("role") == "user" else "Supporter (reference)"}:</span> {esc(m.get("content"))}</div>' for m in gen.history)
        judged = '<p class="muted">Not judged.</p>'
        if rec and rec["status"] == "scored":
            judged = "<ul>" + "".join(f"<li><b>{esc(FACTOR_LABELS.get(f, f))}: {rec['scores'][f]}</b> &mdash; {esc(rec['rationales'][f])}</li>" for f in FACTORS) + "</ul>"
            if rec["safety"]["flagged"]:
                category = rec["safety"].get("category")
                kind = f" ({esc(category)})" if category and category != "none" else ""
                judged += f'<p class="warn">&#9888; Safety flag{kind}: {esc(rec["safety"]["reason"])}</p>'
        elif rec:
            judged = f'<p class="muted">Unscored ({esc(rec["unscored_kind"])}): {esc(rec.get("unscored_reason"))}</p>'
        body.append(
            f'<div class="dialogue"><p class="muted">{esc(gen.item_id)} &middot; scenario {esc(gen.scenario or "n/a")} &middot; turn {gen.turn}</p>{turns}'
            f'<div class="turn"><span class="who">Client:</span> {esc(gen.client_utterance)}</div>'
            f'<div class="turn"><span class="who">Model reply:</span> {esc(gen.reply)}</div>'
            f'<div class="turn muted"><span class="who">Reference reply:</span> {esc(gen.reference_reply)}</div>{judged}</div>'
        )
    return _page(f"{row['model_name']} - {board['name']}", "\n".join(body))
