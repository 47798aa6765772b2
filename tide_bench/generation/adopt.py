"""``tide-bench import``: adopt a plain ``lm_eval --tasks tide_empathy`` run as a tide-bench run.

A run made with lm-eval's own CLI has lm-eval's ``results_*.json`` and ``samples_*.jsonl``
but no ``run.json``, so judge, annotate and submit would refuse it. This module writes the
run directory they read: lm-eval's files copied under ``RUN/lm_eval/<model>/`` and a
``run.json`` whose every field is re-derived from those files, never guessed:

* the data block comes from the docs in the samples (source label, split, split hash); when
  the source can be read here (``--data``, or the label names the sample or an existing
  folder) every doc is checked against it item by item and the split hash is recomputed;
  otherwise the claims are kept and marked unverified;
* model and generation settings come from lm-eval's ``config`` block;
* what lm-eval does not record (the command line, this machine's package versions at the
  time) is ``null`` and listed in ``import.unknown``;
* per-item reference metrics missing from the samples (``--predict_only``) are computed here
  and added to the copied samples records (listed in ``import.added_metrics``).

Refused with the file and the reason: results of another task, a results file without its
samples (run without ``--log_samples``), samples of fewer items than the results report (an
interrupted run), docs that are not TIDE items or that differ from the data they name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from tide_bench.core.atomic_dir import staged_folder
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import iter_jsonl, parse_json, read_bytes, write_json, write_jsonl
from tide_bench.core.provenance import utc_now
from tide_bench.core.records import Count, Int, Number, Record, Str, line_locator, load, refusal
from tide_bench.core.secrets import redact_args_dict, redact_model_args, redact_record
from tide_bench.data.schema import TideItem
from tide_bench.data.sources import LoadedDataset, load_dataset
from tide_bench.generation.manifest import MANIFEST_NAME, build_manifest, write_manifest
from tide_bench.generation.run_dir import TASK_PREFIX, Generation, iter_samples_file
from tide_bench.generation.samples import TASK_PATTERN
from tide_bench.metrics.reference import ReferenceScorer, summarize_metrics
from tide_bench.metrics.table import reference_metric_names

LM_EVAL_SUBDIR = "lm_eval"
_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
_SAMPLE_LABEL = "sample (synthetic, not TIDE)"


@dataclass(frozen=True)
class LmEvalOutput:
    """One lm-eval results file with the samples files of its tide-bench tasks."""

    results_path: Path
    results: dict[str, Any]
    samples: dict[str, Path]


def find_output(source: str | Path) -> LmEvalOutput:
    """Locate the results file and its samples under ``source`` (a results file, lm-eval's
    ``--output_path`` folder, or the per-model folder inside it)."""
    source = Path(source)
    if source.is_file():
        candidates = [source]
    elif source.is_dir():
        candidates = sorted(p for pattern in ("results_*.json", "*/results_*.json") for p in source.glob(pattern))
    else:
        raise DataError("no such file or folder", path=source)
    candidates = [p for p in candidates if _RESULTS.match(p.name)]
    if not candidates:
        raise DataError(
            "no lm-eval results_*.json here: not an lm-eval output folder, or the run did not finish",
            path=source,
            hint="pass lm-eval's --output_path folder (or the results file) of a finished run",
        )
    if len(candidates) > 1:
        listed = ", ".join(str(p.relative_to(source) if p.is_relative_to(source) else p) for p in candidates)
        raise ConfigError(
            f"{len(candidates)} lm-eval runs in {source}: {listed}", hint="pass the results file of the run to import"
        )
    results_path = candidates[0]
    raw = read_bytes(results_path, DataError, max_bytes=MAX_RESULTS_BYTES)
    results = parse_json(raw, results_path, DataError)
    check_results(results, results_path, raw.decode("utf-8", errors="replace"))
    tasks = sorted(results["configs"])
    ours = [t for t in tasks if t.startswith(TASK_PREFIX)]
    if not ours:
        raise DataError(
            f"results of task(s) {', '.join(tasks) or 'none'}, not of tide-bench's tasks ({TASK_PATTERN})",
            path=results_path,
            field="configs",
        )
    if len(ours) != len(tasks):
        raise DataError(
            f"this run mixes other tasks ({', '.join(sorted(set(tasks) - set(ours)))}) with tide-bench's",
            path=results_path,
            hint="run tide_empathy on its own, then import it",
        )
    date = _RESULTS.match(results_path.name).group("date")  # type: ignore[union-attr]  # filtered above
    samples: dict[str, Path] = {}
    for task in ours:
        path = results_path.parent / f"samples_{task}_{date}.jsonl"
        if not path.is_file():
            raise DataError(
                f"no samples file for task {task} ({path.name}): the replies are not in the results file",
                path=results_path,
                hint="run lm_eval with --log_samples",
            )
        samples[task] = path
    return LmEvalOutput(results_path, results, samples)


MAX_RESULTS_BYTES = 200_000_000


def _text_or_object(value: Any) -> Any:
    if not isinstance(value, str | dict | type(None)):
        raise refusal("must be a string, an object or null")
    return value


def _scalar(value: Any) -> Any:
    if not isinstance(value, str | int | float | bool | type(None)):
        raise refusal("must be a string, a number or null")
    return value


TextOrObject = Annotated[Any, BeforeValidator(_text_or_object)]
ScalarOrNull = Annotated[Any, BeforeValidator(_scalar)]


class TaskConfig(Record):
    description: Str | None = None
    metadata: dict[str, Any] | None = None
    generation_kwargs: dict[str, Any] | None = None


class ResultsConfig(Record):
    model: Str | None = None
    model_revision: Str | None = None
    model_sha: Str | None = None
    model_dtype: Str | None = None
    device: Str | None = None
    model_name: Str | None = None
    model_num_parameters: Int | None = None
    limit: Number | None = None
    random_seed: Int | None = None
    model_args: TextOrObject = None
    gen_kwargs: TextOrObject = None
    batch_size: ScalarOrNull = None


class SampleCount(Record):
    effective: Count | None = None


class LmEvalResults(Record):
    """What ``tide-bench import`` reads of an lm-eval results file, by type: a field of another
    type is refused as ``results_x.json:LINE, field 'config.model_args': ...``."""

    configs: dict[str, TaskConfig]
    config: ResultsConfig | None = None
    n_samples: dict[str, SampleCount] | None = Field(default=None, alias="n-samples")
    chat_template: Str | None = None
    chat_template_sha: Str | None = None
    system_instruction: Str | None = None
    lm_eval_version: Str | None = None
    transformers_version: Str | None = None
    model_source: Str | None = None
    pretty_env_info: Str | None = None
    date: Number | None = None
    total_evaluation_time_seconds: ScalarOrNull = None

    @field_validator("configs")
    @classmethod
    def _some(cls, configs: dict[str, TaskConfig]) -> dict[str, TaskConfig]:
        if not configs:
            raise refusal("holds no task: not an lm-eval results file")
        return configs


def check_results(results: Any, path: Path, text: str = "") -> None:
    """Check every field of an lm-eval results file that import reads (:class:`LmEvalResults`)."""
    load(LmEvalResults, results, path=path, locate=line_locator(text) if text else None)


def _check_arguments(output: LmEvalOutput) -> None:
    """Every samples line records what the model was sent, as lm-eval does (``arguments``: an
    object of ``gen_args_N`` or, in older versions, a list): without it the import would record
    an empty prompt, which the board's prompt check cannot read (R3S-8)."""
    for path in output.samples.values():
        for line, sample in iter_jsonl(path, DataError, allow_nan=True):
            arguments = sample.get("arguments") if isinstance(sample, dict) else None
            if not isinstance(arguments, dict | list) or not arguments:
                raise DataError(
                    "holds no lm-eval 'arguments' object (what the model was sent)",
                    path=path,
                    line=line,
                    field="arguments",
                    hint="import the samples lm_eval wrote with --log_samples, unedited",
                )


