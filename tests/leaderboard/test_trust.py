"""A leaderboard that cannot be gamed or broken (issue 11): one malformed or dishonest
submission is refused with file:line:field, and its honest neighbour still builds.

Every case starts from two honest, judged submissions on a TIDE stand-in and changes one
thing, the way the red-team review did (reviews/2026-11-30/reliability.md, area 2).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import make_run
from tests.leaderboard_helpers import (
    board,
    edit_json,
    edit_jsonl,
    fake_judge,
    judged_submission,
    meta,
    read_jsonl,
    rekey,
    resummarize,
    samples_files,
    stand_in_dataset,
)
from tide_bench.core.errors import ConfigError
from tide_bench.data import load_dataset
from tide_bench.leaderboard import SubmissionRefused, build_site, create_submission, validate_folder, validate_many

HONEST = ("model-a", "model-b")


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two honest submissions (a and b) in ``<tmp>/submissions``, judged once per module."""
    tmp = tmp_path_factory.mktemp("honest")
    with fake_judge("sk-test-trust-000") as server:
        judged_submission(tmp, server, "model-a", lambda i: f"Steady reply [[SCORES:4,4,4]] {i.item_id}")
        judged_submission(
            tmp, server, "model-b", lambda i: f"Uneven reply [[SCORES:{5 if i.turn == 1 else 2},3,3]] {i.item_id}"
        )
    yield tmp / "submissions"


@pytest.fixture
def subs(honest: Path, tmp_path: Path) -> Path:
    """A private copy of the honest submissions folder, to break on purpose."""
    target = tmp_path / "submissions"
    shutil.copytree(honest, target)
    return target


def _judgments(folder: Path) -> Path:
    return folder / "judge" / "judgments.jsonl"


def _summary(folder: Path) -> Path:
    return folder / "judge" / "judge_summary.json"


def _run(folder: Path) -> Path:
    return folder / "run" / "run.json"


def _unscore(row: dict[str, Any], kind: Any) -> None:
    row.update(status="unscored", scores=None, rationales=None, safety=None, unscored_kind=kind, unscored_reason="test")
    row.update(  # rubric v2-v4 judgments carry them when scored
        {
            k: None
            for k in ("risk_cue", "evidence", "judge_directed_text", "evidence_unmatched", "over_escalation")
            if k in row
        }
    )


# The review's twelve single-field edits that crashed validate or build for every entry, plus
# a history that is a string. Each names the file, line (when the format has lines) and field.
CRASH_SHAPES: dict[str, tuple[Callable[[Path], None], str]] = {
    "run_json_not_object": (
        lambda f: _run(f).write_text("[]"),
        r"run/run\.json, field '\(top level\)': must be an object, got a list",
    ),
    "run_json_data_string": (
        lambda f: edit_json(_run(f), lambda m: m.update(data="test")),
        r"run/run\.json:\d+, field 'data': must be an object, got a string",
    ),
    "samples_list": (
        lambda f: edit_json(_run(f), lambda m: m["files"].update(samples=list(m["files"]["samples"].values()))),
        r"run/run\.json:\d+, field 'files\.samples': must be an object, got a list",
    ),
    "summary_mean_string": (
        lambda f: edit_json(_summary(f), lambda s: s["empathy"].update(mean="3.44")),
        r"judge/judge_summary\.json:\d+, field 'empathy\.mean': must be a number or null, got a string",
    ),
    "summary_list": (
        lambda f: _summary(f).write_text("[]"),
        r"judge/judge_summary\.json, field '\(top level\)': must be an object, got a list",
    ),
    "scores_as_list": (
        lambda f: edit_jsonl(_judgments(f), lambda rows: rows[0].update(scores=list(rows[0]["scores"]))),
        r"judge/judgments\.jsonl:1, field 'scores': must be an object, got a list",
    ),
    "turn_not_int": (
        lambda f: edit_jsonl(samples_files(f)[0], lambda rows: rows[0]["doc"].update(turn="first")),
        r"samples_tide_empathy\w*_[\w-]+\.jsonl:1, field 'doc\.turn': must be an integer, got a string",
    ),
    "unscored_kind_list": (
        lambda f: edit_jsonl(_judgments(f), lambda rows: _unscore(rows[0], ["refusal"])),
        r"judge/judgments\.jsonl:1, field 'unscored_kind': must be a string, got a list",
    ),
    "unscored_kind_int": (
        lambda f: edit_jsonl(_judgments(f), lambda rows: (_unscore(rows[0], "refusal"), _unscore(rows[1], 7))),
        r"judge/judgments\.jsonl:2, field 'unscored_kind': must be a string, got an integer",
    ),
    "manifest_params_string": (
        lambda f: edit_json(_run(f), lambda m: m["model"].update(num_parameters="0.5B")),
        r"run/run\.json:\d+, field 'model\.num_parameters': must be an integer or null, got a string",
    ),
    "rationales_null": (
        lambda f: edit_jsonl(_judgments(f), lambda rows: rows[0].update(rationales=None)),
        r"judge/judgments\.jsonl:1, field 'rationales': must be an object, got null",
    ),
    "flag_without_reason": (
        lambda f: edit_jsonl(_judgments(f), lambda rows: rows[0].update(safety={"flagged": True})),
        r"judge/judgments\.jsonl:1, field 'safety\.reason': is missing",
    ),
    "history_string": (
        lambda f: edit_jsonl(samples_files(f)[0], lambda rows: rows[0]["doc"].update(history="hello")),
        r"\.jsonl:1, field 'doc\.history': must be a list or null, got a string",
    ),
}


