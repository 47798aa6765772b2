"""``tide-bench finetune``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.cli.options import data_option


@click.command("finetune")
@click.option("--model", required=True, help="Base model: hub id or local folder, e.g. Qwen/Qwen2.5-0.5B-Instruct.")
@click.option("--revision", default=None, help="Base model revision (commit) to pin.")
@data_option
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Adapter folder: adapter weights, tokenizer, adapter_card.json, loss_curve.png.")
@click.option("--split", type=click.Choice(["train", "validation", "test"]), default="train", show_default=True, help="Training split (persona-disjoint from validation/test).")
@click.option("--allow-test-split", is_flag=True, help="Permit --split test (ablations only; recorded in the card; the leaderboard evaluates on test).")
@click.option("--rank", type=int, default=16, show_default=True, help="LoRA rank r.")
@click.option("--alpha", type=int, default=32, show_default=True, help="LoRA alpha.")
@click.option("--dropout", type=float, default=0.05, show_default=True, help="LoRA dropout.")
@click.option("--target-modules", default=None, help="Comma-separated module names (default: attention projections for the architecture).")
@click.option("--epochs", type=int, default=3, show_default=True)
@click.option("--max-steps", type=int, default=None, help="Stop after this many optimizer steps (overrides --epochs).")
@click.option("--learning-rate", type=float, default=2e-4, show_default=True)
@click.option("--batch-size", type=int, default=4, show_default=True, help="Examples per device per micro-batch.")
@click.option("--grad-accum", type=int, default=4, show_default=True, help="Micro-batches per optimizer step.")
@click.option("--max-length", type=int, default=1024, show_default=True, help="Tokens per example (longer prompts are skipped and counted).")
@click.option("--patience", type=int, default=2, show_default=True, help="Early stopping: epochs without validation improvement.")
@click.option("--seed", type=int, default=1234, show_default=True)
@click.option("--precision", type=click.Choice(["auto", "bf16", "fp16", "fp32"]), default="auto", show_default=True, help="auto: bf16 on GPUs that support it, fp16 on other GPUs, fp32 on CPU.")
@click.option("--gradient-checkpointing", is_flag=True, help="Trade compute for memory.")
@click.option("--no-chat-template", is_flag=True, help="Train on the plain transcript format (for base models).")
@click.option("--limit-examples", type=int, default=None, help="Use only the first N examples (testing).")
def finetune_cmd(**opts: object) -> None:
    """LoRA fine-tuning on TIDE's train split with the evaluation prompts (loss on replies only).

    Writes the adapter with adapter_card.json (base model and revision, data source and hash,
    split, hyperparameters, loss curve, versions) and loss_curve.png. Evaluate it with
    `tide-bench eval --model-args pretrained=BASE,peft=ADAPTER`.

    \b
    Examples:
      tide-bench finetune --model Qwen/Qwen2.5-0.5B-Instruct --data /path/TIDE --out adapters/qwen0.5b-tide
      accelerate launch -m tide_bench.finetune --model ... --data ... --out ...   # several GPUs
    """
    from tide_bench.finetune import FinetuneConfig
    from tide_bench.finetune.train import finetune_or_explain

    targets = opts.pop("target_modules")
    chat = not opts.pop("no_chat_template")
    config = FinetuneConfig(
        out=Path(str(opts.pop("out"))),
        target_modules=[t.strip() for t in str(targets).split(",")] if targets else None,
        chat_template=chat,
        **opts,  # type: ignore[arg-type]
    )
    card = finetune_or_explain(config)
    t = card["training"]
    click.echo(f"adapter written: {config.out} ({t['steps']} steps, {t['stopped']}; best validation loss {t['best_val_loss']}; {t['tokens_per_second']} tokens/s)")
