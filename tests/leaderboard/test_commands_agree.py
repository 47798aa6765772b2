"""submit, leaderboard validate and leaderboard build --strict decide alike (issue 32, N5).

They run one check list (tide_bench/leaderboard/submission/accept.py). Every hostile submission below
(the red-team kits' single changes, and seeded random field edits) is put through all three:
``validate`` on the submissions folder, ``build --strict`` on it, and ``submit`` of the
entry's own files into a folder holding its honest neighbour. They must agree on accept or
refuse, and none may end in anything but a clear error. (A local path is not among them: ``submit``
redacts it while packaging, by design, so the folder it writes holds none.) Before the fix, a submission that
relabelled its worst items as unscored (with a consistent summary) passed validate and submit
and was refused only by build --strict."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.leaderboard.test_trust import CRASH_SHAPES, _unscore
from tests.leaderboard_helpers import (
    board,
    edit_json,
    edit_jsonl,
    fake_judge,
    judged_submission,
    read_jsonl,
    resummarize,
    samples_files,
)
from tide_bench.core.errors import TideBenchError
from tide_bench.leaderboard import build_site, create_submission, validate_many
from tide_bench.tasks.prompts import build_messages, render_plain
from tide_bench.tasks.registry import system_prompt

ENTRY, NEIGHBOUR = "model-x", "model-n"


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("agreement")
    with fake_judge("sk-test-agreement-000") as server:
        judged_submission(tmp, server, NEIGHBOUR, lambda i: f"Steady reply [[SCORES:3,3,3]] {i.item_id}")
        judged_submission(
            tmp, server, ENTRY, lambda i: f"Uneven reply [[SCORES:{5 if i.turn == 1 else 2},4,4]] {i.item_id}"
        )
    yield tmp / "submissions"


def _judgments(folder: Path) -> Path:
    return folder / "judge" / "judgments.jsonl"


def _relabel_worst_as_unscored(folder: Path) -> None:
    """The 30 November kit's remaining defective case: the three worst items become 'transient
    failures' (left out of the means), with a summary made consistent."""
    rows = read_jsonl(_judgments(folder))
    worst = sorted((r for r in rows if r["status"] == "scored"), key=lambda r: sum(r["scores"].values()))[:3]
    ids = {r["item_id"] for r in worst}
    edit_jsonl(_judgments(folder), lambda rows: [_unscore(r, "transient_failure") for r in rows if r["item_id"] in ids])
    resummarize(folder)


def _declare_reference(folder: Path) -> None:
    edit_json(
        folder / "run" / "run.json",
        lambda m: (m["prompt"].update(condition="reference"), m["model"].update(is_reference=True)),
    )


def _guided_prompts(folder: Path) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            row["arguments"]["gen_args_0"]["arg_0"] = render_plain(build_messages(row["doc"], system_prompt("guided")))

    edit_jsonl(samples_files(folder)[0], edit)


