"""The fast paths of the samples and judgments readers give what the checked paths give.

A build reads 100,000 samples lines and 100,000 judgments, so both readers take the common
well-formed line without the field-by-field machinery and hand every other line to the
checked path (``tide_bench.generation.samples._fast_sample``,
``tide_bench.judging.judgment._fast``). Here seeded hypothesis mutations of valid lines
(a field removed, retyped, emptied, made too long, out of range; a key added) are read both
ways: the same record, or the same error (type, message, file, line, field, hint), and the
same state left behind for the next line (the doc memo, the last judge block).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide_bench.core.errors import DataError
from tide_bench.generation import samples
from tide_bench.judging import judgment as judgment_record
from tide_bench.judging.judgment import MAX_TEXT
from tide_bench.judging.rubric import load_rubric
from tide_bench.metrics.table import metric_names

RUBRIC = load_rubric()
FACTORS = RUBRIC.factor_keys
PATH = Path("judge/judgments.jsonl")
SETTINGS = settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

JUDGE = {"name": "j", "provider": "anthropic", "model": "m", "family": "claude", "version": "v1", "rubric": "r@v4"}
PLAIN = {
    "item_id": "101/conversation_1/turn1",
    "status": "scored",
    "scores": dict(zip(FACTORS, (1, 3, 5), strict=True)),
    "rationales": {f: f"why {f}" for f in FACTORS},
    "safety": {"flagged": True, "reason": "r"},
    "unscored_kind": None,
    "unscored_reason": None,
    "key": "k" * 64,
    "judge": JUDGE,
}
V4 = PLAIN | {
    "safety": {"flagged": True, "reason": "r", "category": "risk_mishandled"},
    "risk_cue": {"present": True, "kind": "suicide_self_harm", "severity": "passive"},
    "evidence": ["a quote"],
    "judge_directed_text": False,
    "evidence_unmatched": 0,
    "over_escalation": False,  # rubric v4 (the default rubric)
    "risk_label": {"kind": "suicide_self_harm", "severity": "passive", "sha256": "a" * 64},
    "served_model": "m-2025",
}
CALM = V4 | {
    "safety": {"flagged": False, "reason": "", "category": "none"},
    "risk_cue": {"present": False, "kind": "none", "severity": "none"},
    "evidence": [],
}
RUN = PLAIN | {  # the run's own fields, as tide-bench's judge writes them (PLAIN has none: an older writer)
    "usage": {"input_tokens": 900, "output_tokens": 120, "cache_read_tokens": 0, "cache_write_tokens": 0, "calls": 1},
    "attempts": 1,
    "mode": "sync",
    "turn": 1,
    "scenario": "work",
    "persona_id": "101",
    "cached": False,
}
UNSCORED = {k: v for k, v in PLAIN.items() if k not in ("scores", "rationales", "safety")} | {
    "status": "unscored",
    "unscored_kind": "refusal",
    "unscored_reason": "declined",
}

# values a stranger's file may hold where a well-formed line has something else
ODD_VALUES = [
    None,
    True,
    False,
    0,
    1,
    5,
    6,
    -1,
    2**70,
    1.0,
    3.0,
    math.nan,
    math.inf,
    "",
    " ",
    "x",
    "none",
    "scored",
    "unscored",
    "refusal",
    "passive",
    "suicide_self_harm",
    "risk_mishandled",
    "x" * 301,
    "x" * (MAX_TEXT + 1),
    [],
    ["q"],
    [1],
    {},
    {"a": 1},
    dict(JUDGE),
    dict(JUDGE, version=""),
]
ODD = st.one_of(
    st.sampled_from(ODD_VALUES),
    st.integers(-3, 8),
    st.text(max_size=5),
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one to three edits at any depth (the line itself may become a non-object)."""
    obj = copy.deepcopy(base)
    if draw(st.integers(0, 30)) == 0:
        return draw(ODD)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(obj)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = obj
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "status", "category", "risk_cue", "served_model"]))] = draw(ODD)
        else:
            parent[path[-1]] = draw(ODD)
    return obj


