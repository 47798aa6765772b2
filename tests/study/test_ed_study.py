"""The Loh & Raamkumar comparison as a study: ED data, the human row, the EPITOME stages, and
the verdict against people. The end-to-end run (demo model, fake judges, tiny scorer) is slow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.epitome_helpers import ED_FIXTURE
from tests.helpers import launch_chromium, sideways_scroll
from tide_bench.core.errors import ConfigError
from tide_bench.study import load_study, make_plan
from tide_bench.study.people import verdict
from tide_bench.study.plan import CELL_STAGES, JUDGE_STAGES
from tide_bench.study.spec import study_board


def _block(d: float, low: float, high: float) -> dict:
    return {"difference": d, "ci_low": low, "ci_high": high, "n": 10}


def _emotions(signs: list[int]) -> dict:
    return {f"e{i}": {"difference": 0.3 * s, "n": 3} for i, s in enumerate(signs)}


@pytest.mark.parametrize(
    ("overall", "signs", "expected"),
    [
        (_block(0.4, 0.1, 0.7), [1, 1, 1, 1, 1, 1], "holds"),
        (_block(-0.4, -0.7, -0.1), [-1, -1, -1, -1, -1, -1, 1, -1, -1], "reversed"),  # 8 of 9 behind
        (_block(0.4, -0.1, 0.9), [1, 1, 1, 1, 1, 1], "not established"),  # overall CI crosses 0
        (_block(0.4, 0.1, 0.7), [1, 1, 1, -1, -1, -1], "not established"),  # not most emotions
        (_block(0.4, 0.1, 0.7), [1, 1, 1, 1], "not established"),  # 4 emotions: the sign test cannot reach .05
    ],
)
def test_the_verdict_follows_the_rule_fixed_in_advance(overall: dict, signs: list[int], expected: str) -> None:
    result = verdict(overall, _emotions(signs))
    assert result["verdict"] == expected and result["scenarios"] == len(signs)


def _study(tmp_path: Path, **extra) -> Path:
    study = {
        "name": "ed-mini",
        "data": f"ed:{ED_FIXTURE}",
        "split": "validation",
        "prompt": "ed",
        "models": [{"id": "chat", "model": "demo", "model_args": {"dtype": "float32"}}],
        "conditions": {
            "zero-shot": {},
            "fine-tuned": {
                "lora": {"max_steps": 2, "eval_steps": 2, "batch_size": 1, "grad_accum": 1, "learning_rate": 0.02}
            },
        },
        "eval": {"backend": "hf", "device": "cpu", "batch_size": 8, "max_gen_toks": 8},
        "board": {"config": "leaderboard/ed.yaml", "demo": True, "require_judgments": False, "min_scored_items": 1},
    } | extra
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def test_the_shipped_ed_study_loads_and_its_board_uses_ed_splits_and_ranks_people() -> None:
    spec = load_study("studies/ed_llms_vs_people.yaml")
    assert spec.task == "ed_empathy_first_turn" and spec.reference and spec.epitome and spec.epitome_judge
    board = study_board(spec)
    assert board.split_version is None and board.prompt_conditions == ["ed"] and board.rank_reference
    assert load_study("studies/ed_demo.yaml").epitome == {"model": "models/epitome-demo"}


def test_the_epitome_stages_are_planned_only_when_the_study_names_them(tmp_path: Path) -> None:
    plain = make_plan(load_study(_study(tmp_path)), tmp_path / "out")
    assert {s.stage for s in plain.stages} == {"finetune", "eval", "submit"}
    spec = load_study(
        _study(
            tmp_path,
            epitome={"model": str(tmp_path / "scorer")},
            epitome_judge={"name": "local", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
        )
    )
    stages = [s.stage for s in make_plan(spec, tmp_path / "out").for_cell("reference")]
    assert stages == ["eval", "epitome", "epitome_judge", "submit"]
    # the local scorer is per-cell model work (the executor's workers); the EPITOME judge runs once
    # over every cell in the study process, like the TIDE judge
    assert "epitome" in CELL_STAGES and "epitome_judge" in JUDGE_STAGES and "epitome_judge" not in CELL_STAGES


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"epitome": {"path": "x"}}, "epitome.path"),
        ({"epitome": {}}, "epitome"),
        ({"epitome_judge": {}}, "epitome_judge"),
    ],
)
def test_bad_epitome_settings_are_refused_with_the_field(tmp_path: Path, extra: dict, where: str) -> None:
    with pytest.raises(ConfigError, match=f"field '{where}'"):
        load_study(_study(tmp_path, **extra))


@pytest.mark.slow
def test_the_ed_study_runs_end_to_end_on_cpu_with_the_human_row_on_its_board(
    tmp_path: Path, demo_model_dir: Path, epitome_model: Path
) -> None:
    from tests.fakes.llm_server import FakeLLMServer
    from tide_bench.demo.model import resolve_model
    from tide_bench.study import run_study

    server = FakeLLMServer().start()
    try:
        judge = {"name": "local", "model": "fake-judge", "base_url": server.url + "/v1"}
        spec = load_study(_study(tmp_path, judge=judge, epitome_judge=judge, epitome={"model": str(epitome_model)}))
        out = tmp_path / "out"
        result = run_study(spec, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        again = run_study(spec, out, resolve_model=resolve_model, echo=lambda _: None, progress=False, report=False)
    finally:
        server.stop()
    assert result.failed == {}, result.failed
    planned = [f"{s.cell.id}/{s.stage}" for s in result.plan.stages]
    assert sorted(result.ran) == sorted(planned) and len(set(result.ran)) == len(result.ran)  # each once, none lost
    assert {label.split("/")[1] for label in planned} >= {"epitome", "judge", "epitome_judge"}
    assert again.ran == [] and sorted(again.skipped) == sorted(planned)  # a rerun redoes nothing
    assert (out / "judge-epitome" / "cache.sqlite").is_file()  # the EPITOME judge's one study-level stage
    rows = json.loads((out / "site" / "leaderboard.json").read_text())["rows"]
    human = next(r for r in rows if r["condition"] == "reference")
    assert human["model_name"] == "EmpatheticDialogues listeners (human)" and human["rank"] is not None
    assert all(r["epitome_er"]["mean"] is not None for r in rows)  # the reference-free columns, on every row
    index = (out / "site" / "index.html").read_text()
    assert "EPITOME ER" in index and '<section id="people-report"' in index
    people = json.loads((out / "report" / "people.json").read_text())
    measures = {m for c in people["comparisons"] for m in c["measures"]}
    assert {"epitome_er", "epitome_total", "judge_er", "judge_epitome_total", "empathy"} <= measures
    assert all(
        m["verdict"] in ("holds", "reversed", "not established")
        for c in people["comparisons"]
        for m in c["measures"].values()
    )
    assert people["synthetic"].startswith("a synthetic fixture in EmpatheticDialogues' layout")  # U2
    text = (out / "report" / "people.md").read_text()
    assert "> **Built on a synthetic fixture" in text and "Not a finding: the data is a synthetic fixture" in text
    section = index[index.index('<section id="people-report"') :]
    section = section[: section.index("</section>")]
    assert "---" not in section and "**" not in section and "Built on a synthetic fixture" in section  # U1
    assert "The finding holds for" not in text
    run = out / "cells" / "reference" / "run"
    assert (run / "epitome.json").is_file() and (run / "judge-epitome" / "judgments.jsonl").is_file()
    _people_section_in_a_browser(out / "site" / "index.html")


def _people_section_in_a_browser(index: Path) -> None:
    """U1, U4 (new-user round 3): the people section's tables render as tables, its banner shows, and
    nothing on the board scrolls sideways at a desktop or a phone's width (the table scrolls in its frame)."""
    with launch_chromium() as chromium:
        for width in (1400, 390):
            page = chromium.new_page(viewport={"width": width, "height": 900})
            page.goto(index.as_uri())
            section = page.locator("#people-report")
            assert section.locator("table").count() >= 1 and section.locator("tbody tr").count() >= 1
            shown = section.inner_text()
            assert "Built on a synthetic fixture" in shown and "|---" not in shown and "**" not in shown
            assert sideways_scroll(page) == 0, width
            page.close()


