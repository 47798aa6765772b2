"""A study file is checked completely before anything runs (issue 34.1, red team N7).

Every key and value of ``lora:``, ``eval:``, ``judge:``, ``board:`` and the model blocks is checked
against the code it feeds, with the allowed keys and types read from the config classes, and
``--dry-run`` and the real run make the same check: a typo is refused at once with the file, the
line and the field, never a ``TypeError`` hours into a study.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.core.options import check_options, fields_of
from tide_bench.finetune.config import FinetuneConfig, check_config
from tide_bench.generation.runner import EvalConfig, check_eval_config
from tide_bench.study import load_study
from tide_bench.study.spec import (
    EVAL_SET_BY_STUDY,
    FINETUNE_SET_BY_STUDY,
    judge_options,
)

ROOT = Path(__file__).resolve().parents[2]
STUDY: dict[str, Any] = {
    "name": "mini",
    "data": "sample",
    "split": "validation",
    "models": [{"id": "chat", "model": "demo", "model_args": {"dtype": "float32"}}],
    "conditions": {"zero-shot": {}, "fine-tuned": {"lora": {"max_steps": 2, "learning_rate": 0.02}}},
    "eval": {"backend": "hf", "device": "cpu", "batch_size": 4, "max_gen_toks": 8},
    "judge": None,
    "board": {"spot_check_items": 0},
}


def _study(tmp_path: Path, edit=None, name: str = "my-study.yaml") -> Path:
    study = copy.deepcopy(STUDY)
    if edit is not None:
        edit(study)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    return path


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_lora_typo_is_refused_through_the_cli_before_anything_runs(tmp_path: Path, dry_run: bool) -> None:
    """The review's case: ``max_step`` for ``max_steps`` passed --dry-run and the run died later."""
    path = _study(tmp_path, lambda s: s["conditions"]["fine-tuned"]["lora"].update(max_step=10))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(path), "--out", str(out), *(["--dry-run"] if dry_run else [])])
    assert result.exit_code == 2, result.output
    line = _line(path, "max_step: 10")
    assert f"{path}:{line}, field 'conditions.fine-tuned.lora.max_step'" in result.output
    assert "unknown key 'max_step' (did you mean 'max_steps'?)" in result.output
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_a_wrong_eval_value_is_refused_through_the_cli(tmp_path: Path, dry_run: bool) -> None:
    path = _study(tmp_path, lambda s: s["eval"].update(batch_size="four"))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(path), "--out", str(out), *(["--dry-run"] if dry_run else [])])
    assert result.exit_code == 2, result.output
    assert f"{path}:{_line(path, 'batch_size: four')}, field 'eval.batch_size'" in result.output
    assert "'four'" in result.output and not out.exists()


def _set(path: str, value: Any):
    """An edit that sets the field at a dotted path (``conditions.fine-tuned.lora.rank``)."""

    def edit(study: dict[str, Any]) -> None:
        node: Any = study
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
        for part in parts[:-1]:
            node = node[int(part[1:-1])] if part.startswith("[") else node.setdefault(part, {})
        last = parts[-1]
        if last.startswith("["):
            node[int(last[1:-1])] = value
        else:
            node[last] = value

    return edit


