"""``leaderboard.json``, ``leaderboard.csv`` and ``leaderboard.md``: the same numbers as the page."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.leaderboard.scores import FACTORS

COLUMNS = ["rank", "rank_interval_low", "rank_interval_high", "id", "model_name", "parameters", "condition", "prompt_condition",
           "empathy", "safety_adjusted_empathy", *FACTORS, "cosine_sim", "rouge_l", "failure_rate", "unscored_rate",
           "safety_flag_rate", "safety_warning", "n_items"]


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: row.get(k) for k in ("rank", "id", "model_name", "parameters", "condition", "n_items", "n_personas", "unscored_rate",
                                                   "n_model_failures", "n_infrastructure_unscored", "unranked_reason",
                                                   "prompt_condition", "safety_warning")}
    interval = row.get("rank_interval") or [None, None]
    out["rank_interval_low"], out["rank_interval_high"] = interval
    blocks = {"empathy": row["empathy"], "cosine_sim": row["cosine_sim"], "rouge_l": row["rouge_l"], "safety_flag_rate": row["safety_flag_rate"],
              "failure_rate": row.get("failure_rate")}
    blocks["safety_adjusted_empathy"] = row.get("safety_adjusted_empathy")
    blocks |= {f: (row["factors"] or {}).get(f) for f in FACTORS}
    for name, block in blocks.items():
        out[name] = None if not block else block["mean"]
        out[f"{name}_ci_low"] = None if not block else block["ci_low"]
        out[f"{name}_ci_high"] = None if not block else block["ci_high"]
    out["empathy_design_effect"] = (row["empathy"] or {}).get("design_effect")
    bounds = row.get("empathy_bounds") or {}
    out["empathy_worst_case"], out["empathy_best_case"] = bounds.get("worst"), bounds.get("best")
    return out


def md_escape(text: str) -> str:
    """Text that Markdown shows as written: no links, emphasis, code, HTML or table breaks."""
    text = re.sub(r"([\\`*_\[\]#!|~>])", r"\\\1", str(text))
    return text.replace("<", "&lt;").replace("\n", " ")


def _cell(x: Any, digits: int = 3) -> str:
    return "" if x is None else (f"{x:.{digits}f}" if isinstance(x, float) else str(x))


def write_exports(out: Path, board: dict[str, Any]) -> None:
    write_json(out / "leaderboard.json", board)
    flat = [_flat(r) for r in board["rows"]]
    fields = list(flat[0]) if flat else COLUMNS
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(flat)
    atomic_write_text(out / "leaderboard.csv", buffer.getvalue())
    md = [f"# {board['name']}", ""]
    if board.get("demo"):
        md += ["> Demo board: the offline demo model on the built-in synthetic sample. Not TIDE results.", ""]
    md += [f"Ranked by {board['ranking_metric']}; {board['rank_rule']}.", "",
           "| Rank (interval) | Model | Size | Condition | Prompt | Empathy [95% CI] | Safety-adjusted | Cosine | ROUGE-L | Failures "
           "| Unscored | Safety flags |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in board["rows"]:
        emp = r["empathy"]
        emp_s = "not judged" if not emp or emp["mean"] is None else f"{emp['mean']:.2f} [{_cell(emp['ci_low'], 2)}, {_cell(emp['ci_high'], 2)}]"
        adjusted = r.get("safety_adjusted_empathy") or {}
        adj_s = "" if adjusted.get("mean") is None else f"{adjusted['mean']:.2f}"
        prompt = md_escape(r.get("prompt_condition") or "")
        name = md_escape(r["model_name"])
        size = "" if not r["parameters"] else f"{r['parameters'] / 1e9:.2f}B"
        unscored = "" if r["unscored_rate"] is None else f"{100 * r['unscored_rate']:.1f}%"
        safety = "" if not r["safety_flag_rate"] or r["safety_flag_rate"]["mean"] is None else f"{100 * r['safety_flag_rate']['mean']:.1f}%"
        safety += " (warning)" if r.get("safety_warning") else ""
        rank = f"{r['rank']} ({r['rank_interval'][0]}-{r['rank_interval'][1]})" if r.get("rank_interval") else (str(r["rank"]) if r["rank"] else "-")
        failures = "" if not r.get("failure_rate") or r["failure_rate"]["mean"] is None else f"{100 * r['failure_rate']['mean']:.1f}%"
        md.append(f"| {rank} | {name} | {size} | {r['condition']} | {prompt} | {emp_s} | {adj_s} | {_cell(r['cosine_sim']['mean'])} "
                  f"| {_cell(r['rouge_l']['mean'])} | {failures} | {unscored} | {safety} |")
    atomic_write_text(out / "leaderboard.md", "\n".join(md) + "\n")
