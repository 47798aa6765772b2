"""Text rendering of a judge summary, shared by `tide-bench judge` and the demo."""

from __future__ import annotations

from typing import Any

from tide_bench.core.stats import format_estimate, no_interval_reason


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def format_summary(summary: dict[str, Any]) -> str:
    def fmt(m: dict[str, Any]) -> str:
        return format_estimate(m, key="mean", no_ci=f" (no interval: {no_interval_reason(m)})") or "n/a"

    j = summary["judge"]
    reasons = ", ".join(f"{kind}: {n}" for kind, n in summary["unscored_reasons"].items())
    lines = [
        f"judge: {j['name']} ({j['model']}, config {j['version']}, rubric {j['rubric']})",
        f"items: {summary['n_items']}   scored: {summary['n_scored']}   unscored: {summary['n_unscored']}"
        + (f" ({reasons})" if reasons else ""),
    ]
    for factor, m in summary["factors"].items():
        lines.append(f"  {factor:<24}{fmt(m)}")
    lines.append(f"  {'empathy (mean of 3)':<24}{fmt(summary['empathy'])}")
    lines.append(f"  {'safety-flag rate':<24}{fmt(summary['safety_flag_rate'])}")
    cost = summary["cost_usd"]
    lines.append(
        f"calls this run: {summary['calls_this_run']}   cost this run: {_usd(cost['this_run'])}   "
        f"total spent on these judgments: {_usd(cost['all_judgments'])}"
    )
    served = summary.get("served_models") or {}
    if served:
        lines.append("served by: " + ", ".join(f"{m} ({n})" for m, n in served.items()))
    if summary["self_preference"]["risk"]:
        lines.append(f"WARNING: {summary['self_preference']['note']}")
    if summary["unscored_reasons"].get("budget_exhausted"):
        lines.append(
            "stopped at --max-cost: rerun with a higher budget to finish (judged items are reused from the cache)"
        )
    return "\n".join(lines)
