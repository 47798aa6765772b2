"""Consistency across samples on the board (issue 49, part 3): an entry's K judged samples
(``samples/sample-N/``, ``submit --samples``) are checked against its run, scored (spread, flag
agreement, "Handled every time") and, on a board with ``severe_every_sample: true``, gate the
entry: a severe item fails when any of its replies to it is mishandled. Runs on the stand-in
snapshot with board risk labels that make its risk items severe, judged over real HTTP by the fake
judge server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import board, edit_json, meta, stand_in_dataset, tide_run
from tide_bench.core.errors import DataError
from tide_bench.data import load_dataset
from tide_bench.data.sources import SAMPLE_DIR
from tide_bench.generation.runner import EvalConfig
from tide_bench.generation.sampled import sample_configs, sample_dir, write_samples_listing
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.rubric import load_rubric
from tide_bench.leaderboard import SubmissionRefused, build_site, create_submission

KEY = "sk-ant-test-CONSISTENCYBOARD-0123456789"
FLAG = list(load_rubric().safety_categories).index("risk_mishandled")
SEVERE_NOW = {"10/conversation_3/turn1": "imminent", "2/conversation_3/turn1": "present_now"}


def _labels(tmp: Path) -> Path:
    """Board risk labels for the stand-in: the sample's, with its two test-split risk items made severe."""
    data = load_dataset(str(stand_in_dataset(tmp)))
    doc = json.loads((SAMPLE_DIR / "risk_labels.json").read_text()) | {"dataset_sha256": data.content_hash("all")}
    for item, severity in SEVERE_NOW.items():
        doc["labels"][item]["severity"] = severity
    path = tmp / "risk_labels.json"
    path.write_text(json.dumps(doc))
    return path


SEVERE = sorted(i for i in SEVERE_NOW if i in {x.item_id for x in load_dataset("sample").items_for("test")})


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _board(tmp: Path, **kw: Any) -> Any:
    return board(risk_labels=str(_labels(tmp)), max_risk_mishandled_rate=None, max_safety_flag_rate=None, **kw)


def _run(root: Path, server: FakeLLMServer, sid: str, flagged: set[str], sample: int | None = None) -> Path:
    mark = f"[[FLAG:{FLAG}]]"
    data = stand_in_dataset(root.parent.parent if sample else root.parent)  # the test's tmp_path
    run = tide_run(root, lambda i: f"Reply {sid} {mark if i.item_id in flagged else ''} {i.item_id}", data,
                   model_name=f"org/{sid}")  # fmt: skip
    if sample is not None:  # as `eval --samples` records a sample: sampling on, its own seed
        edit_json(run / "run.json", lambda m: m["generation"].update(
            gen_kwargs_override={"do_sample": True, "temperature": 0.7}, seed=[sample] * 4))  # fmt: skip
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01}))
    return run


def _entry(tmp: Path, server: FakeLLMServer, sid: str, sample_flags: list[set[str]] | None, the_board: Any) -> Path:
    run = _run(tmp / f"run-{sid}", server, sid, set())
    folder = None
    if sample_flags is not None:
        folder = tmp / f"set-{sid}"
        for s, flags in enumerate(sample_flags, 1):
            _run(sample_dir(folder, s), server, sid, flags, sample=s)
        write_samples_listing(folder, sample_configs(EvalConfig(output_dir=folder), len(sample_flags)))
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid)))
    return create_submission(run, meta_path, tmp / "submissions", board=the_board, spot_checks=False,
                             samples=folder).folder  # fmt: skip


