"""``tide-bench demo``: every stage that can run offline, on the built-in sample.

The numbers it prints come from a 135M demo model on a synthetic sample: they show the
pipeline working, they are not benchmark results, and the output says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tide_bench.demo.model import demo_model_args
from tide_bench.generation import EvalConfig, load_run, run_eval
from tide_bench.judging import JudgeConfig
from tide_bench.metrics.reference import METRIC_NAMES

Echo = Callable[[str], None]


def format_metric_table(summary: dict[str, Any]) -> str:
    """Mean, 95 % CI and n per reference metric, as a small text table."""
    lines = [f"{'metric':<15}{'mean':>9}{'95% CI':>22}{'n':>6}"]
    for name in METRIC_NAMES:
        m = summary["overall"][name]
        if m["mean"] is None:
            lines.append(f"{name:<15}{'n/a':>9}{'':>22}{m['n']:>6}")
            continue
        ci = f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]" if m["ci_low"] is not None else "(n<2)"
        lines.append(f"{name:<15}{m['mean']:>9.3f}{ci:>22}{m['n']:>6}")
    return "\n".join(lines)


def run_demo(
    out: Path,
    *,
    limit: int | None = None,
    max_gen_toks: int = 96,
    batch_size: int = 4,
    overwrite: bool = True,
    echo: Echo = print,
) -> dict[str, Any]:
    """Run the demo into ``out`` and return what each stage produced."""
    out = Path(out)
    echo("[model] preparing the offline demo model (SmolLM2-135M-Instruct; first time ~20 s)")
    model_args = demo_model_args()
    echo("[generate] generating replies on the built-in synthetic sample (test split) through lm-eval")
    manifest_path = run_eval(
        EvalConfig(
            model="hf",
            model_args=model_args,
            output_dir=out / "run",
            data="sample",
            split="test",
            device="cpu",
            batch_size=batch_size,
            limit=limit,
            gen_kwargs={"max_gen_toks": max_gen_toks},
            overwrite=overwrite,
        )
    )
    run = load_run(manifest_path.parent)
    echo("[metrics] reference metrics against the sample's reference replies")
    echo(format_metric_table(run.manifest["reference_metrics"]))
    example = run.generations[0]
    echo(f"\nexample ({example.item_id}):\n  client: {example.client_utterance}\n  model:  {example.reply.strip()}")
    produced: dict[str, Any] = {"run": str(run.root), "manifest": str(manifest_path)}
    judge = configured_judge()
    if judge is None:
        echo(
            "\n[judge] skipped: no judge configured. Set ANTHROPIC_API_KEY (Claude), OPENAI_API_KEY (OpenAI), or "
            "TIDE_BENCH_JUDGE_BASE_URL + TIDE_BENCH_JUDGE_MODEL (your own OpenAI-compatible server). "
            "Judging sends the sample dialogue to that server; see docs/judging.md and docs/privacy.md."
        )
    else:
        from tide_bench.judging import JudgeOptions, judge_run
        from tide_bench.judging.report import format_summary

        echo(f"\n[judge] rating the replies with {judge.name} ({judge.model})")
        result = judge_run(run, run.root / "judge", judge, JudgeOptions())
        echo(format_summary(result.summary))
        produced["judge"] = str(result.out)
    echo(f"\nrun directory: {run.root}\nNOTE: demo model on a synthetic sample; these are not benchmark results.")
    return produced


def configured_judge() -> JudgeConfig | None:
    """The judge the environment configures, if any (never a canned or random stand-in)."""
    from tide_bench.judging import load_judge

    if os.environ.get("TIDE_BENCH_JUDGE_BASE_URL") and os.environ.get("TIDE_BENCH_JUDGE_MODEL"):
        return load_judge("local", model=os.environ["TIDE_BENCH_JUDGE_MODEL"], base_url=os.environ["TIDE_BENCH_JUDGE_BASE_URL"])
    if os.environ.get("ANTHROPIC_API_KEY"):
        return load_judge("claude-sonnet")
    if os.environ.get("OPENAI_API_KEY"):
        return load_judge("openai-gpt")
    return None