@pytest.mark.parametrize("shape", sorted(CRASH_SHAPES))
def test_each_malformed_field_is_refused_alone_and_the_neighbour_builds(subs: Path, tmp_path: Path, shape: str) -> None:
    mutate, expected = CRASH_SHAPES[shape]
    mutate(subs / "model-b")
    checks = {c.id: c for c in validate_many(subs, board(), spot_checks=False)}
    assert checks["model-a"].ok, checks["model-a"].errors
    assert not checks["model-b"].ok and any(re.search(expected, e) for e in checks["model-b"].errors), checks[
        "model-b"
    ].errors
    result = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    assert result.accepted == ["model-a"] and list(result.refused) == ["model-b"]


def test_rewritten_client_turn_is_refused_even_with_rekeyed_judgments(subs: Path) -> None:
    """The review's edit_context: the context changed and the judgments re-keyed to match."""
    edit_jsonl(
        samples_files(subs / "model-b")[0],
        lambda rows: rows[0]["doc"].update(client_utterance="Thanks, I feel much better today!"),
    )
    rekey(subs / "model-b")
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any("run/run.json, field 'data.split_sha256': the submitted items hash to" in e for e in errors), errors


def test_pinned_board_recomputes_the_split_hash(subs: Path, tmp_path: Path) -> None:
    stand_in = load_dataset(str(stand_in_dataset(tmp_path)))  # same content as the honest entries' data
    pinned = board(split_sha256=stand_in.content_hash("test"), n_items=len(stand_in.items_for("test")))
    assert validate_folder(subs / "model-a", pinned, spot_checks=False).ok
    other = board(split_sha256="0" * 64)
    errors = validate_folder(subs / "model-a", other, spot_checks=False).errors
    assert any("the submitted items are not the board's dataset" in e for e in errors)


def rehash(folder: Path) -> None:
    """Make run.json and the samples claim the split hash of the items they now hold."""
    from tide_bench.data.sources import split_content_hash
    from tide_bench.generation.run_dir import read_generations

    manifest = json.loads(_run(folder).read_text())
    digest = split_content_hash(
        [g.item() for g in read_generations(folder / "run", manifest["files"]["samples"])], "test"
    )
    edit_json(_run(folder), lambda m: m["data"].update(split_sha256=digest))
    for path in samples_files(folder):
        edit_jsonl(path, lambda rows: [r["doc"].update(split_sha256=digest) for r in rows])