def test_fine_tuning_on_ed_train_is_allowed_and_a_test_conversation_in_it_is_refused(tmp_path: Path) -> None:
    """ED's crowd workers speak in every split (the release splits conversations, not speakers);
    what must not leak into training is a test conversation."""
    import shutil

    from tide_bench.core.errors import DataError
    from tide_bench.data.sources import _load_cached
    from tide_bench.finetune.config import FinetuneConfig
    from tide_bench.finetune.train import load_training_data

    data = load_training_data(FinetuneConfig(model="m", data=f"ed:{ED_FIXTURE}", out=tmp_path / "a"))
    assert len(data.train_items) == 24 and len(data.validation_items) == 8
    leaky = tmp_path / "ed"
    shutil.copytree(ED_FIXTURE, leaky)
    test_rows = [line for line in (leaky / "test.csv").read_text().splitlines()[1:] if line.startswith("hit:200_")]
    with (leaky / "train.csv").open("a") as handle:
        handle.write("\n".join(test_rows) + "\n")
    _load_cached.cache_clear()
    # refused as soon as the release is read (a conversation in two splits), before any training
    with pytest.raises(DataError, match=r"conversation hit:200_conv:400 is also in .*train\.csv"):
        load_training_data(FinetuneConfig(model="m", data=f"ed:{leaky}", out=tmp_path / "b"))


