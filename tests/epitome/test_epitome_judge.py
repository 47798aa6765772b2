"""The EPITOME judge (`--rubric epitome`) on the same judge machinery, and the validation pack
`epitome` end to end through the command line: `tide-bench validation fetch|run|report` (the
one implementation; `tide-bench epitome` only trains and scores). The judge is the fake server,
over HTTP, answering with the labels and quoting the annotated spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.epitome_helpers import epitome_pack
from tide_bench.cli.main import cli
from tide_bench.epitome.corpus import read_corpus
from tide_bench.epitome.mechanisms import BY_FACTOR, KEYS, MECHANISMS
from tide_bench.judging.config import load_judge
from tide_bench.judging.prompt import rating_schema, system_text
from tide_bench.validation.manifest import PACKS_ENV


def test_the_epitome_rubric_is_data_versioned_and_hashed_like_the_tide_rubric() -> None:
    tide = load_judge("claude-sonnet")
    epitome = load_judge("claude-sonnet", rubric="epitome")
    assert epitome.version != tide.version and epitome.rubric.content_hash() != tide.rubric.content_hash()
    assert (epitome.rubric.scale_min, epitome.rubric.scale_max) == (0, 2)
    assert set(epitome.rubric.factor_keys) == set(BY_FACTOR)  # the rubric's factors are EPITOME's mechanisms
    system = system_text(epitome)
    for phrase in ("Emotional Reactions", "Interpretations", "Explorations", "'ER: '", "level 0 (none)"):
        assert phrase in system
    schema = rating_schema(epitome)
    assert schema["properties"]["emotional_reactions"]["properties"]["score"]["enum"] == [0, 1, 2]
    assert "evidence" in schema["properties"]  # the quoted rationale spans


def _labelled_rater(corpus):
    """A scripted judge that answers with the labels, quoting the annotated spans."""
    labels = {p.response_post: p for p in corpus.pairs}

    def rate(reply: str):
        pair = labels[reply]
        quotes = [f"{k.upper()}: {span}" for k in KEYS for span in pair.rationales[k]]
        return {"scores": [pair.levels[k] for k in KEYS], "category": None, "risk": None, "evidence": quotes}

    return rate


@pytest.fixture
def pack_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(PACKS_ENV, str(tmp_path / "manifests"))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    epitome_pack(tmp_path / "upstream", tmp_path / "manifests")
    return tmp_path


def test_the_pack_runs_and_reports_through_the_validation_commands_with_the_packs_own_rubric(
    pack_env: Path, llm_server, epitome_model: Path
) -> None:
    runner = CliRunner()
    fetched = runner.invoke(
        cli, ["validation", "fetch", "fx-epitome", "--accept-licence", "--from", str(pack_env / "upstream")]
    )
    assert fetched.exit_code == 0, fetched.output
    corpus = read_corpus(pack_env / "upstream")
    llm_server.rater = _labelled_rater(corpus)
    try:
        run = runner.invoke(  # no --rubric: the pack names its own (epitome)
            cli,
            [
                *("validation", "run", "fx-epitome", "--judge", "local", "--model", "fake-judge"),
                *("--base-url", llm_server.url + "/v1", "--out", str(pack_env / "run")),
            ],
        )
    finally:
        llm_server.rater = None
    assert run.exit_code == 0, run.output
    record = json.loads((pack_env / "run" / "validation_run.json").read_text())
    assert record["judge"]["rubric"].startswith("epitome-rubric@")
    judgments = [json.loads(line) for line in (pack_env / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == len(corpus.pairs) and all("evidence_counts" in j for j in judgments)
    shared = "".join(p.read_text() for p in (pack_env / "run").iterdir())
    assert not any(p.response_post in shared for p in corpus.pairs)  # only ids, levels and counts travel
    out = pack_env / "report.json"
    report = runner.invoke(
        cli,
        [
            *("validation", "report", "fx-epitome", "--judge-ratings", str(pack_env / "run")),
            *("--judge-ratings", str(epitome_model), "--json", str(out), "--resamples", "100"),
        ],
    )
    assert report.exit_code == 0, report.output
    assert "(fake-judge)" in report.output and "local EPITOME scorer (grouped 2-fold CV)" in report.output
    assert "RoBERTa bi-encoder" in report.output and "rationale T-F1 1.000" in report.output
    judge = next(
        b for b in json.loads(out.read_text())["packs"]["fx-epitome"]["judges"].values() if b["kind"] == "judge"
    )
    for m in MECHANISMS:  # the judge answered with the labels: perfect agreement
        block = judge["dimensions"][m.factor]
        assert block["accuracy"]["value"] == 1.0 and block["qwk"]["value"] == pytest.approx(1.0)
        assert block["rationales"]["token_f1"]["value"] == pytest.approx(1.0)


def test_the_epitome_group_keeps_no_second_validation_path() -> None:
    result = CliRunner().invoke(cli, ["epitome", "--help"])
    assert result.exit_code == 0, result.output
    assert "tide-bench validation run epitome" in result.output
    for gone in ("pack-run", "validate"):
        assert CliRunner().invoke(cli, ["epitome", gone]).exit_code != 0