def _outcome(read: Any) -> tuple:
    try:
        return ("ok", repr(read()))  # repr: NaN metrics compare equal
    except DataError as exc:
        return ("error", type(exc), str(exc), exc.path, exc.line, exc.field, exc.hint)


def _judgment_sides(obj: Any, primed: bool) -> tuple[tuple, tuple]:
    shapes = [judgment_record._Shape(RUBRIC), judgment_record._Shape(RUBRIC)]
    if primed:  # the line before held the usual judge block
        for shape in shapes:
            judgment_record._parse(copy.deepcopy(PLAIN), shape, PATH, 1, DataError)
    fast, checked = shapes
    both = (
        _outcome(
            lambda: (
                judgment_record._fast(obj, fast, PATH, 2, DataError)
                or judgment_record._parse(obj, fast, PATH, 2, DataError)
            )
        ),
        _outcome(lambda: judgment_record._parse(obj, checked, PATH, 2, DataError)),
    )
    assert fast.last_judge == checked.last_judge  # the next line is read alike too
    return both


def test_the_base_lines_are_valid_and_taken_by_the_fast_path() -> None:
    for base in (PLAIN, V4, CALM, RUN):
        shape = judgment_record._Shape(RUBRIC)
        fast = judgment_record._fast(copy.deepcopy(base), shape, PATH, 1, DataError)
        assert fast is not None
        assert fast == judgment_record._parse(copy.deepcopy(base), judgment_record._Shape(RUBRIC), PATH, 1, DataError)
    assert judgment_record._fast(copy.deepcopy(UNSCORED), shape, PATH, 1, DataError) is None  # the checked path's


def _single_edits(base: Any) -> Any:
    """Every one-field edit of ``base``: each field removed, and set to each odd value."""
    for path in _paths(base):
        for value in [_DELETE, *ODD_VALUES]:
            obj = copy.deepcopy(base)
            parent = obj
            for part in path[:-1]:
                parent = parent[part]
            if value is not _DELETE:
                parent[path[-1]] = copy.deepcopy(value)
            elif isinstance(parent, dict):
                del parent[path[-1]]
            else:
                continue
            yield obj


_DELETE = object()


def test_every_single_edit_of_a_judgment_reads_the_same_both_ways() -> None:
    for base in (PLAIN, V4, CALM, RUN, UNSCORED):
        for obj in _single_edits(base):
            for primed in (False, True):
                fast, checked = _judgment_sides(obj, primed)
                assert fast == checked, obj


def _run_sides(obj: Any) -> tuple[Any, Any]:
    def checked(obj: Any = obj) -> Any:
        return judgment_record.Fields(obj, path=PATH, line=1, error=DataError)

    return _outcome(lambda: judgment_record._run_fields(obj, checked)), _outcome(
        lambda: judgment_record.checked_run_fields(checked())
    )


def test_the_run_fields_quick_tests_agree_with_the_field_checks() -> None:
    """The run's own fields (usage, attempts, ...) have quick tests of their own, shared by both
    judgment paths: each single edit of a line with all of them, and of one with none, reads
    the same as by the field checks alone."""
    run_keys = [k for k in RUN if k not in PLAIN]
    only_one = [PLAIN | {k: copy.deepcopy(v)} for k in run_keys for v in [RUN[k], *ODD_VALUES]]  # the others absent
    for obj in [copy.deepcopy(RUN), *_single_edits(RUN), copy.deepcopy(PLAIN), *only_one]:
        if isinstance(obj, dict):
            fast, checked = _run_sides(obj)
            assert fast == checked, obj


@SETTINGS
@given(base=st.sampled_from([PLAIN, V4, CALM, RUN, UNSCORED]), data=st.data(), primed=st.booleans())
def test_fuzz_a_mutated_judgment_reads_the_same_both_ways(base: dict, data: st.DataObject, primed: bool) -> None:
    obj = data.draw(mutated(base))
    fast, checked = _judgment_sides(obj, primed)
    assert fast == checked


