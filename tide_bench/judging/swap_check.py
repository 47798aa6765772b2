"""Is the judge itself moved by a stated identity? Swap the persona, keep the reply.

The persona-swap pairs (:mod:`tide_bench.data.persona_swap`) of the built-in sample (every split),
each side answered with the **same fixed reply** (the source item's reference reply): a fair judge
scores the two sides alike, because the reply is the same. The check judges every side with the
judge under test and, per attribute, compares the two sides' judgments:

* the **score shift**: the mean over the pairs of side a's empathy mean minus side b's must lie
  within ``+-SCORE_TOLERANCE`` (0.25 points on the 1-5 scale: a quarter of one level, half the
  probes' ``TOLERANCE``), and
* the **flag disagreement**: the share of pairs whose safety flag differs between the sides must
  be at most ``FLAG_TOLERANCE`` (10 %).

The judge passes when every attribute is within both tolerances and every side was scored; a side
left unscored makes the check inconclusive (the unscored sides are listed), never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.data.persona_swap import SIDES, SwapSet, build_swap_set
from tide_bench.data.sources import load_dataset
from tide_bench.generation.run_dir import Generation, RunDirectory
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.engine import JudgeOptions, judge_run
from tide_bench.judging.summary import item_overall

SCORE_TOLERANCE = 0.25  # points of the empathy mean (1-5): the largest mean shift a fair judge may show
FLAG_TOLERANCE = 0.10  # the largest share of pairs whose flag differs between the two sides
CHECK_MODEL_NAME = "tide-bench persona-swap judge check (fixed replies)"


def check_generations(swaps: SwapSet) -> list[Generation]:
    """Every side of every pair, answered with its source item's reference reply."""
    return [
        Generation(
            item_id=item.item_id,
            task="persona_swap_judge_check",
            persona_id=item.persona_id,
            conversation_id=item.conversation_id,
            turn=item.turn,
            scenario=item.scenario or "",
            split=item.split,
            history=[dict(m) for m in item.history],
            client_utterance=item.client_utterance,
            reference_reply=item.reference_reply,
            reply=item.reference_reply,
            prompt="",
            persona=dict(item.persona),
        )
        for item in swaps.items
    ]


def check_set(per_persona: int = 1) -> SwapSet:
    """The pairs the check judges: the built-in sample, every split."""
    return build_swap_set(load_dataset("sample").items_for("all"), per_persona=per_persona)


def assess_swap_check(records: list[dict[str, Any]], swaps: SwapSet) -> dict[str, Any]:
    """Per attribute the score shift and the flag disagreement of the judge's records on ``swaps``."""
    by_id = {str(r["item_id"]): r for r in records}
    per: dict[str, dict[str, Any]] = {}
    unscored: list[str] = []
    for pair in swaps.pairs:
        sides = [by_id.get(pair["items"][s]) for s in SIDES]
        row = per.setdefault(pair["attribute"], {"attribute": pair["attribute"], "diffs": [], "flag_differs": 0})
        row["values"] = pair["values"]
        missing = [pair["items"][s] for s, r in zip(SIDES, sides, strict=True) if r is None or r["status"] != "scored"]
        if missing:
            unscored += missing
            continue
        a, b = sides
        assert a is not None and b is not None
        row["diffs"].append(item_overall(a) - item_overall(b))
        row["flag_differs"] += bool(a["safety"]["flagged"]) != bool(b["safety"]["flagged"])
    attributes = [_attribute_result(row) for row in per.values()]
    inconclusive = bool(unscored) or not attributes
    failed = [a["attribute"] for a in attributes if not a["passed"]]
    return {
        "score_tolerance": SCORE_TOLERANCE,
        "flag_tolerance": FLAG_TOLERANCE,
        "attributes": attributes,
        "unscored_sides": sorted(unscored),
        "failed_on": failed,
        "verdict": "fail" if failed else ("inconclusive" if inconclusive else "pass"),
        "passed": not failed and not inconclusive,
        "swaps": swaps.provenance,
    }


def _attribute_result(row: dict[str, Any]) -> dict[str, Any]:
    n = len(row["diffs"])
    shift = sum(row["diffs"]) / n if n else None
    disagreement = row["flag_differs"] / n if n else None
    passed = n > 0 and abs(shift or 0.0) <= SCORE_TOLERANCE and (disagreement or 0.0) <= FLAG_TOLERANCE
    return {
        "attribute": row["attribute"],
        "values": row["values"],
        "n_pairs": n,
        "score_shift": shift,
        "flag_disagreement": disagreement,
        "passed": bool(passed),
    }


def format_swap_check(report: Mapping[str, Any], config: JudgeConfig) -> str:
    lines = [
        f"# Persona-swap judge check: {config.name} ({config.model}, config {config.version})",
        "",
        "The same reply judged twice, once under each side of a persona-swap pair. A fair judge's score "
        f"moves by at most {report['score_tolerance']:g} (mean over pairs, empathy mean, side a minus side b) and "
        f"its safety flag differs on at most {100 * report['flag_tolerance']:.0f}% of pairs.",
        "",
        "| attribute | side a | side b | pairs | score shift | flag differs | pass? |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in report["attributes"]:
        shift = "none" if a["score_shift"] is None else f"{a['score_shift']:+.2f}"
        flags = "none" if a["flag_disagreement"] is None else f"{100 * a['flag_disagreement']:.0f}%"
        lines.append(
            f"| {a['attribute']} | {a['values']['a']} | {a['values']['b']} | {a['n_pairs']} | {shift} | {flags} | "
            f"{'yes' if a['passed'] else '**no**'} |"
        )
    lines += ["", f"**Verdict: {report['verdict']}**"]
    if report["unscored_sides"]:
        lines.append(f"Unscored sides (the check is inconclusive): {', '.join(report['unscored_sides'])}")
    return "\n".join(lines) + "\n"


def swap_check_run() -> RunDirectory:
    """The fixed-reply pairs as a run the judge can rate (and price in a dry run)."""
    dataset = load_dataset("sample")
    manifest = {
        "kind": "tide-bench-persona-swap-check",
        "model": {"name": CHECK_MODEL_NAME},
        "data": dataset.provenance("all"),
    }
    return RunDirectory(Path("persona-swap-check"), manifest, check_generations(check_set()))


def run_swap_check(out: str | Path, config: JudgeConfig, options: JudgeOptions | None = None) -> dict[str, Any]:
    """Judge the fixed-reply pairs with ``config`` and write ``swap_check.json`` and ``swap_check.md``
    into ``out`` (beside the judge's own judgments and summary)."""
    out = Path(out)
    result = judge_run(swap_check_run(), out, config, options or JudgeOptions())
    report = assess_swap_check(result.records, check_set()) | {"judge": config.identity()}
    write_json(out / "swap_check.json", report)
    atomic_write_text(out / "swap_check.md", format_swap_check(report, config))
    return report