def _meta(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / "submission.yaml"
        meta = yaml.safe_load(path.read_text())
        edit(meta)
        path.write_text(yaml.safe_dump(meta, allow_unicode=True))

    return apply


def _copy_neighbour_replies(folder: Path) -> None:
    neighbour = folder.parent / NEIGHBOUR
    for mine, theirs in zip(samples_files(folder), samples_files(neighbour), strict=True):
        shutil.copy(theirs, mine)
    shutil.copy(_judgments(neighbour), _judgments(folder))
    shutil.copy(neighbour / "judge" / "judge_summary.json", folder / "judge" / "judge_summary.json")


HOSTILE: dict[str, Callable[[Path], None]] = {
    "relabel_worst_as_unscored": _relabel_worst_as_unscored,
    "declared_reference_with_model_replies": _declare_reference,
    "guided_prompts_claimed_neutral": _guided_prompts,
    "edit_scores_keep_summary": lambda f: edit_jsonl(
        _judgments(f), lambda rows: [r.update(scores=dict.fromkeys(r["scores"], 5)) for r in rows if r["scores"]]
    ),
    "edit_reply": lambda f: edit_jsonl(
        samples_files(f)[0], lambda rows: rows[0].update(filtered_resps=["a better reply"], resps=[["a better reply"]])
    ),
    "edit_rouge": lambda f: edit_jsonl(samples_files(f)[0], lambda rows: rows[0].update(rouge_l=0.99)),
    "missing_judgment": lambda f: edit_jsonl(_judgments(f), lambda rows: rows.pop()),
    "invented_unscored_kind": lambda f: edit_jsonl(_judgments(f), lambda rows: _unscore(rows[0], "i_felt_like_it")),
    "limit": lambda f: edit_json(f / "run" / "run.json", lambda m: m["generation"].update(limit=5)),
    "split_claim": lambda f: edit_json(f / "run" / "run.json", lambda m: m["data"].update(split="train")),
    "no_summary": lambda f: (f / "judge" / "judge_summary.json").unlink(),
    "invisible_name": _meta(lambda m: m.update(model_name="Model\u200bX")),
    "mixed_script_name": _meta(lambda m: m.update(model_name="Mоdel X")),  # Cyrillic o
    "same_name_as_neighbour": _meta(lambda m: m.update(model_name=f"model {NEIGHBOUR}")),
    "params_disagree": _meta(lambda m: m.update(parameters=7)),
    "same_replies_as_neighbour": _copy_neighbour_replies,
    **{f"crash_{name}": shape for name, (shape, _) in CRASH_SHAPES.items()},
}


def _three_decisions(subs: Path, tmp: Path) -> dict[str, bool]:
    """Whether validate, build --strict and submit accept the entry (True) or refuse it."""
    the_board = board()
    validate = next(c for c in validate_many(subs, the_board, spot_checks=False) if c.id == ENTRY).ok
    try:
        build_site(subs, tmp / "site", the_board, strict=True, instances=False, workers=1, allow_risk_gate_off=True)
        strict = True
    except TideBenchError:
        strict = False
    out = tmp / "out"
    shutil.copytree(subs / NEIGHBOUR, out / NEIGHBOUR)
    entry = subs / ENTRY
    try:
        create_submission(
            entry / "run", entry / "submission.yaml", out, judge_dir=entry / "judge", board=the_board, spot_checks=False
        )
        submitted = True
    except TideBenchError:
        submitted = False
    return {"validate": validate, "build --strict": strict, "submit": submitted}


def _fresh(honest: Path, tmp: Path) -> Path:
    subs = tmp / "submissions"
    shutil.copytree(honest, subs)
    return subs


def test_the_honest_entry_is_accepted_by_all_three(honest: Path, tmp_path: Path) -> None:
    assert _three_decisions(_fresh(honest, tmp_path), tmp_path) == dict.fromkeys(
        ("validate", "build --strict", "submit"), True
    )


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_hostile_fixture_is_refused_by_all_three(honest: Path, tmp_path: Path, name: str) -> None:
    subs = _fresh(honest, tmp_path)
    HOSTILE[name](subs / ENTRY)
    decisions = _three_decisions(subs, tmp_path)
    assert decisions == dict.fromkeys(decisions, False), decisions


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**12),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value[:2]):
            yield from _paths(v, (*prefix, k))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc[path[0]] = _set(doc[path[0]], path[1:], value)
    return doc


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_field_edits_get_one_decision_from_all_three(
    honest: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Any one field of run.json, a samples line, a judgment, the summary or submission.yaml set
    to any JSON value: the three commands agree, and none fails other than with a clear error."""
    tmp = tmp_path_factory.mktemp("fuzz")
    subs = _fresh(honest, tmp)
    entry = subs / ENTRY
    files = {
        "run.json": entry / "run" / "run.json",
        "samples": samples_files(entry)[0],
        "judgments": _judgments(entry),
        "summary": entry / "judge" / "judge_summary.json",
        "submission.yaml": entry / "submission.yaml",
    }
    which = data.draw(st.sampled_from(sorted(files)))
    path = files[which]
    if which in ("samples", "judgments"):
        rows = read_jsonl(path)
        k = data.draw(st.integers(0, len(rows) - 1))
        where = data.draw(st.sampled_from(list(_paths(rows[k]))[1:]))
        rows[k] = _set(rows[k], where, data.draw(_VALUES))
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        load = yaml.safe_load if which == "submission.yaml" else json.loads
        doc = load(path.read_text())
        where = data.draw(st.sampled_from(list(_paths(doc))[1:]))
        doc = _set(doc, where, data.draw(_VALUES))
        path.write_text(yaml.safe_dump(doc) if which == "submission.yaml" else json.dumps(doc))
    decisions = _three_decisions(subs, tmp)
    assert len(set(decisions.values())) == 1, (which, where, decisions)