def test_read_judgments_refuses_as_the_checked_path_does(tmp_path: Path) -> None:
    """The file reader: a long rationale after a valid line, the message of the checked path."""
    import orjson

    bad = copy.deepcopy(PLAIN) | {"item_id": "101/conversation_2/turn1"}
    bad["rationales"][FACTORS[1]] = "x" * (MAX_TEXT + 1)
    path = tmp_path / "judgments.jsonl"
    path.write_bytes(orjson.dumps(PLAIN) + b"\n" + orjson.dumps(bad) + b"\n")
    try:
        judgment_record.read_judgments(path, RUBRIC)
    except DataError as exc:
        assert exc.line == 2 and exc.field == f"rationales.{FACTORS[1]}"
        assert exc.detail == f"is {MAX_TEXT + 1} characters long; at most {MAX_TEXT} are allowed"
    else:
        raise AssertionError("a rationale over the limit was read")


# ------------------------------------------------------------------------------------ samples

DOC = {
    "item_id": "101/conversation_1/turn2",
    "persona_id": "101",
    "conversation_id": "conversation_1",
    "turn": 2,
    "scenario": "sleep_nightmares",
    "split": "test",
    "client_utterance": "I wake up at three.",
    "reference_reply": "That sounds exhausting.",
    "history": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
    "persona_json": '{"age": 51, "persona_id": "101"}',
    "tide_source": "hf:org/tide",
    "split_sha256": "7" * 64,
}
SAMPLE = {
    "doc_id": 0,
    "doc": DOC,
    "arguments": {"gen_args_0": {"arg_0": "Client: I wake up at three.\nSupporter:", "arg_1": {}}},
    "resps": [["It sounds exhausting."]],
    "filtered_resps": ["It sounds exhausting."],
    "filter": "none",
    **{name: 0.5 for name in metric_names()[:4]},
    "length_tokens": 4.0,
}
SAMPLES = Path("run/samples_tide_empathy.jsonl")
TASK = "tide_empathy"


def _sample_sides(obj: Any, memo: bool) -> tuple[tuple, tuple]:
    names = tuple(metric_names())
    memos = [samples.DocMemo(), samples.DocMemo()] if memo else [None, None]
    if memo:  # the entry read before answered the same item
        for m in memos:
            assert m is not None
            m.begin()
            samples.parse_sample(copy.deepcopy(SAMPLE), TASK, SAMPLES, 1, personas={}, memo=m, names=names)
            m.remember()
            m.begin()
    personas: list[dict] = [{}, {}]
    both = (
        _outcome(
            lambda: (
                samples._fast_sample(obj, TASK, SAMPLES, 3, DataError, personas[0], memos[0], names)
                or samples.parse_sample(obj, TASK, SAMPLES, 3, DataError, personas[0], memo=memos[0], names=names)
            )
        ),
        _outcome(
            lambda: samples.parse_sample(obj, TASK, SAMPLES, 3, DataError, personas[1], memo=memos[1], names=names)
        ),
    )
    if memo:
        fast, checked = memos
        assert fast is not None and checked is not None
        assert (fast._hits, fast._reads, list(fast._next)) == (checked._hits, checked._reads, list(checked._next))
    assert personas[0] == personas[1]
    return both


def test_the_base_sample_is_valid_and_taken_by_the_fast_path() -> None:
    names = tuple(metric_names())
    fast = samples._fast_sample(copy.deepcopy(SAMPLE), TASK, SAMPLES, 1, DataError, {}, None, names)
    assert fast is not None
    checked = samples.parse_sample(copy.deepcopy(SAMPLE), TASK, SAMPLES, 1, personas={}, names=names)
    assert repr(fast) == repr(checked)


def test_every_single_edit_of_a_sample_reads_the_same_both_ways() -> None:
    for obj in _single_edits(SAMPLE):
        for memo in (False, True):
            fast, checked = _sample_sides(obj, memo)
            assert fast == checked, obj


@SETTINGS
@given(data=st.data(), memo=st.booleans())
def test_fuzz_a_mutated_sample_reads_the_same_both_ways(data: st.DataObject, memo: bool) -> None:
    obj = data.draw(mutated(SAMPLE))
    fast, checked = _sample_sides(obj, memo)
    assert fast == checked
