"""A study's samples (K sampled runs per named cell) and its seeker's-view judge (issue 49): checked
when the file is read, planned and fingerprinted per cell, priced by the dry run, judged, packaged
with each entry and shown on the study's board."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import uncached_replies, write_study
from tide_bench.core.errors import ConfigError
from tide_bench.study import load_study, make_plan
from tide_bench.study.estimate import estimate_cells, format_plan, judge_cost, judge_sends, workload
from tide_bench.study.plan import cells, stage_outputs
from tide_bench.study.rates import assumed_rates

STUDY: dict[str, Any] = {
    "name": "consistent",
    "data": "sample",
    "split": "validation",  # one persona, four items
    "models": [{"id": "chat", "model": "demo", "parameters": 134_515_008, "model_args": {"dtype": "float32"}}],
    "conditions": {
        "zero-shot": {},
        "fine-tuned": {"lora": {"max_steps": 1, "eval_steps": 1, "batch_size": 1, "grad_accum": 1}},
    },
    "eval": {"backend": "hf", "device": "cpu", "batch_size": 4, "max_gen_toks": 8},
    "judge": {"name": "claude-sonnet"},
    "board": {"spot_check_items": 0},
}


def _spec(tmp_path: Path, **kw: Any) -> Any:
    return load_study(write_study(tmp_path, copy.deepcopy(STUDY) | kw))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-STUDYSAMPLES-0123456789")


@pytest.mark.parametrize(
    ("samples", "where", "message"),
    [
        ({"conditions": ["zero-shot"]}, "samples.k", "samples needs k"),
        ({"k": 1}, "samples.k", "one sample says nothing about consistency"),
        ({"k": 21}, "samples.k", "from 2 to 20"),
        ({"k": 2, "conditions": ["distilled"]}, "samples.conditions[0]", "not a condition of this study"),
        ({"k": 2, "temperature": 0}, "samples.temperature", "temperature above 0"),
        ({"k": 2, "temperature": float("inf")}, "samples.temperature", "finite number"),
        ({"k": 2, "seed": 3}, "samples.seed", "unknown key 'seed'"),
        ({"k": "two"}, "samples.k", "must be an integer"),
    ],
)
def test_a_bad_samples_section_is_refused_with_its_line_and_field(
    tmp_path: Path, samples: dict[str, Any], where: str, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _spec(tmp_path, samples=samples)
    assert err.value.field == where and message in str(err.value) and err.value.line is not None


def test_a_bad_seeker_judge_is_refused_at_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _spec(tmp_path, seeker_judge={"mode": "sync"})
    assert err.value.field == "seeker_judge" and "needs a name" in str(err.value)
    with pytest.raises(ConfigError) as err:
        _spec(tmp_path, seeker_judge={"name": "claude-sonnet", "colour": 1})
    assert err.value.field == "seeker_judge.colour"
    with pytest.raises(ConfigError) as err:
        _spec(tmp_path, judge=None, seeker_judge={"name": "claude-sonnet"})
    assert err.value.field == "seeker_judge" and "needs a judge" in str(err.value)


def test_samples_run_only_in_the_named_cells_and_leave_other_chains_as_they_were(tmp_path: Path) -> None:
    plain = _spec(tmp_path)
    spec = _spec(tmp_path, samples={"k": 3, "conditions": ["zero-shot"]}, seeker_judge={"name": "claude-sonnet"})
    zero, tuned, reference = cells(spec)
    stages = {c.id: [s.stage for s in make_plan(spec, tmp_path / "out").for_cell(c.id)] for c in (zero, tuned)}
    assert stages[zero.id] == ["eval", "samples", "judge", "seeker_judge", "submit"]
    assert stages[tuned.id] == ["finetune", "eval", "judge", "seeker_judge", "submit"]
    assert spec.samples_for(zero.model, "zero-shot") == 3 and spec.samples_for(None, "reference") == 0
    assert stage_outputs(spec, zero, "samples") == {"samples": "cells/chat-zero-shot/samples"}
    assert stage_outputs(spec, zero, "judge")["samples"] == "cells/chat-zero-shot/samples"  # judged there too
    assert "samples" not in stage_outputs(spec, tuned, "judge")
    assert stage_outputs(spec, reference, "seeker_judge") == {"judge": "cells/reference/run/judge-seeker"}
    assert spec.judge_config("seeker_judge").rubric.id == "tide-perceived-empathy"
    # without a judge, nothing is sampled (consistency is measured on judged replies), and the plan says so
    unjudged = replace(spec, judge=None, seeker_judge=None)
    assert unjudged.samples_for(zero.model, "zero-shot") == 0
    assert any("samples are not" in w for w in unjudged.warnings())
    # a study without samples or the seeker's judge plans and fingerprints exactly as before
    before = {(s.cell.id, s.stage): s.fingerprint for s in make_plan(plain, tmp_path / "out").stages}
    after = {(s.cell.id, s.stage): s.fingerprint for s in make_plan(spec, tmp_path / "out").stages}
    only_samples = _spec(tmp_path, samples={"k": 3, "conditions": ["zero-shot"]})
    sampled = {(s.cell.id, s.stage): s.fingerprint for s in make_plan(only_samples, tmp_path / "out").stages}
    assert all(sampled[key] == fp for key, fp in before.items() if key[0] != zero.id or key[1] == "eval")
    assert sampled[(zero.id, "judge")] != before[(zero.id, "judge")]  # the judge stage now judges the samples
    assert after[(tuned.id, "judge")] == before[(tuned.id, "judge")]


def test_the_dry_run_prices_k_samples_and_the_seekers_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    plain = make_plan(_spec(tmp_path), out)
    sampled = make_plan(_spec(tmp_path, samples={"k": 3, "conditions": ["zero-shot"]}), out)
    seeker = make_plan(_spec(tmp_path, seeker_judge={"name": "claude-sonnet"}), out)
    base, with_samples, with_seeker = (judge_cost(p, 4) for p in (plain, sampled, seeker))
    assert base is not None and with_samples is not None and with_seeker is not None
    assert base["cells"] == with_samples["cells"] == 3
    # three sampled runs of one cell cost three more cells' judging; the seeker's view one more pass per cell
    assert with_samples["total_usd"] == pytest.approx(base["per_cell_usd"] * (3 + 3))
    assert "3 sampled run(s)" in with_samples["method"] and with_samples["calls"] == 4 * (3 + 3)
    assert with_seeker["total_usd"] > base["total_usd"] and "seeker's-view judge" in with_seeker["method"]
    assert with_seeker["calls"] == 4 * (3 + 3)
    # generation: the zero-shot cell's samples take k times its run (the same rate), the other cells as before
    rates = assumed_rates()
    zero_before, tuned_before, _ = estimate_cells(plain, workload(plain.spec, rates), rates)
    zero_after, tuned_after, _ = estimate_cells(sampled, workload(sampled.spec, rates), rates)
    assert zero_after.eval_s == pytest.approx(4 * zero_before.eval_s) and zero_after.samples_s > 0
    assert tuned_after.eval_s == tuned_before.eval_s and tuned_after.samples_s == 0
    # the dry run's table: a samples column, the cell's generation with its samples, the seeker's judge priced
    both = make_plan(
        _spec(tmp_path, samples={"k": 3, "conditions": ["zero-shot"]}, seeker_judge={"name": "claude-sonnet"}), out
    )
    table = format_plan(both)
    header = next(line for line in table.splitlines() if line.startswith("cell"))
    assert "samples" in header.split() and "seeker_judge" in header.split()
    zero_line = next(line for line in table.splitlines() if line.startswith("chat-zero-shot"))
    assert "(with 3 samples: " in zero_line and "with" not in next(
        line for line in table.splitlines() if line.startswith("chat-fine-tuned")
    )
    assert "3 sampled run(s)" in table and "seeker's-view judge" in table
    # what the hosted-judge notice counts: every call the judge server would get, one line per server
    sends = judge_sends(make_plan(_spec(tmp_path, samples={"k": 3}, seeker_judge={"name": "claude-sonnet"}), out))
    assert len(sends) == 1 and sends[0]["n"] == 4 * (3 + 2 * 3) + 4 * 3  # runs, 2 cells x 3 samples, seeker
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-STUDYSAMPLES-0123456789")
    other = judge_sends(make_plan(_spec(tmp_path, seeker_judge={"name": "openai-gpt"}), out))
    assert sorted(s["n"] for s in other) == [12, 12] and {s["provider"] for s in other} == {"anthropic", "openai"}


@pytest.mark.slow
def test_a_study_samples_judges_and_shows_consistency_and_the_seekers_view(
    tmp_path: Path, demo_model_dir: Path
) -> None:
    from tide_bench.demo.model import resolve_model
    from tide_bench.generation import load_run
    from tide_bench.study import run_study

    server = FakeLLMServer().start()
    try:
        judge = {"name": "local", "model": "fake-judge", "base_url": server.url + "/v1"}
        study = copy.deepcopy(STUDY) | {"judge": judge, "seeker_judge": judge, "samples": {"k": 2}}
        study["conditions"] = {"zero-shot": {}}
        spec, out = load_study(write_study(tmp_path, study)), tmp_path / "out"
        result = run_study(spec, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        assert result.failed == {} and "chat-zero-shot/samples" in result.ran
        # the judge: 2 cells x 4 items, then 2 samples x 4 (a sample that repeats the greedy reply of 8 tokens
        # comes from the cache); the seeker's view: 2 cells x 4
        cells_dir = out / "cells"
        runs = [cells_dir / "chat-zero-shot" / "run", cells_dir / "reference" / "run"]
        samples = [cells_dir / "chat-zero-shot" / "samples" / f"sample-{s}" for s in (1, 2)]
        assert sum(len(load_run(f).generations) for f in samples) == 8
        assert server.total_calls == 8 + uncached_replies(samples, runs) + 8
        sub = out / "submissions" / "consistent-chat-zero-shot"
        assert all((sub / "samples" / f"sample-{s}" / "judge" / "judgments.jsonl").is_file() for s in (1, 2))
        assert (sub / "seeker_judge" / "judgments.jsonl").is_file()
        assert not (out / "submissions" / "consistent-reference" / "samples").exists()
        rows = {r["condition"]: r for r in json.loads((out / "site" / "leaderboard.json").read_text())["rows"]}
        assert rows["zero-shot"]["consistency"]["k"] == 2
        assert rows["zero-shot"]["seeker_view"]["n"] == 4 and rows["reference"]["seeker_view"]["n"] == 4
        assert rows["reference"]["consistency"] is None
        # nothing changed: nothing runs and nothing is sent
        calls = server.total_calls
        assert make_plan(spec, out).pending() == []
        # a third sample redoes the cell's samples and what follows them; answers already given come from the cache
        more = replace(spec, samples={"k": 3})
        pending = {(s.cell.id, s.stage) for s in make_plan(more, out).pending()}
        assert pending == {("chat-zero-shot", st) for st in ("samples", "judge", "seeker_judge", "submit")}
        run_study(more, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        assert calls + 4 <= server.total_calls <= calls + 3 * 4
        rows = {r["condition"]: r for r in json.loads((out / "site" / "leaderboard.json").read_text())["rows"]}
        row = rows["zero-shot"]
        assert row["consistency"]["k"] == 3
    finally:
        server.stop()


SAMPLES_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 30) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)


KEYS = st.sampled_from(["k", "conditions", "temperature", "seed", "K"])


def _valid_samples(samples: Any) -> bool:
    """What the study file accepts as ``samples:`` (the oracle of the fuzz test below)."""
    if samples is None:
        return True
    if not isinstance(samples, dict) or not set(samples) <= {"k", "conditions", "temperature"}:
        return False
    k, conditions, temperature = samples.get("k"), samples.get("conditions"), samples.get("temperature")
    if type(k) is not int or not 2 <= k <= 20:
        return False
    if conditions is not None and (
        not isinstance(conditions, list) or not all(c in ("zero-shot", "fine-tuned") for c in conditions)
    ):
        return False
    number = isinstance(temperature, int | float) and not isinstance(temperature, bool)
    return temperature is None or (number and math.isfinite(temperature) and temperature > 0)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(samples=st.dictionaries(KEYS, SAMPLES_VALUES, max_size=4) | SAMPLES_VALUES)
@example(samples={"k": 2})
@example(samples={"k": 20, "conditions": ["zero-shot"], "temperature": 1})
@example(samples={"k": 3, "conditions": []})
def test_fuzz_a_samples_section_loads_or_is_refused_at_its_field(tmp_path: Path, samples: Any) -> None:
    """A section is loaded exactly when it is valid, else refused at a ``samples`` field with its line."""
    try:
        spec = _spec(tmp_path, samples=samples)
    except ConfigError as exc:
        assert not _valid_samples(samples), exc
        assert str(exc.field or "").startswith("samples") and exc.line is not None, exc
        return
    assert _valid_samples(samples)
    assert spec.samples == samples
