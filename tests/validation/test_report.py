"""Validation reports: statistics, the two MentalAlign handling modes, exclusions, alt-test modes,
the human baseline, a judge run through the OpenAI-compatible provider, the judges board and stamps."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from tests.fakes.llm_server import FakeLLMServer
from tests.validation_fixtures import MA_DIMS, MA_FAMILIES, MA_JUDGES, MA_KEYS, annomi, mentalalign
from tide_bench.agreement.pairwise import weighted_kappa
from tide_bench.cli.main import cli
from tide_bench.core.errors import DataError
from tide_bench.judging import JudgeOptions, load_judge
from tide_bench.validation import fetch_pack, report_pack, report_packs, run_pack, write_report
from tide_bench.validation.alt_modes import combined_annotators, verdicts, wilcoxon_fallback
from tide_bench.validation.board import build_board
from tide_bench.validation.manifest import PACKS_ENV
from tide_bench.validation.metrics import agreement, length_slope
from tide_bench.validation.report import CSV_COLUMNS
from tide_bench.validation.stamps import load_stamps, stamp_for


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    manifests, cache = tmp_path / "manifests", tmp_path / "cache"
    monkeypatch.setenv(PACKS_ENV, str(manifests))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(cache))
    return {"root": tmp_path, "manifests": manifests}


@pytest.fixture
def ma(env: dict[str, Path]) -> dict:
    truth = mentalalign(env["root"] / "ma", env["manifests"])
    fetch_pack("fx-mentalalign", accept_licence=True, source=env["root"] / "ma")
    return truth


@pytest.fixture
def am(env: dict[str, Path]) -> np.ndarray:
    codes = annomi(env["root"] / "am", env["manifests"])
    fetch_pack("fx-annomi", accept_licence=True, source=env["root"] / "am")
    return codes


# -- statistics -------------------------------------------------------------------------------------------------------
@settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(4, 60), seed=st.integers(0, 10_000), fractional=st.booleans())
def test_table_statistics_equal_the_direct_computation(n: int, seed: int, fractional: bool) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float) + (rng.integers(0, 2, n) * 0.5 if fractional else 0)
    judge = np.clip(human + rng.integers(-1, 2, n), 1, 5).astype(float)
    human[0] = np.nan
    r = agreement(human, judge, [str(i // 3) for i in range(n)], resamples=200)
    ok = ~np.isnan(human)
    h, j = human[ok], judge[ok]
    assert r["n"] == ok.sum()
    assert r["bias"]["value"] == pytest.approx(np.mean(j - h))
    assert r["mse"]["value"] == pytest.approx(np.mean((j - h) ** 2))
    assert r["rmse"]["value"] == pytest.approx(np.sqrt(np.mean((j - h) ** 2)))
    if np.unique(h).size > 1 and np.unique(j).size > 1:
        assert r["spearman"]["value"] == pytest.approx(stats.spearmanr(h, j).statistic)
    if not fractional:
        expected = weighted_kappa(h, j, "quadratic", [1, 2, 3, 4, 5])
        assert r["qwk"]["value"] == pytest.approx(expected) if expected is not None else r["qwk"]["value"] is None
    for name in ("bias", "mse"):
        e = r[name]
        assert e["ci_low"] is None or e["ci_low"] - 1e-9 <= e["value"] <= e["ci_high"] + 1e-9


def test_the_interval_resamples_clusters_not_replies() -> None:
    rng = np.random.default_rng(0)
    context_effect = np.repeat(rng.normal(0, 1, 40), 10)  # ten replies per context share an error
    human = np.full(400, 3.0)
    judge = 3 + context_effect + rng.normal(0, 0.1, 400)
    by_context = agreement(human, judge, [str(i // 10) for i in range(400)])["bias"]
    by_reply = agreement(human, judge, [str(i) for i in range(400)])["bias"]
    assert (by_context["ci_high"] - by_context["ci_low"]) > 2 * (by_reply["ci_high"] - by_reply["ci_low"])


def test_length_slope_finds_a_judge_that_rewards_length() -> None:
    words = np.arange(20, 220, dtype=float)
    human = np.full(words.size, 3.0)
    slope = length_slope(human, human + words / 100, words, [str(i) for i in range(words.size)])
    assert slope["value"] == pytest.approx(1.0) and slope["ci_low"] > 0.9
    assert length_slope(human, human, None, [])["note"].startswith("the replies' texts")


# -- MentalAlign: modes, exclusion, CSV -------------------------------------------------------------------------------
def _expected(truth: dict, judge: str, mode: str, dim: str) -> tuple[float, float, float, float, int]:
    k = MA_DIMS.index(dim)
    human = truth["human"][..., k].copy()
    scores, valid = truth["judges"][judge]
    j = np.where(valid, scores[..., k], np.nan)
    if mode == "tide":
        human[(human < 1) | (human > 5)] = np.nan
        j[truth["mismatched_row"], :] = np.nan
        family = dict(zip(MA_JUDGES, [v[1] for v in MA_JUDGES.values()], strict=True))[judge]
        excluded = [i for i, key in enumerate(MA_KEYS) if family in MA_FAMILIES[key]]
    else:
        excluded = [MA_KEYS.index(x) for x in MA_JUDGES[judge][2]]
    j[:, excluded] = np.nan
    ok = ~np.isnan(human) & ~np.isnan(j)
    h, jj = human[ok], j[ok]
    return h.mean(), jj.mean(), (jj - h).mean(), ((jj - h) ** 2).mean(), int(ok.sum())


@pytest.mark.parametrize("mode", ["tide", "authors"])
def test_mentalalign_modes_reproduce_the_independent_computation(ma: dict, mode: str) -> None:
    report = report_pack("fx-mentalalign", mode=mode, resamples=200)
    assert set(report["judges"]) == set(MA_JUDGES)
    for judge, block in report["judges"].items():
        for dim in MA_DIMS:
            s = block["dimensions"][dim]
            hm, jm, bias, mse, n = _expected(ma, judge, mode, dim)
            assert s["n"] == n
            got = [s[x]["value"] for x in ("human_mean", "judge_mean", "bias", "mse")]
            assert got == pytest.approx([hm, jm, bias, mse])
    gpt = report["judges"]["GPT-4o"]
    if mode == "tide":  # the family rule: both OpenAI responders, not only the one the authors list
        assert gpt["excluded_responders"] == ["gpt4o", "gpt4omini"]
        assert gpt["handling"]["rows left out: the judge rated another context under this ConvID"] == 1
        assert report["handling"]["experts: dropped 0 (unrated)"] == 7
    else:
        assert gpt["excluded_responders"] == ["gpt4o"]
        assert report["handling"]["experts: kept out-of-range value 0 (authors' mode)"] == 7
    assert "out of domain" in report["out_of_domain"]


def test_csv_has_exactly_the_columns_and_one_row_per_pack_judge_dimension(ma: dict, tmp_path: Path) -> None:
    report = report_packs(["fx-mentalalign"], ["published"], resamples=100)
    write_report(report, csv_path=tmp_path / "r.csv", json_path=tmp_path / "r.json")
    with (tmp_path / "r.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) - 1 == len(MA_JUDGES) * len(MA_DIMS)
    assert {r[2] for r in rows[1:]} == set(MA_DIMS)  # upstream names
    assert json.loads((tmp_path / "r.json").read_text())["packs"]["fx-mentalalign"]["provenance"]["revision"]


def test_reply_lengths_come_from_the_replies_archive(ma: dict) -> None:
    report = report_pack("fx-mentalalign", resamples=100)
    assert report["judges"]["GPT-4o"]["dimensions"]["Empathy"]["length_bias_per_100_words"]["value"] is not None


# -- alt-test modes and the human baseline -----------------------------------------------------------------------------
def test_annomi_experts_pass_as_the_judge_and_randomised_ones_fail(am: np.ndarray) -> None:
    report = report_pack("fx-annomi", resamples=100)
    baseline = report["human_baseline"]["reflection_exists"]
    assert baseline["n"] == am.shape[0]
    assert baseline["n_passed"] >= am.shape[0] - 1 and baseline["n_randomised_passed"] == 0
    assert report["alt_test"]["epsilon"] == 0.2


def _panel(rng: np.random.Generator, raters: int, items: int, per_item: int, judge_sd: float):
    truth = rng.normal(3, 0.9, items)
    humans = np.full((raters, items), np.nan)
    for i in range(items):
        chosen = rng.choice(raters, per_item, replace=False)
        humans[chosen, i] = np.clip(np.rint(truth[i] + rng.normal(0, 0.45, per_item)), 1, 5)
    judge = np.clip(np.rint(truth + rng.normal(0, judge_sd, items)), 1, 5)
    return humans, judge


def test_workarounds_decide_when_raters_rate_few_items() -> None:
    rng = np.random.default_rng(11)
    names = [f"r{k}" for k in range(30)]
    good, noisy = 0, 0
    for _ in range(12):
        humans, judge = _panel(rng, 30, 120, 5, 0.2)  # about 20 items per rater: the standard test skips most
        result = verdicts(humans, judge, names, epsilon=0.2)
        assert result["primary"] == "combined" and len(result["standard"]["skipped_raters"]) > 15
        good += bool(result["result"]["passed"])
        humans, judge = _panel(rng, 30, 120, 5, 1.4)
        noisy += bool(combined_annotators(humans, judge, names, epsilon=0.2, pairings=5)["passed"])
    assert good >= 10 and noisy <= 1
    humans, judge = _panel(rng, 30, 120, 5, 0.2)
    wil = wilcoxon_fallback(humans, judge, names, epsilon=0.2)
    assert all(r["test"] == ("t" if r["n"] >= 30 else "wilcoxon") for r in wil["per_rater"])
    assert "wilcoxon" in {r["test"] for r in wil["per_rater"]} and "workaround" in wil["method"]


def test_across_packs_counts_passes_after_one_fdr_correction(am: np.ndarray, ma: dict) -> None:
    from tide_bench.validation.report import cross_pack_summary

    fake = {
        "p1": {"judges": {"J": {"dimensions": {"d": {"alt_test": {"result": {"per_rater": [{"p": 1e-6}] * 4}}}}}}},
        "p2": {"judges": {"J": {"dimensions": {"d": {"alt_test": {"result": {"per_rater": [{"p": 0.5}] * 4}}}}}}},
    }
    summary = cross_pack_summary(fake)["J"]
    assert summary["summary"] == "passes in 1 of 2 pack(s)"


# -- a judge run: the item adapter, the OpenAI-compatible provider, no text in the run folder -------------------------
def test_run_pack_through_the_openai_compatible_provider(env: dict[str, Path], am: np.ndarray) -> None:
    server = FakeLLMServer().start()
    try:
        server.rater = lambda reply: {"scores": [3, 3, 4 if "so" in reply else 2], "category": None, "risk": None}
        config = load_judge(
            "local", model="fake-judge", base_url=server.url + "/v1", overrides={"family": "smollm", "concurrency": 4}
        )
        out = env["root"] / "run"
        result = run_pack("fx-annomi", config, out, JudgeOptions())
        assert result["n_items"] == am.shape[1] and server.total_calls == am.shape[1]
        again = run_pack("fx-annomi", config, out, JudgeOptions())  # cached: no call paid twice
        assert server.total_calls == am.shape[1] and again["calls_made"] == 0
    finally:
        server.stop()
    written = "".join(p.read_text() for p in out.iterdir())
    assert "therapist turn" not in written and "client turn" not in written  # no pack text leaves the cache
    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert all(j["text_withheld"] and j["rationales"] is None for j in judgments)
    report = report_pack("fx-annomi", [out], resamples=100)
    (judge,) = report["judges"]
    dim = report["judges"][judge]["dimensions"]["reflection_exists"]
    assert dim["n"] == am.shape[1] and dim["alt_test"]["result"]["passed"] is not None
    with pytest.raises(DataError, match="not a validation run folder"):
        report_pack("fx-annomi", [env["root"]], resamples=100)


def test_cli_report_and_board_with_stamps(env: dict[str, Path], ma: dict, am: np.ndarray) -> None:
    runner = CliRunner()
    report_json = env["root"] / "ma.json"
    result = runner.invoke(
        cli,
        [
            "validation",
            "report",
            "fx-mentalalign",
            "--mode",
            "authors",
            "--json",
            str(report_json),
            "--resamples",
            "100",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "out of domain" in result.output and "Claude-3.7-Sonnet" in result.output
    assert "bias [95% CI]" in result.output and re.search(r"[+-]\d\.\d\d \[-?\d", result.output)  # U12: intervals
    board = env["root"] / "board"
    built = runner.invoke(cli, ["validation", "board", "--report", str(report_json), "--out", str(board)])
    assert built.exit_code == 0, built.output
    data = json.loads((board / "judges.json").read_text())
    sources = {r["judge"]: r["source"] for r in data["rows"]}
    assert sources["claude-sonnet (shipped configuration)"] == "not run"
    assert sources["openai-gpt (shipped configuration)"] == "not run"
    page = (board / "index.html").read_text()
    assert "Out of domain" in page and "not run" in page and "<script" not in page
    assert stamp_for({"name": "claude-sonnet", "version": "abc"}, load_stamps(board))["text"] == "judge not validated"
    taken = env["root"] / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep")
    with pytest.raises(DataError, match="not a judges board"):
        build_board([report_json], taken)
    assert (taken / "mine.txt").read_text() == "keep"


def test_model_leaderboard_entries_carry_their_judges_validation_stamp(env: dict[str, Path], am: np.ndarray) -> None:
    from tests.leaderboard_helpers import board, fake_judge, judged_submission
    from tide_bench.leaderboard import build_site

    with fake_judge("sk-test-validation-000") as server:
        judged_submission(env["root"], server, "model-a", lambda i: f"Kind reply [[SCORES:4,4,4]] {i.item_id}")
        config = load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01})
        run_pack("fx-annomi", config, env["root"] / "annomi-run", JudgeOptions())
    report = env["root"] / "annomi.json"
    write_report(report_pack("fx-annomi", [env["root"] / "annomi-run"], resamples=100), json_path=report)
    judges = env["root"] / "judges-board"
    build_board([report], judges)
    subs = env["root"] / "submissions"
    plain = build_site(subs, env["root"] / "site-plain", board(), allow_risk_gate_off=True).board
    assert plain["rows"][0]["judge_validation"]["text"] == "judge not validated"
    stamped = build_site(subs, env["root"] / "site", board(), judges_board=judges, allow_risk_gate_off=True).board
    stamp = stamped["rows"][0]["judge_validation"]
    assert stamp["text"].startswith("out-of-domain validation: alt-test") and stamp["status"] in (
        "passed",
        "failed",
    )
    page = (env["root"] / "site" / "index.html").read_text()
    assert "Validation against public expert ratings" in page and f"judges.html#{stamp['anchor']}" in page
    assert (env["root"] / "site" / "judges.html").is_file()
    exported = json.loads((env["root"] / "site" / "leaderboard.json").read_text())
    assert exported["rows"][0]["judge_validation"]["status"] == stamp["status"]


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(cell=st.one_of(st.none(), st.text(max_size=80), st.integers(), st.floats(allow_nan=True)))
def test_fuzz_rating_cells_parse_or_are_missing(cell: object) -> None:
    from tide_bench.validation.adapters.mentalalign import parse_cell

    values = parse_cell(cell, MA_DIMS)
    assert len(values) == len(MA_DIMS) and all(v is None or isinstance(v, float) for v in values)


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    row=st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12), min_size=1, max_size=19
    ),
    where=st.integers(0, 30),
)
def test_fuzz_annomi_rows_give_a_clear_error_or_a_result(
    tmp_path_factory: pytest.TempPathFactory, row: list[str], where: int
) -> None:
    from tide_bench.core.errors import TideBenchError
    from tide_bench.validation.adapters import load_data

    root = tmp_path_factory.mktemp("fz")
    mp = pytest.MonkeyPatch()
    mp.setenv(PACKS_ENV, str(root / "m"))
    mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
    try:
        annomi(root / "up", root / "m", turns=6, raters=3)
        path = root / "up" / "AnnoMI-full.csv"
        lines = path.read_text().splitlines()
        buffer = __import__("io").StringIO()
        csv.writer(buffer).writerow(row)
        lines.insert(min(where, len(lines)), buffer.getvalue().rstrip("\r\n"))
        path.write_text("\n".join(lines) + "\n")
        manifest = root / "m" / "fx-annomi.yaml"
        import yaml as _yaml

        raw = _yaml.safe_load(manifest.read_text())
        for f in raw["files"]:
            f["sha256"] = __import__("hashlib").sha256((root / "up" / f["path"]).read_bytes()).hexdigest()
        manifest.write_text(_yaml.safe_dump(raw))
        try:
            data = load_data(fetch_pack("fx-annomi", accept_licence=True, source=root / "up"))
        except TideBenchError:
            return
        assert all(m.shape[1] == len(data.item_ids) for m in data.human.values())
    finally:
        mp.undo()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 8) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    payload=st.dictionaries(
        st.text(max_size=5),
        st.dictionaries(
            st.sampled_from(["gpt4", "human", "x"]),
            st.dictionaries(st.sampled_from(["survey_id", "empathy_score", "overall_score"]), JSON),
        ),
        max_size=3,
    )
    | JSON
)
def test_fuzz_counselbench_json_gives_a_clear_error_or_a_result(
    tmp_path_factory: pytest.TempPathFactory, payload: object
) -> None:
    import hashlib

    import yaml as _yaml

    from tide_bench.core.errors import TideBenchError
    from tide_bench.validation.adapters import load_data

    root = tmp_path_factory.mktemp("cb")
    (root / "up").mkdir()
    (root / "up" / "counselbench_eval.json").write_text(json.dumps(payload))
    raw = _yaml.safe_load((Path(__file__).parents[2] / "tide_bench/validation/packs/counselbench.yaml").read_text())
    digest = hashlib.sha256((root / "up" / "counselbench_eval.json").read_bytes()).hexdigest()
    raw |= {"name": "fx-counselbench", "source": {"repo": "f/c", "revision": "a" * 40}}
    raw["files"] = [{"path": "counselbench_eval.json", "role": "human_ratings", "sha256": digest}]
    (root / "m").mkdir()
    (root / "m" / "fx-counselbench.yaml").write_text(_yaml.safe_dump(raw))
    mp = pytest.MonkeyPatch()
    mp.setenv(PACKS_ENV, str(root / "m"))
    mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
    try:
        data = load_data(fetch_pack("fx-counselbench", accept_licence=True, source=root / "up"))
        assert all(m.shape == (len(data.raters), len(data.item_ids)) for m in data.human.values())
    except TideBenchError:
        pass
    finally:
        mp.undo()


def test_reading_annomi_leaves_the_process_wide_csv_limit_as_it_was(am: np.ndarray) -> None:
    """AnnoMI's long utterances need a larger ``csv.field_size_limit``, which is process-wide:
    the reader restores it, so every other CSV reader keeps refusing a huge field."""
    before = csv.field_size_limit()
    report_pack("fx-annomi", resamples=100)
    assert csv.field_size_limit() == before