def _read_generations(output: LmEvalOutput) -> list[Generation]:
    generations: list[Generation] = []
    seen: dict[str, str] = {}
    for task, path in sorted(output.samples.items()):
        these = list(iter_samples_file(path, task))
        expected = ((output.results.get("n-samples") or {}).get(task) or {}).get("effective")
        if isinstance(expected, int) and len(these) != expected:
            raise DataError(
                f"{len(these)} samples, but the results file reports {expected} for {task}: an interrupted or edited "
                "run",
                path=path,
            )
        for gen in these:
            if gen.item_id in seen:
                raise DataError(f"item {gen.item_id} appears twice (also in {seen[gen.item_id]})", path=path)
            seen[gen.item_id] = path.name
            generations.append(gen)
    if not generations:
        raise DataError("the samples files hold no generations", path=output.results_path.parent)
    return generations


def _claimed(generations: list[Generation], output: LmEvalOutput) -> tuple[str, str, str]:
    """The (source label, split, split hash) every doc claims; they must all agree."""
    docs = {}
    for path in output.samples.values():
        for line, sample in iter_jsonl(path, DataError, allow_nan=True):
            doc = sample["doc"]
            key = (str(doc.get("tide_source") or ""), str(doc.get("split") or ""), str(doc.get("split_sha256") or ""))
            docs.setdefault(key, (path, line))
    if len(docs) != 1:
        (first, where), (second, other) = list(docs.items())[:2]
        raise DataError(
            f"the docs name different data: {first} and {second} (line {other[1]})", path=where[0], line=where[1]
        )
    source, split, split_sha = next(iter(docs))
    if not source or not split:
        raise DataError(
            "the docs carry no tide_source/split: not samples of a tide-bench task",
            path=next(iter(output.samples.values())),
        )
    return source, split, split_sha


