"""``tide-bench eval`` and ``tide-bench tasks-path``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.cli.options import data_option, split_option
from tide_bench.core.errors import ConfigError
from tide_bench.tasks.registry import TASK, tasks_path


def parse_gen_kwargs(text: str | None) -> dict | None:
    """``"max_gen_toks=64,temperature=0"`` -> typed dict, as lm-eval parses ``--gen_kwargs``."""
    if not text:
        return None
    from lm_eval.utils import simple_parse_args_string

    try:
        return simple_parse_args_string(text)
    except Exception as exc:
        raise ConfigError(f"cannot parse --gen-kwargs {text!r}: {exc}", hint="use key=value,key=value") from None


def _batch_size(value: str) -> str | int:
    return value if value.startswith("auto") else int(value)


@click.command("eval")
@click.option("--model", default="hf", show_default=True, help="lm-eval backend: hf, vllm, local-chat-completions, openai-chat-completions, anthropic-chat, ...")
@click.option("--model-args", default="", help="lm-eval model arguments, e.g. 'pretrained=Qwen/Qwen2.5-0.5B-Instruct,dtype=bfloat16' (add peft=ADAPTER for a LoRA adapter, gguf_file=F for GGUF).")
@click.option("--output-dir", required=True, type=click.Path(path_type=Path), help="Run directory to create: lm-eval results + samples and run.json.")
@data_option
@split_option
@click.option("--tasks", default=TASK, show_default=True, help="Comma-separated tide-bench tasks: tide_empathy (every client turn), or tide_empathy_turn1 / tide_empathy_turn2 (one turn; multi-exchange data only).")
@click.option("--device", default=None, help="cpu, cuda, cuda:0, ... (default: lm-eval's choice).")
@click.option("--batch-size", default="1", show_default=True, help="Integer, or 'auto' / 'auto:N' (hf).")
@click.option("--max-batch-size", type=int, default=None, help="Upper bound for --batch-size auto.")
@click.option("--limit", type=float, default=None, help="Items per task (testing only: a limited run is not a benchmark result).")
@click.option("--chat-template/--no-chat-template", default=True, show_default=True, help="Send genuine multi-turn chat messages through the model's chat template.")
@click.option("--system-instruction", default=None, help="Extra system text placed before the task's system prompt.")
@click.option("--gen-kwargs", default=None, help="Override generation settings, e.g. 'max_gen_toks=128'.")
@click.option("--seed", type=int, default=1234, show_default=True, help="Seed for python, numpy and torch.")
@click.option("--embedding-model", default=None, help="Sentence-transformers model for cosine similarity (default: offline all-MiniLM-L6-v2).")
@click.option("--overwrite", is_flag=True, help="Replace a finished run in --output-dir.")
def eval_cmd(**opts: object) -> None:
    """Generate replies to TIDE client turns through lm-evaluation-harness.

    Writes lm-eval's own results and samples files (unchanged, under OUTPUT/lm_eval/) and
    run.json, the manifest of what produced them: data source and hash, split, model and
    revision, adapter, prompt version, generation settings, package versions, and the
    reference metrics (cosine similarity, ROUGE-L, distinct-1/2, length) with 95% CIs.

    \b
    Examples:
      tide-bench eval --data sample --model hf \\
          --model-args pretrained=Qwen/Qwen2.5-0.5B-Instruct --device cuda:0 \\
          --batch-size auto --output-dir runs/qwen0.5b
      tide-bench eval --data ~/data/TIDE --model vllm \\
          --model-args pretrained=Qwen/Qwen2.5-7B-Instruct,tensor_parallel_size=2 \\
          --batch-size auto --output-dir runs/qwen7b
    """
    from tide_bench.generation import EvalConfig, run_eval

    limit = opts["limit"]
    config = EvalConfig(
        model=str(opts["model"]),
        model_args=str(opts["model_args"]),
        output_dir=Path(str(opts["output_dir"])),
        data=opts["data"],  # type: ignore[arg-type]
        split=str(opts["split"]),
        tasks=[t.strip() for t in str(opts["tasks"]).split(",") if t.strip()],
        device=opts["device"],  # type: ignore[arg-type]
        batch_size=_batch_size(str(opts["batch_size"])),
        max_batch_size=opts["max_batch_size"],  # type: ignore[arg-type]
        limit=int(limit) if isinstance(limit, float) and limit >= 1 and limit.is_integer() else limit,  # type: ignore[arg-type]
        apply_chat_template=bool(opts["chat_template"]),
        system_instruction=opts["system_instruction"],  # type: ignore[arg-type]
        gen_kwargs=parse_gen_kwargs(opts["gen_kwargs"]),  # type: ignore[arg-type]
        seed=int(opts["seed"]),  # type: ignore[arg-type]
        embedding_model=opts["embedding_model"],  # type: ignore[arg-type]
        overwrite=bool(opts["overwrite"]),
    )
    manifest = run_eval(config)
    click.echo(f"run written: {manifest}")


@click.command("tasks-path")
def tasks_path_cmd() -> None:
    """Print the folder to pass to `lm_eval --include_path`.

    \b
    Example:
      lm_eval --include_path "$(tide-bench tasks-path)" --tasks tide_empathy \\
          --metadata '{"tide_data": "/path/to/TIDE"}' --model hf --model_args pretrained=... \\
          --apply_chat_template --log_samples --output_path runs/
    """
    click.echo(str(tasks_path()))
