"""``tide-bench eval``: a thin wrapper over ``lm_eval.simple_evaluate``.

What it adds to a plain ``lm_eval`` call, and nothing more:

* a ``TaskManager`` that indexes only tide-bench's tasks (no 14 s index of lm-eval's 14k);
* the data source and split chosen explicitly and checked *before* the model loads;
* clear errors for an unknown task, unknown backend or a model that fails to load;
* lm-eval's own results and samples files, written by lm-eval's own ``EvaluationTracker``
  exactly as the ``lm_eval`` CLI writes them (under ``OUTPUT/lm_eval/``), with lm-eval's
  response cache, request cache, W&B and Hub logging passed through when asked for;
* lm-eval's hint about ``--metadata`` (printed once per task, irrelevant here: tide-bench
  passes the metadata itself) filtered out; every other warning kept;
* ``run.json``: the manifest of what produced the run, written last and atomically, so a
  run directory without it is an incomplete run (and later stages refuse it).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.core.provenance import environment, utc_now
from tide_bench.core.secrets import redact_command, redact_model_args
from tide_bench.data.sources import METADATA_KEY, choose_spec, load_dataset
from tide_bench.generation.batch_progress import batch_progress
from tide_bench.generation.manifest import MANIFEST_NAME, build_manifest, write_manifest
from tide_bench.generation.reference import NOT_APPLICABLE, is_reference
from tide_bench.generation.run_dir import model_display_name, read_generations
from tide_bench.metrics.reference import ReferenceScorer, summarize_metrics
from tide_bench.tasks.placement import FIRST_USER_TURN, SYSTEM, place_system, probe_placement
from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS
from tide_bench.tasks.registry import TASK, check_turn_available, task_manager, turn_of_task

LM_EVAL_SUBDIR = "lm_eval"
HUB_LOG_KEYS = frozenset(
    {
        "hub_results_org",
        "hub_repo_name",
        "details_repo_name",
        "results_repo_name",
        "push_results_to_hub",
        "push_samples_to_hub",
        "public_repo",
        "leaderboard_url",
        "point_of_contact",
        "gated",
    }
)
HF_BACKENDS = ("hf", "hf-auto", "huggingface")  # lm-eval's names of its transformers backend
TEMPLATE_KWARG_BACKENDS = ("hf", "vllm")  # lm-eval backends that take enable_thinking= as a model argument
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the max_lora_rank values vLLM accepts
DEFAULT_NEW_TOKENS = 256  # the TIDE tasks' max_gen_toks (tasks/tide_empathy/_template_yaml)


@dataclass
class EvalConfig:
    """Everything ``tide-bench eval`` forwards to lm-eval (mirrors the CLI options)."""

    model: str = "hf"
    model_args: str = ""
    output_dir: Path = Path("runs/run")
    data: str | None = None
    split: str = "test"
    tasks: list[str] = field(default_factory=lambda: [TASK])
    device: str | None = None
    batch_size: str | int = "auto"  # auto: chosen from the backend and the device (generation/device_choice.py)
    max_batch_size: int | None = None
    limit: int | float | None = None
    apply_chat_template: bool = True
    system_instruction: str | None = None
    gen_kwargs: dict[str, Any] | None = None
    seed: int | tuple[int | None, int | None, int | None, int | None] = 1234
    embedding_model: str | None = None
    overwrite: bool = False
    # lm-eval's own stderr is an i.i.d. bootstrap over items, which ignores that TIDE's items nest
    # in personas; tide-bench reports persona-cluster intervals instead (run.json, the board), so
    # lm-eval's is skipped by default: its results file then shows "N/A" rather than a too-narrow
    # interval, and its "bootstrapping for stddev" lines and time are gone.
    bootstrap_iters: int = 0
    use_cache: str | None = None
    cache_requests: str | None = None
    wandb_args: dict[str, Any] | None = None
    hf_hub_log_args: dict[str, Any] | None = None
    # one of ``eval --samples k``'s runs: {"index": s, "of": k, "seed": [...]} (generation/sampled.py)
    sample: dict[str, Any] | None = None

    def seeds(self) -> tuple[int | None, int | None, int | None, int | None]:
        """(python, numpy, torch, few-shot) seeds, as lm-eval's ``--seed`` takes them."""
        return self.seed if isinstance(self.seed, tuple) else (self.seed,) * 4

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {METADATA_KEY: self.data, "tide_split": self.split}
        if self.embedding_model:
            meta["embedding_model"] = self.embedding_model
        if self.embedding_device():
            meta["embedding_device"] = self.embedding_device()
        return meta

    def embedding_device(self) -> str | None:
        """The reference metrics' device: this run's CUDA device (after generation, in one batch), else
        the encoder's default."""
        return self.device if self.device and self.device.startswith("cuda") else None