def _data_spec(label: str, explicit: str | None) -> str | None:
    """Where the data the docs name can be read here, if anywhere (never downloads)."""
    if explicit:
        return explicit
    if label == _SAMPLE_LABEL:
        return "sample"
    if label.startswith("local:") and Path(label[6:]).is_dir():
        return label[6:]
    return None


def _verify_docs(generations: list[Generation], dataset: LoadedDataset, split: str, path: Path) -> None:
    items: dict[str, TideItem] = {i.item_id: i for i in dataset.items_for(split)}
    for gen in generations:
        item = items.get(gen.item_id)
        if item is None:
            raise DataError(f"item {gen.item_id} is not in split {split!r} of {dataset.source.label}", path=path)
        same = (item.client_utterance, item.reference_reply, item.history) == (
            gen.client_utterance,
            gen.reference_reply,
            gen.history,
        )
        if not same:
            raise DataError(
                f"item {gen.item_id} differs from {dataset.source.label}: the doc's texts were changed", path=path
            )


def _provenance(generations: list[Generation], output: LmEvalOutput, data: str | None) -> dict[str, Any]:
    label, split, split_sha = _claimed(generations, output)
    spec = _data_spec(label, data)
    if spec is None:
        return {
            "source": label,
            "source_kind": label.split(":", 1)[0] if ":" in label else "unknown",
            "is_synthetic_sample": label == _SAMPLE_LABEL,
            "split": split,
            "split_version": None,
            "n_items": None,
            "split_sha256": split_sha or None,
            "dataset_sha256": None,
            "verified": False,
            "note": "the data named by the docs is not readable here: pass --data to check every item against it",
        }
    dataset = load_dataset(spec)
    provenance = dataset.provenance(split)
    path = next(iter(output.samples.values()))
    if split_sha and provenance["split_sha256"] != split_sha:
        raise DataError(
            f"the docs name split hash {split_sha[:12]}..., but split {split!r} of {dataset.source.label} "
            f"hashes to {provenance['split_sha256'][:12]}...: other data, or a changed snapshot",
            path=path,
        )
    _verify_docs(generations, dataset, split, path)
    return provenance | {"verified": True}


def _model_args(config: dict[str, Any]) -> str:
    args = config.get("model_args")
    if isinstance(args, dict):
        return ",".join(f"{k}={v}" for k, v in args.items())
    return redact_model_args(str(args or ""))


def _public_results(results: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's results with credentials masked: model args (``token=hf_...``) are recorded in
    ``config`` and, through the task metadata, in every task's config."""
    public = json.loads(json.dumps(results, default=str))
    config = public.get("config")
    if isinstance(config, dict) and isinstance(config.get("model_args"), dict):
        config["model_args"] = redact_args_dict(config["model_args"])
    for task in (public.get("configs") or {}).values():
        if isinstance(task, dict) and isinstance(task.get("metadata"), dict):
            task["metadata"] = redact_args_dict(task["metadata"])
    return redact_record(public)


def _started_at(results: dict[str, Any]) -> str | None:
    date = results.get("date")
    if not isinstance(date, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(date), UTC).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):  # a date no calendar holds: not recorded
        return None


def _with_metrics(
    output: LmEvalOutput, generations: list[Generation], embedding_model: str | None
) -> tuple[dict[str, list[dict]], list[str]]:
    """Samples records per task, with reference metrics computed where lm-eval skipped them."""
    records = {
        task: [s for _, s in iter_jsonl(path, DataError, allow_nan=True)] for task, path in output.samples.items()
    }
    missing = sorted(
        {
            m
            for rows in records.values()
            for row in rows
            for m in reference_metric_names()
            if not isinstance(row.get(m), int | float)
        }
    )
    if missing:
        scorer = ReferenceScorer(embedding_model)
        by_id = {g.item_id: g for g in generations}
        for rows in records.values():
            values = scorer.score(
                [by_id[str(r["doc"]["item_id"])].reply for r in rows], [r["doc"]["reference_reply"] for r in rows]
            )
            for row, metrics in zip(rows, values, strict=True):
                row.update({m: metrics[m] for m in missing})
    return records, missing


