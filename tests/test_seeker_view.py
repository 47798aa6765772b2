"""The seeker's view (issue 49, part 4): the lay raters' perceived-empathy instrument
(``judges/perceived_empathy_v1.yaml``) as an automated judge (``--rubric perceived``), judged over
real HTTP (the fake judge server), priced by the dry run, and audited against lay human ratings with
``tide-bench audit``: like with like, the seeker's two questions, never the expert factors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.core.resources import resource_dir
from tide_bench.data import load_dataset
from tide_bench.judging import load_judge
from tide_bench.judging.prompt import system_text
from tide_bench.judging.rubric import load_rubric, rubric_path

KEY = "sk-ant-test-SEEKERVIEW-0123456789"
SEEKER = ("felt_understood", "felt_cared_for")
ITEMS = load_dataset("sample").items_for("all")


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _truth(i: int) -> int:
    return 1 + (i * 7) % 5


def test_the_lay_instrument_is_the_judges_rubric() -> None:
    judge = load_judge("claude-sonnet", rubric="perceived")
    assert rubric_path("perceived") == resource_dir("judges") / "perceived_empathy_v1.yaml"
    assert judge.rubric == load_rubric(resource_dir("judges") / "perceived_empathy_v1.yaml")  # one instrument
    assert tuple(judge.rubric.factor_keys) == SEEKER and judge.rubric.id == "tide-perceived-empathy"
    assert judge.version != load_judge("claude-sonnet").version  # a judgment says which view it is
    system = system_text(judge)
    assert "Answer as that person would feel" in system and "how understood would you feel" in system.lower()


def _lay_ratings(path: Path, rng: np.random.Generator) -> Path:
    with path.open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["item_id", "rater_id", "dimension", "score"])
        for i, item in enumerate(ITEMS):
            for r in range(3):
                for d in SEEKER:
                    w.writerow([item.item_id, f"lay{r}", d, int(np.clip(_truth(i) + rng.integers(-1, 2), 1, 5))])
    return path


def test_the_seekers_view_is_judged_priced_and_audited_against_lay_ratings(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    index = {item.item_id: i for i, item in enumerate(ITEMS)}
    run = make_run(tmp_path / "run", lambda it: f"Reply [[SCORES:{_truth(index[it.item_id])},"
                   f"{_truth(index[it.item_id])}]] {it.item_id}", split="all")  # fmt: skip
    out = tmp_path / "run" / "judge-seeker"
    base = ["judge", str(run), "--out", str(out), "--rubric", "perceived", "--base-url", server.url, "--yes"]
    priced = CliRunner().invoke(cli, [*base, "--dry-run"])
    assert priced.exit_code == 0, priced.output
    assert f"items: {len(ITEMS)}" in priced.output and server.total_calls == 0
    judged = CliRunner().invoke(cli, base)
    assert judged.exit_code == 0, judged.output
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(lines) == len(ITEMS) and all(set(x["scores"]) == set(SEEKER) for x in lines)
    assert {x["judge"]["rubric"] for x in lines} == {"tide-perceived-empathy@v1"}
    summary = json.loads((out / "judge_summary.json").read_text())
    assert set(summary["factors"]) >= set(SEEKER)

    ratings = _lay_ratings(tmp_path / "lay.csv", np.random.default_rng(5))
    audit = CliRunner().invoke(
        cli, ["audit", "--ratings", str(ratings), "--judgments", str(out / "judgments.jsonl"), "--resamples", "200",
              "--out", str(tmp_path / "audit")],
    )  # fmt: skip
    assert audit.exit_code == 0, audit.output
    report = json.loads((tmp_path / "audit" / "agreement.json").read_text())
    for d in SEEKER:
        block = report["dimensions"][d]
        assert block["n_items"] == len(ITEMS) and block["raters"] == ["lay0", "lay1", "lay2"]
        (judge,) = block["judges"].values()
        assert judge["vs_consensus"]["n"] == len(ITEMS)
        assert judge["alpha_with_judge"]["interval"]["value"] > 0.5  # the judge answered as the lay raters did