def with_template_kwargs(backend: str, model_args: str) -> str:
    """``model_args`` plus the chat-template settings every TIDE prompt uses (thinking off), unless set.

    Fine-tuning renders its training prompts with the same settings, so an adapter is
    evaluated on exactly the prompt it was trained on.
    """
    if backend not in TEMPLATE_KWARG_BACKENDS:
        return model_args
    given = {part.split("=", 1)[0].strip() for part in model_args.split(",") if part.strip()}
    extra = [f"{key}={value}" for key, value in CHAT_TEMPLATE_KWARGS.items() if key not in given]
    return ",".join(filter(None, [model_args.strip().strip(","), *extra]))


def default_device(backend: str, device: str | None) -> str | None:
    """The device when ``--device`` is not given: lm-eval's choice, except for its hf backend on a
    machine without a CUDA GPU, where that choice ("cuda") fails to load the model ("Torch not
    compiled with CUDA enabled", "Found no NVIDIA driver"): there it is the CPU."""
    if device is not None or backend not in HF_BACKENDS:
        return device
    return None if _cuda_available() else "cpu"


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def check_adapter_args(backend: str, model_args: str) -> str:
    """Adapters the way each backend loads them, checked before anything loads (issue 29, H3).

    vLLM takes a LoRA adapter as ``lora_local_path=`` (its engine rejects ``peft=``, the hf
    backend's spelling) and only up to ``max_lora_rank`` (lm-eval's default 16): the rank is read
    from the adapter's ``adapter_config.json`` and added when not given, rounded up to a value
    vLLM accepts. Data parallelism in vLLM needs ray. Returns the model arguments to use."""
    from tide_bench.generation.manifest import parse_model_args

    parsed = parse_model_args(model_args)
    if backend != "vllm":
        if parsed.get("lora_local_path"):
            raise ConfigError(
                f"lora_local_path= is the vllm backend's adapter argument; the {backend} backend does not read it",
                hint="with --model hf pass the adapter as peft=ADAPTER",
            )
        return model_args
    if parsed.get("peft"):
        raise ConfigError(
            "the vllm backend loads a LoRA adapter with lora_local_path=ADAPTER, not peft= (the hf backend's argument)",
            hint="--model-args pretrained=BASE,lora_local_path=ADAPTER (max_lora_rank is read from the adapter), or "
            "evaluate merged weights (tide-bench merge-adapter)",
        )
    extra = []
    adapter = parsed.get("lora_local_path")
    if adapter and "max_lora_rank" not in parsed:
        rank = _adapter_rank(Path(adapter))
        if rank:
            extra.append(f"max_lora_rank={next((r for r in VLLM_LORA_RANKS if r >= rank), rank)}")
    if int(parsed.get("data_parallel_size") or 1) > 1:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ConfigError(
                "vLLM's data parallelism (data_parallel_size > 1) runs through ray, which is not installed",
                hint="pip install 'tide-bench[vllm]' (it includes ray), or run one process per GPU (tide-bench study "
                "does: --executor local)",
            )
    return ",".join(filter(None, [model_args.strip().strip(","), *extra]))