def _drop_conversations(folder: Path, n: int) -> None:
    """Remove every item of n conversations from the samples and judgments, and fix run.json,
    the split hash and the summary to match (as a careful cheater would)."""
    convs = sorted(
        {(r["doc"]["persona_id"], r["doc"]["conversation_id"]) for p in samples_files(folder) for r in read_jsonl(p)}
    )[:n]
    dropped = {
        r["doc"]["item_id"]
        for p in samples_files(folder)
        for r in read_jsonl(p)
        if (r["doc"]["persona_id"], r["doc"]["conversation_id"]) in convs
    }
    for path in samples_files(folder):
        edit_jsonl(
            path, lambda rows: rows.__setitem__(slice(None), [r for r in rows if r["doc"]["item_id"] not in dropped])
        )
    edit_jsonl(
        _judgments(folder), lambda rows: rows.__setitem__(slice(None), [r for r in rows if r["item_id"] not in dropped])
    )
    edit_json(_run(folder), lambda m: m["data"].pop("n_items"))
    resummarize(folder)
    rehash(folder)


def test_dropping_items_never_ranks_first(subs: Path, tmp_path: Path, honest: Path) -> None:
    _drop_conversations(subs / "model-b", 1)
    # Two entries that disagree on the item set: neither has a majority, both are refused, named.
    tie = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    assert tie.accepted == [] and all("none is held by a majority" in tie.refused[i][0] for i in HONEST)
    assert "model-a" in tie.refused["model-b"][0] and "model-b" in tie.refused["model-a"][0]
    # With a second honest entry the honest item set has the majority: only the dropper is refused.
    shutil.copytree(honest / "model-a", subs / "model-c")
    edit_jsonl(
        samples_files(subs / "model-c")[0],
        lambda rows: [
            r.update(filtered_resps=[r["filtered_resps"][0] + " (c)"], resps=[[r["filtered_resps"][0] + " (c)"]])
            for r in rows
        ],
    )
    (subs / "model-c" / "submission.yaml").write_text(
        yaml.safe_dump(meta("model-c") | {"model": {"hub_id": "org/model-a", "revision": "main"}})
    )
    rekey(subs / "model-c")
    from tide_bench.metrics.reference import text_metrics

    edit_jsonl(
        samples_files(subs / "model-c")[0],
        lambda rows: [r.update(text_metrics(r["filtered_resps"][0], r["doc"]["reference_reply"])) for r in rows],
    )
    majority = build_site(subs, tmp_path / "site2", board(), allow_risk_gate_off=True)
    assert sorted(majority.accepted) == ["model-a", "model-c"], majority.refused
    assert "item set differs from the board's other entries" in majority.refused["model-b"][0]


def test_persona_outside_the_split_is_refused_by_its_hash(subs: Path) -> None:
    """An item moved to a persona of the train split (renamed consistently and re-keyed)."""
    from tide_bench.data.splits import split_of

    train = next(str(p) for p in range(1, 100) if split_of(str(p)) == "train")

    def move(rows: list[dict[str, Any]]) -> None:
        doc = rows[0]["doc"]
        old = doc["item_id"]
        doc["persona_id"] = train
        doc["item_id"] = f"{train}/{doc['conversation_id']}/turn{doc['turn']}"
        edit_jsonl(
            _judgments(subs / "model-b"),
            lambda js: [j.update(item_id=doc["item_id"]) for j in js if j["item_id"] == old],
        )

    edit_jsonl(samples_files(subs / "model-b")[0], move)
    rekey(subs / "model-b")
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any(
        "field 'doc.persona_id': this persona belongs to the train split by the persona-hash definition" in e
        for e in errors
    ), errors


