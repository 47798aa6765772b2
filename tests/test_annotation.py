"""Assignment (overlap, blinding, determinism), collection (every refusal), and the page in a
real browser: demographics, keyboard rating, reload, export, then collect + audit."""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers import launch_chromium, make_run, rater_payload
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.annotation.collect import checksum, collect_returns
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    a = make_run(tmp_path / "model-a", lambda i: f"Reply A to {i.item_id}", split="all", model_name="org/model-a")
    b = make_run(tmp_path / "model-b", lambda i: f"Reply B to {i.item_id}", split="all", model_name="org/model-b")
    return [a, b]


OPTS = AssignmentOptions(per_rater=12, raters=4, overlap=2, repeats=2, seed=7)


def test_assignment_guarantees_overlap_and_is_deterministic(tmp_path: Path, runs: list[Path]) -> None:
    a = build_annotation(runs, tmp_path / "ann", OPTS)
    assert len(a["units"]) == 12 * 4 // 2
    counts = Counter(u for r in a["raters"] for u in set(r["sequence"]))
    assert set(counts.values()) == {2}  # every unit rated by exactly `overlap` distinct raters
    for r in a["raters"]:
        assert len(r["sequence"]) == 12 + 2 and len(set(r["sequence"])) == 12
        assert all(r["sequence"].count(u) == 2 for u in r["repeated"])
    assert {u["run"] for u in a["units"].values()} == {"model-a", "model-b"}
    assert len({(u["scenario"], u["turn"]) for u in a["units"].values()}) >= 8  # stratified
    again = build_annotation(runs, tmp_path / "ann2", OPTS)
    assert again["raters"] == a["raters"] and again["assignment_id"] == a["assignment_id"]


def test_pages_are_blinded_and_self_contained(tmp_path: Path, runs: list[Path]) -> None:
    build_annotation(runs, tmp_path / "ann", OPTS)
    page = (tmp_path / "ann" / "rater-1.html").read_text()
    assert "model-a" not in page and "model-b" not in page and "org/model" not in page
    assert "http://" not in page and "https://" not in page
    assert "Distress normalization" in page and "consent" in page
    rubric = json.loads((tmp_path / "ann" / "assignment.json").read_text())["rubric"]
    assert rubric["factors"][0]["anchors"]["5"] in html.unescape(page)  # same wording as the judge


def test_assignment_refuses_impossible_plans(tmp_path: Path, runs: list[Path]) -> None:
    with pytest.raises(ConfigError, match="needs"):
        build_annotation(runs, tmp_path / "x", AssignmentOptions(per_rater=200, raters=5, overlap=1))
    with pytest.raises(ConfigError, match="--overlap"):
        build_annotation(runs, tmp_path / "x", AssignmentOptions(per_rater=4, raters=2, overlap=3))