def import_lm_eval_run(
    source: str | Path,
    out: str | Path,
    *,
    data: str | None = None,
    embedding_model: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Turn lm-eval's output of a ``tide_empathy`` run into a run directory; returns ``run.json``."""
    output = find_output(source)
    generations = _read_generations(output)
    _check_arguments(output)
    provenance = _provenance(generations, output, data)
    out = Path(out)
    if (out / MANIFEST_NAME).exists() and not overwrite:
        raise ConfigError(
            f"{out} already holds a finished run ({MANIFEST_NAME})", hint="choose another --out or pass --overwrite"
        )
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is not a folder", hint="choose a new or empty folder for --out")
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST_NAME).exists():
        raise ConfigError(f"{out} is not empty and holds no run", hint="choose an empty or new folder")
    others = (
        sorted(p.name for p in out.iterdir() if p.name not in (MANIFEST_NAME, LM_EVAL_SUBDIR)) if out.exists() else []
    )
    if others:
        raise ConfigError(
            f"{out} holds more than an imported run ({', '.join(others[:5])}): --overwrite replaces the whole folder",
            hint="move those out first (judgments of the old replies do not apply to the new ones), or choose "
            "another --out",
        )
    records, added = _with_metrics(output, generations, embedding_model)
    results = _public_results(output.results)
    with staged_folder(out, prefix=f".{out.name}.import-") as staging:
        _write_run(staging, output, generations, provenance, records, added, results, embedding_model)
    return out / MANIFEST_NAME


def _write_run(
    out: Path,
    output: LmEvalOutput,
    generations: list[Generation],
    provenance: dict[str, Any],
    records: dict[str, list[dict]],
    added: list[str],
    results: dict[str, Any],
    embedding_model: str | None,
) -> None:
    """Write the run directory into ``out`` (a fresh staging folder)."""
    config = results.get("config") or {}
    folder = out / LM_EVAL_SUBDIR / output.results_path.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / output.results_path.name, results)
    files = {"results": str((folder / output.results_path.name).relative_to(out)), "samples": {}}
    for task, path in output.samples.items():
        write_jsonl(folder / path.name, records[task])
        files["samples"][task] = str((folder / path.name).relative_to(out))
    scorer = ReferenceScorer(embedding_model)
    per_item = {
        str(r["doc"]["item_id"]): {
            m: float(r[m]) for m in reference_metric_names() if isinstance(r.get(m), int | float)
        }
        for rows in records.values()
        for r in rows
    }
    reference = summarize_metrics({**per_item[g.item_id], "turn": g.turn, "scenario": g.scenario} for g in generations)
    unknown = [
        "command",
        "environment.python",
        "environment.platform",
        "environment.packages (except lm_eval, transformers)",
    ]
    environment = {
        "python": None,
        "platform": None,
        "machine": None,
        "packages": {"lm_eval": results.get("lm_eval_version"), "transformers": results.get("transformers_version")},
        "pretty_env_info": results.get("pretty_env_info"),
    }
    eval_config = {
        "model": str(config.get("model") or results.get("model_source") or "unknown"),
        "model_args": _model_args(config),
        "tasks": sorted(output.samples),
        "apply_chat_template": results.get("chat_template") is not None,
        "system_instruction": results.get("system_instruction"),
        "gen_kwargs": config.get("gen_kwargs"),
        "limit": config.get("limit"),
        "batch_size": config.get("batch_size"),
        "device": config.get("device"),
        "seed": config.get("random_seed"),
    }
    started = _started_at(results)
    manifest = build_manifest(
        config=eval_config,
        results=results,
        files=files,
        provenance=provenance,
        reference_metrics=reference
        | {
            "method": scorer.describe()
            if added
            else {"computed_by": "the lm-eval run (tide-bench's task code), per item in the samples; summarised here"}
        },
        n_generations=len(generations),
        started_at=started or "unknown",
        finished_at="unknown",
        timings={"total_s": _float(results.get("total_evaluation_time_seconds"))},
        command=None,
        environment=environment,
    )
    manifest["import"] = {
        "from": "lm-eval output",
        "results_file": output.results_path.name,
        "samples_files": sorted(p.name for p in output.samples.values()),
        "imported_at": utc_now(),
        "added_metrics": added,
        "unknown": unknown,
        "chat_template_sha": results.get("chat_template_sha"),
    }
    write_manifest(out / MANIFEST_NAME, manifest)


def _float(value: Any) -> float | None:
    try:
        return round(float(value), 3)
    except (TypeError, ValueError):
        return None


def describe(manifest_path: Path) -> str:
    """One line for the terminal: what was imported and whether the data was verified."""
    m = json.loads(manifest_path.read_text(encoding="utf-8"))
    verified = "verified against the data" if m["data"].get("verified") else "NOT verified (pass --data to check)"
    condition = (m.get("prompt") or {}).get("condition") or "unknown (the task's metadata names none)"
    return (
        f"imported {m['n_generations']} replies of {m['model']['name']} on {m['data']['source']} "
        f"({m['data']['split']}): {verified}; prompt condition: {condition}"
    )