def test_samples_are_scored_and_gate_a_severe_item_mishandled_in_one_sample(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    gated = _board(tmp_path, severe_every_sample=True)
    _entry(tmp_path, server, "steady", [set(), set()], gated)
    _entry(tmp_path, server, "wobbly", [set(), {SEVERE[0]}], gated)
    built = []
    for name, the_board in (("gated", gated), ("plain", _board(tmp_path))):
        build_site(tmp_path / "submissions", tmp_path / name, the_board, workers=1)
        built.append({r["id"]: r for r in json.loads((tmp_path / name / "leaderboard.json").read_text())["rows"]})
    rows, plain = built
    steady, wobbly = rows["steady"]["consistency"], rows["wobbly"]["consistency"]
    assert steady["k"] == 2 and steady["severe"]["handled_every_time"]["mean"] == 1.0
    assert steady["severe"]["handled_every_time"]["n"] == len(SEVERE)
    assert wobbly["severe"]["mishandled_in_some_sample"]["items"] == [SEVERE[0]]
    assert wobbly["severe"]["handled_every_time"]["mean"] == pytest.approx((len(SEVERE) - 1) / len(SEVERE))
    assert wobbly["flag_disagrees"]["items"] == [SEVERE[0]] and "items" not in wobbly  # no per-item rows on a row
    assert rows["steady"]["rank"] is not None and rows["wobbly"]["rank"] is None
    assert "in its run or one of its 2 samples" in rows["wobbly"]["unranked_reason"]
    assert plain["wobbly"]["rank"] is not None  # without the option the samples are shown, not gated
    md = (tmp_path / "gated" / "leaderboard.md").read_text()
    assert "| Handled every time |" in md and f"{100 * (len(SEVERE) - 1) / len(SEVERE):.1f}%" in md


def _refusal(tmp: Path, server: FakeLLMServer, edit: str) -> Any:
    run = _run(tmp / "run", server, "m", set())
    folder = tmp / "set"
    k = 1 if edit == "one" else 2
    for s in range(1, k + 1):
        _run(sample_dir(folder, s), server, "other" if edit == "model" and s == 2 else "m", set(),
             sample=None if edit == "greedy" and s == 1 else (1 if edit == "seed" else s))  # fmt: skip
    listing = {"kind": "tide-bench-samples", "k": k, "runs": [{"run": f"sample-{s}"} for s in range(1, k + 1)]}
    (folder / "samples.json").write_text(json.dumps(listing))
    meta_path = tmp / "m.yaml"
    meta_path.write_text(yaml.safe_dump(meta("m")))
    with pytest.raises(SubmissionRefused) as refused:
        create_submission(run, meta_path, tmp / "subs", board=_board(tmp), spot_checks=False, samples=folder)
    assert not (tmp / "subs" / "m").exists()
    return refused.value.check.problems


@pytest.mark.parametrize(
    ("edit", "path", "field", "says"),
    [
        ("model", "set/sample-2/run.json", "model.name", "sample-2 must be answered with the same model"),
        ("greedy", "set/sample-1/run.json", "generation.gen_kwargs_override", "was not sampled"),
        ("seed", "set/sample-2/run.json", "generation.seed", "the same seed as sample-1"),
    ],
)
def test_a_bad_sample_is_refused_and_located(
    tmp_path: Path, server: FakeLLMServer, edit: str, path: str, field: str, says: str
) -> None:
    problems = _refusal(tmp_path, server, edit)
    # named as the user's own file (submit maps the staged samples/sample-N/run/run.json back to it)
    assert any(str(p.path).endswith(path) and p.field == field and says in p.message for p in problems), problems


def test_an_entry_without_samples_on_a_board_that_gates_on_every_sample(tmp_path: Path, server: FakeLLMServer) -> None:
    with pytest.raises(SubmissionRefused) as refused:
        _entry(tmp_path, server, "single", None, _board(tmp_path, severe_every_sample=True))
    (problem,) = refused.value.check.problems
    assert problem.path == "samples" and "gates severe items on every sample" in problem.message


def test_one_sample_is_refused_as_not_estimable(tmp_path: Path, server: FakeLLMServer) -> None:
    with pytest.raises(DataError, match="not estimable from one"):
        _refusal(tmp_path, server, "one")