def _return_file(folder: Path, rater: str, *, tamper=None, drop: int = 0) -> Path:
    payload = rater_payload(
        folder,
        rater,
        lambda p, u, factors: {
            "position": p,
            "unit_id": u,
            "scores": {f: 1 + (p + k) % 5 for k, f in enumerate(factors)},
            "safety": {"flagged": p % 5 == 0, "category": "risk_mishandled" if p % 5 == 0 else None},
        },
        demographics={
            "age_group": "55-64" if rater in ("rater-1", "rater-2") else "25-34",
            "gender": "woman",
            "education": "",
            "comments": "",
        },
    )
    payload["ratings"] = payload["ratings"][: payload["n_items"] - drop]
    if tamper:
        tamper(payload)
    payload.setdefault("checksum", checksum(payload))
    path = folder / "returns" / f"{rater}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def test_collection_merges_and_reports(tmp_path: Path, runs: list[Path]) -> None:
    ann = tmp_path / "ann"
    build_annotation(runs, ann, OPTS)
    files = [_return_file(ann, f"rater-{r}", drop=1 if r == 4 else 0) for r in range(1, 5)]
    c = collect_returns(files)
    assert c.refused == {} and len(c.raters) == 4
    assert c.missing["rater-4"] == [13] and c.missing["rater-1"] == []
    assert all(row[0].split("/", 1)[0] in ("model-a", "model-b") for row in c.rows)
    assert c.self_consistency["rater-1"]["n_pairs"] >= 3
    assert c.coverage["units"] == 24 and c.coverage["units_with_target"] >= 22


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("tampered", "checksum mismatch"),
        ("wrong-assignment", "belongs to assignment"),
        ("unknown-rater", "unknown rater"),
        ("out-of-scale", "outside 1..5"),
        ("wrong-position", "does not match the assignment"),
        ("duplicate-rater", "a second file from rater-1"),
        ("consent-not-true", "did not give consent"),
        ("no-consent", "did not give consent"),
    ],
)
def test_collection_refusals(tmp_path: Path, runs: list[Path], case: str, message: str) -> None:
    ann = tmp_path / "ann"
    build_annotation(runs, ann, OPTS)
    tamper = {
        "tampered": lambda p: (
            p.update(checksum=checksum(p))
            or p["ratings"][0]["scores"].update(
                emotion_recognition=5 if p["ratings"][0]["scores"]["emotion_recognition"] != 5 else 4
            )
        ),
        "wrong-assignment": lambda p: p.update(assignment_id="0" * 16),
        "unknown-rater": lambda p: p.update(rater_id="rater-99"),
        "out-of-scale": lambda p: p["ratings"][0]["scores"].update(emotion_recognition=9),
        "wrong-position": lambda p: p["ratings"][0].update(unit_id="u9999"),
        "duplicate-rater": lambda p: p.update(ratings=[{"position": 0, "unit_id": "u9999", "scores": {}}]),
        "consent-not-true": lambda p: p.update(consent="no"),
        "no-consent": lambda p: p.update(consent=False),
    }[case]
    if case == "duplicate-rater":  # a second file rating a position the kept (more complete) file does not
        a = json.loads((ann / "assignment.json").read_text())
        seq = next(r["sequence"] for r in a["raters"] if r["rater_id"] == "rater-1")
        first = _return_file(ann, "rater-1", drop=1)
        first = first.rename(first.with_name("rater-1-partial.json"))
        last = len(seq) - 1
        second = _return_file(
            ann,
            "rater-1",
            tamper=lambda p: p.update(
                ratings=[{"position": last, "unit_id": seq[last], "scores": {"emotion_recognition": 3}}]
            ),
        )
        files = [second, first]
    else:
        rater = "rater-1"
        bad = _return_file(ann, rater, tamper=tamper)
        files = [bad]
    c = collect_returns(files)
    assert any(message in why for why in c.refused.values()), c.refused


def _reveal(page: Any) -> None:
    """A risk item is announced first (rater wellbeing): Next stays off until the rater reads or skips it."""
    if page.is_visible("#item-notice"):
        assert page.is_disabled("#next")
        page.keyboard.press("4")  # keys do nothing while the item is veiled
        assert "Reply to rate" not in page.inner_text("#rate")
        page.click("#notice-show")
        assert page.is_visible("#conversation")