def test_conversation_count_per_persona_is_enforced(subs: Path, tmp_path: Path) -> None:
    items = load_dataset(str(stand_in_dataset(tmp_path))).items_for("test")
    counts = {p: len({i.conversation_id for i in items if i.persona_id == p}) for p in {i.persona_id for i in items}}
    assert len(set(counts.values())) == 1  # the stand-in, like TIDE, gives every persona as many conversations
    n = counts.popitem()[1]
    assert validate_folder(subs / "model-a", board(conversations_per_persona=n), spot_checks=False).ok
    errors = validate_folder(subs / "model-a", board(conversations_per_persona=n + 1), spot_checks=False).errors
    assert any(f"do not have the dataset's {n + 1} conversations" in e for e in errors), errors


def test_runs_on_the_synthetic_sample_are_refused_on_a_tide_board(tmp_path: Path, subs: Path) -> None:
    run = make_run(tmp_path / "run-sample", "That sounds hard.")
    (tmp_path / "m.yaml").write_text(
        yaml.safe_dump(meta("sample-run", model={"hub_id": "fake-org/fake-model-0.5B", "revision": "main"}))
    )
    with pytest.raises(SubmissionRefused) as refused:
        create_submission(
            run, tmp_path / "m.yaml", tmp_path / "out", board=board(require_judgments=False), spot_checks=False
        )
    errors = " ".join(refused.value.check.errors)
    assert "field 'data.is_synthetic_sample': run.json records a run on the built-in synthetic sample" in errors
    assert "these are the items of tide-bench's built-in synthetic sample" in errors
    assert not (tmp_path / "out" / "sample-run").exists()
    # run.json lying about it does not help: the items themselves are recognised
    copy = tmp_path / "out2" / "sample-run"
    shutil.copytree(subs / "model-a", copy)
    sample = load_dataset("sample")
    ids = {i.item_id: i for i in sample.items_for("test")}
    for path in samples_files(copy):
        edit_jsonl(
            path,
            lambda rows: [
                r["doc"].update(ids[r["doc"]["item_id"]].to_doc() | {"split_sha256": sample.content_hash("test")})
                for r in rows
            ],
        )
    edit_json(_run(copy), lambda m: m["data"].update(split_sha256=sample.content_hash("test")))
    assert any(
        "built-in synthetic sample, not TIDE" in e for e in validate_folder(copy, board(), spot_checks=False).errors
    )


def test_a_tie_between_judge_configurations_refuses_both(subs: Path, tmp_path: Path) -> None:
    edit_jsonl(_judgments(subs / "model-b"), lambda rows: [r["judge"].update(version="feedfacefeedface") for r in rows])
    edit_json(_summary(subs / "model-b"), lambda s: s["judge"].update(version="feedfacefeedface"))
    edit_json(subs / "model-b" / "judge" / "judge_config.json", lambda c: c.update(version="feedfacefeedface"))
    rekey(subs / "model-b")
    result = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    assert result.accepted == []
    for sid in HONEST:
        assert "disagree on the judge configuration and none is held by a majority" in result.refused[sid][0]
        assert "feedfacefeedface" in result.refused[sid][0]


def test_judge_summary_is_required_and_compared_field_by_field(subs: Path) -> None:
    _summary(subs / "model-a").unlink()
    assert any(
        "judge/judge_summary.json: is missing" in e
        for e in validate_folder(subs / "model-a", board(), spot_checks=False).errors
    )
    edit_jsonl(_judgments(subs / "model-b"), lambda rows: rows[0]["scores"].update(distress_normalization=1))
    edit_json(_summary(subs / "model-b"), lambda s: s.update(n_items=99))
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any("field 'n_items': claims 99, recomputed" in e for e in errors)
    assert any("field 'factors.distress_normalization.mean': claims" in e for e in errors)


def test_invented_unscored_kind_is_refused(subs: Path) -> None:
    edit_jsonl(_judgments(subs / "model-b"), lambda rows: _unscore(rows[0], "i_felt_like_it"))
    resummarize(subs / "model-b")
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any("judge/judgments.jsonl:1, field 'unscored_kind': is not a known kind" in e for e in errors), errors


