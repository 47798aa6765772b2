"""The EPITOME judge (`--rubric epitome`) on the same judge machinery, and the validation pack
`epitome`: a judge's levels and quoted rationales against the authors' labels, beside the local
scorer's cross-validated figures and the published ones. The judge is the fake server, over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.epitome_helpers import EPITOME_FIXTURE
from tide_bench.cli.main import cli
from tide_bench.epitome.corpus import read_corpus
from tide_bench.epitome.mechanisms import BY_FACTOR, KEYS
from tide_bench.epitome.validation import judge_rows, pack_items, published_rows, scorer_row, table
from tide_bench.judging.config import load_judge
from tide_bench.judging.prompt import rating_schema, system_text


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


@pytest.fixture(scope="module")
def judged_pack(tmp_path_factory: pytest.TempPathFactory, llm_server) -> Path:
    """The pack run of the fixture, judged through the command line by the scripted judge."""
    pack = tmp_path_factory.mktemp("pack") / "run"
    runner = CliRunner()
    made = runner.invoke(cli, ["epitome", "pack-run", "--from", str(EPITOME_FIXTURE), "--out", str(pack)])
    assert made.exit_code == 0, made.output
    llm_server.rater = _labelled_rater(read_corpus(EPITOME_FIXTURE))
    try:
        judged = runner.invoke(
            cli,
            [
                *("judge", str(pack), "--judge", "local", "--model", "fake-judge"),
                *("--base-url", llm_server.url + "/v1", "--rubric", "epitome", "--out", str(pack / "judge")),
            ],
        )
    finally:
        llm_server.rater = None
    assert judged.exit_code == 0, judged.output
    return pack


def test_a_judge_is_scored_against_the_labels_with_its_rationales_and_unscored_items_counted(
    judged_pack: Path,
) -> None:
    from tide_bench.judging.judgment_record import read_judgments

    corpus = read_corpus(EPITOME_FIXTURE)
    rubric = load_judge("claude-sonnet", rubric="epitome").rubric
    records = read_judgments(judged_pack / "judge" / "judgments.jsonl", rubric)
    judgments = {j.item_id: j.as_record() for j in records}
    assert len(judgments) == 49 and {i.item_id for i in pack_items(corpus)} == set(judgments)
    row = judge_rows(corpus, judgments, "fake judge")
    for key in KEYS:
        assert row[key]["accuracy"]["value"] == 1.0 and row[key]["qwk"]["value"] == pytest.approx(1.0)
        assert row[key]["rationale_token_f1"] == pytest.approx(1.0) and row[key]["n_unscored"] == 0
    # an item the judge did not score is a miss, counted, never dropped
    missing = dict(judgments)
    missing.pop(next(iter(missing)))
    partial = judge_rows(corpus, missing, "fake judge")
    assert all(partial[k]["n_unscored"] == 1 and partial[k]["n"] == 49 for k in KEYS)
    assert all(partial[k]["accuracy"]["value"] == pytest.approx(48 / 49) for k in KEYS)


def test_the_pack_table_puts_judges_the_local_scorer_and_the_published_figures_side_by_side(
    tmp_path: Path, judged_pack: Path, epitome_model: Path
) -> None:
    model = epitome_model
    result = CliRunner().invoke(
        cli,
        [
            *("epitome", "validate", "--from", str(EPITOME_FIXTURE), "--judge", str(judged_pack / "judge")),
            *("--model", str(model), "--json", str(tmp_path / "pack.json")),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "judge local (fake-judge)" in result.output and "local EPITOME scorer (grouped 5-fold CV)" in result.output
    assert "TF-IDF + logistic regression" in result.output and "RoBERTa bi-encoder" in result.output
    rows = json.loads((tmp_path / "pack.json").read_text())["rows"]
    assert [r["kind"] for r in rows] == ["judge", "local", "baseline", "published", "published"]
    assert all(rows[1][k]["macro_f1"]["ci_low"] <= rows[1][k]["macro_f1"]["value"] for k in KEYS)


def test_the_published_rows_say_how_far_they_were_confirmed() -> None:
    rows = published_rows()
    assert len(rows) == 2 and all(row["status"] for row in rows)
    assert rows[0]["er"]["macro_f1"]["value"] == pytest.approx(0.745)
    text = table([*rows, scorer_row({})])
    assert "RoBERTa bi-encoder" in text and "n/a" in text
