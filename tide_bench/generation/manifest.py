"""``run.json``: the manifest that says what produced a run directory.

Schema (``schema_version`` 1), documented in ``docs/run-directory.md``:

``kind``                 ``"tide-bench-run"``
``created_at``/``finished_at``  UTC timestamps
``tide_bench_version``, ``lm_eval_version``, ``environment`` (python, platform, packages)
``data``                 source label, kind, synthetic flag, split, split version, n_items,
                         ``split_sha256`` and ``dataset_sha256``
``prompt``               task version, ``prompt_sha256``, format version, system prompt text
                         and ``system_prompt_placement`` (system | first_user_turn | dropped)
``model``                backend, args string, parsed args, name, revision, sha, parameter
                         count, dtype, adapter (``peft=``, ``lora_local_path=`` or merged
                         weights: path, sha256, how it was loaded, its card)
``generation``           chat template on/off, generation kwargs per task, limit, batch
                         size, device, seed
``files``                relative paths of lm-eval's results file and per-task samples files
``n_generations``        number of samples written
``reference_metrics``    per-metric mean / 95 % bootstrap CI / n, overall, by turn and scenario
``timings``, ``command``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.secrets import redact_record
from tide_bench.generation import reference
from tide_bench.generation.run_dir import MANIFEST_NAME, model_display_name
from tide_bench.tasks.prompts import PROMPT_FORMAT_VERSION, prompt_sha256

__all__ = ["MANIFEST_NAME", "build_manifest", "parse_model_args", "write_manifest"]

SCHEMA_VERSION = 1
ADAPTER_CARD = "adapter_card.json"


def parse_model_args(args: str) -> dict[str, str]:
    """``"a=1,b=x"`` -> ``{"a": "1", "b": "x"}`` (lm-eval's format; values kept as strings)."""
    parsed: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in args.split(","))):
        key, _, value = part.partition("=")
        parsed[key.strip()] = value.strip()
    return parsed


MERGE_CARD = "merge_card.json"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")
# How a backend is given a LoRA adapter: the hf backend's peft=, vLLM's lora_local_path=.
ADAPTER_ARGS = ("peft", "lora_local_path")


def base_parameters(count: Any, adapter: dict[str, Any] | None) -> Any:
    """The model's size as a board compares sizes: lm-eval counts a peft-loaded LoRA's weights into
    the model (136M for a 135M base), so the adapter card's trainable parameters are taken out; a
    merged adapter adds no weights and is left as counted."""
    card = (adapter or {}).get("card")
    parameters = card.get("parameters") if isinstance(card, dict) else None
    trainable = parameters.get("trainable") if isinstance(parameters, dict) else None
    added = (adapter or {}).get("loaded_via") in ("peft", "lora_local_path")
    if added and type(count) is int and type(trainable) is int and 0 < trainable < count:
        return count - trainable
    return count


