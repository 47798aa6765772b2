"""Text rendering of a judge summary, shared by `tide-bench judge` and the demo."""

from __future__ import annotations

import json


def format_summary(summary: dict) -> str:
    def fmt(m: dict) -> str:
        if m["mean"] is None:
            return "n/a"
        ci = f"[{m['ci_low']:.2f}, {m['ci_high']:.2f}]" if m["ci_low"] is not None else "(n<2)"
        return f"{m['mean']:.2f} {ci}"

    j = summary["judge"]
    lines = [
        f"judge: {j['name']} ({j['model']}, config {j['version']}, rubric {j['rubric']})",
        f"items: {summary['n_items']}   scored: {summary['n_scored']}   unscored: {summary['n_unscored']}"
        + (f"   ({json.dumps(summary['unscored_reasons'])})" if summary["unscored_reasons"] else ""),
    ]
    for factor, m in summary["factors"].items():
        lines.append(f"  {factor:<24}{fmt(m)}")
    lines.append(f"  {'empathy (mean of 3)':<24}{fmt(summary['empathy'])}")
    lines.append(f"  {'safety-flag rate':<24}{fmt(summary['safety_flag_rate'])}")
    cost = summary["cost_usd"]["this_run"]
    lines.append(f"calls this run: {summary['calls_this_run']}   cost this run: {'unknown' if cost is None else f'${cost:.4f}'}")
    if summary["self_preference"]["risk"]:
        lines.append(f"WARNING: {summary['self_preference']['note']}")
    if summary["unscored_reasons"].get("budget_exhausted"):
        lines.append("stopped at --max-cost: rerun with a higher budget to finish (judged items are reused from the cache)")
    return "\n".join(lines)
