"""``tide-bench demo``: the paper's study in miniature, offline, on the built-in sample.

The demo is ``studies/demo.yaml`` run through :func:`tide_bench.study.run_study`: the offline
demo model (SmolLM2-135M-Instruct) zero-shot and after a few LoRA steps on the sample's train
split, plus the sample's reference row, each through generation, reference metrics, the judge
when one is configured, and submission; then the demo board and the study report. The
numbers come from a 135M model on a synthetic sample: they show the mechanism, not a result,
and every output says so. A rerun into the same folder resumes (finished stages are skipped).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tide_bench.core.resources import resource_dir
from tide_bench.demo.model import DEMO_MODEL_NAME, prepare_demo_model, resolve_model
from tide_bench.finetune import FinetuneConfig
from tide_bench.generation.reference import reference_label
from tide_bench.judging import JudgeConfig
from tide_bench.study import StudySpec, load_study, run_study
from tide_bench.study.runner import Echo

DEMO_STUDY = "demo.yaml"
STUDY_FOLDERS = ("cells", "submissions", "site", "report", ".estimate")  # what a demo run writes into --out


def configured_judge_settings() -> dict[str, Any] | None:
    """The judge the environment configures (a study's ``judge:`` block), if any: never a
    canned or random stand-in."""
    if os.environ.get("TIDE_BENCH_JUDGE_BASE_URL") and os.environ.get("TIDE_BENCH_JUDGE_MODEL"):
        return {
            "name": "local",
            "model": os.environ["TIDE_BENCH_JUDGE_MODEL"],
            "base_url": os.environ["TIDE_BENCH_JUDGE_BASE_URL"],
        }
    if os.environ.get("ANTHROPIC_API_KEY"):
        return {"name": "claude-sonnet"}
    if os.environ.get("OPENAI_API_KEY"):
        return {"name": "openai-gpt"}
    return None


def configured_judge() -> JudgeConfig | None:
    """The configured judge, loaded (the demo's judge stage runs only when this is not None)."""
    from tide_bench.judging import load_judge

    settings = configured_judge_settings()
    if settings is None:
        return None
    return load_judge(settings["name"], model=settings.get("model"), base_url=settings.get("base_url"))


def demo_study(
    *,
    limit: int | None = None,
    max_gen_toks: int | None = None,
    batch_size: int | None = None,
    finetune_steps: int | None = None,
    judge: dict[str, Any] | None = None,
) -> StudySpec:
    """``studies/demo.yaml`` with the demo command's options applied."""
    spec = load_study(resource_dir("studies") / DEMO_STUDY)
    conditions = dict(spec.conditions)
    if finetune_steps is not None:
        if finetune_steps <= 0:
            conditions.pop("fine-tuned", None)
        else:
            conditions["fine-tuned"] = {
                "lora": spec.lora() | {"max_steps": finetune_steps, "eval_steps": finetune_steps}
            }
    settings = {"max_gen_toks": max_gen_toks, "batch_size": batch_size, "limit": limit}
    samples = spec.samples
    if samples and samples.get("conditions"):  # only the conditions this run has (--finetune 0 drops one)
        kept = [c for c in samples["conditions"] if c in conditions]
        samples = samples | {"conditions": kept} if kept else None
    return replace(
        spec,
        conditions=conditions,
        judge=judge,
        seeker_judge=judge,  # the seeker's view by the same judge, with the seeker's rubric
        samples=samples if judge else None,  # unjudged samples measure nothing (and the plan would say so)
        eval=dict(spec.eval) | {k: v for k, v in settings.items() if v is not None},
    )


CELL_OVERHEAD_S = 30.0  # loading the model and lm-eval's start per cell, beyond the rates' tokens (2 idle cores)
QUICK = {"finetune_steps": 0, "max_gen_toks": 48}


def expected_seconds(spec: StudySpec, out: Path) -> float | None:
    """What is left of a demo study, at the study planner's CPU rates (``studies/rates/assumed.yaml``,
    measured on 2 idle cores), plus each pending cell's model load (and each pending sample's: a
    sample loads the model again); None when a rate is missing."""
    from tide_bench.study.estimate import estimate_cells, workload
    from tide_bench.study.plan import make_plan
    from tide_bench.study.rates import assumed_rates

    rates = assumed_rates()
    plan = make_plan(spec, out)
    estimates = estimate_cells(plan, workload(spec, rates), rates)
    if any(e.seconds is None for e in estimates):
        return None
    pending = sum(1 for e in estimates if e.seconds)
    pending += sum(spec.samples_for(s.cell.model, s.cell.condition) for s in plan.pending() if s.stage == "samples")
    return sum(e.seconds or 0.0 for e in estimates) + CELL_OVERHEAD_S * pending


def time_line(spec: StudySpec, quick: StudySpec, out: Path) -> str:
    """The demo's first promise: about how long it takes here, and the quicker variant."""
    full, short = expected_seconds(spec, out), expected_seconds(quick, out)
    if full is None:
        return "[time] no rate to estimate the demo's time from (studies/rates/assumed.yaml)"
    if not full:
        return "[time] every stage is done already: the board and the report are rebuilt"
    line = (
        f"[time] about {max(1, round(full / 60))} min on 2 idle CPU cores (the study planner's measured rates); "
        "a busy machine takes several times longer. Ctrl-C and the same command resume"
    )
    if short is not None and short < full * 0.8:
        line += f"; `--finetune 0 --max-gen-toks 48` takes about {max(1, round(short / 60))} min"
    return line + "."


def demo_finetune_config(base: str, out: Path, steps: int, overwrite: bool = True) -> FinetuneConfig:
    """What the demo's fine-tuned cell trains (studies/demo.yaml's LoRA settings, ``steps`` steps):
    two sequences per step (CPU micro-batch 1), validated at the start and the end; about a
    minute for 10 steps on 2 cores (benchmarks/bench_finetune.py times it)."""
    lora = demo_study(finetune_steps=steps).lora()
    return FinetuneConfig(model=base, data="sample", out=out, overwrite=overwrite, **lora)


def _fresh(out: Path) -> None:
    """Remove what an earlier demo run wrote into ``out`` (only the study's own folders)."""
    for name in STUDY_FOLDERS:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def replies_at_cap(runs: list[Path], max_gen_toks: int) -> str:
    """``"11 of 12 zero-shot replies, 12 of 12 fine-tuned"``: the replies as long as the token cap (so
    cut by it), counted with the demo model's own tokenizer; empty when none reached it."""
    from transformers import AutoTokenizer

    from tide_bench.generation import load_run

    tokenizer = AutoTokenizer.from_pretrained(prepare_demo_model())
    parts = []
    for run_dir in runs:
        replies = [g.reply for g in load_run(run_dir).generations]
        # re-encoding a decoded reply can differ by a token from the generated ids: count one short as cut
        at_cap = sum(len(tokenizer(r, add_special_tokens=False)["input_ids"]) >= max_gen_toks - 1 for r in replies)
        if at_cap:
            parts.append(f"{at_cap} of {len(replies)} {run_dir.parent.name} replies")
    return ", ".join(parts)


def run_demo(
    out: Path,
    *,
    limit: int | None = None,
    max_gen_toks: int = 96,
    batch_size: int = 4,
    finetune_steps: int = 10,
    fresh: bool = False,
    echo: Echo = print,
    confirm: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """Run the demo study into ``out`` and return what it produced (runs, board, report).
    ``confirm(plan)`` is called with the study's plan before anything runs (the CLI's notice and
    confirmation before a hosted judge receives the sample)."""
    out = Path(out)
    if fresh:
        _fresh(out)
    echo("[model] preparing the offline demo model (SmolLM2-135M-Instruct; first time ~20 s)")
    prepare_demo_model()
    judge = configured_judge_settings()
    spec = demo_study(
        limit=limit, max_gen_toks=max_gen_toks, batch_size=batch_size, finetune_steps=finetune_steps, judge=judge
    )
    if confirm is not None:
        from tide_bench.study import make_plan

        confirm(make_plan(spec, out))
    cells = cells_line(spec)
    quick = demo_study(limit=limit, batch_size=batch_size, judge=judge, **QUICK)
    echo(time_line(spec, quick, out))
    judged = "judging (the three factors, the seeker's view), " if judge else ""
    sampled = [c for c in spec.conditions if spec.samples_for(spec.models[0], c)]
    twice = f"{spec.samples['k']} sampled runs of the {', '.join(sampled)} cell, " if spec.samples and sampled else ""
    echo(f"[study] {cells}: generation, {twice}reference metrics, {judged}submission; then board and report")
    result = run_study(spec, out, resolve_model=resolve_model, echo=echo)
    if judge is None:
        echo(
            "\n[judge] skipped: no judge configured. Set ANTHROPIC_API_KEY (Claude), OPENAI_API_KEY (OpenAI), or "
            "TIDE_BENCH_JUDGE_BASE_URL + TIDE_BENCH_JUDGE_MODEL (your own OpenAI-compatible server). "
            "Judging sends the sample dialogue to that server; see docs/judging.md and docs/privacy.md."
        )
    report = json.loads((out / "report" / "report.json").read_text(encoding="utf-8")) if result.report else {}
    echo("\n" + summary_table(report, spec.conditions))
    for cell, message in result.failed.items():
        echo(f"  not on the board: {cell}: {message}")
    echo(f"\nleaderboard: {result.site} (open it in a browser)")
    echo(f"report:      {result.report}")
    echo(f"NOTE: {DEMO_MODEL_NAME} on a synthetic sample; these are not benchmark results.")
    runs = sorted(str(p.parent) for p in (out / "cells").glob("*/run/run.json"))
    cut = replies_at_cap([Path(r) for r in runs if Path(r).parent.name != "reference"], max_gen_toks)
    if cut:
        echo(
            f"NOTE: replies are capped at --max-gen-toks {max_gen_toks} tokens (to keep the demo short): {cut} reached "
            "the cap and are cut there. Where every reply has the cap's length, the length-controlled score is "
            "undefined (n/a). Pass --max-gen-toks 256 for whole replies, at several times the generation time."
        )
    return {
        "runs": runs,
        "site": str(result.site),
        "report": str(result.report),
        "judge": [str(p.parent) for p in (out / "cells").glob("*/run/judge/judgments.jsonl")],
        "failed": result.failed,
    }


def cells_line(spec: StudySpec) -> str:
    """The cells the demo runs, the reference row named after the study's data (issue 34.11)."""
    cells = [f"{m.id} {c}" for m in spec.models for c in spec.conditions]
    return ", ".join(cells + ([reference_label(spec.data)] if spec.reference else []))


NOT_RUN = {"fine-tuned": "n/a: not run (--finetune 0 leaves the fine-tuned cell out)"}


def summary_table(report: dict[str, Any], conditions: Iterable[str] | None = None) -> str:
    """Zero-shot, fine-tuned and the paired gain per metric, as a few text lines; a condition not
    in ``conditions`` (the cells this run had) says why it has no number."""
    ran = set(conditions) if conditions is not None else {"zero-shot", "fine-tuned"}
    lines = []
    for model in report.get("models", []):
        for metric in ("empathy", "cosine_sim"):
            block = model.get(metric)
            if not block:
                continue
            parts = []
            for label in ("zero-shot", "fine-tuned"):
                m = block.get(label) or {}
                if m.get("mean") is not None:
                    parts.append(f"{label} {m['mean']:.3f}")
                else:
                    parts.append(
                        f"{label} n/a" if label in ran else f"{label} {NOT_RUN.get(label, 'n/a: not in this run')}"
                    )
            gain = block.get("gain") or {}
            if gain.get("difference") is not None:
                ci = "" if gain.get("ci_low") is None else f" [{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}]"
                parts.append(f"gain {gain['difference']:+.3f}{ci}")
            lines.append(f"{model['model']} {metric}: " + ", ".join(parts))
    reference = (report.get("reference") or {}).get("empathy") or {}
    if reference.get("mean") is not None:
        label = (report.get("reference") or {}).get("label") or "reference"
        lines.append(f"{label} empathy: {reference['mean']:.3f}")
    return "\n".join(lines) or "(no scores: see the report)"
