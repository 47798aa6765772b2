"""``core.records``: records declared once, read through one adapter that turns pydantic's first
error into ``file:line, field 'x': message``; and the readers built on it never let another
exception through (seeded fuzz), and the package reads no pickle."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from annotated_types import MaxLen
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from pydantic import AliasPath, Field, TypeAdapter, ValidationInfo, model_validator

from tide_bench.core.errors import DataError
from tide_bench.core.records import (
    Bool,
    Count,
    Int,
    NonBlank,
    Number,
    Record,
    Str,
    line_locator,
    load,
    null_as,
    refusal,
)

ROOT = Path(__file__).resolve().parents[2]


class Inner(Record):
    flag: Bool
    note: Str | None = None


class Sample(Record):
    name: Annotated[NonBlank, MaxLen(5)]
    count: Count
    total: Int | None = None
    mean: Number | None = None
    tags: list[Str] = Field(default_factory=list)
    scores: dict[str, Int] = Field(default_factory=dict)
    inner: Inner | None = None
    inners: list[Inner] = Field(default_factory=list)
    label: Annotated[Str, null_as(str)] = ""
    deep: Str | None = Field(default=None, validation_alias=AliasPath("doc", "deep"))

    @model_validator(mode="after")
    def _rule(self, info: ValidationInfo) -> Sample:
        if self.inner is not None and self.inner.flag and not self.inner.note:
            raise refusal("must say why the flag is raised", "inner.note")
        return self


GOOD: dict[str, Any] = {"name": "a", "count": 1}


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        ({"count": "1"}, "count", "must be an integer, got a string"),
        ({"count": True}, "count", "must be an integer, got a boolean"),
        ({"count": 1.0}, "count", "must be an integer, got a number"),
        ({"count": -1}, "count", "must lie in 0..inf"),
        ({"total": "x"}, "total", "must be an integer or null, got a string"),
        ({"mean": float("nan")}, "mean", "must be a finite number"),
        ({"mean": "x"}, "mean", "must be a number or null, got a string"),
        ({"name": "   "}, "name", "must not be empty"),
        ({"name": "abcdef"}, "name", "is 6 characters long; at most 5 are allowed"),
        ({"tags": ["a", 3]}, "tags[1]", "must be a string, got an integer"),
        ({"scores": {"x": "1"}}, "scores.x", "must be an integer, got a string"),
        ({"scores": []}, "scores", "must be an object, got a list"),
        ({"inner": 3}, "inner", "must be an object or null, got an integer"),
        ({"inner": {"flag": "yes"}}, "inner.flag", "must be true or false, got a string"),
        ({"inner": {"flag": True}}, "inner.note", "must say why the flag is raised"),
        ({"inners": [{"flag": True}, {"flag": 1}]}, "inners[1].flag", "must be true or false, got an integer"),
        ({"label": 5}, "label", "must be a string or null, got an integer"),
        ({"doc": {"deep": 5}}, "doc.deep", "must be a string or null, got an integer"),
        ({"count": None}, "count", "must be an integer, got null"),
    ],
)
def test_each_error_names_its_field_and_what_is_wrong(edit: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(DataError) as caught:
        load(Sample, GOOD | edit, path="x.jsonl", line=7)
    assert str(caught.value) == f"x.jsonl:7, field '{field}': {message}"


def test_a_missing_field_and_a_line_that_is_no_object() -> None:
    with pytest.raises(DataError, match=r"^x\.jsonl:2, field 'count': is missing$"):
        load(Sample, {"name": "a"}, path="x.jsonl", line=2)
    with pytest.raises(DataError, match=r"^x\.jsonl:3, field '\(top level\)': must be an object, got a list$"):
        load(Sample, [1], path="x.jsonl", line=3)


def test_nothing_is_coerced_and_a_good_record_reads_as_given() -> None:
    read = load(Sample, GOOD | {"label": None, "mean": 2, "doc": {"deep": "d"}}, path="x")
    assert (read.name, read.count, read.label, read.mean, read.deep) == ("a", 1, "", 2.0, "d")


def test_a_dataclass_is_read_through_its_type_adapter() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Pair:
        left: Int
        right: Annotated[Str, null_as(str)] = ""

    with pytest.raises(DataError, match=r"field 'right': must be a string or null, got an integer"):
        load(TypeAdapter(Pair), {"left": 1, "right": 2}, path="p.json")
    assert load(TypeAdapter(Pair), {"left": 1, "right": None}, path="p.json") == Pair(1, "")


def test_a_file_of_many_lines_gives_the_line_of_the_field() -> None:
    text = json.dumps({"name": "a", "count": 1, "inner": {"flag": "no"}}, indent=2)
    with pytest.raises(DataError, match=r"^s\.json:5, field 'inner\.flag'"):
        load(Sample, json.loads(text), path="s.json", locate=line_locator(text))


# --- the readers never let another exception through ---------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
    return out


def _mutated(value: Any, data: st.DataObject) -> Any:
    """``value`` with one place (the whole, or any field or item) deleted or replaced by any JSON."""
    value = copy.deepcopy(value)
    path = data.draw(st.sampled_from(_paths(value)))
    new = data.draw(JSON)
    if not path:
        return new
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


def _judgment_line() -> dict[str, Any]:
    from tide_bench.judging.rubric import load_rubric

    factors = load_rubric().factor_keys
    return {
        "item_id": "1/c1/turn1",
        "status": "scored",
        "scores": dict.fromkeys(factors, 3),
        "rationales": dict.fromkeys(factors, "why"),
        "safety": {"flagged": True, "reason": "r", "category": "risk_mishandled"},
        "risk_cue": {"present": True, "kind": "suicide_self_harm", "severity": "passive"},
        "evidence": ["q"],
        "judge_directed_text": False,
        "evidence_unmatched": 0,
        "over_escalation": False,
        "risk_label": {"kind": "suicide_self_harm", "severity": "passive", "sha256": "0" * 64},
        "unscored_kind": None,
        "unscored_reason": None,
        "judge": {"name": "j", "provider": "p", "model": "m", "family": "f", "version": "v", "rubric": "r@v4"},
        "served_model": "m",
        "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 0, "cache_write_tokens": 0, "calls": 1},
        "attempts": 1,
        "mode": "sync",
        "turn": 1,
        "scenario": "s",
        "persona_id": "1",
        "cached": False,
        "key": "k",
    }


def _samples_line() -> dict[str, Any]:
    return {
        "doc": {
            "item_id": "1/c1/turn1",
            "persona_id": "1",
            "conversation_id": "c1",
            "turn": 1,
            "scenario": "s",
            "split": "test",
            "history": [{"role": "user", "content": "hi"}],
            "client_utterance": "c",
            "reference_reply": "r",
            "persona_json": '{"age": 3}',
        },
        "filtered_resps": ["reply"],
        "arguments": {"gen_args_0": {"arg_0": "prompt"}},
        "rouge_l": 0.5,
    }


def _read_one(kind: str, obj: Any, tmp: Path) -> None:
    from tide_bench.generation.run_manifest import parse_manifest
    from tide_bench.generation.samples import iter_samples_file
    from tide_bench.judging.judgment import parse_judgment
    from tide_bench.judging.rubric import load_rubric
    from tide_bench.judging.summary import parse_summary

    rubric = load_rubric()
    if kind == "judgment":
        parse_judgment(obj, rubric, tmp / "judgments.jsonl", 1)
    elif kind == "sample":
        path = tmp / "samples_tide_empathy_x.jsonl"
        path.write_text(json.dumps(obj) + "\n", encoding="utf-8")
        list(iter_samples_file(path, "tide_empathy"))
    elif kind == "manifest":
        parse_manifest(obj, tmp / "run.json", text=json.dumps(obj, indent=2))
    else:
        parse_summary(obj, tmp / "judge_summary.json", rubric.factor_keys, text=json.dumps(obj, indent=2))


GOOD_RECORDS = {
    "judgment": _judgment_line,
    "sample": _samples_line,
    "manifest": lambda: {
        "kind": "tide-bench-run",
        "data": {"split": "test", "split_sha256": "ab", "n_items": 2},
        "files": {"samples": {"tide_empathy": "s.jsonl"}},
        "model": {"name": "m", "num_parameters": 5, "adapter": {"path": "a"}},
        "generation": {"gen_kwargs": {"t": {"max_gen_toks": 3}}, "limit": None},
        "prompt": {"condition": "neutral"},
        "command": ["tide-bench"],
    },
    "summary": lambda: {
        "n_items": 1,
        "n_scored": 1,
        "n_unscored": 0,
        "unscored_reasons": {},
        "factors": {"emotion_recognition": {"mean": 3}},
        "empathy": {"mean": 3.0},
        "judge": {"version": "v"},
    },
}


@pytest.mark.parametrize("kind", sorted(GOOD_RECORDS))
def test_the_unmutated_record_is_read(kind: str, tmp_path: Path) -> None:
    if kind == "summary":
        from tide_bench.judging.rubric import load_rubric

        good = GOOD_RECORDS[kind]()
        good["factors"] = {f: {"mean": 3} for f in load_rubric().factor_keys}
        _read_one(kind, good, tmp_path)
    else:
        _read_one(kind, GOOD_RECORDS[kind](), tmp_path)


@seed(20261204)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(GOOD_RECORDS)), data=st.data())
def test_a_mutated_record_is_read_or_refused_with_its_field(
    kind: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    obj = _mutated(GOOD_RECORDS[kind](), data)
    try:
        _read_one(kind, obj, tmp_path_factory.mktemp("r"))
    except DataError as exc:
        assert exc.path and (exc.field or exc.line), str(exc)
        assert re.search(r"field '[^']+': \S", str(exc)) or "invalid JSON" in str(exc), str(exc)


def test_no_pickle_is_read_by_the_package() -> None:
    """A pickle runs code when read: nothing in tide_bench loads one (models load through
    transformers / safetensors, arrays with ``allow_pickle=False``)."""
    pattern = re.compile(
        r"^\s*(import pickle|from pickle|import joblib|import dill|import cloudpickle)|torch\.load\(|pickle\.loads?\(",
        re.M,
    )
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "tide_bench").rglob("*.py") if pattern.search(p.read_text())]
    assert found == []
