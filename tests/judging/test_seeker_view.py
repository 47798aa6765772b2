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
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tests.leaderboard_helpers import board, meta, stand_in_dataset, tide_run
from tide_bench.cli.main import cli
from tide_bench.core.resources import resource_dir
from tide_bench.data import load_dataset
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.prompt import system_text
from tide_bench.judging.rubric import load_rubric, rubric_path
from tide_bench.leaderboard import SubmissionRefused, build_site, create_submission
from tide_bench.leaderboard.submission.folder import scan_folder
from tide_bench.leaderboard.submission.result import CheckResult
from tide_bench.leaderboard.submission.seeker import check_seeker

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


# --- on the board ---------------------------------------------------------------------------------


def _entry(tmp: Path, server: FakeLLMServer, data: Path, sid: str, seeker: str | None) -> Path:
    """A judged entry; ``seeker``: the rubric its seeker_judge/ folder was judged with (None: none)."""
    run = tide_run(tmp / f"run-{sid}", lambda i: f"Reply {sid} {i.item_id}", data, model_name=f"org/{sid}")
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url))
    if seeker is not None:
        judge_run(run, run / "judge-seeker", load_judge("claude-sonnet", base_url=server.url, rubric=seeker))
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid)))
    return create_submission(run, meta_path, tmp / "submissions", board=board(), spot_checks=False,
                             seeker_judge=None if seeker is None else run / "judge-seeker").folder  # fmt: skip


def test_the_board_shows_the_seekers_view_beside_the_factors(tmp_path: Path, server: FakeLLMServer) -> None:
    data = stand_in_dataset(tmp_path)
    heard = _entry(tmp_path, server, data, "heard-model", "perceived")
    _entry(tmp_path, server, data, "plain-model", None)
    judged = [json.loads(x) for x in (heard / "seeker_judge" / "judgments.jsonl").read_text().splitlines()]
    expected = float(np.mean([np.mean(list(j["scores"].values())) for j in judged]))
    site = tmp_path / "site"
    build_site(tmp_path / "submissions", site, board(), allow_risk_gate_off=True, workers=1)
    rows = {r["id"]: r for r in json.loads((site / "leaderboard.json").read_text())["rows"]}
    seen = rows["heard-model"]["seeker_view"]
    assert seen["mean"] == pytest.approx(expected) and seen["n"] == rows["heard-model"]["n_items"] == len(judged)
    assert seen["ci_low"] < seen["mean"] < seen["ci_high"]
    assert seen["n_unscored"] == 0 and seen["questions"] == list(SEEKER) and seen["n_clusters"] > 1
    assert rows["plain-model"]["seeker_view"] is None  # not judged so: shown as absent, never invented
    exported = {r["id"]: r for r in csv.DictReader((site / "leaderboard.csv").open())}
    assert float(exported["heard-model"]["seeker_view"]) == pytest.approx(expected)
    assert exported["plain-model"]["seeker_view"] == ""
    md = (site / "leaderboard.md").read_text()
    assert "| Seeker's view [95% CI] |" in md and "| not judged |" in md
    page = (site / "index.html").read_text()
    assert "Seeker&#x27;s view" in page or "Seeker's view" in page


@pytest.mark.parametrize(
    ("rubric", "edit", "field", "says"),
    [
        ("v4", None, "judge.rubric", "not the seeker's view"),
        ("perceived", "drop", None, "have no seeker judgment"),
        ("perceived", "foreign", "item_id", "not an item of the entry's run"),
        ("perceived", "score", "scores.felt_understood", ""),
    ],
)
def test_a_bad_seeker_folder_is_refused_and_located(
    tmp_path: Path, server: FakeLLMServer, rubric: str, edit: str | None, field: str | None, says: str
) -> None:
    data = stand_in_dataset(tmp_path)
    run = tide_run(tmp_path / "run", lambda i: f"Reply {i.item_id}", data, model_name="org/m")
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url))
    judge_run(run, run / "js", load_judge("claude-sonnet", base_url=server.url, rubric=rubric))
    lines = (run / "js" / "judgments.jsonl").read_text().splitlines()
    if edit == "drop":
        lines = lines[1:]
    elif edit == "foreign":
        lines[1] = lines[1].replace(json.loads(lines[1])["item_id"], "no/such/item")
    elif edit == "score":
        first = json.loads(lines[0])
        first["scores"]["felt_understood"] = 9
        lines[0] = json.dumps(first)
    (run / "js" / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    meta_path = tmp_path / "m.yaml"
    meta_path.write_text(yaml.safe_dump(meta("m")))
    with pytest.raises(SubmissionRefused) as refused:
        create_submission(run, meta_path, tmp_path / "subs", board=board(), spot_checks=False, seeker_judge=run / "js")
    (problem,) = refused.value.check.problems
    assert problem.path == "seeker_judge/judgments.jsonl" and problem.field == field and says in problem.message
    assert not (tmp_path / "subs" / "m").exists()  # a refused submission writes nothing


@pytest.fixture(scope="module")
def seeker_folder(tmp_path_factory: pytest.TempPathFactory, llm_server: FakeLLMServer) -> tuple[Path, list, bytes]:
    """A run's generations and a valid seeker_judge/judgments.jsonl (the fuzz test's starting point)."""
    tmp = tmp_path_factory.mktemp("seeker-fuzz")
    run = make_run(tmp / "run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        judge_run(run, tmp / "js", load_judge("claude-sonnet", base_url=llm_server.url, rubric="perceived"))
    from tide_bench.generation.run_dir import load_run

    return tmp, load_run(run).generations, (tmp / "js" / "judgments.jsonl").read_bytes()


_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 9), st.text(max_size=8), st.lists(st.integers(0, 5), max_size=2),
    st.dictionaries(st.sampled_from(["felt_understood", "felt_cared_for", "x"]), st.integers(0, 6), max_size=3),
)  # fmt: skip
_fields = st.sampled_from(["item_id", "status", "scores", "safety", "judge", "unscored_kind", "rationales", "key"])


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 11), _fields, _values), max_size=3), cut=st.booleans())
def test_fuzz_the_seeker_folder(seeker_folder: tuple[Path, list, bytes], edits: list, cut: bool) -> None:
    tmp, gens, good = seeker_folder
    lines = [json.loads(x) for x in good.decode().splitlines()]
    for row, name, value in edits:
        lines[row % len(lines)][name] = value
    folder = tmp / "entry"
    (folder / "seeker_judge").mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    (folder / "seeker_judge" / "judgments.jsonl").write_text(text[: len(text) // 2] if cut else text)
    result = CheckResult("entry", folder)
    listing = scan_folder(folder, max_bytes=board().max_bytes, max_files=board().max_files)
    found = check_seeker(folder, listing, board(), gens, result)
    if found:
        assert not result.problems and set(found) == {g.item_id for g in gens}
    else:
        assert result.problems and all(p.path == "seeker_judge/judgments.jsonl" for p in result.problems)
    assert (folder / "seeker_judge" / "judgments.jsonl").is_file()  # never removed
