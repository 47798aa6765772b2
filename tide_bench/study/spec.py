"""A study file (``STUDY.yaml``): the paper's grid as data, read with located errors.

The TIDE paper's design is a grid: small models, each zero-shot and after LoRA fine-tuning,
compared with the frontier reference on the same items, judged with one instrument. A study
file names the models, the conditions, the data, the judge and where outputs go; every cell
of the grid is then one ``finetune -> eval -> judge -> submit`` chain (:mod:`.plan`).

Schema (every key but ``models`` optional)::

    name: pursuit-of-empathy          # folder-safe; prefixes the submission ids
    data: /data/TIDE                  # sample | hub | a snapshot folder
    split: test
    prompt: neutral                   # neutral (tide_empathy) | guided (tide_empathy_guided)
    reference: true                   # add the TIDE reference row (its replies = the references)
    models:
      - id: qwen2.5-0.5b              # folder-safe cell id
        model: Qwen/Qwen2.5-0.5B-Instruct   # hub id, local folder, or "demo" (the offline demo model)
        revision: main
        parameters: 494000000
        model_args: {dtype: bfloat16}       # extra lm-eval model arguments
        chat_template: true
        tokens_per_s: 900             # optional planning hint (generation), measured values win
        verified: false               # false: the name could not be checked against the paper
    conditions:
      zero-shot: {}
      fine-tuned: {lora: {rank: 16, alpha: 32, epochs: 3}}   # FinetuneConfig settings
    eval: {backend: hf, device: cuda:0, batch_size: auto, max_gen_toks: 256, limit: null}
    judge: {name: claude-sonnet, mode: sync, max_cost: 50}    # or null: no judging
    board: {spot_check_items: 0}      # BoardConfig overrides for the study's own board
    resources: {gpus_per_cell: 1, time_min: 240, partition: gpu}   # per cell (study/resources.py);
                                      # a model entry may override them with its own resources:
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.study.resources import Resources, check_resources

CONDITIONS = ("zero-shot", "fine-tuned")
PROMPTS = {"neutral": "tide_empathy", "guided": "tide_empathy_guided"}
_SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_LAST_STEP = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")
_TOP_KEYS = {
    "name",
    "data",
    "split",
    "prompt",
    "reference",
    "models",
    "conditions",
    "eval",
    "judge",
    "board",
    "resources",
}
_MODEL_KEYS = {
    "id",
    "model",
    "revision",
    "parameters",
    "model_args",
    "chat_template",
    "tokens_per_s",
    "verified",
    "note",
    "resources",
}
_EVAL_KEYS = {"backend", "device", "batch_size", "max_gen_toks", "limit", "seed"}
_JUDGE_KEYS = {"name", "mode", "max_cost", "base_url", "model", "concurrency"}


@dataclass(frozen=True)
class ModelSpec:
    id: str
    model: str
    revision: str | None = None
    parameters: int | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    chat_template: bool = True
    tokens_per_s: float | None = None
    verified: bool = True
    note: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)  # overrides of the study's resources (Resources fields)


@dataclass(frozen=True)
class StudySpec:
    name: str
    models: list[ModelSpec]
    conditions: dict[str, dict[str, Any]]
    data: str = "sample"
    split: str = "test"
    prompt: str = "neutral"
    reference: bool = True
    eval: dict[str, Any] = field(default_factory=dict)
    judge: dict[str, Any] | None = None
    board: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None
    resources: Resources = field(default_factory=Resources)

    @property
    def task(self) -> str:
        return PROMPTS[self.prompt]

    def resources_for(self, model: ModelSpec | None) -> Resources:
        """What one cell of ``model`` needs (the reference cell: no GPU)."""
        if model is None:
            return self.resources.merged({"gpus_per_cell": 0})
        return self.resources.merged(model.resources)

    def lora(self) -> dict[str, Any]:
        return dict((self.conditions.get("fine-tuned") or {}).get("lora") or {})


class _Lines:
    """Line numbers of mapping keys, so an error can say ``study.yaml:12, field 'models[1].id'``."""

    def __init__(self, text: str) -> None:
        self.lines: dict[str, int] = {}
        with contextlib.suppress(yaml.YAMLError):  # the caller reports malformed YAML itself
            self._walk(yaml.compose(text), "")

    def _walk(self, node: Any, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = f"{path}.{key.value}" if path else str(key.value)
                self.lines[child] = key.start_mark.line + 1
                self._walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                self.lines[f"{path}[{i}]"] = value.start_mark.line + 1
                self._walk(value, f"{path}[{i}]")

    def of(self, path: str) -> int | None:
        """The line of ``path``, or of its nearest parent that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            parent = _LAST_STEP.sub("", path)
            if parent == path:
                break
            path = parent
        return None


