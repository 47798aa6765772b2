"""The calibration protocol on the rating page (issue 26 item 5, review H6): a content note that
names suicide and self-harm, a support contact, breaks and a skip, the anchored instruction for
the trained panel, and the separate lay perceived-empathy instrument."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import launch_chromium, make_run
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.annotation.collect import collect_returns
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [make_run(tmp_path / "m", lambda i: f"Reply to {i.item_id}", split="all", model_name="org/m")]


def _page(tmp_path: Path, runs: list[Path], **kw) -> str:
    build_annotation(
        runs, tmp_path / "ann", AssignmentOptions(per_rater=4, raters=1, overlap=1, repeats=0, seed=1, **kw)
    )
    return html.unescape((tmp_path / "ann" / "rater-1.html").read_text())


def test_the_expert_page_names_suicide_and_self_harm_and_asks_for_anchored_ratings(tmp_path: Path, runs) -> None:
    page = _page(tmp_path, runs, support="Sam (study psychologist, 0000) or a crisis line in your country")
    note = page.split('id="content-note"', 1)[1].split("</div>", 1)[0]
    assert "suicidal thoughts, self-harm" in note and "skip" in note and "break" in note
    assert "Sam (study psychologist, 0000)" in note
    assert "when unsure between two numbers, choose the lower" in page
    assert "There are no right or wrong answers" not in page  # that instruction is the lay page's
    assert "What the right reply earns" in page and "A risk disclosure" in page  # rubric v3's mappings
    assert 'id="skip"' in page and '"break_every": 20' in page


def test_the_lay_instrument_is_a_separate_perceived_empathy_page(tmp_path: Path, runs) -> None:
    page = _page(tmp_path, runs, instrument="lay")
    assert "how understood would you feel by this reply?" in page
    assert "There are no right or wrong answers" in page and "choose the lower" not in page
    assert "Emotion recognition" not in page and "What the right reply earns" not in page
    assert "suicidal thoughts, self-harm" in page  # the same content note
    assignment = json.loads((tmp_path / "ann" / "assignment.json").read_text())
    assert [f["key"] for f in assignment["rubric"]["factors"]] == ["felt_understood", "felt_cared_for"]
    with pytest.raises(ConfigError, match="--instrument"):
        build_annotation(runs, tmp_path / "bad", AssignmentOptions(per_rater=2, raters=1, overlap=1, instrument="x"))


def test_annotate_warns_without_a_support_contact(tmp_path: Path, runs) -> None:
    args = ["annotate", "build", str(runs[0]), "--per-rater", "2", "--raters", "1", "--overlap", "1", "--out"]
    quiet = CliRunner().invoke(cli, [*args, str(tmp_path / "a"), "--support", "Sam, 0000"])
    loud = CliRunner().invoke(cli, [*args, str(tmp_path / "b"), "--instrument", "lay"])
    assert quiet.exit_code == loud.exit_code == 0, loud.output
    assert "no --support given" not in quiet.output and "no --support given" in loud.output


def test_real_browser_a_rater_can_skip_a_conversation_and_the_return_collects(tmp_path: Path, runs) -> None:
    ann = tmp_path / "ann"
    assignment = build_annotation(
        runs, ann, AssignmentOptions(per_rater=3, raters=1, overlap=1, repeats=0, seed=2, instrument="lay")
    )
    n = len(assignment["raters"][0]["sequence"])
    with launch_chromium() as chromium:
        context = chromium.new_context(accept_downloads=True)
        page = context.new_page()
        page.goto((ann / "rater-1.html").as_uri())
        page.check("#consent")
        page.click("#start")
        page.click("#skip")  # the first conversation is left unrated
        for _ in range(n - 1):
            for key in ("4", "3", "s"):
                page.keyboard.press(key)
            page.keyboard.press("n")
        assert page.is_visible("#done") and "(1 skipped)" in page.inner_text("#done-text")
        with page.expect_download() as download:
            page.click("#export")
        target = ann / "returns" / "rater-1.json"
        target.parent.mkdir()
        download.value.save_as(target)
    exported = json.loads(target.read_text())
    assert [r["position"] for r in exported["ratings"]] == list(range(1, n))
    assert exported["ratings"][0]["scores"] == {"felt_understood": 4, "felt_cared_for": 3}
    collection = collect_returns([str(target)], assignment_path=ann / "assignment.json")
    assert not collection.refused
