"""The typed record readers: run manifest, samples, judgments, judge summary. Every wrong type
is refused as file:line:field and nothing is coerced."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import make_run
from tide_bench.core.errors import DataError
from tide_bench.core.records import line_locator
from tide_bench.generation.run_dir import load_run
from tide_bench.generation.run_manifest import read_manifest
from tide_bench.generation.samples import iter_samples_file
from tide_bench.judging.judgment import JudgeIdentity, Judgment, read_judgments
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.summary import read_summary, summary_mismatches

RUBRIC = load_rubric()
FACTORS = RUBRIC.factor_keys


def test_line_locator_finds_nested_fields_in_order() -> None:
    text = json.dumps({"model": {"name": "x"}, "data": {"name": "y", "split": "test"}}, indent=2)
    locate = line_locator(text)
    assert locate("data.name") == 6 and locate("model.name") == 3 and locate("data.split") == 7


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda m: m["data"].update(split=["test"]), "data.split", "must be a string, got a list"),
        (
            lambda m: m["data"].update(is_synthetic_sample="no"),
            "data.is_synthetic_sample",
            "must be true or false or null, got a string",
        ),
        (lambda m: m["data"].update(n_items=True), "data.n_items", "must be an integer or null, got a boolean"),
        (
            lambda m: m["model"].update(num_parameters=5e8),
            "model.num_parameters",
            "must be an integer or null, got a number",
        ),
        (
            lambda m: m["generation"].update(apply_chat_template="yes"),
            "generation.apply_chat_template",
            "must be true or false or null, got a string",
        ),
        (lambda m: m["generation"].update(gen_kwargs={"t": 5}), "generation.gen_kwargs.t", "must be an object or null"),
        (lambda m: m["files"].update(samples={}), "files.samples", "lists no samples files"),
        (lambda m: m["files"]["samples"].update(x=3), "files.samples.x", "must be a string, got an integer"),
        (lambda m: m.update(kind="something-else"), "kind", "must be 'tide-bench-run'"),
        (lambda m: m.pop("data"), "data", "is missing"),
        (lambda m: m.update(command="tide-bench eval"), "command", "must be a list or null, got a string"),
    ],
)
def test_manifest_fields_are_typed(tmp_path: Path, edit: Any, field: str, message: str) -> None:
    run = make_run(tmp_path / "run")
    manifest = json.loads((run / "run.json").read_text())
    edit(manifest)
    (run / "run.json").write_text(json.dumps(manifest, indent=2))
    with pytest.raises(DataError) as err:
        read_manifest(run / "run.json")
    assert f"field '{field}': {message}" in str(err.value)
    if field != "data":
        assert f"run.json:{line_locator((run / 'run.json').read_text())(field)}, field" in str(err.value)


def test_manifest_reader_keeps_the_raw_object_and_types(tmp_path: Path) -> None:
    info = read_manifest(make_run(tmp_path / "run") / "run.json")
    assert (
        info.data.split == "test" and info.data.is_synthetic_sample is True and info.model.num_parameters == 500_000_000
    )
    assert info.raw["kind"] == "tide-bench-run" and info.generation.apply_chat_template is True


def test_generation_setting_prefers_the_override_and_needs_agreement() -> None:
    from tide_bench.generation.run_manifest import GenerationInfo

    assert (
        GenerationInfo(gen_kwargs={"a": {"max_gen_toks": 256}, "b": {"max_gen_toks": 256}}).setting("max_gen_toks")
        == 256
    )
    assert (
        GenerationInfo(gen_kwargs={"a": {"max_gen_toks": 256}, "b": {"max_gen_toks": 128}}).setting("max_gen_toks")
        is None
    )
    assert (
        GenerationInfo(gen_kwargs={"a": {"max_gen_toks": 256}}, gen_kwargs_override={"max_gen_toks": 96}).setting(
            "max_gen_toks"
        )
        == 96
    )
    assert GenerationInfo().setting("temperature") is None


def _samples(tmp_path: Path) -> Path:
    run = make_run(tmp_path / "run")
    return sorted((run / "lm_eval").rglob("samples_*.jsonl"))[0]


def _rewrite(path: Path, edit: Any) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda rows: rows[1]["doc"].update(turn=True), "doc.turn", "must be an integer, got a boolean"),
        (lambda rows: rows[1]["doc"].update(turn=0), "doc.turn", "must lie in 1..inf"),
        (
            lambda rows: rows[1]["doc"].update(history=[{"role": "system", "content": "x"}]),
            "doc.history[0]",
            "must be an object with role 'user' or 'assistant'",
        ),
        (lambda rows: rows[1]["doc"].update(persona_json="{not json"), "doc.persona_json", "is not valid JSON"),
        (lambda rows: rows[1]["doc"].update(persona_json="[1]"), "doc.persona_json", "must encode a JSON object"),
        (lambda rows: rows[1]["doc"].update(persona_id=5), "doc.persona_id", "must be a string, got an integer"),
        (
            lambda rows: rows[1].update(filtered_resps=[None], resps=[[None]]),
            "filtered_resps",
            "holds no generated reply",
        ),
        (lambda rows: rows[1].update(rouge_l="0.2"), "rouge_l", "must be a number, got a string"),
        (lambda rows: rows[1].update(doc="x"), "doc", "must be an object, got a string"),
    ],
)
def test_samples_fields_are_typed(tmp_path: Path, edit: Any, field: str, message: str) -> None:
    path = _samples(tmp_path)
    _rewrite(path, edit)
    with pytest.raises(DataError) as err:
        list(iter_samples_file(path, "tide_empathy"))
    assert f"{path.name}:2, field '{field}': {message}" in str(err.value)


def test_samples_accept_python_nan_metrics_and_refuse_infinity(tmp_path: Path) -> None:
    path = _samples(tmp_path)
    text = path.read_text().replace('"within_reply_distinct_2": 0.9', '"within_reply_distinct_2": NaN', 1)
    path.write_text(text)
    gens = list(iter_samples_file(path, "tide_empathy"))
    assert math.isnan(gens[0].metrics["within_reply_distinct_2"]) and gens[1].metrics["within_reply_distinct_2"] == 0.9
    path.write_text(text.replace('"rouge_l": 0.2', '"rouge_l": Infinity', 1))
    with pytest.raises(DataError, match=r":1: invalid JSON"):
        list(iter_samples_file(path, "tide_empathy"))


def test_any_tide_empathy_task_name_is_accepted(tmp_path: Path) -> None:
    path = _samples(tmp_path)
    assert list(iter_samples_file(path, "tide_empathy"))
    assert list(iter_samples_file(path, "tide_empathy_turn1"))
    with pytest.raises(DataError, match="not a tide-bench task"):
        list(iter_samples_file(path, "other_task"))


def test_load_run_says_to_pass_the_folder_for_run_json(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    with pytest.raises(
        DataError, match=r"run\.json is a file, not a run directory\n  hint: pass the folder that holds it"
    ):
        load_run(run / "run.json")
    assert load_run(run).info is not None


def _judgment(**kw: Any) -> dict[str, Any]:
    base = {
        "item_id": "2/c1/turn1",
        "status": "scored",
        "scores": dict.fromkeys(FACTORS, 4),
        "rationales": dict.fromkeys(FACTORS, "because"),
        "safety": {"flagged": False, "reason": ""},
        "unscored_kind": None,
        "unscored_reason": None,
        "judge": {
            "name": "j",
            "provider": "anthropic",
            "model": "m",
            "family": "claude",
            "version": "abc",
            "rubric": "r@v1",
        },
        "key": "k",
    }
    return base | kw


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        (_judgment(status="maybe"), "status", "must be 'scored' or 'unscored'"),
        (_judgment(scores=dict.fromkeys(FACTORS, 6)), f"scores.{FACTORS[0]}", "must lie in 1..5"),
        (_judgment(scores=dict.fromkeys(FACTORS, True)), f"scores.{FACTORS[0]}", "must be an integer, got a boolean"),
        (_judgment(scores=dict.fromkeys(FACTORS, 4.0)), f"scores.{FACTORS[0]}", "must be an integer, got a number"),
        (_judgment(scores=dict.fromkeys([*FACTORS, "extra"], 4)), "scores", "must hold exactly the rubric's factors"),
        (_judgment(rationales=dict.fromkeys(FACTORS, " ")), f"rationales.{FACTORS[0]}", "must be a non-empty string"),
        (_judgment(safety={"flagged": "yes"}), "safety.flagged", "must be true or false, got a string"),
        (_judgment(safety={"flagged": True, "reason": ""}), "safety.reason", "must not be empty"),
        (_judgment(unscored_kind="refusal"), "unscored_kind", "must be null in a scored judgment"),
        (
            _judgment(status="unscored", scores=None, rationales=None, safety=None, unscored_kind="whim"),
            "unscored_kind",
            "is not a known kind",
        ),
        (
            _judgment(status="unscored", rationales=None, safety=None, unscored_kind="refusal"),
            "scores",
            "must be null in an unscored judgment",
        ),
        (_judgment(judge={"version": ""}), "judge.version", "must not be empty"),
        (_judgment(key=None), "key", "must be a string, got null"),
        (_judgment(served_model=3), "served_model", "must be a string or null, got an integer"),
    ],
)
def test_judgment_fields_are_typed(tmp_path: Path, row: dict[str, Any], field: str, message: str) -> None:
    path = _write(tmp_path / "judgments.jsonl", [_judgment(item_id="a"), row])
    with pytest.raises(DataError) as err:
        read_judgments(path, RUBRIC)
    assert f"judgments.jsonl:2, field '{field}': {message}" in str(err.value)


def test_judgments_read_back_and_duplicates_name_both_lines(tmp_path: Path) -> None:
    ok = _judgment(served_model="claude-x-2026")
    unscored = _judgment(
        item_id="b",
        status="unscored",
        scores=None,
        rationales=None,
        safety=None,
        unscored_kind="refusal",
        unscored_reason="no",
    )
    judgments = read_judgments(_write(tmp_path / "j.jsonl", [ok, unscored]), RUBRIC)
    assert judgments[0].overall == 4 and judgments[0].served_model == "claude-x-2026" and not judgments[1].scored
    assert (
        judgments[0].as_record()["safety"] == {"flagged": False, "reason": ""}
        and judgments[1].as_record()["unscored_kind"] == "refusal"
    )
    with pytest.raises(DataError, match=r"j2\.jsonl:3, field 'item_id': item judged twice \(first on line 1\)"):
        read_judgments(_write(tmp_path / "j2.jsonl", [ok, unscored, ok]), RUBRIC)


def _summary(**kw: Any) -> dict[str, Any]:
    base = {
        "n_items": 2,
        "n_scored": 1,
        "n_unscored": 1,
        "unscored_reasons": {"refusal": 1},
        "n_safety_flagged": 0,
        # the refusal counts at the scale minimum (a model failure): (4 + 1) / 2
        "factors": {f: {"mean": 2.5} for f in FACTORS},
        "empathy": {"mean": 2.5},
        "judge": {"version": "abc"},
    }
    return base | kw


def _pair() -> list[Judgment]:
    judge = JudgeIdentity(version="abc")
    return [
        Judgment(
            item_id="a",
            status="scored",
            judge=judge,
            key="k",
            line=1,
            scores=dict.fromkeys(FACTORS, 4),
            rationales=dict.fromkeys(FACTORS, "r"),
            safety={"flagged": False, "reason": ""},
        ),
        Judgment(item_id="b", status="unscored", judge=judge, key="k", line=2, unscored_kind="refusal"),
    ]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({}, []),
        ({"n_items": 3}, ["n_items: claims 3, recomputed 2"]),
        ({"n_scored": 2, "n_unscored": 0}, ["n_scored: claims 2, recomputed 1", "n_unscored: claims 0, recomputed 1"]),
        (
            {"unscored_reasons": {"transient_failure": 1}},
            ["unscored_reasons: claims 1 kind(s) totalling 1, recomputed {'refusal': 1}"],
        ),
        ({"empathy": {"mean": 4.0}}, ["empathy.mean: claims 4, recomputed 2.5"]),  # the refusal left out
        ({"empathy": {"mean": None}}, ["empathy.mean: claims None, recomputed 2.5"]),
        (
            {"factors": {f: {"mean": 2.5 if f != FACTORS[1] else 3.0} for f in FACTORS}},
            [f"factors.{FACTORS[1]}.mean: claims 3, recomputed 2.5"],
        ),
        ({"n_safety_flagged": 1}, ["n_safety_flagged: claims 1, recomputed 0"]),
        ({"judge": {"version": "zzz"}}, ["judge.version: claims zzz, the judgments' abc"]),
    ],
    ids=["equal", "n_items", "counts", "reasons", "mean", "mean-null", "factor", "safety", "judge"],
)
def test_summary_mismatch_per_field(tmp_path: Path, edit: dict[str, Any], expected: list[str]) -> None:
    path = tmp_path / "judge_summary.json"
    path.write_text(json.dumps(_summary(**edit), indent=2))
    assert summary_mismatches(read_summary(path, FACTORS), _pair(), FACTORS) == expected


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        ({"n_scored": -1}, "n_scored", "must lie in 0..inf"),
        ({"unscored_reasons": {"refusal": "1"}}, "unscored_reasons.refusal", "must be an integer, got a string"),
        ({"empathy": {"mean": "4"}}, "empathy.mean", "must be a number or null, got a string"),
        ({"factors": {}}, f"factors.{FACTORS[0]}", "is missing"),
    ],
)
def test_summary_fields_are_typed(tmp_path: Path, edit: dict[str, Any], field: str, message: str) -> None:
    path = tmp_path / "judge_summary.json"
    path.write_text(json.dumps(_summary(**edit), indent=2))
    with pytest.raises(DataError) as err:
        read_summary(path, FACTORS)
    assert f"field '{field}': {message}" in str(err.value) and "judge_summary.json:" in str(err.value)


def test_persona_json_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    path = _samples(tmp_path)
    _rewrite(path, lambda rows: rows[0]["doc"].update(persona_json='{"name": "\\ud800"}'))
    with pytest.raises(DataError, match=r":1, field 'doc.persona_json': is not valid JSON"):
        list(iter_samples_file(path, "tide_empathy"))