LORA = "conditions.fine-tuned.lora"
BAD = [
    # the type of every section's values, from the class it feeds
    (f"{LORA}.learning_rate", "fast", "must be a number"),
    (f"{LORA}.rank", 2.5, "must be an integer"),
    (f"{LORA}.target_modules", "q_proj", "must be a list of strings or null"),
    (f"{LORA}.gradient_checkpointing", "yes", "must be true or false"),
    ("eval.seed", "x", "must be an integer or a list of 4 values, each an integer or null"),
    ("eval.device", 0, "must be a string or null"),
    ("eval.max_gen_toks", "many", "must be an integer"),
    ("judge", {"name": "claude-sonnet", "concurrency": "many"}, "must be an integer"),
    ("board.spot_check_items", "12", "must be an integer"),
    ("models[0].tokens_per_s", "fast", "must be a number or null"),
    ("models[0].revision", 2024, "must be a string or null"),
    ("models[0].model_args", ["dtype=float32"], "must be a mapping"),
    ("models[0].model_args.dtype", ["float32"], "must be a string, a number or true or false"),
    ("reference", "no", "must be true or false"),
    ("split", ["test"], "must be a string"),
    # keys
    ("eval.batchsize", 4, "unknown key 'batchsize' (did you mean 'batch_size'?)"),
    ("judge", {"name": "claude-sonnet", "concurency": 4}, "unknown key 'concurency' (did you mean 'concurrency'?)"),
    ("board.spot_checks", 3, "unknown key 'spot_checks'"),
    ("models[0].paramters", 5, "unknown key 'paramters' (did you mean 'parameters'?)"),
    ("conditions.fine-tuned.lorra", {"rank": 8}, "the fine-tuned condition takes only lora"),
    ("conditions.zero-shot.lora", {"rank": 8}, "the zero-shot condition takes no settings"),
    ("models[0].model_args.pretrained", "x", "set by the study (from model:)"),
    ("eval.output_dir", "elsewhere", "unknown key 'output_dir'"),  # the study decides where outputs go
    (f"{LORA}.out", "elsewhere", "unknown key 'out'"),
    # values, by the same checks the run makes
    (f"{LORA}.rank", 0, "rank must be a positive whole number"),
    (f"{LORA}.dropout", 1.5, "dropout must be in [0, 1)"),
    (f"{LORA}.precision", "fp8", "unknown precision 'fp8'"),
    (f"{LORA}.split", "test", "refusing to train on the test split"),
    ("eval.limit", -1, "limit must be positive"),
    ("eval.batch_size", "auto:x", "is not a positive integer, 'auto' or 'auto:N'"),
    ("eval.max_gen_toks", 0, "max_gen_toks must be a whole number from 1"),
    ("eval.cache_requests", "maybe", "choose true, refresh or delete"),
    ("judge", {"name": "claude-sonet"}, "unknown judge 'claude-sonet'"),
    ("judge", {"name": "local"}, "no judge model given"),
    ("judge", {"name": "claude-sonnet", "mode": "fast"}, "unknown mode 'fast'"),
    ("judge", {"name": "openai-gpt", "mode": "batch"}, "batch mode is not implemented for the openai provider"),
    ("judge", {"name": "claude-sonnet", "max_cost": -1}, "must be a non-negative number"),
    ("judge", {"name": "claude-sonnet", "rubric": "v9"}, "v9"),
    ("board.split", "tset", "must be one of"),
    ("split", "tset", "split must be one of"),
]


@pytest.mark.parametrize(("where", "value", "message"), BAD, ids=[f"{w}={v!r}"[:60] for w, v, _ in BAD])
def test_every_section_is_checked_with_file_line_and_field(
    tmp_path: Path, where: str, value: Any, message: str
) -> None:
    path = _study(tmp_path, _set(where, value))
    with pytest.raises(ConfigError) as err:
        load_study(path)
    text = str(err.value)
    found = re.match(rf"{re.escape(str(path))}:(\d+), field '([^']+)': ", text)
    assert found and message in text, text
    # the line is the field's own, or its nearest parent's where the field is missing (judge.model)
    keys = [k for k in re.split(r"[.\[\]]", found.group(2)) if k and not k.isdigit()]
    line = path.read_text().splitlines()[int(found.group(1)) - 1]
    assert any(k in line for k in keys), (text, line)


def test_the_allowed_keys_are_the_config_classes_fields(tmp_path: Path) -> None:
    """Every field of FinetuneConfig and EvalConfig the study does not set itself is accepted with its
    default value, so a field added to a class is accepted with no second list to update."""
    lora = {
        f.name: f.default
        for f in dataclasses.fields(FinetuneConfig)
        if f.name not in FINETUNE_SET_BY_STUDY and f.default is not dataclasses.MISSING
    }
    evals = {
        ("backend" if f.name == "model" else f.name): f.default
        for f in dataclasses.fields(EvalConfig)
        if f.name not in EVAL_SET_BY_STUDY and f.default is not dataclasses.MISSING
    }
    assert {"max_steps", "learning_rate", "warmup_ratio", "report_to"} <= set(lora)
    assert {"backend", "system_instruction", "max_batch_size", "embedding_model"} <= set(evals)
    spec = load_study(
        _study(tmp_path, lambda s: (s["conditions"]["fine-tuned"].update(lora=lora), s.update(eval=evals)))
    )
    assert spec.lora() == lora
    config = spec.eval_config(backend=None, model_args="", output_dir=tmp_path / "run", chat=True)
    assert config.system_instruction is None and config.model == "hf"