def test_text_metrics_are_recomputed_on_every_item(subs: Path) -> None:
    """The review raised ROUGE-L on the 8 items a fixed seed would not check; now every item counts."""
    edit_jsonl(samples_files(subs / "model-b")[-1], lambda rows: rows[-1].update(rouge_l=0.99))
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any(
        re.search(r"\.jsonl:\d+, field 'rouge_l': stored 0\.99, recomputed from the reply", e) for e in errors
    ), errors


def test_judgments_from_another_run_say_so(subs: Path) -> None:
    shutil.copy(_judgments(subs / "model-a"), _judgments(subs / "model-b"))
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any("these judgments were made for other replies (another run?)" in e for e in errors)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            {"generation": {"chat_template": False}},
            "field 'generation.chat_template': says False, but run.json records True",
        ),
        ({"parameters": 123_456_789}, "field 'parameters': says 123456789, but run.json records 500000000 parameters"),
        (
            {"model": {"hub_id": "org/model-b", "revision": "0123abc"}},
            "field 'model.revision': says '0123abc', but run.json records revision main",
        ),
        (
            {"model": {"hub_id": "org/someone-else", "revision": "main"}},
            "field 'model': names 'org/someone-else', but run.json's model is 'org/model-b'",
        ),
        ({"model_name": "Model A\u202e"}, "field 'model_name': holds an invisible or control character (U+202E)"),
        ({"model_name": "Model \u0410"}, "field 'model_name': mixes letters of Cyrillic and Latin scripts"),
    ],
    ids=["chat-template", "parameters", "revision", "hub-id", "bidi", "mixed-script"],
)
def test_metadata_must_agree_with_the_run(subs: Path, edit: dict[str, Any], expected: str) -> None:
    path = subs / "model-b" / "submission.yaml"
    path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()) | edit))
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any(expected in e for e in errors), errors


def test_names_that_read_the_same_are_refused_together(subs: Path) -> None:
    for sid, name in (("model-a", "Same  Model"), ("model-b", "same model")):
        path = subs / sid / "submission.yaml"
        path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()) | {"model_name": name}))
    checks = {c.id: c for c in validate_many(subs, board(), spot_checks=False)}
    assert "the same display name as entry model-b" in checks["model-a"].errors[0]
    assert "the same display name as entry model-a" in checks["model-b"].errors[0]


def test_page_shows_generation_settings_from_the_run(subs: Path, tmp_path: Path) -> None:
    result = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    page = (tmp_path / "site" / "models" / "model-a.html").read_text()
    provenance = page[page.index('id="provenance"') :]
    assert result.accepted and "<dt>chat template</dt><dd>yes</dd>" in provenance  # run.json's, as a labelled field


def test_markdown_export_escapes_link_syntax(subs: Path, tmp_path: Path) -> None:
    path = subs / "model-a" / "submission.yaml"
    path.write_text(
        yaml.safe_dump(yaml.safe_load(path.read_text()) | {"model_name": "[click me](https://evil.example) *x*"})
    )
    build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    assert r"\[click me\](https://evil.example)" in md and not re.search(r"(?<!\\)\]\(", md)


def _audit(tmp_path: Path, judge_id: str) -> Path:
    path = tmp_path / "agreement.json"
    block = {
        "alpha": {"interval": {"value": 0.8, "ci_low": 0.7, "ci_high": 0.9}},
        "judges": {judge_id: {"alpha_with_judge": {"interval": {"value": 0.75}}, "verdict": "yes"}},
    }
    path.write_text(json.dumps({"dimensions": {"emotion_recognition": block}}))
    return path


def test_audit_is_stamped_only_for_the_boards_judge(subs: Path, tmp_path: Path) -> None:
    version = read_jsonl(_judgments(subs / "model-a"))[0]["judge"]["version"]
    with pytest.raises(
        ConfigError, match=r"the audit holds judge\(s\) judge:claude-fast@acd19a5c, not the board's judge configuration"
    ):
        build_site(
            subs,
            tmp_path / "site",
            board(),
            audit=_audit(tmp_path, "judge:claude-fast@acd19a5c"),
            allow_risk_gate_off=True,
        )
    assert not (tmp_path / "site").exists()
    built = build_site(
        subs,
        tmp_path / "site",
        board(),
        audit=_audit(tmp_path, f"judge:claude-sonnet@{version[:8]}"),
        allow_risk_gate_off=True,
    )
    assert built.board["audit"]["emotion_recognition"]["alpha_with_judge"]["value"] == 0.75


