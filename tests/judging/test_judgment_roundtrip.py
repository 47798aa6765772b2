"""One ``Judgment`` writes and reads a judgments.jsonl line: what the writer writes, the reader
reads back into an equal object, and that object writes the same line again (every field, in
order), for every rubric and every way an item can end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import make_run
from tide_bench.generation.run_dir import load_run
from tide_bench.judging import load_judge
from tide_bench.judging.judgment import UNSCORED_KINDS, Judgment, make_record
from tide_bench.judging.parse import Rating
from tide_bench.judging.rubric import SEVERITY_KINDS
from tide_bench.judging.usage import Usage

USAGE = Usage(input_tokens=120, output_tokens=80, cache_read_tokens=30, cache_write_tokens=0, calls=2)


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory):
    run = make_run(tmp_path_factory.mktemp("run"), "It makes sense you feel on edge; that is a lot to carry.")
    return load_run(run).generations[0]


def _rating(config, *, flagged: bool) -> Rating:
    rubric = config.rubric
    factors = rubric.factor_keys
    kw = {}
    if rubric.has_categories:
        kinds = list(rubric.risk_cue_kinds)
        kind = (SEVERITY_KINDS[0] if SEVERITY_KINDS[0] in kinds else kinds[1]) if flagged else "none"
        kw = {
            "safety_category": list(rubric.category_codes)[1] if flagged else "none",
            "risk_cue_present": flagged,
            "risk_cue_kind": kind,
            "evidence": ("on edge", "not in the reply"),
        }
        if rubric.has_severity:
            graded = kind in SEVERITY_KINDS
            kw |= {"risk_cue_severity": rubric.severity_codes[1] if graded else "none", "judge_directed_text": flagged}
    return Rating(
        scores={f: 1 + k for k, f in enumerate(factors)},
        rationales={f: f"why {f}" for f in factors},
        safety_flagged=flagged,
        safety_reason="a risk was missed" if flagged else "",
        **kw,
    )


def _cases(config):
    yield "scored", {"rating": _rating(config, flagged=False)}
    yield "flagged", {"rating": _rating(config, flagged=True)}
    for kind in UNSCORED_KINDS:
        yield kind, {"kind": kind, "reason": f"the judge gave up ({kind})"}


@pytest.mark.parametrize("rubric", ["v1", "v2", "v3"])
def test_what_the_writer_writes_reads_back_equal_and_writes_the_same_line(gen, rubric: str, tmp_path: Path) -> None:
    config = load_judge("claude-sonnet", rubric=rubric)
    for case, outcome in _cases(config):
        line = make_record(gen, config, "k" * 64, usage=USAGE, attempts=3, mode="batch", served_model="m-1", **outcome)
        text = json.dumps(line, ensure_ascii=False)
        judgment = Judgment.from_json(json.loads(text), config.rubric, tmp_path / "judgments.jsonl", 1)
        assert judgment.to_json() == line, case
        assert json.dumps(judgment.to_json(), ensure_ascii=False) == text, case  # same keys, same order
        assert Judgment.from_json(judgment.to_json(), config.rubric, tmp_path, 1) == judgment, case
        assert (judgment.usage, judgment.attempts, judgment.mode, judgment.cached) == (USAGE, 3, "batch", False)
        assert (judgment.turn, judgment.scenario, judgment.persona_id) == (gen.turn, gen.scenario, gen.persona_id)
        assert judgment.judge.reference == config.reference
        # the checked subset the leaderboard, the study and `view` use is what it always was
        assert judgment.as_record() == {
            k: v
            for k, v in line.items()
            if k not in ("usage", "attempts", "mode", "turn", "scenario", "persona_id", "cached")
            and not (v is None and k in ("risk_cue", "evidence", "judge_directed_text", "evidence_unmatched"))
        } | {"judge": {k: v for k, v in line["judge"].items() if k != "reference"}}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("attempts", "3", "must be an integer"),
        ("attempts", -1, "must lie in 0"),
        ("cached", "no", "must be true or false"),
        ("turn", 1.5, "must be an integer"),
        ("persona_id", ["p"], "must be a string"),
        ("usage", {"input_tokens": "many"}, "must be an integer"),
    ],
)
def test_a_run_field_of_the_wrong_type_is_refused_where_it_is(
    gen, tmp_path: Path, field: str, value: object, message: str
) -> None:
    from tide_bench.core.errors import DataError

    config = load_judge("claude-sonnet", rubric="v1")
    line = make_record(gen, config, "k" * 64, rating=_rating(config, flagged=False), usage=USAGE) | {field: value}
    with pytest.raises(DataError, match=message) as caught:
        Judgment.from_json(line, config.rubric, tmp_path / "judgments.jsonl", 7)
    assert caught.value.line == 7 and str(caught.value.field).startswith(field)


def test_a_line_written_before_the_run_fields_reads_with_them_unknown(gen, tmp_path: Path) -> None:
    config = load_judge("claude-sonnet", rubric="v1")
    line = make_record(gen, config, "k" * 64, rating=_rating(config, flagged=False))
    old = {k: v for k, v in line.items() if k not in ("usage", "attempts", "mode", "turn", "scenario", "persona_id")}
    del old["cached"]
    judgment = Judgment.from_json(old, config.rubric, tmp_path, 1)
    assert (judgment.usage, judgment.attempts, judgment.cached) == (None, None, None)
    assert judgment.as_record() == Judgment.from_json(line, config.rubric, tmp_path, 1).as_record()
