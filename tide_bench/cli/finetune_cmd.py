"""``tide-bench finetune`` (train a LoRA adapter) and ``tide-bench merge-adapter`` (merge it into its base)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import data_option, out_option, overwrite_option, seed_option
from tide_bench.core.extras import require_eval
from tide_bench.finetune.config import FinetuneConfig as DEFAULTS  # one set of defaults: the config's


class _FinetuneCommand(click.Command):
    """``finetune`` is one command (no sub-commands): its old ``finetune merge`` spelling gets a pointer."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] == ["merge"]:
            raise click.UsageError("merging is `tide-bench merge-adapter ADAPTER --out DIR` (was `finetune merge`)")
        return super().parse_args(ctx, args)


@click.command("finetune", cls=_FinetuneCommand)
@click.option(
    "--model",
    required=True,
    help="Base model: hub id or local folder, e.g. Qwen/Qwen2.5-0.5B-Instruct ('demo': the offline demo model).",
)
@click.option("--revision", default=None, help="Base model revision (commit) to pin.")
@data_option
@out_option("Adapter folder: adapter weights, tokenizer, adapter_card.json, loss_curve.svg, history.jsonl.")
@click.option(
    "--split",
    type=click.Choice(["train", "validation", "test"]),
    default="train",
    show_default=True,
    help="Training split (persona-disjoint from validation/test).",
)
@click.option(
    "--allow-test-split",
    is_flag=True,
    help="Permit --split test (ablations only; recorded in the card; the leaderboard evaluates on test).",
)
@click.option(
    "--no-validation", is_flag=True, help="No validation split: no early stopping, the last step's adapter is saved."
)
@click.option("--rank", type=int, default=DEFAULTS.rank, show_default=True, help="LoRA rank r.")
@click.option("--alpha", type=int, default=DEFAULTS.alpha, show_default=True, help="LoRA alpha.")
@click.option("--dropout", type=float, default=DEFAULTS.dropout, show_default=True, help="LoRA dropout.")
@click.option(
    "--target-modules",
    default=None,
    help="Comma-separated module names, or 'all-linear' (default: the architecture's attention projections).",
)
@click.option("--epochs", type=int, default=DEFAULTS.epochs, show_default=True, help="Passes over the train split.")
@click.option("--max-steps", type=int, default=None, help="Stop after this many optimizer steps (overrides --epochs).")
@click.option(
    "--learning-rate",
    type=float,
    default=DEFAULTS.learning_rate,
    show_default=True,
    help="Peak learning rate (linear warm-up, then decay).",
)
@click.option(
    "--batch-size",
    type=int,
    default=None,
    help="Sequences per device per micro-batch. Default: 4 on a GPU, 1 on a CPU (faster and smaller there).",
)
@click.option(
    "--grad-accum",
    type=int,
    default=None,
    help="Micro-batches per optimizer step. Default: enough for 16 sequences per step.",
)
@click.option(
    "--max-length",
    type=int,
    default=DEFAULTS.max_length,
    show_default=True,
    help="Tokens per example. Longer examples are left out and reported (count and share), never cut.",
)
@click.option("--warmup-steps", type=int, default=None, help="Linear warm-up steps (default: 3% of the steps).")
@click.option(
    "--weight-decay", type=float, default=DEFAULTS.weight_decay, show_default=True, help="AdamW weight decay."
)
@click.option(
    "--max-grad-norm", type=float, default=DEFAULTS.max_grad_norm, show_default=True, help="Gradient clipping (0: off)."
)
@click.option(
    "--eval-steps",
    type=int,
    default=None,
    help="Validate and checkpoint every N optimizer steps (default: once per epoch, and at the last step).",
)
@click.option(
    "--patience",
    type=int,
    default=DEFAULTS.patience,
    show_default=True,
    help="Early stopping: evaluations without improvement. The best adapter is the one saved.",
)
@seed_option("Seed for initialisation and data order.", DEFAULTS.seed)
@click.option(
    "--precision",
    type=click.Choice(["auto", "bf16", "fp16", "fp32"]),
    default="auto",
    show_default=True,
    help="auto: bf16 on GPUs that support it (fp16 on others); on a CPU bf16 only with native bf16 "
    "instructions (AVX512-BF16/AMX), else fp32. The base model loads in this dtype.",
)
@click.option(
    "--quantize",
    type=click.Choice(["4bit"]),
    default=None,
    help="QLoRA: the base in 4-bit NF4 (bitsandbytes, CUDA GPU only), for 3B-5B models on one GPU.",
)
@click.option("--gradient-checkpointing", is_flag=True, help="Trade compute for memory.")
@click.option("--no-chat-template", is_flag=True, help="Train on the plain transcript format (for base models).")
@click.option(
    "--prompt",
    type=click.Choice(["neutral", "guided"]),
    default="neutral",
    show_default=True,
    help="Prompt condition to train on: neutral (tide_empathy) or guided (tide_empathy_guided). "
    "Evaluate the adapter with the same task.",
)
@click.option("--limit-examples", type=int, default=None, help="Use only the first N examples of each split (testing).")
@click.option(
    "--resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[CHECKPOINT]",
    help="Continue an interrupted run in --out from its latest checkpoint (or the one given), same options.",
)
@overwrite_option("Replace an earlier adapter in --out.")
@click.option("--keep-checkpoints", is_flag=True, help="Keep --out/checkpoint-N folders after a successful run.")
@click.option(
    "--report-to",
    type=click.Choice(["auto", "none", "tensorboard", "wandb"]),
    default="auto",
    show_default=True,
    help="auto: tensorboard when installed; wandb when installed and configured.",
)
def finetune_cmd(**opts: Any) -> None:
    """LoRA fine-tuning on TIDE's train split with the evaluation prompts (loss on replies only).

    Runs on transformers.Trainer: validation every --eval-steps, early stopping with the best
    adapter restored, gradient clipping, checkpoints and --resume. Every example is rendered
    exactly as lm-eval renders the evaluation prompt; a chat template that cannot give
    reply-only labels (prompt not a prefix of the conversation) is refused with the reason.

    Writes the adapter with adapter_card.json (base model, data and split hash, template and
    masking check, truncation share, hyperparameters, best step, loss history, versions) and
    loss_curve.svg. Evaluate it with `tide-bench eval --model-args pretrained=BASE,peft=ADAPTER`.

    \b
    Examples:
      tide-bench finetune --model Qwen/Qwen2.5-0.5B-Instruct --data /path/TIDE --out adapters/qwen0.5b-tide
      tide-bench finetune --model ... --data ... --out adapters/x --resume        # after an interruption
      tide-bench finetune --model Qwen/Qwen2.5-3B-Instruct --quantize 4bit ...   # QLoRA on one GPU
      accelerate launch -m tide_bench.finetune --model ... --data ... --out ...  # several GPUs
      tide-bench merge-adapter adapters/qwen0.5b-tide --out merged/qwen0.5b-tide  # full weights
    """
    require_eval("tide-bench finetune")
    from tide_bench.demo.model import resolve_model
    from tide_bench.finetune import FinetuneConfig
    from tide_bench.finetune.train import finetune_or_explain, is_main_process

    opts["model"] = resolve_model(str(opts["model"]))
    targets = opts.pop("target_modules")
    config = FinetuneConfig(
        target_modules=[t.strip() for t in str(targets).split(",") if t.strip()] if targets else None,
        chat_template=not opts.pop("no_chat_template"),
        validation_split=None if opts.pop("no_validation") else "validation",
        **opts,
    )
    card = finetune_or_explain(config)
    if not is_main_process():
        return
    t = card["training"]
    for note in card.get("notes") or []:
        click.echo(f"note: {note}", err=True)
    for split, trunc in (("training", card["truncation"]["train"]), ("validation", card["truncation"]["validation"])):
        if trunc["too_long"]:
            click.echo(
                f"note: {trunc['too_long']} of {trunc['items']} {split} examples ({trunc['too_long_share']:.1%}) are "
                f"longer than --max-length {config.max_length} and were left out (never cut)",
                err=True,
            )
    if t["beats_base"] is False:
        click.echo(
            f"warning: no evaluated step beat the untrained model's validation loss ({t['initial_val_loss']:.4f}); "
            "the saved adapter is the least bad one: lower --learning-rate or check the data",
            err=True,
        )
    best = (
        f"best validation loss {t['best_val_loss']:.4f} at step {t['best_step']}"
        if t["best_val_loss"] is not None
        else "no validation"
    )
    click.echo(
        f"adapter written: {config.out} ({t['steps']} steps, {t['stopped']}; {best}; saved: {t['saved']}; "
        f"training throughput {t['tokens_per_second']} tokens/s)"
    )


@click.command("merge-adapter")
@click.argument("adapter", type=click.Path(path_type=Path))
@out_option("Folder for the merged model.")
@click.option("--base", default=None, help="Base model (default: the one named in the adapter card).")
@click.option(
    "--dtype",
    type=click.Choice(["auto", "float32", "bfloat16", "float16"]),
    default="auto",
    show_default=True,
    help="Weights dtype of the merged model (auto: the base model's own).",
)
@overwrite_option("Replace an earlier merged model in --out.")
def merge_cmd(adapter: Path, out: Path, base: str | None, dtype: str, overwrite: bool) -> None:
    """Merge a LoRA adapter into its base model and save full weights (e.g. for the vLLM backend).

    \b
    Example:
      tide-bench merge-adapter adapters/qwen0.5b-tide --out merged/qwen0.5b-tide
      tide-bench eval --model vllm --model-args pretrained=merged/qwen0.5b-tide ...
    """
    require_eval("tide-bench merge-adapter")
    from tide_bench.finetune import merge_adapter

    merge_adapter(adapter, out, base=base, dtype=dtype, overwrite=overwrite)
    click.echo(f"merged model written: {out}")
