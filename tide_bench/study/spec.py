"""A study file (``STUDY.yaml``): the paper's grid as data, read with located errors.

The TIDE paper's design is a grid: small models, each zero-shot and after LoRA fine-tuning,
compared with the frontier reference on the same items, judged with one instrument. A study
file names the models, the conditions, the data, the judge and where outputs go; every cell
of the grid is then one ``finetune -> eval -> judge -> submit`` chain (:mod:`.plan`).

Schema (every key but ``models`` optional)::

    name: pursuit-of-empathy          # folder-safe; prefixes the submission ids
    data: /data/TIDE                  # sample | hub | a snapshot folder | ed:PATH (EmpatheticDialogues)
    split: test
    prompt: neutral                   # neutral (tide_empathy) | guided (tide_empathy_guided) | ed (ED)
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
    eval: {backend: auto, device: cuda:0, batch_size: auto, max_gen_toks: 256, limit: null}
                                      # backend auto: vllm where installed (GPU), else hf (study/backend.py)
    judge: {name: claude-sonnet, mode: sync, max_cost: 50}    # or null: no judging
    epitome_judge: {name: claude-sonnet, mode: sync}          # optional: the judge's keys; rubric epitome
    seeker_judge: {name: claude-sonnet, mode: sync}           # optional: the judge's keys; rubric perceived
                                      # (the seeker's view: the board's "Seeker's view" column)
    samples: {k: 3, conditions: [zero-shot], temperature: 0.7}   # optional, with a judge: each model cell
                                      # of these conditions also answers every item k times, sampling on,
                                      # seeded; judged by the judge (consistency across samples on the board)
    epitome: {model: models/epitome}  # optional: score every run with the local EPITOME scorer
    board: {spot_check_items: 0}      # BoardConfig overrides for the study's own board
    risk_supplement: true             # each judged model cell also answers the risk supplement (default:
                                      # on TIDE data; false: the study's TIDE board carries a banner)
    resources: {gpus_per_cell: 1, time_min: 240, partition: gpu}   # per cell (study/resources.py);
                                      # a model entry may override them with its own resources:

Every section is checked, key and value, against the code it feeds, before anything runs (and
``--dry-run`` makes exactly the same check): ``lora`` against ``FinetuneConfig``'s fields and
``check_config``; ``eval`` against ``EvalConfig``'s fields (``backend`` is its ``model``;
``max_gen_toks`` the study's generation cap) and ``check_eval_config``; ``judge`` against
``load_judge``'s arguments, ``JudgeOptions``' fields and ``JudgeConfig``'s numeric (operational)
settings, then the judge is loaded and its options checked; ``board`` against ``BoardConfig``;
``resources`` (the study's and each model's) against ``Resources``; each model against
``ModelSpec``. The allowed keys and types are read from those classes
(:mod:`tide_bench.core.options`), so a field added to one of them is accepted here with no
second list to update.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.options import check_options, did_you_mean, fields_of, parameters_of, shown, unknown_key_message
from tide_bench.core.yaml_io import load_yaml
from tide_bench.data.schema import SPLIT_CHOICES
from tide_bench.data.sources import ED_PREFIX, RISK_SUPPLEMENT
from tide_bench.study.resources import Resources, check_resources

if TYPE_CHECKING:
    from tide_bench.finetune.config import FinetuneConfig
    from tide_bench.generation.runner import EvalConfig
    from tide_bench.judging.config import JudgeConfig
    from tide_bench.judging.session import JudgeOptions

CONDITIONS = ("zero-shot", "fine-tuned")
CONDITION_SETTINGS = {"zero-shot": (), "fine-tuned": ("lora",)}  # what each condition's mapping may hold
PROMPTS = {"neutral": "tide_empathy", "guided": "tide_empathy_guided", "ed": "ed_empathy_first_turn"}
DEFAULT_MAX_GEN_TOKS = 256
MAX_GEN_TOKS = 32_768  # a reply of TIDE is a few hundred tokens; more is a typo (R3S-9)
_SAFE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_LAST_STEP = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")
# checked against their own targets
_SECTIONS = (
    "source", "models", "conditions", "eval", "judge", "board", "resources", "epitome_judge", "epitome",
    "seeker_judge", "samples",
)  # fmt: skip
JUDGE_SECTIONS = {"judge": None, "epitome_judge": "epitome", "seeker_judge": "perceived"}  # section -> its rubric
EPITOME_OPTIONS = {"model": str, "device": str, "batch_size": int}  # the local scorer (tide-bench epitome score)
SAMPLES_OPTIONS = {"k": int, "conditions": list[str], "temperature": float}  # eval --samples K (generation/sampled.py)
# What the study itself decides for each stage (from the model block, the data and the cell): the rest of
# each config class's fields are the section's keys.
FINETUNE_SET_BY_STUDY = ("model", "revision", "data", "out", "chat_template", "prompt", "overwrite")
EVAL_SET_BY_STUDY = ("model_args", "output_dir", "data", "split", "tasks", "apply_chat_template", "overwrite")
EVAL_RENAMED = {"model": "backend"}  # EvalConfig field -> the study's key
MODEL_ARGS_SET_BY_STUDY = ("pretrained", "revision", "peft", "lora_local_path")  # model:, revision:, the adapter
JUDGE_OPTIONS_SET_BY_STUDY = ("overwrite", "cache_path")  # one judge stage, its cache at <out>/judge/cache.sqlite


@dataclass(frozen=True)
class ModelSpec:
    id: str
    model: str
    revision: str | None = None
    parameters: int | None = None
    model_args: dict[str, str | int | float | bool] = field(default_factory=dict)
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
    epitome_judge: dict[str, Any] | None = None  # a judge (same keys as judge) with the EPITOME rubric
    epitome: dict[str, Any] | None = None  # the local EPITOME scorer: {model: DIR}
    resources: Resources = field(default_factory=Resources)
    risk_supplement: bool | None = None  # each judged model cell also answers the risk supplement (None: on TIDE)
    seeker_judge: dict[str, Any] | None = None  # a judge (same keys as judge) with the seeker's rubric (perceived)
    samples: dict[str, Any] | None = None  # {k, conditions, temperature}: K sampled runs per model cell, judged

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

    def warnings(self) -> list[str]:
        """What the study allows but a reader of its numbers must be told (printed by the dry run
        and the run)."""
        out = []
        trained_on = str(self.lora().get("split") or "train")
        if "fine-tuned" in self.conditions and self.split == trained_on:
            out.append(
                f"WARNING: the evaluated split ({self.split}) is the fine-tuning split: the fine-tuned models are "
                "scored on the very items they were trained on (memorisation, not generalisation); evaluate on "
                "split: test for numbers a board can compare"
            )
        if self.samples is not None and self.judge is None:
            out.append("note: samples are not generated without a judge (consistency is measured on judged replies)")
        return out

    def samples_for(self, cell_model: ModelSpec | None, condition: str) -> int:
        """How many sampled runs a cell answers beside its own (0: none): a model cell of one of
        ``samples.conditions`` (default: every condition), in a study with a judge."""
        if self.samples is None or cell_model is None or self.judge is None:
            return 0
        wanted = self.samples.get("conditions") or list(self.conditions)
        return int(self.samples["k"]) if condition in wanted else 0

    def samples_eval_config(self, config: EvalConfig) -> EvalConfig:
        """A cell's eval configuration with the study's sampling temperature (``samples.temperature``,
        else the eval's own or 0.7): what :func:`~tide_bench.generation.sampled.run_samples` starts from."""
        temperature = (self.samples or {}).get("temperature")
        if temperature is None:
            return config
        return dataclasses.replace(config, gen_kwargs=dict(config.gen_kwargs or {}) | {"temperature": temperature})

    # The configurations each stage runs with, built here so that the check made when the file is
    # read and the run build them the same way.
    def finetune_config(self, model: ModelSpec, base: str, out: Path) -> FinetuneConfig:
        """What a fine-tuned cell trains: ``base`` is the model's folder or hub id (``demo`` resolved)."""
        from tide_bench.finetune.config import FinetuneConfig

        return FinetuneConfig(
            model=base,
            revision=model.revision,
            data=self.data,
            out=out,
            chat_template=model.chat_template,
            prompt=self.prompt,
            overwrite=True,
            **self.lora(),
        )

    def eval_config(self, *, backend: str | None, model_args: str, output_dir: Path, chat: bool) -> EvalConfig:
        """What a cell's eval stage runs (``backend`` None: the study's ``eval.backend``, default ``auto``:
        vllm where it is installed and the study generates on a GPU, else hf; :mod:`.backend`)."""
        from tide_bench.generation.runner import EvalConfig
        from tide_bench.study.backend import resolve_backend

        settings = dict(self.eval)
        study_backend, _ = resolve_backend(settings.pop("backend", None), settings.get("device"))
        max_gen_toks = settings.pop("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
        gen_kwargs = dict(settings.pop("gen_kwargs", None) or {}) | {"max_gen_toks": max_gen_toks}
        return EvalConfig(
            model=backend or study_backend,
            model_args=model_args,
            output_dir=output_dir,
            data=self.data,
            split=self.split,
            tasks=[self.task],
            apply_chat_template=chat,
            gen_kwargs=gen_kwargs,
            overwrite=True,
            **settings,
        )

    def answers_supplement(self, model: ModelSpec | None) -> bool:
        """Whether a cell of ``model`` also answers the risk supplement (issue 44): a judged model cell
        (not the reference), on TIDE data by default (``risk_supplement: null``), on any TIDE-shaped
        data when the study says ``risk_supplement: true``, never on EmpatheticDialogues."""
        if model is None or self.judge is None or self.prompt == "ed" or self.data.startswith(ED_PREFIX):
            return False
        if self.risk_supplement is None:
            return self.data not in ("sample", RISK_SUPPLEMENT)
        return self.risk_supplement

    def supplement_eval_config(
        self, *, backend: str | None, model_args: str, output_dir: Path, chat: bool
    ) -> EvalConfig:
        """The cell's run on the risk supplement: its eval settings on every supplement item (no limit)."""
        config = self.eval_config(backend=backend, model_args=model_args, output_dir=output_dir, chat=chat)
        return dataclasses.replace(config, data=RISK_SUPPLEMENT, split="all", limit=None)

    def judge_config(self, section: str = "judge") -> JudgeConfig:
        """The study's judge (``section``: ``judge``, ``epitome_judge`` or ``seeker_judge``, which must
        not be null), loaded; the EPITOME judge always with the ``epitome`` rubric, the seeker's with
        ``perceived``."""
        from tide_bench.judging.config import load_judge

        loader, overrides, _ = _judge_parts(self._judge_section(section))
        if JUDGE_SECTIONS[section] is not None:
            loader["rubric"] = JUDGE_SECTIONS[section]
        return load_judge(loader.pop("name_or_path"), overrides=overrides or None, **loader)

    def judge_options(self, section: str = "judge") -> JudgeOptions:
        from tide_bench.judging.session import JudgeOptions

        return JudgeOptions(**_judge_parts(self._judge_section(section))[2], overwrite=True)

    def _judge_section(self, section: str) -> dict[str, Any]:
        value = {"judge": self.judge, "epitome_judge": self.epitome_judge, "seeker_judge": self.seeker_judge}[section]
        assert value is not None
        return value


def _lora_options() -> dict[str, Any]:
    from tide_bench.finetune.config import FinetuneConfig

    return fields_of(FinetuneConfig, exclude=FINETUNE_SET_BY_STUDY)


def _eval_options() -> dict[str, Any]:
    from tide_bench.generation.runner import EvalConfig

    options = fields_of(EvalConfig, exclude=EVAL_SET_BY_STUDY)
    for name, key in EVAL_RENAMED.items():
        options[key] = options.pop(name)
    return options | {"max_gen_toks": int}


def _judge_targets() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The judge section's keys: ``load_judge``'s arguments (``name`` is its first), the judge's
    numeric settings (concurrency, timeouts, retries: operational, none of them part of the judge's
    version) given to it as overrides, and ``JudgeOptions``' fields."""
    from tide_bench.judging.config import JudgeConfig, load_judge
    from tide_bench.judging.session import JudgeOptions

    loader = parameters_of(load_judge, exclude=("overrides",))
    numeric = {k: v for k, v in fields_of(JudgeConfig).items() if v in (int, float) and k not in loader}
    options = fields_of(JudgeOptions, exclude=JUDGE_OPTIONS_SET_BY_STUDY)
    return loader, numeric, options


def judge_options() -> dict[str, Any]:
    """Every key a study's ``judge:`` section may hold, with its type."""
    loader, numeric, options = _judge_targets()
    loader["name"] = loader.pop("name_or_path")
    return loader | numeric | options


def _judge_parts(judge: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A checked judge section split into (load_judge arguments, overrides, JudgeOptions fields)."""
    loader, numeric, _ = _judge_targets()
    values = dict(judge)
    parts: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = (
        {"name_or_path": values.pop("name")},
        {},
        {},
    )
    for key, value in values.items():
        target = 0 if key in loader else 1 if key in numeric else 2
        parts[target][key] = value
    return parts


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
    """Read and check a study file; every problem names the file, line and field.

    The check is complete: every key and value of every section is checked against the code it
    feeds (see the module docstring), so a study that loads does not fail later on a setting.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("study file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the study file: {exc}", path=path) from None
    raw = load_yaml(text, path=path)  # size, alias and depth limits (core.yaml_io)
    lines = _Lines(text)

    def fail(message: str, where: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, path=path, line=lines.of(where), field=where, hint=hint)

    if not isinstance(raw, dict):
        raise ConfigError("a study file is a mapping (name, models, conditions, ...)", path=path, line=1)
    known = [f.name for f in dataclasses.fields(StudySpec) if f.name != "source"]
    for key in raw:
        if key not in known:
            raise fail(unknown_key_message(key, known), str(key))
    scalars = fields_of(StudySpec, exclude=_SECTIONS)  # name, data, split, prompt, reference, and any added later
    top = check_options({k: v for k, v in raw.items() if k in scalars}, scalars, where="", fail=fail)
    name = top.get("name", path.stem)
    if not _SAFE.match(name):
        raise fail(f"name {name!r} must be folder-safe (lower-case letters, digits, . _ -)", "name")
    if top.get("split", "test") not in SPLIT_CHOICES:
        split = top["split"]
        raise fail(
            f"split must be one of {', '.join(SPLIT_CHOICES)}, got {shown(split)}{did_you_mean(split, SPLIT_CHOICES)}",
            "split",
        )
    prompt = top.get("prompt", "neutral")
    if prompt not in PROMPTS:
        raise fail(
            f"prompt must be one of {', '.join(PROMPTS)}, got {shown(prompt)}{did_you_mean(prompt, PROMPTS)}", "prompt"
        )
    models = _models(raw.get("models"), fail)
    conditions = _conditions(raw.get("conditions", {"zero-shot": {}, "fine-tuned": {}}), fail)
    sections = {key: _section(raw, key, fail) for key in ("eval", "board", "epitome", "samples", *JUDGE_SECTIONS)}
    for key in JUDGE_SECTIONS:
        section = sections[key]
        if section is not None and "name" not in section:
            raise fail(f"{key} needs a name (claude-sonnet, openai-gpt, local, or a judges/ folder)", key)
    if sections["seeker_judge"] is not None and sections["judge"] is None:
        raise fail(
            "seeker_judge needs a judge: the seeker's view is reported beside the three factors, on a judged entry",
            "seeker_judge",
            hint="add judge: (often the same keys as seeker_judge)",
        )
    spec = StudySpec(
        name=name,
        models=models,
        conditions=conditions,
        source=path,
        resources=Resources(**check_resources(raw.get("resources"), "resources", fail)),
        **{k: v for k, v in top.items() if k != "name"},
        eval=check_options(sections["eval"] or {}, _eval_options(), where="eval", fail=fail),
        judge=None
        if sections["judge"] is None
        else check_options(sections["judge"], judge_options(), where="judge", fail=fail),
        board=check_options(sections["board"] or {}, _board_options(), where="board", fail=fail),
        epitome_judge=None
        if sections["epitome_judge"] is None
        else check_options(sections["epitome_judge"], judge_options(), where="epitome_judge", fail=fail),
        seeker_judge=None
        if sections["seeker_judge"] is None
        else check_options(sections["seeker_judge"], judge_options(), where="seeker_judge", fail=fail),
        epitome=None if sections["epitome"] is None else _epitome(sections["epitome"], fail),
        samples=None if sections["samples"] is None else _samples(sections["samples"], conditions, fail),
    )
    _check_values(spec, fail)
    return spec


def _epitome(raw: dict[str, Any], fail: Any) -> dict[str, Any]:
    values = check_options(raw, EPITOME_OPTIONS, where="epitome", fail=fail)
    if not values.get("model"):
        raise fail("epitome needs model: the folder `tide-bench epitome train` wrote", "epitome")
    return values


def _samples(raw: dict[str, Any], conditions: dict[str, Any], fail: Any) -> dict[str, Any]:
    """The ``samples`` section: ``k`` (2..20, required), ``conditions`` (of the study's), ``temperature``."""
    from tide_bench.generation.sampled import MAX_SAMPLES

    values = check_options(raw, SAMPLES_OPTIONS, where="samples", fail=fail)
    k = values.get("k")
    if k is None or not 2 <= k <= MAX_SAMPLES:
        raise fail(
            f"samples needs k, the replies per item, from 2 to {MAX_SAMPLES} (got {shown(k)}): one sample says "
            "nothing about consistency",
            "samples.k",
        )
    for i, condition in enumerate(values.get("conditions") or []):
        if condition not in conditions:
            raise fail(
                f"samples.conditions names {shown(condition)}, not a condition of this study ({', '.join(conditions)})"
                f"{did_you_mean(str(condition), conditions)}",
                f"samples.conditions[{i}]",
            )
    return values


def _section(raw: dict[str, Any], key: str, fail: Any) -> dict[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(f"{key} must be a mapping, got {shown(value)}", key)
    return value


def _board_options() -> dict[str, Any]:
    from tide_bench.leaderboard.config import BoardConfig

    # config: a board file (leaderboard/ed.yaml) whose settings the study's board starts from
    return fields_of(BoardConfig, exclude=("source",)) | {"config": str}


def _models(raw: Any, fail: Any) -> list[ModelSpec]:
    if not isinstance(raw, list) or not raw:
        raise fail("models must be a non-empty list of model entries (each with at least id and model)", "models")
    options = fields_of(ModelSpec)
    required = [
        f.name
        for f in dataclasses.fields(ModelSpec)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    models: list[ModelSpec] = []
    for index, entry in enumerate(raw):
        where = f"models[{index}]"
        if not isinstance(entry, dict):
            raise fail(f"a model entry is a mapping with at least {' and '.join(required)}, got {shown(entry)}", where)
        values = check_options({k: v for k, v in entry.items() if k != "resources"}, options, where=where, fail=fail)
        values["resources"] = check_resources(entry.get("resources"), f"{where}.resources", fail)
        for key in required:
            if not isinstance(values.get(key), str) or not values[key].strip():
                raise fail(f"{key} is required (a string)", f"{where}.{key}")
        model = ModelSpec(**values)
        model = dataclasses.replace(model, model=model.model.strip())
        _check_model(model, where, fail)
        if model.id in [m.id for m in models]:
            first = [m.id for m in models].index(model.id)
            raise fail(f"model id {model.id!r} appears twice (also models[{first}])", f"{where}.id")
        models.append(model)
    return models


def _check_model(model: ModelSpec, where: str, fail: Any) -> None:
    if not _SAFE.match(model.id):
        raise fail(f"id {model.id!r} must be folder-safe (lower-case letters, digits, . _ -)", f"{where}.id")
    if model.parameters is not None and model.parameters <= 0:
        raise fail("parameters is a positive integer (e.g. 494000000)", f"{where}.parameters")
    if model.tokens_per_s is not None and model.tokens_per_s <= 0:
        raise fail("tokens_per_s is a positive number", f"{where}.tokens_per_s")
    for key in model.model_args:
        if key in MODEL_ARGS_SET_BY_STUDY:
            own = {"pretrained": "model:", "revision": "revision:"}.get(key, "the fine-tuned condition")
            raise fail(f"{key} is set by the study (from {own}), not in model_args", f"{where}.model_args.{key}")


def _conditions(raw: Any, fail: Any) -> dict[str, dict[str, Any]]:
    if isinstance(raw, list) and all(isinstance(c, str) for c in raw):
        raw = {c: {} for c in raw}
    if not isinstance(raw, dict) or not raw:
        raise fail("conditions must name zero-shot and/or fine-tuned", "conditions")
    conditions: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        where = f"conditions.{key}"
        if key not in CONDITIONS:
            raise fail(
                f"unknown condition {key!r}{did_you_mean(key, CONDITIONS)}; choose from {', '.join(CONDITIONS)}", where
            )
        if value is not None and not isinstance(value, dict):
            raise fail(f"a condition's settings are a mapping, got {shown(value)}", where)
        settings = dict(value or {})
        allowed = CONDITION_SETTINGS[key]
        for name in settings:
            if name not in allowed:
                what = f"only {', '.join(allowed)}" if allowed else "no settings"
                raise fail(f"unknown key {str(name)!r}: the {key} condition takes {what}", f"{where}.{name}")
        if "lora" in settings:
            lora = settings["lora"]
            if lora is not None and not isinstance(lora, dict):
                raise fail(f"lora settings are a mapping of FinetuneConfig fields, got {shown(lora)}", f"{where}.lora")
            settings["lora"] = check_options(lora or {}, _lora_options(), where=f"{where}.lora", fail=fail)
        conditions[key] = settings
    return conditions


def _check_values(spec: StudySpec, fail: Any) -> None:
    """Build every stage's configuration as the run will, and run the checks the run would make."""
    from tide_bench.finetune.config import check_config
    from tide_bench.generation.runner import check_eval_config
    from tide_bench.judging.engine import check_judge_options
    from tide_bench.leaderboard.config import check_board_settings

    toks = spec.eval.get("max_gen_toks")
    if toks is not None and not 1 <= toks <= MAX_GEN_TOKS:
        raise fail(f"max_gen_toks must be a whole number from 1 to {MAX_GEN_TOKS:,}, got {toks}", "eval.max_gen_toks")
    gen_kwargs = spec.eval.get("gen_kwargs") or {}
    if "max_gen_toks" in gen_kwargs:
        raise fail("set the generation cap as eval.max_gen_toks, not inside gen_kwargs", "eval.gen_kwargs.max_gen_toks")
    backend = spec.eval.get("backend", "auto")
    if "fine-tuned" in spec.conditions and backend not in ("hf", "vllm", "auto"):
        raise fail(
            f"the fine-tuned condition needs a backend that loads LoRA adapters (hf: peft=, vllm: lora_local_path=), "
            f"not {backend!r}",
            "eval.backend",
        )
    with _located(fail, "eval", EVAL_RENAMED):
        check_eval_config(spec.eval_config(backend=None, model_args="", output_dir=Path("run"), chat=True))
    if "fine-tuned" in spec.conditions:
        with _located(fail, "conditions.fine-tuned.lora"):
            for model in spec.models:
                check_config(spec.finetune_config(model, model.model, Path("adapter")))
    if spec.samples is not None:
        from tide_bench.generation.sampled import sample_configs

        with _located(fail, "samples", {"gen_kwargs": "temperature", "samples": "k"}):
            sampled = spec.eval_config(backend=None, model_args="", output_dir=Path("run"), chat=True)
            sample_configs(spec.samples_eval_config(sampled), int(spec.samples["k"]))
    for section in JUDGE_SECTIONS:
        if getattr(spec, section) is not None:
            with _located(fail, section, {"name_or_path": "name"}, default="name"):
                config = spec.judge_config(section)
                check_judge_options(config, spec.judge_options(section))
    board = dict(spec.board)
    if board.get("config") is not None:
        try:
            study_board(spec)  # the named board file, read with its own checks, under the study's settings
        except ConfigError as exc:
            raise fail(str(exc), "board.config") from None
    board.pop("config", None)
    with _located(fail, "board"):
        check_board_settings(board, spec.source or Path("study"))


@contextlib.contextmanager
def _located(fail: Any, section: str, renamed: dict[str, str] | None = None, default: str | None = None) -> Any:
    """A ConfigError from the code a section feeds, re-raised at the section's key in the study file
    (``default``: the key an error that names no field is about)."""
    try:
        yield
    except ConfigError as exc:
        name = (exc.field or "").lstrip("-").replace("-", "_")  # an option's name (--rubric) is the key (rubric)
        key = (renamed or {}).get(name, name) or default
        where = f"{section}.{key}" if key else section
        detail = exc.detail if exc.path is None or section == "board" else f"{exc.detail} ({exc.path})"
        raise fail(detail, where, exc.hint) from None


def study_board(spec: StudySpec) -> Any:
    """The study's own board: its split, a demo board on the synthetic sample, judgments
    required when the study names a judge; the study file's ``board`` settings on top."""
    from tide_bench.leaderboard.config import BoardConfig

    board = dict(spec.board)
    settings = (
        _board_file(spec, board.pop("config", None))
        | {
            "name": f"study {spec.name}",
            "split": spec.split,
            "demo": spec.data == "sample",
            "require_judgments": spec.judge is not None,
            "require_risk_supplement": any(spec.answers_supplement(m) for m in spec.models),
            "conversations_per_persona": None,
            "prompt_conditions": [spec.prompt],
        }
        | board
    )
    return BoardConfig(**settings)


def _board_file(spec: StudySpec, name: Any) -> dict[str, Any]:
    """``board: {config: leaderboard/ed.yaml}``: that board file's settings, under what the study
    itself decides (its split, prompt condition, demo status, whether judgments are required) and
    under the study file's other ``board`` keys. Looked for as given, beside the study file, then
    among the shipped boards."""
    if name is None:
        return {}
    from dataclasses import fields

    from tide_bench.core.resources import resource_dir
    from tide_bench.leaderboard.config import load_board

    given = Path(str(name))
    candidates = [
        given,
        *([spec.source.parent / given] if spec.source else []),
        resource_dir("leaderboard") / given.name,
    ]
    path = next((p for p in candidates if p.is_file()), given)
    loaded = load_board(path)
    return {f.name: getattr(loaded, f.name) for f in fields(loaded) if f.name not in ("source", "name")}
