"""The validation pack `epitome` in the judge-validation mechanism: a judge with the EPITOME rubric
(the fake server, over HTTP), the local scorer's cross-validated levels and the published figures
against the authors' labels, in one report: accuracy, macro-F1, QWK per mechanism with intervals
that resample seeker posts, and the judge's rationale agreement."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from tests.epitome_helpers import EPITOME_FIXTURE, epitome_pack
from tests.fakes.llm_server import FakeLLMServer
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.epitome.corpus import read_corpus
from tide_bench.epitome.mechanisms import KEYS, MECHANISMS
from tide_bench.judging import JudgeOptions, load_judge
from tide_bench.validation import fetch_pack, load_pack, report_pack, run_pack
from tide_bench.validation.manifest import PACKS_ENV
from tide_bench.validation.metrics import agreement

DIMS = [m.factor for m in MECHANISMS]
CORPUS = read_corpus(EPITOME_FIXTURE)
WRONG = {p.response_post for p in CORPUS.pairs[::7]}  # the scripted judge errs on these (one level up)
UNSCORED = CORPUS.pairs[3].response_post  # and answers these without one factor (unscored)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    manifests, cache = tmp_path / "manifests", tmp_path / "cache"
    monkeypatch.setenv(PACKS_ENV, str(manifests))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(cache))
    epitome_pack(tmp_path / "upstream", manifests)
    fetch_pack("fx-epitome", accept_licence=True, source=tmp_path / "upstream")
    return {"root": tmp_path, "manifests": manifests}


def _rater(reply: str) -> dict:
    """Answers each reply with its labels (one level up on WRONG) and quotes its annotated spans;
    UNSCORED gets a level out of range every time (so it ends unscored, counted, never dropped)."""
    pair = next(p for p in CORPUS.pairs if p.response_post == reply)
    levels = [min(2, pair.levels[k] + (reply in WRONG)) for k in KEYS]
    if reply == UNSCORED:
        levels[1] = 7
    quotes = [f"{k.upper()}: {span}" for k in KEYS for span in pair.rationales[k]]
    return {"scores": levels, "category": None, "risk": None, "evidence": quotes}


@pytest.fixture
def judged(env: dict[str, Path]) -> Path:
    server = FakeLLMServer().start()
    try:
        server.rater = _rater
        config = load_judge(
            "local",
            model="fake-judge",
            base_url=server.url + "/v1",
            rubric="epitome",
            overrides={"family": "smollm", "concurrency": 4, "max_retries": 0, "backoff_base_s": 0.01},
        )
        out = env["root"] / "run"
        result = run_pack("fx-epitome", config, out, JudgeOptions())
        assert result["n_items"] == len(CORPUS.pairs)
    finally:
        server.stop()
    return out


def _truth(key: str) -> np.ndarray:
    return np.array([p.levels[key] for p in CORPUS.pairs])


def test_the_shipped_manifest_pins_the_authors_release_file_by_file() -> None:
    pack = load_pack("epitome")
    assert pack.pinned_revision and pack.revision == "0e11f98901527550885dbf253bd2af92dbcec43b"
    assert pack.repo == "behavioral-data/Empathy-Mental-Health" and pack.redistribution == "ratings"
    ratings = [f for f in pack.files if f.role == "human_ratings"]
    assert [Path(f.path).name for f in ratings] == [m.file for m in MECHANISMS]
    assert all(f.sha256 and f.size for f in pack.files)  # every file: its sha256 and size
    assert pack.categorical and pack.rubric == "epitome" and pack.cluster == "context"
    assert [d.judge_factor for d in pack.dimensions] == DIMS and [d.evidence_code for d in pack.dimensions] == [
        "ER",
        "IP",
        "EX",
    ]
    assert len(pack.published_figures) == 2 and all(f.status for f in pack.published_figures)
    assert pack.published_figures[0].values["macro_f1"]["emotional_reactions"] == pytest.approx(0.745)


def test_a_judge_is_scored_against_the_labels_with_unscored_items_counted_and_no_text_in_its_folder(
    judged: Path,
) -> None:
    written = "".join(p.read_text() for p in judged.iterdir())
    assert not any(p.seeker_post in written or p.response_post in written for p in CORPUS.pairs)
    report = report_pack("fx-epitome", [judged], resamples=200)
    (name,) = report["judges"]
    block = report["judges"][name]
    assert block["n_unscored"] == 1 and block["n_judged"] == len(CORPUS.pairs)
    assert report["statistics"][-2:] == ["accuracy", "macro_f1"] and "in domain" in report["out_of_domain"]
    scored = np.array([p.response_post != UNSCORED for p in CORPUS.pairs])
    for key, dim in zip(KEYS, DIMS, strict=True):
        truth = _truth(key)
        judge = np.array([min(2, p.levels[key] + (p.response_post in WRONG)) for p in CORPUS.pairs])
        s = block["dimensions"][dim]
        assert s["n"] == scored.sum()  # the unscored item is left out of n, and counted above
        assert s["accuracy"]["value"] == pytest.approx(accuracy_score(truth[scored], judge[scored]))
        assert s["macro_f1"]["value"] == pytest.approx(f1_score(truth[scored], judge[scored], average="macro"))
        assert s["qwk"]["value"] == pytest.approx(cohen_kappa_score(truth[scored], judge[scored], weights="quadratic"))
        assert s["macro_f1"]["ci_low"] <= s["macro_f1"]["value"] <= s["macro_f1"]["ci_high"]
        # the judge quoted exactly the annotated spans: rationale agreement is perfect
        assert s["rationales"]["n"] > 0 and s["rationales"]["token_f1"]["value"] == pytest.approx(1.0)
        assert s["rationales"]["iou_f1"]["value"] == pytest.approx(1.0)


def test_the_judge_needs_the_epitome_rubric(env: dict[str, Path]) -> None:
    config = load_judge("local", model="fake-judge", base_url="http://127.0.0.1:9/v1")  # TIDE's rubric
    with pytest.raises(ConfigError, match="--rubric epitome"):
        run_pack("fx-epitome", config, env["root"] / "run", JudgeOptions())
    assert not (env["root"] / "run").exists()


def test_the_local_scorer_sits_beside_the_judge_and_the_published_figures(
    env: dict[str, Path], judged: Path, epitome_model: Path
) -> None:
    runner = CliRunner()
    out = env["root"] / "epitome.json"
    result = runner.invoke(
        cli,
        [
            *("validation", "report", "fx-epitome", "--judge-ratings", str(judged)),
            *("--judge-ratings", str(epitome_model), "--json", str(out), "--resamples", "200"),
        ],
    )
    assert result.exit_code == 0, result.output
    for name in ("fake-judge", "local EPITOME scorer (grouped 2-fold CV)", "TF-IDF + logistic regression"):
        assert name in result.output, result.output
    assert "RoBERTa bi-encoder (Sharma et al. 2020)" in result.output and "(published)" in result.output
    assert "rationale T-F1" in result.output and "resampling context" in result.output
    report = json.loads(out.read_text())["packs"]["fx-epitome"]
    rows = [json.loads(line) for line in (epitome_model / "cv_predictions.jsonl").read_text().splitlines()]
    kinds = {name: block["kind"] for name, block in report["judges"].items()}
    assert sorted(kinds.values()) == ["judge", "local model", "local model", "local model"]
    for variant, label in ((None, "local EPITOME scorer ("), ("baseline", "TF-IDF + logistic regression")):
        (block,) = [b for n, b in report["judges"].items() if n.startswith(label)]
        for key, dim in zip(KEYS, DIMS, strict=True):
            predicted = np.array([(r if variant is None else r[variant])[key] for r in rows])
            s = block["dimensions"][dim]
            assert s["n"] == len(CORPUS.pairs) and s["accuracy"]["value"] == pytest.approx(
                accuracy_score(_truth(key), predicted)
            )
            assert s["macro_f1"]["value"] == pytest.approx(f1_score(_truth(key), predicted, average="macro"))
    card = json.loads((epitome_model / "card.json").read_text())
    (scorer,) = [b for n, b in report["judges"].items() if n.startswith("local EPITOME scorer (")]
    for key, dim in zip(KEYS, DIMS, strict=True):  # the same numbers as the card's, by another path
        assert scorer["dimensions"][dim]["macro_f1"]["value"] == pytest.approx(card["cv"]["macro_f1"][key])
    assert next(f["name"] for f in report["published_figures"]).startswith("RoBERTa")


def test_a_scorer_of_other_data_or_without_cross_validation_is_refused(
    env: dict[str, Path], epitome_model: Path
) -> None:
    other = env["root"] / "other-model"
    shutil.copytree(epitome_model, other)
    card = json.loads((other / "card.json").read_text())
    (other / "card.json").write_text(json.dumps(card | {"data": card["data"] | {"sha256": "0" * 64}}))
    with pytest.raises(DataError, match="trained on other files"):
        report_pack("fx-epitome", [other], resamples=100)
    (other / "card.json").write_text(json.dumps({k: v for k, v in card.items() if k != "cv"}))
    with pytest.raises(DataError, match="without cross-validation"):
        report_pack("fx-epitome", [other], resamples=100)
    with pytest.raises(DataError, match="nor a model folder"):
        from tide_bench.validation.adapters import load_data
        from tide_bench.validation.report import local_ratings
        from tide_bench.validation.store import load_fetched

        local_ratings(load_data(load_fetched("fx-epitome")), env["root"])


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=st.sampled_from(range(len(CORPUS.pairs))), junk=st.one_of(st.text(max_size=30), st.integers(), st.none()))
def test_damaged_cross_validation_rows_are_refused_by_file_and_line(
    tmp_path_factory: pytest.TempPathFactory, env_once: Path, epitome_model: Path, line: int, junk
) -> None:
    folder = tmp_path_factory.mktemp("damaged") / "model"
    shutil.copytree(epitome_model, folder)
    path = folder / "cv_predictions.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[line])
    field = ["row", "rp_id", "er", "baseline"][line % 4]
    lines[line] = json.dumps(row | {field: junk}) if line % 5 else str(junk)
    path.write_text("\n".join(lines) + "\n")
    try:
        report = report_pack("fx-epitome", [folder], resamples=100)
    except DataError as exc:
        assert "cv_predictions.jsonl" in str(exc)
    else:  # the junk happened to be valid: the numbers are still computed
        assert report["judges"]


@pytest.fixture(scope="module")
def env_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fetched fixture pack for the fuzz test (the environment set for the module)."""
    root = tmp_path_factory.mktemp("pack-once")
    patch = pytest.MonkeyPatch()
    patch.setenv(PACKS_ENV, str(root / "manifests"))
    patch.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
    epitome_pack(root / "upstream", root / "manifests")
    fetch_pack("fx-epitome", accept_licence=True, source=root / "upstream")
    yield root
    patch.undo()


@settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(3, 80), seed=st.integers(0, 10_000), levels=st.integers(2, 4))
def test_categorical_statistics_equal_scikit_learns(n: int, seed: int, levels: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, levels, n).astype(float)
    judge = np.where(rng.random(n) < 0.6, human, rng.integers(0, levels, n)).astype(float)
    r = agreement(human, judge, [str(i // 2) for i in range(n)], resamples=100, categorical=True)
    assert r["accuracy"]["value"] == pytest.approx(accuracy_score(human, judge))
    assert r["macro_f1"]["value"] == pytest.approx(f1_score(human, judge, average="macro"))
    expected = cohen_kappa_score(human, judge, weights="quadratic")
    if np.isfinite(expected) and np.unique(np.r_[human, judge]).size == np.unique(human).size == np.unique(judge).size:
        assert r["qwk"]["value"] == pytest.approx(expected)
    confusion = np.array(r["confusion"]["rows_human"])
    assert confusion.sum() == n and np.trace(confusion) == (human == judge).sum()


def test_validation_list_shows_the_pack_and_its_mapping() -> None:
    result = CliRunner().invoke(cli, ["validation", "list"])
    assert result.exit_code == 0, result.output
    assert "EPITOME empathy mechanisms (Reddit)" in result.output
    assert "--map emotional_reactions=emotional_reactions" in result.output
    manifest = yaml.safe_load(Path(load_pack("epitome").source).read_text())
    assert manifest["licence"]["redistribution"] == "ratings"
