"""People rate safety too (issue 19 item 2): the rating page renders rubric v2 and the safety
question from the one rubric file; collection writes the answer as the binary ``safety``
dimension; the audit reports nominal alpha and the judge's sensitivity and specificity."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agreement.test_agreement import DOMAIN, KRIPPENDORFF_2011
from tests.helpers import make_run, rater_payload
from tide_bench.agreement import AuditOptions, run_audit
from tide_bench.agreement.alpha import alpha_from_coincidences, alpha_replicates, krippendorff_alpha, unit_coincidences
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.annotation.collect import checksum, collect_returns, write_outputs
from tide_bench.judging import load_rubric

OPTS = AssignmentOptions(per_rater=6, raters=3, overlap=2, repeats=1, seed=5, rubric="v2")


def rubric_path(version: str) -> Path:
    from tide_bench.judging.rubric import rubric_path as path

    return path(version)


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [make_run(tmp_path / "model-a", lambda i: f"Reply A to {i.item_id}", split="all", model_name="org/model-a")]


# ------------------------------------------------------------------ the page


def test_the_page_renders_rubric_v2_and_asks_the_safety_question(tmp_path: Path, runs: list[Path]) -> None:
    build_annotation(runs, tmp_path / "ann", OPTS)
    page = html.unescape((tmp_path / "ann" / "rater-1.html").read_text())
    rubric = load_rubric(rubric_path("v2"))
    for text in [*rubric.rules, rubric.examples_context, rubric.safety_question, rubric.safety_note]:
        assert " ".join(text.split()) in page, text
    for f in rubric.factors:
        assert all(f"Cap: {cap}" in page for cap in f.caps) and all(example in page for example in f.examples.values())
    assert 'id="fs-safety"' in page and 'id="safety-yes"' in page and 'id="safety-no"' in page
    assert all(f'<option value="{code}">' in page for code in rubric.safety_categories)
    assert "<kbd>y</kbd> yes, could harm" in page
    assignment = json.loads((tmp_path / "ann" / "assignment.json").read_text())
    assert assignment["rubric"]["version"] == 2 and assignment["rubric_sha256"] == rubric.content_hash()


def test_a_v1_page_asks_the_safety_question_without_categories(tmp_path: Path, runs: list[Path]) -> None:
    build_annotation(runs, tmp_path / "ann", AssignmentOptions(**{**vars(OPTS), "rubric": "v1"}))
    page = html.unescape((tmp_path / "ann" / "rater-1.html").read_text())
    v1 = load_rubric(rubric_path("v1"))
    assert 'id="fs-safety"' in page and v1.safety_flag_if[0] in page
    assert 'id="safety-category"' not in page and "How to rate" not in page


# ------------------------------------------------------------------ collection


def _return(folder: Path, rater: str, safety: Any) -> Path:
    def rating(p: int, u: str, factors: list[str]) -> dict[str, Any]:
        one: dict[str, Any] = {"position": p, "unit_id": u, "scores": {f: 3 for f in factors}}
        answer = safety(p) if callable(safety) else safety
        if answer is not None:
            one["safety"] = answer
        return one

    payload = rater_payload(folder, rater, rating)
    payload["checksum"] = checksum(payload)
    path = folder / "returns" / f"{rater}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def test_collect_writes_the_safety_answer_as_a_binary_dimension(tmp_path: Path, runs: list[Path]) -> None:
    ann = tmp_path / "ann"
    build_annotation(runs, ann, OPTS)
    answer = lambda p: {"flagged": p == 0, "category": "retraumatising" if p == 0 else None}  # noqa: E731
    c = collect_returns([_return(ann, f"rater-{r}", answer) for r in (1, 2, 3)])
    assert c.refused == {}
    safety = [row for row in c.rows if row[2] == "safety"]
    assert len(safety) == 3 * 6 and sum(row[3] for row in safety) == 3  # first showings only, one flag per rater
    write_outputs(c, tmp_path / "human.csv", None)
    rows = list(csv.DictReader((tmp_path / "human.csv").open()))
    flagged = [r for r in rows if r["dimension"] == "safety" and r["score"] == "1"]
    assert len(flagged) == 3 and {r["safety_category"] for r in flagged} == {"retraumatising"}
    assert all(r["safety_category"] == "" for r in rows if r["dimension"] != "safety")


@pytest.mark.parametrize(
    ("safety", "message"),
    [
        ({"flagged": "yes"}, "'safety' must be an object"),
        ({"flagged": False, "category": "retraumatising"}, "goes with a raised flag"),
        ({"flagged": True, "category": "rudeness"}, "goes with a raised flag and is one of"),
        ({"flagged": True, "category": None, "extra": 1}, "'safety' must be an object"),
        ([True], "'safety' must be an object"),
    ],
)
def test_collect_refuses_a_malformed_safety_answer(tmp_path: Path, runs: list[Path], safety: Any, message: str) -> None:
    ann = tmp_path / "ann"
    build_annotation(runs, ann, OPTS)
    c = collect_returns(
        [_return(ann, "rater-1", safety), _return(ann, "rater-2", {"flagged": False, "category": None})]
    )
    refused = c.refused[str(ann / "returns" / "rater-1.json")]
    assert message in refused and "ratings[0].safety" in refused
    assert "rater-2" in c.raters  # the other file is still merged


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(answer=st.one_of(JSON, st.fixed_dictionaries({"flagged": JSON, "category": JSON})))
def test_fuzzed_safety_answers_give_a_clear_refusal_or_a_merge(
    tmp_path_factory: pytest.TempPathFactory, answer: Any
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    run = make_run(tmp / "model-a", lambda i: f"Reply to {i.item_id}", split="all")
    ann = tmp / "ann"
    build_annotation([run], ann, AssignmentOptions(per_rater=2, raters=1, overlap=1, repeats=0, seed=1))
    c = collect_returns([_return(ann, "rater-1", answer)])
    if c.refused:
        assert "safety" in next(iter(c.refused.values()))
    else:
        assert answer is None or (isinstance(answer, dict) and isinstance(answer.get("flagged"), bool))


# ------------------------------------------------------------------ the audit


def test_nominal_alpha_matches_krippendorffs_worked_example() -> None:
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal", DOMAIN) == pytest.approx(
        0.743, abs=5e-4
    )  # Krippendorff (2011)
    ours = alpha_from_coincidences(unit_coincidences(KRIPPENDORFF_2011, DOMAIN).sum(axis=0)[None], "nominal", DOMAIN)[0]
    assert ours == pytest.approx(0.743, abs=5e-4)
    rng = np.random.default_rng(4)
    data = (rng.random((4, 90)) < 0.3).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=[0.0, 1.0])
    ours = alpha_from_coincidences(unit_coincidences(data, [0.0, 1.0]).sum(axis=0)[None], "nominal", [0.0, 1.0])[0]
    assert ours == pytest.approx(expected, abs=1e-10)


def _simulate(
    rng: np.random.Generator, n: int, raters: int = 3, prevalence: float = 0.15, accuracy: float = 0.8
) -> np.ndarray:
    """Binary flags: each rater reports the true flag with probability ``accuracy``, else a random one."""
    truth = rng.random(n) < prevalence
    data = np.where(rng.random((raters, n)) < accuracy, truth[None, :], rng.random((raters, n)) < prevalence).astype(
        float
    )
    data[rng.random(data.shape) < 0.1] = np.nan
    return data


def test_nominal_alpha_interval_covers_at_the_nominal_rate() -> None:
    """Seeded simulation: the item-bootstrap interval of nominal alpha covers the population value
    (from 200,000 simulated items) about 95 % of the time with 100 items and rare flags."""
    truth = krippendorff_alpha(_simulate(np.random.default_rng(0), 200_000), "nominal", [0.0, 1.0])
    hits = 0
    reps = 300
    for rep in range(reps):
        estimate, _ = alpha_replicates(
            _simulate(np.random.default_rng(1000 + rep), 100), "nominal", [0.0, 1.0], resamples=500, seed=rep
        )
        hits += estimate.ci_low is not None and estimate.ci_low <= truth <= estimate.ci_high
    assert 0.90 <= hits / reps <= 0.985, hits / reps


def _judgment(item: str, flagged: bool) -> dict:
    keys = ("emotion_recognition", "distress_normalization", "supportive_reflection")
    return {
        "item_id": item,
        "status": "scored",
        "judge": {"name": "j", "version": "v" * 16},
        "scores": dict.fromkeys(keys, 3),
        "safety": {
            "flagged": flagged,
            "reason": "x" if flagged else "",
            "category": "risk_mishandled" if flagged else "none",
        },
    }


def test_the_audit_treats_safety_as_a_binary_dimension(tmp_path: Path) -> None:
    # 10 items, 3 people; majority flags items 0-3; item 9 is a 1-1 tie (third rater missing).
    people = {
        "h1": [1, 1, 1, 1, 0, 0, 0, 0, 0, 1],
        "h2": [1, 1, 1, 0, 0, 0, 0, 1, 0, 0],
        "h3": [1, 1, 0, 1, 0, 0, 0, 0, 0, None],
    }
    judge = [1, 1, 0, 0, 0, 0, 1, 0, 0, 1]
    lines = ["item_id,rater_id,dimension,score"]
    for rater, flags in people.items():
        for i, flag in enumerate(flags):
            lines.append(f"i{i},{rater},emotion_recognition,{1 + (i + len(rater)) % 5}")
            if flag is not None:
                lines.append(f"i{i},{rater},safety,{flag}")
    (tmp_path / "human.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "j.jsonl").write_text(
        "".join(json.dumps(_judgment(f"i{i}", bool(f))) + "\n" for i, f in enumerate(judge))
    )
    result = run_audit(
        tmp_path / "human.csv",
        tmp_path / "audit",
        judgments=[tmp_path / "j.jsonl"],
        options=AuditOptions(resamples=200, plot=False),
    )
    assert "safety" not in result["dimensions"] and result["scale"]["domain"] == [
        1,
        2,
        3,
        4,
        5,
    ]  # not a factor, not on 1-5
    safety = result["safety"]
    data = np.array([[np.nan if f is None else f for f in flags] for flags in people.values()], dtype=float)
    assert safety["alpha"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )
    pooled = np.vstack([data, np.array(judge, dtype=float)[None, :]])
    j = safety["judges"]["judge:j@vvvvvvvv"]
    assert j["alpha_with_judge"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=pooled, level_of_measurement="nominal")
    )
    vm = j["vs_majority"]
    assert (safety["n_items_flagged_by_majority"], safety["n_items_tied"], vm["n"]) == (4, 1, 9)
    assert vm["sensitivity"]["mean"] == pytest.approx(2 / 4) and vm["specificity"]["mean"] == pytest.approx(4 / 5)
    assert vm["agreement"]["mean"] == pytest.approx(6 / 9) and j["flag_rate"]["mean"] == pytest.approx(0.4)
    md = (tmp_path / "audit" / "agreement.md").read_text()
    assert "## safety (binary: could the reply harm?)" in md and "sensitivity 0.50" in md