def load_study(path: str | Path) -> StudySpec:
    """Read and check a study file; every problem names the file, line and field."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("study file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the study file: {exc}", path=path) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            f"malformed YAML: {getattr(exc, 'problem', exc)}", path=path, line=(mark.line + 1) if mark else None
        ) from None
    lines = _Lines(text)

    def fail(message: str, where: str) -> ConfigError:
        return ConfigError(message, path=path, line=lines.of(where), field=where)

    if not isinstance(raw, dict):
        raise ConfigError("a study file is a mapping (name, models, conditions, ...)", path=path, line=1)
    _known(raw, _TOP_KEYS, "", fail)
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not _SAFE.match(name):
        raise fail(f"name {name!r} must be folder-safe (lower-case letters, digits, . _ -)", "name")
    models_raw = raw.get("models")
    if not isinstance(models_raw, list) or not models_raw:
        raise fail("models must be a non-empty list", "models")
    models = [_model(m, f"models[{i}]", fail) for i, m in enumerate(models_raw)]
    ids = [m.id for m in models]
    for index, model_id in enumerate(ids):
        if model_id in ids[:index]:
            raise fail(
                f"model id {model_id!r} appears twice (also models[{ids.index(model_id)}])", f"models[{index}].id"
            )
    conditions = raw.get("conditions", {"zero-shot": {}, "fine-tuned": {}})
    if isinstance(conditions, list):
        conditions = {c: {} for c in conditions}
    if not isinstance(conditions, dict) or not conditions:
        raise fail("conditions must name zero-shot and/or fine-tuned", "conditions")
    for key, value in conditions.items():
        if key not in CONDITIONS:
            raise fail(f"unknown condition {key!r}; choose from {', '.join(CONDITIONS)}", f"conditions.{key}")
        if value is not None and not isinstance(value, dict):
            raise fail("a condition's settings are a mapping", f"conditions.{key}")
        conditions[key] = value or {}
    lora = conditions.get("fine-tuned", {}).get("lora", {})
    if not isinstance(lora, dict):
        raise fail("lora settings are a mapping of FinetuneConfig fields", "conditions.fine-tuned.lora")
    prompt = raw.get("prompt", "neutral")
    if prompt not in PROMPTS:
        raise fail(f"prompt must be one of {', '.join(PROMPTS)}", "prompt")
    sections = {}
    for key, allowed in (("eval", _EVAL_KEYS), ("judge", _JUDGE_KEYS), ("board", None)):
        value = raw.get(key)
        if value is None:
            sections[key] = None if key == "judge" else {}
            continue
        if not isinstance(value, dict):
            raise fail(f"{key} must be a mapping", key)
        if allowed is not None:
            _known(value, allowed, key, fail)
        sections[key] = value
    if sections["judge"] is not None and not isinstance(sections["judge"].get("name"), str):
        raise fail("judge needs a name (claude-sonnet, openai-gpt, local, or a judges/ folder)", "judge")
    for key in ("data", "split"):
        if key in raw and not isinstance(raw[key], str):
            raise fail(f"{key} must be a string", key)
    resources = Resources(**check_resources(raw.get("resources"), "resources", fail))
    backend = (sections["eval"] or {}).get("backend", "hf")
    if "fine-tuned" in conditions and backend not in ("hf", "vllm"):
        raise fail(
            f"the fine-tuned condition needs a backend that loads LoRA adapters (hf: peft=, vllm: lora_local_path=), "
            f"not {backend!r}",
            "eval.backend",
        )
    return StudySpec(
        name=name,
        models=models,
        conditions=conditions,
        data=str(raw.get("data", "sample")),
        split=str(raw.get("split", "test")),
        prompt=prompt,
        reference=bool(raw.get("reference", True)),
        eval=sections["eval"],
        judge=sections["judge"],
        board=sections["board"],
        source=path,
        resources=resources,
    )


def _known(mapping: dict[str, Any], allowed: set[str], where: str, fail: Any) -> None:
    for key in mapping:
        if key not in allowed:
            spot = f"{where}.{key}" if where else str(key)
            raise fail(f"unknown key {key!r} (known: {', '.join(sorted(allowed))})", spot)


def _model(raw: Any, where: str, fail: Any) -> ModelSpec:
    if not isinstance(raw, dict):
        raise fail("a model entry is a mapping with at least id and model", where)
    _known(raw, _MODEL_KEYS, where, fail)
    for key in ("id", "model"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise fail(f"{key} is required (a string)", f"{where}.{key}")
    if not _SAFE.match(raw["id"]):
        raise fail(f"id {raw['id']!r} must be folder-safe (lower-case letters, digits, . _ -)", f"{where}.id")
    parameters = raw.get("parameters")
    if parameters is not None and (isinstance(parameters, bool) or not isinstance(parameters, int) or parameters <= 0):
        raise fail("parameters is a positive integer (e.g. 494000000)", f"{where}.parameters")
    model_args = raw.get("model_args") or {}
    if not isinstance(model_args, dict):
        raise fail("model_args is a mapping of lm-eval model arguments", f"{where}.model_args")
    rate = raw.get("tokens_per_s")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0):
        raise fail("tokens_per_s is a positive number", f"{where}.tokens_per_s")
    return ModelSpec(
        id=raw["id"],
        model=raw["model"].strip(),
        revision=raw.get("revision"),
        parameters=parameters,
        model_args=dict(model_args),
        chat_template=bool(raw.get("chat_template", True)),
        tokens_per_s=float(rate) if rate else None,
        verified=bool(raw.get("verified", True)),
        note=raw.get("note"),
        resources=check_resources(raw.get("resources"), f"{where}.resources", fail),
    )