def test_the_comparison_gives_no_verdict_an_unvalidated_scorer_or_one_conversation_cannot_support() -> None:
    """U2 (new-user round 3): "holds" was announced on 8 synthetic conversations (one per emotion, no
    interval) scored by an EPITOME scorer trained without cross-validation, with no word of either."""
    from tide_bench.study.document import to_html
    from tide_bench.study.people import NOT_VALIDATED, blocks, markdown, scorer_validation

    one = {"difference": 0.5, "ci_low": None, "ci_high": None, "n": 1}
    measure = {
        "label": "EPITOME ER (local scorer, 0-2)", "instrument": "epitome scorer",
        "model": {"mean": 1.2, "ci_low": 1.0, "ci_high": 1.4, "n": 8},
        "difference": {"difference": 0.4, "ci_low": 0.1, "ci_high": 0.7, "n": 8},
        "by_scenario": {f"emotion{k}": one for k in range(8)},
        "verdict": NOT_VALIDATED, "rule_outcome": "holds", "scenarios": 8, "ahead": 8, "behind": 0,
        "sign_test_p": 0.004, "sign_test_p_reversed": 1.0,
    }  # fmt: skip
    result = {
        "study": "ed-demo", "data": "ed:tests/fixtures/ed", "question": "Q?", "rule": "R",
        "synthetic": "a synthetic fixture in EmpatheticDialogues' layout",
        "people": {"epitome_er": {"mean": 0.8, "ci_low": 0.6, "ci_high": 1.0, "n": 8}},
        "comparisons": [{"cell": "m", "label": "m (zero-shot)", "condition": "zero-shot",
                         "scorer": scorer_validation(None), "measures": {"epitome_er": measure,
                                                                          "epitome_total": measure}}],
    }  # fmt: skip
    text = markdown(result)
    assert "**holds**" not in text and "scorer not validated (no cross-validation)" in text
    assert "scorer not validated (the rule alone: holds)" in text
    assert "+0.50 (n = 1: no interval)" in text and "Not a finding" in text and "The finding holds" not in text
    html = to_html(blocks(result))
    assert "<b>" not in html.split("Verdicts")[1].split("</table>")[0]  # no verdict word in bold
    assert scorer_validation({"cv_macro_f1": {"er": 0.75, "ip": 0.59, "ex": 0.71}}).startswith("cross-validated")