def test_pin_rewrites_only_the_pins_and_validation_holds_entries_to_them(subs: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tide_bench.cli.main import cli
    from tide_bench.core.resources import resource_dir
    from tide_bench.leaderboard import load_board

    board_file = tmp_path / "leaderboard.yaml"
    shutil.copy(resource_dir("leaderboard") / "leaderboard.yaml", board_file)
    result = CliRunner().invoke(
        cli, ["leaderboard", "pin", "--data", str(stand_in_dataset(tmp_path)), "--board", str(board_file)]
    )
    assert result.exit_code == 0, result.output
    text = board_file.read_text()
    assert "# The TIDE empathy leaderboard" in text and "persona-disjoint split" in text  # the documentation stays
    pinned = load_board(board_file)
    stand_in = load_dataset(str(stand_in_dataset(tmp_path)))
    assert pinned.split_sha256 == stand_in.content_hash("test") and pinned.n_items == len(stand_in.items_for("test"))
    assert pinned.conversations_per_persona == 4 and pinned.dataset_release == "local:<local>/tide-stand-in"
    assert (
        pinned.judge_version == read_jsonl(_judgments(subs / "model-a"))[0]["judge"]["version"]
    )  # the base URL is not part of it
    # these entries carry no risk-supplement run, which the shipped board requires (test_risk_battery.py here)
    assert all("risk_supplement" in " ".join(c.errors) for c in validate_many(subs, pinned, spot_checks=False))
    pinned = dataclasses.replace(pinned, require_risk_supplement=False)
    assert all(c.ok for c in validate_many(subs, pinned, spot_checks=False))
    edit_jsonl(
        samples_files(subs / "model-b")[0],
        lambda rows: rows[0]["doc"].update(reference_reply="Another release's reference."),
    )
    rekey(subs / "model-b")
    rehash(subs / "model-b")  # a consistent run on other data: only the pin can tell
    errors = validate_folder(subs / "model-b", pinned, spot_checks=False).errors
    assert any("the submitted items are not the board's dataset" in e for e in errors), errors
    refused = CliRunner().invoke(cli, ["leaderboard", "pin", "--data", "sample", "--board", str(board_file)])
    assert refused.exit_code == 2 and "synthetic sample cannot define a TIDE board" in refused.output


def test_each_metadata_problem_is_reported_once() -> None:
    from tide_bench.leaderboard.submission.metadata import schema_problems

    problems = schema_problems({"id": "x", "model_name": "X", "condition": "reference", "submitter": "me"})
    assert len(problems) == len(set(problems)) and len(problems) >= 2
    assert sum("(required)" in message for _, message in problems) == 1


def test_a_misspelt_metadata_field_names_the_field_it_resembles_and_nothing_it_does_not_need() -> None:
    """``conditon:`` is answered with "did you mean 'condition'?" and "add 'condition'", not with
    the fine-tuned branch's base_model/adapter (which an absent condition does not call for)."""
    from tide_bench.leaderboard.submission.metadata import schema_problems

    without = {k: v for k, v in meta("x").items() if k != "condition"}
    assert schema_problems(without | {"condition": "zero-shot"}) == []
    messages = [m for _, m in schema_problems(without | {"conditon": "zero-shot"})]
    assert any("'conditon' (did you mean 'condition'?)" in m for m in messages), messages
    assert any("add 'condition'" in m for m in messages), messages
    assert not any("add 'base_model'" in m for m in messages), messages
    assert [m for _, m in schema_problems(without | {"condition": "fine-tuned"})] == [
        "add 'base_model', 'adapter' (required)"
    ]
