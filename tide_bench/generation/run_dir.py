"""Read a run directory back: the manifest plus one :class:`Generation` per sample.

Every later stage (judge, leaderboard, annotation) reads runs through here, so a bad
samples file is reported the same way everywhere: file, line and what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl, read_json
from tide_bench.metrics.reference import METRIC_NAMES

MANIFEST_NAME = "run.json"
TASK_PREFIX = "tide_empathy"


@dataclass(frozen=True)
class Generation:
    """One generated reply with the TIDE item it answers and its reference metrics."""

    item_id: str
    task: str
    persona_id: str
    conversation_id: str
    turn: int
    scenario: str
    split: str
    history: list[dict[str, str]]
    client_utterance: str
    reference_reply: str
    reply: str
    prompt: str
    persona: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    split_sha256: str = ""


def _reply(sample: dict[str, Any]) -> Any:
    filtered = sample.get("filtered_resps")
    if isinstance(filtered, list) and filtered:
        value = filtered[0]
        return value[0] if isinstance(value, list) and value else value
    resps = sample.get("resps")
    if isinstance(resps, list) and resps and isinstance(resps[0], list) and resps[0]:
        return resps[0][0]
    return None


def _prompt(sample: dict[str, Any]) -> str:
    args = sample.get("arguments")
    if isinstance(args, dict):
        first = next(iter(args.values()), {})
        return str(first.get("arg_0", "")) if isinstance(first, dict) else ""
    if isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
        return str(args[0][0])
    return ""


def iter_samples_file(path: Path, task: str) -> Iterator[Generation]:
    """Parse one lm-eval samples file of a tide-bench task."""
    if not task.startswith(TASK_PREFIX):
        raise DataError(f"samples of task {task!r}, not a tide-bench task ({TASK_PREFIX}*)", path=path)
    for line, sample in iter_jsonl(path, DataError):
        doc = sample.get("doc") if isinstance(sample, dict) else None
        if not isinstance(doc, dict):
            raise DataError("sample has no 'doc' object", path=path, line=line, field="doc")
        for key in ("item_id", "client_utterance", "reference_reply", "turn"):
            if key not in doc:
                raise DataError(f"doc lacks {key!r}: is this a samples file of another task?", path=path, line=line, field=f"doc.{key}")
        reply = _reply(sample)
        if not isinstance(reply, str):
            raise DataError("sample has no generated reply (filtered_resps / resps)", path=path, line=line, field="filtered_resps")
        try:
            persona = json.loads(doc.get("persona_json") or "{}")
        except json.JSONDecodeError:
            raise DataError("doc.persona_json is not valid JSON", path=path, line=line, field="doc.persona_json") from None
        yield Generation(
            item_id=str(doc["item_id"]),
            task=task,
            persona_id=str(doc.get("persona_id", "")),
            conversation_id=str(doc.get("conversation_id", "")),
            turn=int(doc["turn"]),
            scenario=str(doc.get("scenario") or ""),
            split=str(doc.get("split", "")),
            history=list(doc.get("history") or []),
            client_utterance=str(doc["client_utterance"]),
            reference_reply=str(doc["reference_reply"]),
            reply=reply,
            prompt=_prompt(sample),
            persona=persona,
            metrics={m: float(sample[m]) for m in METRIC_NAMES if isinstance(sample.get(m), int | float)},
            split_sha256=str(doc.get("split_sha256") or ""),
        )


def read_generations(root: Path, samples: dict[str, str]) -> list[Generation]:
    """All generations of the samples files listed in a manifest, checked for duplicates."""
    generations: list[Generation] = []
    seen: dict[str, str] = {}
    for task, rel in sorted(samples.items()):
        path = root / rel
        for gen in iter_samples_file(path, task):
            if gen.item_id in seen:
                raise DataError(f"item {gen.item_id} appears twice (also in {seen[gen.item_id]})", path=path)
            seen[gen.item_id] = rel
            generations.append(gen)
    return generations


@dataclass
class RunDirectory:
    root: Path
    manifest: dict[str, Any]
    generations: list[Generation]

    @property
    def model_name(self) -> str:
        return str(self.manifest.get("model", {}).get("name") or self.root.name)


def load_run(root: str | Path) -> RunDirectory:
    """Load and check a run directory written by ``tide-bench eval``."""
    root = Path(root)
    if root.is_file():
        raise DataError(f"{root} is a file, not a run directory", hint=f"pass the folder that holds it: {root.parent}")
    if not root.is_dir():
        raise DataError(f"run directory does not exist: {root}")
    manifest_path = root / MANIFEST_NAME
    if not manifest_path.is_file():
        raise DataError(
            f"no {MANIFEST_NAME} in {root}: not a finished tide-bench run",
            hint="run `tide-bench eval ... --output-dir DIR` to completion first (an interrupted run has no run.json)",
        )
    manifest = read_json(manifest_path, DataError)
    samples = (manifest.get("files") or {}).get("samples")
    if not isinstance(samples, dict) or not samples:
        raise DataError("manifest lists no samples files", path=manifest_path, field="files.samples")
    generations = read_generations(root, samples)
    if not generations:
        raise DataError("the run holds no generations", path=manifest_path)
    return RunDirectory(root, manifest, generations)