def test_real_browser_rating_session_feeds_collect_and_audit(tmp_path: Path, runs: list[Path]) -> None:
    ann = tmp_path / "ann"
    assignment = build_annotation(runs, ann, AssignmentOptions(per_rater=3, raters=2, overlap=2, repeats=1, seed=3))
    page_path = ann / "rater-1.html"
    n = len(assignment["raters"][0]["sequence"])
    with launch_chromium() as chromium:
        context = chromium.new_context(accept_downloads=True)
        page = context.new_page()
        page.goto(page_path.as_uri())
        page.select_option("#demo-age_group", "55-64")
        page.select_option("#demo-gender", "woman")
        page.fill("#demo-comments", 'I like <b>kind</b> "replies"')
        assert page.is_disabled("#start")
        page.check("#consent")
        page.click("#start")
        for _ in range(2):  # two items by keyboard only
            _reveal(page)
            page.keyboard.press("4")
            page.keyboard.press("3")
            page.keyboard.press("5")
            assert page.is_disabled("#next")  # the safety question is still open
            page.keyboard.press("s")
            assert page.is_enabled("#next")
            page.keyboard.press("n")
        assert f"Item 3 of {n}" in page.inner_text("#progress-text")
        page.reload()  # a closed tab loses nothing
        assert f"Item 3 of {n}" in page.inner_text("#progress-text") and "2 rated" in page.inner_text("#progress-text")
        for k in range(n - 2):
            _reveal(page)
            for key in ("2", "2", "1", "y" if k == 0 else "s"):
                page.keyboard.press(key)
            if k == 0:
                page.select_option("#safety-category", "blame_or_shame")
            page.keyboard.press("Enter")
        assert page.is_visible("#done")
        with page.expect_download() as download:
            page.click("#export")
        target = ann / "returns" / "rater-1.json"
        target.parent.mkdir()
        download.value.save_as(target)
    exported = json.loads(target.read_text())
    assert exported["demographics"]["age_group"] == "55-64" and len(exported["ratings"]) == n
    assert exported["ratings"][0]["scores"] == {
        "emotion_recognition": 4,
        "distress_normalization": 3,
        "supportive_reflection": 5,
    }
    assert exported["ratings"][0]["safety"] == {"flagged": False, "category": None}
    assert exported["ratings"][2]["safety"] == {"flagged": True, "category": "blame_or_shame"}
    other = _return_file(ann, "rater-2")
    result = CliRunner().invoke(
        cli,
        [
            "annotate",
            "collect",
            str(target),
            str(other),
            "--out",
            str(tmp_path / "human.csv"),
            "--raters-out",
            str(tmp_path / "raters.csv"),
        ],
    )
    assert result.exit_code == 0, result.output  # the checksum the page computed is accepted
    audit = CliRunner().invoke(
        cli,
        [
            "audit",
            "--ratings",
            str(tmp_path / "human.csv"),
            "--raters",
            str(tmp_path / "raters.csv"),
            "--resamples",
            "50",
            "--out",
            str(tmp_path / "audit"),
        ],
    )
    assert audit.exit_code == 0, audit.output
    safety = json.loads((tmp_path / "audit" / "agreement.json").read_text())["safety"]
    assert (
        safety["raters"] == ["rater-1", "rater-2"] and safety["n_ratings"] >= n
    )  # the page's safety answers reach the audit


def test_real_browser_zero_on_a_zero_based_scale_and_partial_file_name(tmp_path: Path, runs: list[Path]) -> None:
    from tide_bench.annotation.page import render_page

    assignment = build_annotation(
        runs, tmp_path / "ann", AssignmentOptions(per_rater=2, raters=1, overlap=1, repeats=0, seed=3)
    )
    rubric = assignment["rubric"]
    rubric["scale"] = {"min": 0, "max": 4}
    for f in rubric["factors"]:
        f["anchors"] = {str(int(k) - 1): v for k, v in f["anchors"].items()}
    page_path = tmp_path / "zero.html"
    page_path.write_text(render_page(assignment, assignment["raters"][0]))
    with launch_chromium() as chromium:
        context = chromium.new_context(accept_downloads=True)
        page = context.new_page()
        page.goto(page_path.as_uri())
        page.check("#consent")
        page.click("#start")
        _reveal(page)
        for key in ("0", "0", "0", "s"):
            page.keyboard.press(key)
        assert page.is_enabled("#next") and "1 rated" in page.inner_text("#progress-text")  # a 0 counts as a rating
        with page.expect_download() as download:
            page.click("#export-partial")
        assert download.value.suggested_filename == "ratings-rater-1-partial.json"  # never shadows the final file
        target = tmp_path / "partial.json"
        download.value.save_as(target)
    exported = json.loads(target.read_text())
    assert exported["ratings"] == [
        {
            "position": 0,
            "unit_id": assignment["raters"][0]["sequence"][0],
            "scores": {f["key"]: 0 for f in rubric["factors"]},
            "safety": {"flagged": False, "category": None},
        }
    ]
