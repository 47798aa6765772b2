"""The table ``tide-bench eval`` ends with: every reference metric with its mean, 95 % CI and n.

lm-eval users expect a results table at the end of a run, not only a file path. The numbers
are ``run.json``'s (``reference_metrics.overall``), so the table and the file never disagree;
an interval that cannot be computed is shown as "n/a" with the reason, never as a number.
"""

from __future__ import annotations

from typing import Any

from tide_bench.core.stats import no_interval_reason
from tide_bench.generation.run_dir import model_label

LABELS = {
    "cosine_sim": "cosine similarity to the reference",
    "rouge_l": "ROUGE-L F1 against the reference",
    "within_reply_distinct_1": "distinct-1 within a reply",
    "within_reply_distinct_2": "distinct-2 within a reply",
    "length_tokens": "reply length (words and punctuation)",
    "distinct_1": "distinct-1 over all replies",
    "distinct_2": "distinct-2 over all replies",
}


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _label(name: str, block: dict[str, Any]) -> str:
    """The row's words; the rarefied distinct-n (``distinct_N_at_k``) says its sample size k."""
    if name.endswith("_at_k") and name.startswith("distinct_"):
        return f"distinct-{name[len('distinct_') : -len('_at_k')]} among {block.get('k')} n-grams (rarefied)"
    return LABELS.get(name, name)


def _row(name: str, block: dict[str, Any], notes: dict[str, Any]) -> list[str]:
    digits = 1 if name == "length_tokens" else 3
    label = _label(name, block)
    if "value" in block:  # corpus-level: one number over every reply, no interval
        value = block.get("value")
        why = "(one value over the corpus)" if value is not None else f"n/a: {block.get('note') or 'no value'}"
        return [label, _number(value, digits), why, f"{block.get('n_replies')}"]
    mean, low, high = block.get("mean"), block.get("ci_low"), block.get("ci_high")
    if mean is None:
        ci = f"n/a: {notes.get(name) or 'no item had a value'}"
    elif low is None or high is None:
        ci = f"n/a: {no_interval_reason(block)}"
    else:
        ci = f"[{low:.{digits}f}, {high:.{digits}f}]"
    return [label, _number(mean, digits), ci, str(block.get("n"))]


def results_table(manifest: dict[str, Any]) -> str:
    """``run.json``'s overall reference metrics as a Markdown table, with a line saying what was run."""
    model = manifest.get("model") or {}
    data = manifest.get("data") or {}
    metrics = manifest.get("reference_metrics") or {}
    name = model_label(model) or "model"
    source = data.get("source") or data.get("source_kind")
    if data.get("is_synthetic_sample"):
        source = "the built-in synthetic sample (not TIDE)"
    head = (
        f"{name} on {source}, split {data.get('split')}: {manifest.get('n_generations')} replies "
        f"({', '.join(manifest.get('subtasks') or manifest.get('tasks') or [])})"
    )
    if "not_applicable" in metrics:
        return f"{head}\nreference metrics: n/a ({metrics['not_applicable']})"
    overall = metrics.get("overall") or {}
    notes = (metrics.get("method") or {}).get("notes") or {}
    rows = [_row(key, block, notes) for key, block in overall.items() if isinstance(block, dict)]
    header = ["metric", "mean", "95% CI", "n"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [head, ""]
    for index, row in enumerate([header, *rows]):
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]), row[3].rjust(widths[3])]
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append(
                "|"
                + "|".join(["-" * (widths[0] + 2), "-" * (widths[1] + 1) + ":", "-" * (widths[2] + 2)])
                + "|"
                + "-" * (widths[3] + 1)
                + ":|"
            )
    lines.append(f"\nCIs: {metrics.get('intervals', '95% intervals')}; n = items (replies for corpus distinct-n).")
    limit = (manifest.get("generation") or {}).get("limit")
    if limit is not None:
        lines.append(f"--limit {limit}: a limited run is a test, not a benchmark result (the leaderboard refuses it).")
    return "\n".join(lines)