def _adapter_rank(folder: Path) -> int | None:
    from tide_bench.core.jsonio import read_json

    try:  # a folder someone else trained: the guarded reader (a regular file, 1 MB, any depth refused)
        rank = read_json(folder / "adapter_config.json", max_bytes=1_000_000).get("r")
    except (OSError, TideBenchError, AttributeError):
        return None
    return rank if isinstance(rank, int) and rank > 0 else None


def place_system_prompts(lm: Any) -> str:
    """Decide where this model's chat template can put the system prompt, and make lm-eval's
    rendering put it there (:mod:`tide_bench.tasks.placement`); returns the placement, which
    run.json records and the prompt hash covers."""
    render = getattr(lm, "apply_chat_template", None)
    if render is None:
        return SYSTEM
    placement = probe_placement(lambda messages: render(messages, add_generation_prompt=True))
    if placement == FIRST_USER_TURN:

        def folded(chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> Any:
            return render(place_system(chat_history, FIRST_USER_TURN), add_generation_prompt)

        lm.apply_chat_template = folded
    return placement


def parse_batch_size(value: str | int) -> str | int:
    """A batch size as lm-eval takes it: a positive integer, ``auto`` or ``auto:N`` (N tries)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str):
        text = value.strip()
        if text.isdigit() and int(text) >= 1:
            return int(text)
        head, _, tries = text.partition(":")
        if head == "auto" and (not tries or (tries.isdigit() and int(tries) >= 1)):
            return text
    raise ConfigError(
        f"batch size {value!r} is not a positive integer, 'auto' or 'auto:N'", field="batch_size", hint="e.g. 4 or auto"
    )


def check_eval_config(config: EvalConfig) -> None:
    """The settings checks that need nothing loaded: :func:`run_eval` makes them before anything
    else, and a study makes them when its file is read (so a typo fails before any cell runs)."""
    config.batch_size = parse_batch_size(config.batch_size)
    if config.max_batch_size is not None and config.max_batch_size < 1:
        raise ConfigError(f"max_batch_size must be at least 1, got {config.max_batch_size}", field="max_batch_size")
    if config.limit is not None and not config.limit > 0:
        raise ConfigError(
            f"limit must be positive (a count, or a share below 1), got {config.limit}",
            field="limit",
        )
    if isinstance(config.seed, tuple) and len(config.seed) != 4:
        raise ConfigError("seed is one integer or four values (python, numpy, torch, few-shot)", field="seed")
    if config.bootstrap_iters < 0:
        raise ConfigError(
            f"bootstrap_iters must not be negative, got {config.bootstrap_iters}", field="bootstrap_iters"
        )
    if not config.tasks:
        raise ConfigError("no task given", field="tasks", hint=f"e.g. {TASK}")
    _cache_requests(config.cache_requests)
    _hub_args(config)


def _prepare_output_dir(config: EvalConfig) -> Path:
    out = Path(config.output_dir)
    manifest = out / MANIFEST_NAME
    if manifest.exists() and not config.overwrite:
        raise ConfigError(
            f"{out} already holds a finished run ({MANIFEST_NAME})",
            hint="choose another --output-dir or pass --overwrite",
        )
    if out.exists() and config.overwrite:
        manifest.unlink(missing_ok=True)  # first, so a crash below never leaves an old manifest beside new files
        shutil.rmtree(out / LM_EVAL_SUBDIR, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _check_tasks(tasks: list[str], manager: Any) -> None:
    known = set(manager.all_tasks)
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise ConfigError(
            f"unknown task(s): {', '.join(unknown)}", hint=f"tide-bench tasks are: {', '.join(sorted(known))}"
        )


def create_model(config: EvalConfig) -> Any:
    """Instantiate the lm-eval backend, turning load failures into a clear error."""
    from lm_eval.api import registry

    if is_reference(config.model):
        from tide_bench.generation.reference_model import ReferenceLM

        return ReferenceLM()
    try:
        cls = registry.get_model(config.model)
    except Exception:
        raise ConfigError(
            f"unknown model backend {config.model!r}",
            hint="common backends: hf, vllm, local-chat-completions, openai-chat-completions, anthropic-chat",
        ) from None
    try:
        return cls.create_from_arg_string(
            config.model_args,
            {"batch_size": config.batch_size, "max_batch_size": config.max_batch_size, "device": config.device},
        )
    except TideBenchError:
        raise
    except ImportError as exc:  # lm-eval's API backends check for their packages (its [api] extra) here
        raise ConfigError(
            f"the {config.model} backend needs packages that are not installed here: {exc}",
            hint="they come with tide-bench's [eval] extra (which includes lm-eval's [api] packages): "
            "pip install 'tide-bench[eval]', or add them with pip install 'lm-eval[api]'",
        ) from None
    except Exception as exc:
        api = "pretrained=" not in config.model_args  # API backends name a served model (model=...), not weights
        no_gpu = re.search(r"CUDA|NVIDIA", str(exc)) and not _cuda_available()
        raise ConfigError(
            redact_model_args(
                f"model failed to load ({config.model} with {config.model_args!r}): {type(exc).__name__}: {exc}"
            ),
            hint=f"there is no CUDA GPU here: pass --device cpu (got --device {config.device})"
            if no_gpu
            else "check model= and base_url= in --model-args, that the server answers, and the API key variable"
            if api
            else "check the model path or hub id, --model-args, network access and available memory",
        ) from None


class _DropMetadataHint(logging.Filter):
    """lm-eval's hint that custom kwargs go in ``--metadata`` (once per task, every run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


@contextlib.contextmanager
def _quiet_lm_eval() -> Iterator[None]:
    logger, hint = logging.getLogger("lm_eval.api.task"), _DropMetadataHint()
    logger.addFilter(hint)
    try:
        yield
    finally:
        logger.removeFilter(hint)


def _cache_requests(value: str | None) -> dict[str, bool]:
    if value is None:
        return {}
    if value not in ("true", "refresh", "delete"):
        raise ConfigError(f"--cache-requests {value!r}: choose true, refresh or delete", field="cache_requests")
    return {
        "cache_requests": value in ("true", "refresh"),
        "rewrite_requests_cache": value == "refresh",
        "delete_requests_cache": value == "delete",
    }


def request_cache_folder(config: EvalConfig, provenance: dict[str, Any]) -> Path:
    """Where lm-eval's request cache (``--cache-requests``) goes for this run: a folder keyed by
    what the cached requests were built from. lm-eval names a cached file by task, shots, chat
    template and system-instruction hash only, not by the task's prompt or its documents, so a
    request cache made before the task YAMLs or the data changed would be served as if current
    (the run then records the new prompt hash over old prompts). The key covers the task files'
    contents, the data's split hash and source, and the limit; ``$LM_HARNESS_CACHE_PATH`` (lm-eval's
    own setting), when set, is the base folder instead of tide-bench's cache."""
    from tide_bench.core.hashing import sha256_file, sha256_json
    from tide_bench.core.paths import cache_dir
    from tide_bench.tasks.registry import tasks_path

    root = tasks_path()
    task_files = {str(f.relative_to(root)): sha256_file(f) for f in sorted(root.rglob("*")) if f.is_file()}
    key = sha256_json(
        {
            "tasks": sorted(config.tasks),
            "task_files": task_files,
            "data": [provenance.get("source"), provenance.get("split"), provenance.get("split_sha256")],
            "limit": config.limit,
        }
    )[:16]
    base = os.environ.get("LM_HARNESS_CACHE_PATH")
    return (Path(base).expanduser() if base else cache_dir() / "lm-eval-requests") / key


@contextlib.contextmanager
def _request_cache_at(folder: Path | None) -> Iterator[None]:
    """Point lm-eval's request cache at ``folder`` for one evaluation (its module-level path)."""
    if folder is None:
        yield
        return
    from lm_eval.caching import cache

    folder.mkdir(parents=True, exist_ok=True)
    before, cache.PATH = cache.PATH, str(folder)
    try:
        yield
    finally:
        cache.PATH = before


def _hub_args(config: EvalConfig) -> dict[str, Any]:
    """The user's ``--hf-hub-log-args``, checked before anything is written or loaded."""
    hub = dict(config.hf_hub_log_args or {})
    unknown = sorted(set(hub) - HUB_LOG_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown --hf-hub-log-args key(s): {', '.join(unknown)}",
            hint=f"known: {', '.join(sorted(HUB_LOG_KEYS))}",
            field="hf_hub_log_args",
        )
    if str(hub.get("push_samples_to_hub", "")).lower() == "true" and str(hub.get("public_repo", "")).lower() == "true":
        raise ConfigError(
            "push_samples_to_hub with public_repo would publish TIDE dialogue (gated, CC BY-NC 4.0) to a public "
            "repository",
            hint="push to a private repository (public_repo=False), or push results only",
            field="hf_hub_log_args",
        )
    return hub


def _tracker(hub: dict[str, Any], out: Path) -> Any:
    """lm-eval's ``EvaluationTracker``: our output folder, plus the Hub logging asked for."""
    from lm_eval.loggers import EvaluationTracker

    if hub and os.environ.get("HF_TOKEN"):
        hub = hub | {"token": os.environ["HF_TOKEN"]}  # from the environment only; never written anywhere
    return EvaluationTracker(output_path=str(out / LM_EVAL_SUBDIR), **hub)


def _wandb(config: EvalConfig) -> Any:
    """lm-eval's W&B logger when ``--wandb-args`` asks for it (checked before the model loads)."""
    if not config.wandb_args:
        return None
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise ConfigError("--wandb-args needs the wandb package", hint="pip install 'wandb>=0.13.6'")
    from lm_eval.loggers import WandbLogger

    return WandbLogger(config.wandb_args)


def run_eval(config: EvalConfig) -> Path:
    """Generate replies for the chosen TIDE split and write a complete run directory.

    Returns the path of ``run.json``.
    """
    started_at, t0 = utc_now(), time.perf_counter()
    dataset, manager = _checked_inputs(config)  # bad data or options fail before any model loads
    provenance = dataset.provenance(config.split)
    caching, hub, wandb = _cache_requests(config.cache_requests), _hub_args(config), _wandb(config)
    out = _prepare_output_dir(config)
    tracker = _tracker(hub, out)
    choices = choose_for_device(config, dataset)
    lm = create_model(config)
    placement = place_system_prompts(lm) if config.apply_chat_template and not is_reference(config.model) else SYSTEM
    public_args = redact_model_args(config.model_args)  # tokens in --model-args never reach a file
    t_model = time.perf_counter()
    with batch_progress(lm, _replies_expected(config, int(provenance["n_items"]))) as generated:
        results = _evaluate(config, lm, public_args, manager, tracker, caching, provenance)
    t_generated = time.perf_counter()
    if results is None:  # non-zero rank of a distributed run: rank 0 writes
        return out / MANIFEST_NAME
    _save_lm_eval_outputs(config, tracker, wandb, lm, public_args, results)
    files = _written_files(tracker, out, list(results["configs"]))
    generations = read_generations(out, files["samples"])  # read back: unreadable output is not a run
    manifest = build_manifest(
        config=asdict(config)
        | {
            "output_dir": str(out),
            "model_args": public_args,
            "hf_hub_log_args": sorted(config.hf_hub_log_args or {}),
            "system_prompt_placement": placement,
            "device_choices": choices,
        },
        results=results,
        files=files,
        provenance=provenance,
        reference_metrics=_reference_metrics(config, generations),
        n_generations=len(generations),
        started_at=started_at,
        finished_at=utc_now(),
        timings=_timings(t0, t_model, t_generated, generated),
        command=redact_command(sys.argv),
        environment=environment(),
    )
    write_manifest(out / MANIFEST_NAME, manifest)
    return out / MANIFEST_NAME


def _timings(t0: float, t_model: float, t_generated: float, generated: Any) -> dict[str, float | None]:
    """run.json's timings: the model load (checks, data and tasks included), the backend's own generate
    calls (hf: the sum of its batches; None where there is no per-batch call), lm-eval's whole
    evaluation (generation, then the reference metrics), and the run, files and manifest included."""
    return {
        "model_load_s": round(t_model - t0, 3),
        "generate_s": None if generated.seconds is None else round(generated.seconds, 3),
        "evaluate_s": round(t_generated - t_model, 3),
        "total_s": round(time.perf_counter() - t0, 3),
    }


def choose_for_device(config: EvalConfig, dataset: Any) -> dict[str, dict[str, Any]]:
    """Resolve ``--batch-size auto`` and the attention implementation from the device
    (:mod:`.device_choice`), before the model loads; returns what was chosen and why, for run.json."""
    from tide_bench.generation.device_choice import device_choices, longest_prompt_tokens
    from tide_bench.generation.manifest import parse_model_args
    from tide_bench.tasks.registry import system_prompt

    parsed = parse_model_args(config.model_args)
    new_tokens = int((config.gen_kwargs or {}).get("max_gen_toks") or DEFAULT_NEW_TOKENS)
    context = longest_prompt_tokens(dataset.items_for(config.split), system_prompt("guided"))
    chosen = device_choices(
        config.model, config.batch_size, config.max_batch_size, config.device, parsed, context, new_tokens
    )
    requested = config.batch_size
    config.batch_size = chosen["batch_size"].value
    if chosen["attention"].value:
        config.model_args = f"{config.model_args.strip().strip(',')},attn_implementation={chosen['attention'].value}"
    return {
        "batch_size": {"requested": requested, "chosen": config.batch_size, "reason": chosen["batch_size"].reason},
        "attention": {"chosen": chosen["attention"].value, "reason": chosen["attention"].reason},
    }


def _replies_expected(config: EvalConfig, n_items: int) -> int | None:
    """How many replies one task of this run generates (``--limit`` as a count or a share); None
    for several tasks, whose items lm-eval splits among them."""
    if len(config.tasks) != 1:
        return None
    if not config.limit:
        return n_items
    return min(int(config.limit), n_items) if config.limit >= 1 else math.ceil(n_items * config.limit)


def _checked_inputs(config: EvalConfig) -> tuple[Any, Any]:
    """Resolve and check the configuration, the data and the tasks (the dataset and lm-eval's
    task manager), so that a mistake is reported before a model is loaded."""
    check_eval_config(config)
    config.device = default_device(config.model, config.device)
    config.data = choose_spec(config.data)
    config.model_args = check_adapter_args(config.model, with_template_kwargs(config.model, config.model_args))
    dataset = load_dataset(config.data)
    manager = task_manager(config.metadata())
    _check_tasks(config.tasks, manager)
    for task in config.tasks:
        turn = turn_of_task(task)
        if turn is not None:
            check_turn_available(dataset, config.split, turn)
    return dataset, manager


def _evaluate(
    config: EvalConfig,
    lm: Any,
    public_args: str,
    manager: Any,
    tracker: Any,
    caching: dict[str, Any],
    provenance: dict[str, Any],
) -> dict[str, Any] | None:
    """lm-eval's ``simple_evaluate`` with this run's options (None on a non-zero rank)."""
    from lm_eval import simple_evaluate

    seeds = config.seeds()
    requests_at = request_cache_folder(config, provenance) if config.cache_requests else None
    with _quiet_lm_eval(), _request_cache_at(requests_at):
        results: dict[str, Any] | None = simple_evaluate(
            model=lm,
            model_args=public_args,
            tasks=list(config.tasks),
            task_manager=manager,
            limit=config.limit,
            log_samples=True,
            evaluation_tracker=tracker,
            system_instruction=config.system_instruction,
            apply_chat_template=config.apply_chat_template,
            gen_kwargs=dict(config.gen_kwargs) if config.gen_kwargs else None,
            use_cache=config.use_cache,
            **caching,
            random_seed=seeds[0],
            numpy_random_seed=seeds[1],
            torch_random_seed=seeds[2],
            fewshot_random_seed=seeds[3],
            bootstrap_iters=config.bootstrap_iters,
            batch_size=config.batch_size,
            device=config.device,
        )
    return results


def _save_lm_eval_outputs(
    config: EvalConfig, tracker: Any, wandb: Any, lm: Any, public_args: str, results: dict[str, Any]
) -> None:
    """Write lm-eval's own results and samples files (and W&B's, when asked), as its CLI would."""
    # simple_evaluate saw a model object; record the backend name and args as the CLI would.
    tracker.general_config_tracker.log_experiment_args(
        model_source=config.model,
        model_args=public_args,
        system_instruction=config.system_instruction,
        chat_template=lm.chat_template(config.apply_chat_template) if config.apply_chat_template else None,
        fewshot_as_multiturn=True,
    )
    _name_output_folder(tracker, public_args)
    results["config"]["model"] = config.model
    results["config"]["model_args"] = public_args
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"]:
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    if wandb is not None:
        wandb.post_init(results)
        wandb.log_eval_result()
        wandb.log_eval_samples(samples)


def _reference_metrics(config: EvalConfig, generations: list[Any]) -> dict[str, Any]:
    """run.json's reference-metric summary of the replies (not applicable to the reference model)."""
    scorer = ReferenceScorer(config.embedding_model, device=config.embedding_device())
    scorer.load_embedder()  # already loaded by the task in this process; records why cosine is missing, if it is
    reference = summarize_metrics(
        {
            **g.metrics,
            "turn": g.turn,
            "scenario": g.scenario,
            "item_id": g.item_id,
            "persona_id": g.persona_id,
            "reply": g.reply,
        }
        for g in generations
    ) | {"method": scorer.describe()}
    if is_reference(config.model):
        return {"not_applicable": NOT_APPLICABLE}
    return reference


def _name_output_folder(tracker: Any, model_args: str) -> None:
    """lm-eval names its output folder after ``pretrained=``, a local model's absolute path included
    (``lm_eval/__home__me__.cache__...``): name it, and the results file's model, by the model's name."""
    from lm_eval.utils import sanitize_model_name

    general = tracker.general_config_tracker
    name = model_display_name(general.model_name)
    if name and name != general.model_name:
        general.model_name, general.model_name_sanitized = name, sanitize_model_name(name)


def _written_files(tracker: Any, out: Path, task_names: list[str]) -> dict[str, Any]:
    """Paths (relative to ``out``) of the files lm-eval's tracker just wrote."""
    folder = out / LM_EVAL_SUBDIR / str(tracker.general_config_tracker.model_name_sanitized)
    date_id = tracker.date_id
    results_file = folder / f"results_{date_id}.json"
    samples = {t: folder / f"samples_{t}_{date_id}.jsonl" for t in task_names}
    for path in [results_file, *samples.values()]:
        if not path.is_file():
            raise TideBenchError(f"lm-eval did not write the expected file {path}")
    return {
        "results": str(results_file.relative_to(out)),
        "samples": {t: str(p.relative_to(out)) for t, p in samples.items()},
    }
