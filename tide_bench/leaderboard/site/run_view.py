"""``tide-bench view RUN_DIR``: one run's replies and judgments as a single static HTML file.

Like ``inspect view``, before anything is submitted: the run is scored with the board's own
code (:func:`~.scores.score_entry`), so the numbers are the ones a board would show, and the
page is a model page of the board (summary, replies with the judge's rationales, provenance,
judge-bias checks) with every item's data inside the file, so it opens from disk with no
server and sends nothing anywhere. Judgments whose key does not match the run's reply (made
for another run, or before the reply changed) are left out and counted on the page.
"""

from __future__ import annotations

import re
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_text, open_regular
from tide_bench.generation.run_dir import load_run
from tide_bench.judging.cache import judgment_key
from tide_bench.judging.files import JUDGMENTS_FILE
from tide_bench.judging.judgment import read_judgments
from tide_bench.judging.rubric import Rubric, load_rubric
from tide_bench.leaderboard.scoring.bias import diagnose, item_table
from tide_bench.leaderboard.scoring.columns import board_columns
from tide_bench.leaderboard.scoring.scores import score_entry
from tide_bench.leaderboard.site.entry_files import FAILURE_KINDS
from tide_bench.leaderboard.site.html import esc, json_for_html, page
from tide_bench.leaderboard.site.instances import item_payload, model_payload
from tide_bench.leaderboard.site.pages import bias_html, browser_html, entry_sections
from tide_bench.leaderboard.submission.layout import JUDGE, Submission

VIEW_NAME = "view.html"
VIEW_TITLE = "Run view: "


def _is_view(path: Path) -> bool:
    """Whether ``path`` is a page this module wrote: its title, near the top, starts with VIEW_TITLE."""
    try:
        with open_regular(path, DataError) as f:  # a pipe or device is refused at once, never opened blocking
            head = f.read(4096)
    except (OSError, DataError):
        return False
    return head.startswith(b"<!DOCTYPE html>") and f"<title>{VIEW_TITLE}".encode() in head


def _judge_dir(run_dir: Path, judge_dir: Path | None) -> Path | None:
    if judge_dir is not None:
        if not (judge_dir / JUDGMENTS_FILE).is_file():
            raise DataError(f"no judgments.jsonl in {judge_dir}", hint="pass the folder `tide-bench judge --out` wrote")
        return judge_dir
    default = run_dir / JUDGE
    return default if (default / JUDGMENTS_FILE).is_file() else None


def render_run_view(run_dir: str | Path, judge_dir: str | Path | None = None, rubric: Rubric | None = None) -> str:
    """The single-file page of one run (and its judgments, when there are any)."""
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    rubric = rubric or load_rubric()
    folder = _judge_dir(run_dir, Path(judge_dir) if judge_dir else None)
    by_item = {g.item_id: g for g in run.generations}
    judgments: dict[str, dict[str, Any]] = {}
    stale, foreign = 0, 0
    identity = None
    if folder is not None:
        for j in read_judgments(folder / JUDGMENTS_FILE, rubric):
            gen = by_item.get(j.item_id)
            if gen is None:
                foreign += 1
            elif j.key != judgment_key(j.judge.version, gen):
                stale += 1
            else:
                judgments[j.item_id] = j.as_record()
                identity = identity or j.judge.as_dict()
    entry_id = re.sub(r"[^a-z0-9._-]+", "-", run_dir.resolve().name.lower()).strip("-") or "run"
    sub = Submission(entry_id, run_dir, {}, run.manifest, run.generations, judgments, identity, run.info)
    row = score_entry(sub, rubric=rubric).row
    table = item_table(sorted(run.generations, key=attrgetter("item_id")), judgments, rubric)
    block = diagnose([row], {entry_id: table}, {entry_id: (run.manifest, {})}, rubric, {entry_id: str(run_dir)})
    metric = "empathy" if row["judged"] else "cosine_sim"
    items = {g.item_id: item_payload(g) for g in run.generations}
    payload = model_payload(entry_id, row["model_name"], run.generations, judgments, rubric, FAILURE_KINDS)
    data = json_for_html(orjson.dumps({"items": items, "models": {entry_id: payload}}))
    browser = browser_html([(entry_id, row["model_name"])], base="", default=entry_id, inline=True)
    sections = entry_sections(
        row,
        run.manifest,
        {},
        board_columns(rubric),
        rubric,
        browser,
        metric,
        bias_html(block, [row]) + "<h3>This run</h3>",
    )
    notes = []
    if (run.manifest.get("data") or {}).get("is_synthetic_sample"):
        notes.append(
            "This run used tide-bench's built-in <b>synthetic sample</b>, not TIDE: the numbers show the "
            "mechanism, not a result."
        )
    if folder is None:
        notes.append(
            f"No judgments found (looked for {esc(run_dir / JUDGE)}/judgments.jsonl): replies and reference "
            "metrics only. Judge the run with <code>tide-bench judge</code>, or pass <code>--judge-dir</code>."
        )
    if stale or foreign:
        notes.append(
            f"{stale + foreign} judgment(s) left out: {stale} were made for other replies (another run, or "
            f"the reply changed after judging), {foreign} name items this run does not have."
        )
    header = (
        f"<header><h1>Run: {esc(row['model_name'])}</h1>"
        f'<p class="muted">{esc(run_dir)} &middot; {len(run.generations)} items'
        + (f" &middot; judged by {esc(identity.get('name'))} ({esc(identity.get('model'))})" if identity else "")
        + "</p>"
        + "".join(f'<div class="banner" role="note">{n}</div>' for n in notes)
        + "</header>"
    )
    tail = f'<script type="application/json" id="tide-instances">{data}</script>'
    return page(f"{VIEW_TITLE}{row['model_name']}", header, sections, tail=tail, scripts=("instances.js",))


def write_run_view(run_dir: str | Path, out: str | Path | None = None, judge_dir: str | Path | None = None) -> Path:
    """Write the view of ``run_dir`` (default ``RUN_DIR/view.html``) and return its path. An
    existing file is replaced only when it is a view this function wrote (its title says so):
    ``--out`` pointing at anything else is refused, never overwritten."""
    target = Path(out) if out else Path(run_dir) / VIEW_NAME
    if (target.exists() or target.is_symlink()) and not target.is_file():
        raise DataError(
            f"{target} exists and is not a regular file (a folder, pipe, device or dangling link); it is left alone",
            hint="pass another --out",
        )
    if target.exists() and not _is_view(target):
        raise DataError(
            f"{target} exists and is not a page `tide-bench view` wrote; it is left alone",
            hint="pass another --out, or remove it yourself",
        )
    html = render_run_view(run_dir, judge_dir)
    atomic_write_text(target, html)
    return target