def adapter_sha256(folder: str | Path) -> str | None:
    """The adapter's identity: sha256 over its config and weight files (names and bytes), or None
    when the folder holds none of them (e.g. a hub id, which the card then names)."""
    import hashlib

    folder = Path(folder)
    digest, found = hashlib.sha256(), False
    for name in ADAPTER_FILES:
        path = folder / name
        if not path.is_file():
            continue
        found = True
        digest.update(name.encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest() if found else None


def adapter_block(parsed: dict[str, str]) -> dict[str, Any] | None:
    """What run.json's ``model.adapter`` records, the same for every way an adapter is loaded:
    ``peft=`` (hf), ``lora_local_path=`` (vLLM), or weights merged by ``tide-bench merge-adapter``
    (the ``pretrained`` folder's merge_card.json). Path (resolved), sha256 of the adapter files,
    how it was loaded, and its adapter card."""
    for arg in ADAPTER_ARGS:
        path = parsed.get(arg)
        if path:
            card_path = Path(path) / ADAPTER_CARD
            return {
                "path": str(Path(path).resolve()) if Path(path).exists() else path,
                "sha256": adapter_sha256(path),
                "loaded_via": arg,
                "card": read_json(card_path) if card_path.is_file() else None,
            }
    merged = Path(parsed.get("pretrained") or "") / MERGE_CARD
    if parsed.get("pretrained") and merged.is_file():
        card = read_json(merged)
        return {
            "path": card.get("adapter"),
            "sha256": card.get("adapter_sha256"),
            "loaded_via": "merged",
            "merged_model": str(Path(parsed["pretrained"]).resolve()),
            "card": card.get("adapter_card"),
        }
    return None


def _prompt_block(results: dict[str, Any], config: dict[str, Any], is_reference: bool) -> dict[str, Any]:
    """What the model was told, hashed whole: the task's system prompt, any extra instruction,
    and where the system prompt went (:mod:`tide_bench.tasks.placement`). Several tasks of one
    run must share one prompt, or the run has no condition."""
    configs = results.get("configs", {})
    first = next(iter(configs.values()), {})
    metadata = first.get("metadata") if isinstance(first.get("metadata"), dict) else {}
    # A task whose metadata names no condition (or not as a text) gives null, "unknown", never
    # the string "None" (R3S-8).
    conditions = {
        value if isinstance(value := c["metadata"].get("prompt_condition"), str) and value else None
        for c in configs.values()
        if isinstance(c.get("metadata"), dict)
    }
    instruction = config.get("system_instruction")
    placement = str(config.get("system_prompt_placement") or "system")
    return {
        "condition": "reference" if is_reference else (conditions.pop() if len(conditions) == 1 else "mixed"),
        "task_version": metadata.get("version"),
        "prompt_sha256": prompt_sha256(first.get("description"), instruction, placement=placement),
        "system_prompt_placement": placement,
        "task_prompt_sha256": metadata.get("prompt_sha256"),
        "format_version": PROMPT_FORMAT_VERSION,
        "system_prompt": first.get("description"),
        "system_instruction": instruction,
    }


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write ``run.json``: the one way a run manifest reaches disk, credentials masked
    (:func:`tide_bench.core.secrets.redact_record`: string model arguments, URLs, tokens)."""
    write_json(path, redact_record(manifest))


def build_manifest(
    *,
    config: dict[str, Any],
    results: dict[str, Any],
    files: dict[str, Any],
    provenance: dict[str, Any],
    reference_metrics: dict[str, Any],
    n_generations: int,
    started_at: str,
    finished_at: str,
    timings: dict[str, float],
    command: list[str] | None,
    environment: dict[str, Any],
) -> dict[str, Any]:
    parsed = parse_model_args(config["model_args"])
    is_reference = reference.is_reference(config["model"])
    lm_config = results.get("config") or {}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "tide-bench-run",
        "created_at": started_at,
        "finished_at": finished_at,
        "tide_bench_version": environment["packages"].get("tide-bench"),
        "lm_eval_version": environment["packages"].get("lm_eval"),
        "environment": environment,
        "data": provenance,
        "tasks": config["tasks"],
        "subtasks": sorted(results.get("configs", {})),
        "prompt": _prompt_block(results, config, is_reference),
        "model": {
            "backend": config["model"],
            "args": config["model_args"],
            "parsed_args": parsed,
            "name": reference.reference_label(provenance.get("source"), is_sample=provenance.get("is_synthetic_sample"))
            if is_reference
            else model_display_name(parsed.get("pretrained") or parsed.get("model") or lm_config.get("model_name")),
            "is_reference": is_reference,
            "revision": parsed.get("revision") or lm_config.get("model_revision"),
            "sha": lm_config.get("model_sha"),
            "num_parameters": base_parameters(lm_config.get("model_num_parameters"), adapter_block(parsed)),
            "dtype": lm_config.get("model_dtype"),
            "adapter": adapter_block(parsed),
        },
        "generation": {
            "apply_chat_template": config["apply_chat_template"],
            "gen_kwargs": {name: cfg.get("generation_kwargs") for name, cfg in results.get("configs", {}).items()},
            "gen_kwargs_override": config.get("gen_kwargs"),
            "limit": config.get("limit"),
            "batch_size": config.get("batch_size"),
            "device_choices": config.get("device_choices"),  # batch size and attention: chosen how and why
            "device": config.get("device"),
            "seed": config.get("seed"),
            "sample": config.get("sample"),  # one of `eval --samples k`'s runs: its index, k and seeds
            "response_cache_used": bool(config.get("use_cache")),
            "cache_requests": config.get("cache_requests"),
        },
        "files": files,
        "n_generations": n_generations,
        "reference_metrics": reference_metrics,
        "timings": timings,
        "command": command,
    }
