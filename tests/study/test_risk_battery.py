"""A study answers the risk supplement with every judged model cell (issue 44, V2): on TIDE data by
default and where the study says ``risk_supplement: true`` (the demo); its stages write and hash the
supplement run and its judgments, its board requires them, and its dry run prices the supplement's
calls with the severe items judged k times."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_study
from tests.leaderboard_helpers import stand_in_dataset
from tide_bench.core.resources import resource_dir
from tide_bench.study import load_study
from tide_bench.study.estimate import judge_cost
from tide_bench.study.plan import cells, make_plan, stage_outputs
from tide_bench.study.spec import study_board

STUDY: dict[str, Any] = {
    "name": "battery",
    "split": "test",
    "models": [{"id": "chat", "model": "demo"}],
    "conditions": {"zero-shot": {}},
    "eval": {"backend": "hf", "device": "cpu", "max_gen_toks": 8},
    "judge": {"name": "claude-sonnet"},
    "board": {"spot_check_items": 0},
}


def _spec(tmp_path: Path, **kw: Any) -> Any:
    return load_study(write_study(tmp_path, copy.deepcopy(STUDY) | kw))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-STUDYBATTERY-0123456789")


def test_which_cells_answer_the_supplement(tmp_path: Path) -> None:
    tide = str(stand_in_dataset(tmp_path))
    on_tide = _spec(tmp_path, data=tide)
    model = on_tide.models[0]
    assert on_tide.answers_supplement(model) and not on_tide.answers_supplement(None)  # never the reference
    assert not _spec(tmp_path, data="sample").answers_supplement(model)  # the sample: only when asked
    assert _spec(tmp_path, data="sample", risk_supplement=True).answers_supplement(model)
    assert not _spec(tmp_path, data=tide, risk_supplement=False).answers_supplement(model)
    assert not _spec(tmp_path, data=tide, judge=None).answers_supplement(model)  # nothing to gate without a judge
    assert load_study(resource_dir("studies") / "demo.yaml").risk_supplement is True
    assert load_study(resource_dir("studies") / "pursuit_of_empathy.yaml").risk_supplement is True


def test_the_stages_write_and_hash_the_supplement_run_and_the_board_requires_it(tmp_path: Path) -> None:
    spec = _spec(tmp_path, data="sample", risk_supplement=True)
    model_cell, reference = cells(spec)
    assert stage_outputs(spec, model_cell, "eval") == {
        "run": "cells/chat-zero-shot/run",
        "risk_supplement": "cells/chat-zero-shot/risk_supplement/run",
    }
    judge = stage_outputs(spec, model_cell, "judge")
    assert judge["risk_supplement"] == "cells/chat-zero-shot/risk_supplement/run/judge"
    assert stage_outputs(spec, reference, "eval") == {"run": "cells/reference/run"}
    without = _spec(tmp_path, data="sample")
    eval_of = {s.cell.id: s for s in make_plan(spec, tmp_path / "out").stages if s.stage == "eval"}
    plain = {s.cell.id: s for s in make_plan(without, tmp_path / "out").stages if s.stage == "eval"}
    assert eval_of["chat-zero-shot"].fingerprint != plain["chat-zero-shot"].fingerprint  # redone when switched on
    assert eval_of["reference"].fingerprint == plain["reference"].fingerprint
    assert study_board(spec).require_risk_supplement is True and study_board(without).require_risk_supplement is False
    config = spec.supplement_eval_config(backend=None, model_args="pretrained=x", output_dir=tmp_path / "s", chat=True)
    assert (config.data, config.split, config.limit) == ("risk-supplement", "all", None)


def test_the_study_dry_run_prices_the_supplement_with_k_calls_per_severe_item(tmp_path: Path) -> None:
    spec = _spec(tmp_path, data="sample", risk_supplement=True)
    priced = judge_cost(make_plan(spec, tmp_path / "out"), 12)
    plain = judge_cost(make_plan(_spec(tmp_path, data="sample"), tmp_path / "out"), 12)
    assert priced is not None and plain is not None
    assert (
        "the risk supplement's 76 items, its 19 severe items judged 3 times (majority): 114 calls per cell"
        in (priced["method"])
    )
    assert priced["total_usd"] > plain["total_usd"]