def test_a_new_field_of_a_class_is_accepted_and_typed_without_a_second_list() -> None:
    @dataclasses.dataclass
    class Resources:
        gpus: int = 1
        partition: str | None = None
        callback: Any = None

    options = fields_of(Resources)
    assert check_options({"gpus": 4, "partition": "a100"}, options, where="x", fail=ConfigError) == {
        "gpus": 4,
        "partition": "a100",
    }
    with pytest.raises(ConfigError, match="must be an integer"):
        check_options({"gpus": "four"}, options, where="x", fail=lambda m, w: ConfigError(m, field=w))


def test_settings_reach_the_code_they_feed(tmp_path: Path) -> None:
    """A key is allowed only because the run passes it on: check that it does."""

    def edit(s: dict[str, Any]) -> None:
        s["judge"] = {"name": "claude-sonnet", "timeout_s": 30, "rubric": "v1", "preflight": False, "mode": "batch"}
        s["eval"] |= {"system_instruction": "Be brief.", "seed": [1, 2, 3, None]}
        s["conditions"]["fine-tuned"]["lora"] |= {"learning_rate": "1e-3"}  # YAML 1.1 reads this as text

    spec = load_study(_study(tmp_path, edit))
    judge = spec.judge_config()
    assert judge.timeout_s == 30 and judge.rubric.version == 1
    options = spec.judge_options()
    assert options.preflight is False and options.mode == "batch" and options.overwrite
    config = spec.eval_config(backend=None, model_args="", output_dir=tmp_path / "run", chat=True)
    assert config.system_instruction == "Be brief." and config.seed == (1, 2, 3, None)
    assert config.gen_kwargs == {"max_gen_toks": 8}
    finetune = spec.finetune_config(spec.models[0], "base", tmp_path / "adapter")
    assert finetune.learning_rate == 0.001 and finetune.max_steps == 2


def test_the_shipped_study_files_pass_the_full_check() -> None:
    for path in sorted((ROOT / "studies").glob("*.yaml")):
        load_study(path)


def test_judge_section_keys_come_from_three_targets_without_clashes() -> None:
    import inspect

    from tide_bench.judging.config import JudgeConfig, load_judge
    from tide_bench.judging.session import JudgeOptions

    keys = judge_options()
    loader = set(inspect.signature(load_judge).parameters) - {"name_or_path", "overrides"}
    options = {f.name for f in dataclasses.fields(JudgeOptions)} - {
        "overwrite",
        "cache_path",
        "on_progress",
        "on_event",
    }
    assert loader | options | {"name", "concurrency", "timeout_s", "max_retries"} <= set(keys)
    numeric = {k for k in keys if k not in loader | options | {"name"}}
    assert numeric <= {f.name for f in dataclasses.fields(JudgeConfig)}
    versioned = set(JudgeConfig.versioned_content.__code__.co_names)  # nothing that changes a judgment is overridden
    assert not numeric & versioned


# ------------------------------------------------------------------ fuzz
SECTION_KEYS = {
    "eval": ["backend", "device", "batch_size", "max_gen_toks", "limit", "seed", "gen_kwargs", "bogus"],
    "conditions.fine-tuned.lora": ["rank", "alpha", "dropout", "epochs", "max_steps", "target_modules", "x"],
    "board": ["spot_check_items", "split", "min_scored_items", "prompt_conditions", "nope"],
    "models[0]": ["id", "model", "parameters", "model_args", "tokens_per_s", "chat_template", "revision"],
}
values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=80, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from(sorted(SECTION_KEYS)), st.integers(0, 7), values), max_size=3))
def test_fuzz_a_study_loads_cleanly_or_is_refused_and_what_loads_builds(tmp_path: Path, edits) -> None:
    study = copy.deepcopy(STUDY)
    for section, index, value in edits:
        keys = SECTION_KEYS[section]
        _set(f"{section}.{keys[index % len(keys)]}", value)(study)
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False), encoding="utf-8")
    try:
        spec = load_study(path)
    except ConfigError as exc:
        assert exc.path == str(path) and exc.field, str(exc)
        return
    # what loads must build and pass the run's own checks, as the runner builds it
    for model in spec.models:
        check_config(spec.finetune_config(model, model.model, tmp_path / "adapter"))
    check_eval_config(spec.eval_config(backend=None, model_args="", output_dir=tmp_path / "run", chat=True))
