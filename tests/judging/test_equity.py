"""Equity across personas (issue 49): the persona attributes, the equity block, and the board's column,
section and chart.

The statistics' calibration is in ``tests/calibration/test_equity.py``; here: bad input (a persona
without the attribute, malformed metadata, a group of one persona) is named and counted, never
dropped; a gap the data plainly have is shown, with the groups named, and none is invented where the
groups score alike; a board carries the verdict into leaderboard.json, .csv, .md and the page.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import board, meta, synthetic_snapshot, tide_run, write_judgments
from tide_bench.core.group_gaps import NOT_GIVEN
from tide_bench.data.personas import age_group, persona_attributes
from tide_bench.judging.equity import equity_report
from tide_bench.judging.rubric import load_rubric
from tide_bench.leaderboard import build_site, create_submission


def test_attributes_name_every_persona_left_out_and_why() -> None:
    found = persona_attributes(
        [
            ("p1", {"age_group": "25-34", "gender": "Female ", "education": "bachelor", "trauma_type": "combat"}),
            ("p2", {"age": 67, "gender": ["a", "list"], "trauma_type": "fire"}),
            ("p3", None),
            ("p1", {"age_group": "25-34", "gender": "female", "education": "master", "trauma_type": "combat"}),
            ("p4", {"age": "old", "gender": "male", "education": "x" * 200, "trauma_type": ""}),
        ]
    )
    assert found.values["age_group"] == {"p1": "25-34", "p2": "65+", "p3": None, "p4": None}
    assert found.values["gender"] == {"p1": "female", "p2": None, "p3": None, "p4": "male"}
    assert found.values["education"] == {"p1": None, "p2": None, "p3": None, "p4": None}
    text = "\n".join(found.notes)
    assert "p2): 'gender' is a list, not a single value" in text
    assert "(p1): its items give different values" in text  # two metadata files disagree
    assert "'age' is 'old', not an age in years" in text
    assert "'education' is free text" in text and "'trauma_type' is empty" in text
    assert "(p2, p3): has no 'education' field" in text
    assert found.n_without("education") == 4


def test_age_bands() -> None:
    assert [age_group(a) for a in (17, 18, 24, 25, 64.5, 65, 101, -1, True, "30", float("nan"))] == [
        "under 18",
        "18-24",
        "18-24",
        "25-34",
        None,
        "65+",
        "65+",
        None,
        None,
        None,
        None,
    ]


def _items(
    n_personas: int, per: int, meta_of: Any, score_of: Any, flag_of: Any = lambda p, i: 0.0
) -> tuple[list[str], list[Any], np.ndarray, np.ndarray]:
    personas, metas, adjusted, harm = [], [], [], []
    for p in range(n_personas):
        for i in range(per):
            personas.append(f"p{p:03d}")
            metas.append(meta_of(p))
            adjusted.append(score_of(p, i))
            harm.append(flag_of(p, i))
    return personas, metas, np.array(adjusted, dtype=float), np.array(harm, dtype=float)


def _meta(p: int) -> dict[str, Any]:
    return {
        "age_group": "25-34" if p % 2 else "65+",
        "gender": "female" if p % 3 else "male",
        "trauma_type": "combat",
        **({} if p == 0 else {"education": "bachelor" if p % 5 else "master"}),
    }


def test_a_plain_gap_is_shown_with_its_groups_and_none_is_invented() -> None:
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.3, 60 * 4)
    older_lower = _items(60, 4, _meta, lambda p, i: 3.5 + noise[4 * p + i] - (1.0 if p % 2 == 0 else 0.0))
    report = equity_report(*older_lower)
    verdict = report["verdict"]
    assert verdict["shown"] and verdict["text"].startswith("gap of 0.98 [0.88, 1.08]")
    assert "safety-adjusted score, age group: 25-34 above 65+" in verdict["text"]
    assert verdict["gap"]["ci_low"] > 0.5 and verdict["gap"]["ci_high"] < 1.5
    alike = equity_report(*_items(60, 4, _meta, lambda p, i: 3.5 + noise[4 * p + i]))
    assert not alike["verdict"]["shown"] and alike["verdict"]["text"].startswith("no gap shown (largest: ")
    assert alike["n_comparisons"] == report["n_comparisons"] > 0


def test_a_group_of_one_persona_and_personas_without_the_attribute_are_counted_not_compared() -> None:
    report = equity_report(*_items(30, 3, _meta, lambda p, i: 3.0 + (p % 7) / 7))
    education = {g["value"]: g for g in report["groups"]["education"]}
    assert education[NOT_GIVEN]["n_personas"] == 1 and not education[NOT_GIVEN]["estimable"]
    assert education[NOT_GIVEN]["safety_adjusted_empathy"]["mean"] is not None  # shown, without an interval
    assert education[NOT_GIVEN]["safety_adjusted_empathy"]["ci_low"] is None
    assert education["master"]["n_personas"] == 5 and not education["master"]["estimable"]
    assert {g["value"] for g in report["groups"]["trauma_type"]} == {"combat"}  # one group: nothing to compare
    notes = "\n".join(report["notes"])
    assert "(p000): has no 'education' field; counted under 'not given' for education" in notes
    assert "education 'master': 5 persona(s), fewer than 10: not estimable" in notes
    assert all(g["attribute"] != "education" for g in report["gaps"])
    assert sum(g["n_items"] for g in report["groups"]["education"]) == 90  # every item counted somewhere


def test_nothing_comparable_says_why() -> None:
    report = equity_report(*_items(3, 4, _meta, lambda p, i: 3.0))
    verdict = report["verdict"]
    assert not verdict["estimable"] and report["n_comparisons"] == 0
    assert verdict["text"].startswith("not estimable: no attribute has two groups of at least 10 personas")
    assert "age group (25-34 1, 65+ 2)" in verdict["text"]


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=120),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.one_of(
                st.none(),
                st.dictionaries(st.sampled_from(["age", "age_group", "gender", "education", "trauma_type"]), scalars),
            ),
        ),
        max_size=12,
    )
)
def test_any_metadata_gives_values_or_notes_never_a_traceback(pairs: list[tuple[str, Any]]) -> None:
    found = persona_attributes(pairs)
    for values in found.values.values():
        assert all(v is None or (isinstance(v, str) and 0 < len(v) <= 80) for v in values.values())
        assert set(values) == {p for p, _ in pairs}
    if pairs:
        report = equity_report(
            [p for p, _ in pairs], [m for _, m in pairs], np.full(len(pairs), 3.0), np.zeros(len(pairs)), resamples=50
        )
        assert report["verdict"]["text"]


def test_the_study_report_has_a_row_per_judged_cell() -> None:
    from tide_bench.study.document import to_markdown
    from tide_bench.study.report import equity_blocks

    noise = np.random.default_rng(5).normal(0, 0.3, 240)
    uneven = equity_report(*_items(60, 4, _meta, lambda p, i: 3.5 + noise[4 * p + i] - (p % 2 == 0)))
    even = equity_report(*_items(30, 3, _meta, lambda p, i: 3.0 + (p % 7) / 7))
    text = to_markdown("Study", equity_blocks({"m-zero-shot": uneven, "m-fine-tuned": even}))
    assert (
        "## Equity across personas" in text
        and "| cell | verdict | age group | gender | trauma type | education |" in text
    )
    assert "| m-zero-shot | gap of 0.99 [0.89, 1.10]" in text and "(25-34 > 65+)" in text
    assert "| m-fine-tuned | no gap shown" in text and "not estimable" in text  # education: groups too small
    assert "Not compared: " in text and "has no 'education' field" in text
    assert equity_blocks({}) == []


# --- on the board ---------------------------------------------------------------------------------


def _board_meta(k: int) -> dict[str, Any]:
    return {"gender": "female" if k % 2 else "male", "age_group": "25-34" if k % 4 < 2 else "45-54"}


def _entry(tmp: Path, data: Path, sid: str, female_bonus: int) -> Path:
    rubric = load_rubric()
    run = tide_run(tmp / f"run-{sid}", lambda i: f"Reply {sid} {i.item_id}", data, model_name=f"org/{sid}")
    metas = {p.stem.split("_")[0]: json.loads(p.read_text()) for p in (data / "metadata").glob("*.json")}

    def scores(k: int, gen: Any) -> dict[str, int]:
        base = 2 + k % 3  # 2..4, varying within every persona
        bonus = female_bonus if metas[gen.persona_id]["gender"] == "female" else 0
        return dict.fromkeys(rubric.factor_keys, min(5, base + bonus))

    write_judgments(run, rubric, scores)
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid)))
    return create_submission(run, meta_path, tmp / "submissions", board=board(), spot_checks=False).folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("equity")
    data = synthetic_snapshot(tmp, 40, 3, _board_meta, name="-equity")
    _entry(tmp, data, "fair-model", 0)
    _entry(tmp, data, "uneven-model", 1)
    build_site(tmp / "submissions", tmp / "site", board(), allow_risk_gate_off=True, workers=1)
    return tmp / "site"


def test_the_board_shows_each_entrys_verdict_in_every_export(built: Path) -> None:
    rows = {r["id"]: r for r in json.loads((built / "leaderboard.json").read_text())["rows"]}
    uneven, fair = rows["uneven-model"]["equity"]["verdict"], rows["fair-model"]["equity"]["verdict"]
    assert uneven["shown"] and "gender: female above male" in uneven["text"], uneven
    assert not fair["shown"] and fair["text"].startswith("no gap shown"), fair
    exported = {r["id"]: r for r in csv.DictReader((built / "leaderboard.csv").open())}
    assert exported["uneven-model"]["equity_gap"] == uneven["text"]
    md = (built / "leaderboard.md").read_text()
    assert "| Equity gap |" in md and "gap of 1.00" in md
    page = (built / "index.html").read_text()
    assert 'id="equity"' in page and "Equity across personas" in page
    assert "uneven" in page and "largest gap in the safety-adjusted score" in page  # the chart
    assert "&#9888; gap of 1.00" in page  # the table cell marks a shown gap
    model_page = (built / "models" / "uneven-model.html").read_text()
    assert "Equity across personas" in model_page and "Gaps shown:" in model_page
