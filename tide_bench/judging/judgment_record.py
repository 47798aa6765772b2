"""The typed reader of ``judgments.jsonl``: one :class:`Judgment` per line.

The writer is :mod:`tide_bench.judging.records`; this module is the reading side, shared by
the leaderboard (validation, the site), ``tide-bench view`` and the study report, so a
malformed line is refused the same way everywhere, as
``judgments.jsonl:LINE, field 'scores.emotion_recognition': must be an integer, got a string``.
The agreement audit reads judge output on its own terms on purpose
(:func:`tide_bench.agreement.ratings.load_judgments`): it takes a judge as one more rater on
any scale and any set of dimensions (``--scale``, ``--map``), so it checks each score against
the audit's scale rather than against this rubric.

A scored judgment has an integer score in the rubric's range and a non-empty rationale for
every factor of the rubric (no more, no fewer), and a safety block whose raised flag carries
a reason. An unscored judgment has a known ``unscored_kind`` and no scores. Every judgment
names its judge configuration (``judge.version``) and the cache key of what was judged.

Judgments of a rubric with safety categories (v2) also carry ``safety.category``, ``risk_cue``
(``{present, kind}``) and ``evidence`` (quotes); they are read when present and must agree (a
raised flag names a category, an unraised one ``none``). v1 judgments have none of them.
Judgments of rubric v3 also carry ``risk_cue.severity`` (a code of the rubric's ladder, ``none``
exactly when the kind is not graded), ``judge_directed_text`` and ``evidence_unmatched``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields, type_name
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.judging.records import MAX_NAME, MAX_TEXT, UNSCORED_KINDS, overall_of
from tide_bench.judging.rubric import NO_CATEGORY, SEVERITY_KINDS, Rubric

STATUSES = ("scored", "unscored")
MAX_CODE = 64  # a category or risk-cue kind code


@dataclass(frozen=True)
class JudgeIdentity:
    """Which judge configuration produced a judgment."""

    version: str
    name: str | None = None
    provider: str | None = None
    model: str | None = None
    family: str | None = None
    rubric: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # the fields, shallow (asdict deep-copies: slow over every judgment)


@dataclass(frozen=True)
class Judgment:
    """One validated line of ``judgments.jsonl``."""

    item_id: str
    status: str
    judge: JudgeIdentity
    key: str
    line: int
    scores: dict[str, int] | None = None
    rationales: dict[str, str] | None = None
    safety_flagged: bool | None = None
    safety_reason: str | None = None
    unscored_kind: str | None = None
    unscored_reason: str | None = None
    served_model: str | None = None
    safety_category: str | None = None  # rubric v2
    risk_cue_present: bool | None = None  # rubric v2
    risk_cue_kind: str | None = None  # rubric v2
    evidence: tuple[str, ...] | None = None  # rubric v2
    risk_cue_severity: str | None = None  # rubric v3
    judge_directed_text: bool | None = None  # rubric v3
    evidence_unmatched: int | None = None  # rubric v3

    @property
    def scored(self) -> bool:
        return self.status == "scored"

    @property
    def overall(self) -> float:
        """The item's overall empathy: the mean of its factor scores (scored judgments only)."""
        if self.scores is None:
            raise ValueError(f"{self.item_id} is unscored: it has no overall score")
        return overall_of(tuple(self.scores.values()))

    def as_record(self) -> dict[str, Any]:
        """The judgment as a ``judgments.jsonl`` record with every field in its checked type."""
        safety: dict[str, Any] | None = (
            {"flagged": self.safety_flagged, "reason": self.safety_reason or ""} if self.scored else None
        )
        extra: dict[str, Any] = {}
        if safety is not None and self.safety_category is not None:
            safety["category"] = self.safety_category
            extra = {
                "risk_cue": {"present": self.risk_cue_present, "kind": self.risk_cue_kind},
                "evidence": list(self.evidence or ()),
            }
            if self.risk_cue_severity is not None:
                extra["risk_cue"]["severity"] = self.risk_cue_severity
                extra["judge_directed_text"] = self.judge_directed_text
                extra["evidence_unmatched"] = self.evidence_unmatched
        return {
            "item_id": self.item_id,
            "status": self.status,
            "scores": dict(self.scores) if self.scores is not None else None,
            "rationales": dict(self.rationales) if self.rationales is not None else None,
            "safety": safety,
            **extra,
            "unscored_kind": self.unscored_kind,
            "unscored_reason": self.unscored_reason,
            "judge": self.judge.as_dict(),
            "served_model": self.served_model,
            "key": self.key,
        }


class _Shape:
    """What a judgment must look like under one rubric, computed once per file; it also
    remembers the last judge block, which is the same on every line of a file."""

    def __init__(self, rubric: Rubric) -> None:
        self.factors = list(rubric.factor_keys)
        self.factor_set = frozenset(self.factors)
        self.low, self.high = rubric.scale_min, rubric.scale_max
        self.categories = frozenset(rubric.category_codes) if rubric.has_categories else None
        self.kinds = frozenset(rubric.risk_cue_kinds) if rubric.has_categories else None
        self.severities = frozenset(rubric.severity_codes) if rubric.has_severity else None
        self.last_judge: tuple[dict[str, Any], JudgeIdentity] | None = None


def _judge(f: Fields, shape: _Shape) -> JudgeIdentity:
    block = f.obj.get("judge")
    if shape.last_judge is not None and block == shape.last_judge[0]:
        return shape.last_judge[1]  # the same block as the previous line passed the same checks
    judge = f.child("judge")
    assert judge is not None
    identity = JudgeIdentity(
        version=judge.string("version", nonempty=True, max_len=200),
        name=judge.string("name", optional=True, max_len=200),
        provider=judge.string("provider", optional=True, max_len=200),
        model=judge.string("model", optional=True, max_len=200),
        family=judge.string("family", optional=True, max_len=200),
        rubric=judge.string("rubric", optional=True, max_len=200),
    )
    shape.last_judge = (dict(judge.obj), identity)
    return identity


def _factor_block(f: Fields, key: str, shape: _Shape) -> dict[str, Any]:
    block: dict[str, Any] = f.mapping(key)
    if block.keys() != shape.factor_set:
        f.fail(
            key,
            f"must hold exactly the rubric's factors ({', '.join(shape.factors)}); it holds {len(block)} other or "
            "missing key(s)",
        )
    return block


def _scored(f: Fields, shape: _Shape) -> dict[str, Any]:
    scores = _factor_block(f, "scores", shape)
    for factor, value in scores.items():
        if type(value) is not int:
            f.fail(f"scores.{factor}", f"must be an integer, got {type_name(value)}")
        if not shape.low <= value <= shape.high:
            f.fail(f"scores.{factor}", f"must lie in {shape.low}..{shape.high}")
    rationales = _factor_block(f, "rationales", shape)
    for factor, text in rationales.items():
        if type(text) is not str or not text.strip():
            f.fail(f"rationales.{factor}", f"must be a non-empty string, got {type_name(text)}")
        if len(text) > MAX_TEXT:
            f.fail(f"rationales.{factor}", f"is {len(text)} characters long; at most {MAX_TEXT} are allowed")
    safety = f.child("safety")
    assert safety is not None
    flagged = safety.boolean("flagged")
    reason = safety.string("reason", optional=not flagged, nonempty=flagged, max_len=MAX_TEXT)
    for key in ("unscored_kind", "unscored_reason"):
        if f.obj.get(key) is not None:
            f.fail(key, "must be null in a scored judgment")
    return {
        "scores": dict(scores),
        "rationales": dict(rationales),
        "safety_flagged": flagged,
        "safety_reason": reason or "",
        **_safety_v2(f, safety, flagged, shape),
    }


def _code(f: Fields, key: str, allowed: frozenset[str] | None) -> str:
    code = f.string(key, nonempty=True, max_len=MAX_CODE)
    if allowed is not None and code not in allowed:
        f.fail(key, f"is not a code of the rubric (known: {', '.join(sorted(allowed))})")
    return str(code)


def _safety_v2(f: Fields, safety: Fields, flagged: bool, shape: _Shape) -> dict[str, Any]:
    """The category, risk cue and evidence of a rubric-v2 judgment (all or none of them)."""
    present = [k for k in ("risk_cue", "evidence") if f.obj.get(k) is not None] + (
        ["safety.category"] if "category" in safety.obj else []
    )
    if not present:
        return {}
    if len(present) < 3:
        f.fail(present[0], "a judgment with a safety category, risk_cue or evidence needs all three (rubric v2)")
    category = _code(safety, "category", shape.categories)
    if flagged != (category != NO_CATEGORY):
        safety.fail("category", f"must be '{NO_CATEGORY}' exactly when the flag is not raised")
    risk = f.child("risk_cue")
    assert risk is not None
    risk_present = risk.boolean("present")
    kind = _code(risk, "kind", shape.kinds)
    if risk_present != (kind != NO_CATEGORY):
        risk.fail("kind", f"must be '{NO_CATEGORY}' exactly when no risk cue is present")
    evidence = f.listing("evidence")
    for index, quote in enumerate(evidence):
        if type(quote) is not str or len(quote) > MAX_TEXT:
            f.fail(f"evidence[{index}]", f"must be a string of at most {MAX_TEXT} characters, got {type_name(quote)}")
    out = {
        "safety_category": category,
        "risk_cue_present": risk_present,
        "risk_cue_kind": kind,
        "evidence": tuple(evidence),
    }
    if shape.severities is not None:
        severity = _code(risk, "severity", shape.severities)
        if (kind in SEVERITY_KINDS) == (severity == NO_CATEGORY):
            risk.fail("severity", f"must be '{NO_CATEGORY}' exactly when the kind is not {' or '.join(SEVERITY_KINDS)}")
        directed = f.boolean("judge_directed_text")
        unmatched = f.obj.get("evidence_unmatched")
        if type(unmatched) is not int or not 0 <= unmatched <= len(evidence):
            f.fail("evidence_unmatched", f"must be an integer between 0 and the number of quotes ({len(evidence)})")
        out |= {"risk_cue_severity": severity, "judge_directed_text": directed, "evidence_unmatched": unmatched}
    return out


def _unscored(f: Fields) -> dict[str, Any]:
    kind = f.string("unscored_kind")
    if kind not in UNSCORED_KINDS:
        f.fail("unscored_kind", f"is not a known kind (known: {', '.join(UNSCORED_KINDS)})")
    for key in ("scores", "rationales", "safety", "risk_cue", "evidence", "judge_directed_text", "evidence_unmatched"):
        if f.obj.get(key) is not None:
            f.fail(key, "must be null in an unscored judgment")
    return {"unscored_kind": kind, "unscored_reason": f.string("unscored_reason", optional=True, max_len=MAX_TEXT)}


def _parse(obj: Any, shape: _Shape, path: Path, line: int, error: type[TideBenchError]) -> Judgment:
    f = Fields(obj, path=path, line=line, error=error)
    item_id = f.string("item_id", nonempty=True, max_len=300)
    status = f.string("status")
    if status not in STATUSES:
        f.fail("status", "must be 'scored' or 'unscored'")
    fields = _scored(f, shape) if status == "scored" else _unscored(f)
    return Judgment(
        item_id=item_id,
        status=status,
        judge=_judge(f, shape),
        key=f.string("key", nonempty=True, max_len=200),
        line=line,
        served_model=f.string("served_model", optional=True, max_len=MAX_NAME),
        **fields,
    )


def _fast(obj: Any, shape: _Shape, path: Path, line: int, error: type[TideBenchError]) -> Judgment | None:
    """The common line, a well-formed scored judgment, read without :class:`Fields`; None for
    anything else, which :func:`_parse` then reads (and refuses with its message). It returns a
    judgment only where :func:`_parse` returns the same one: every test below is one of
    :func:`_parse`'s checks, written inline (a build reads 100,000 judgments; the checked path
    was a sixth of its CPU). Rubric-v2 fields and a new judge block go through the checked
    helpers themselves. ``tests/test_reader_fast_paths.py`` holds the two paths equal on mutated lines."""
    if type(obj) is not dict or obj.get("status") != "scored":
        return None
    get = obj.get
    item_id, key, served = get("item_id"), get("key"), get("served_model")
    if (
        type(item_id) is not str
        or not item_id.strip()
        or len(item_id) > 300
        or type(key) is not str
        or not key.strip()
        or len(key) > 200
        or not (served is None or (type(served) is str and len(served) <= MAX_NAME))
        or get("unscored_kind") is not None
        or get("unscored_reason") is not None
    ):
        return None
    scores, rationales, safety = get("scores"), get("rationales"), get("safety")
    factors = shape.factor_set
    if (
        type(scores) is not dict
        or scores.keys() != factors
        or type(rationales) is not dict
        or rationales.keys() != factors
        or type(safety) is not dict
    ):
        return None
    low, high = shape.low, shape.high
    for value in scores.values():
        if type(value) is not int or not low <= value <= high:
            return None
    for text in rationales.values():
        if type(text) is not str or not text.strip() or len(text) > MAX_TEXT:
            return None
    flagged, reason = safety.get("flagged"), safety.get("reason")
    if type(flagged) is not bool:
        return None
    if flagged:
        if type(reason) is not str or not reason.strip() or len(reason) > MAX_TEXT:
            return None
    elif not (reason is None or (type(reason) is str and len(reason) <= MAX_TEXT)):
        return None
    extra: dict[str, Any] = {}
    if get("risk_cue") is not None or get("evidence") is not None or "category" in safety:
        f = Fields(obj, path=path, line=line, error=error)
        extra = _safety_v2(f, Fields(safety, path=path, line=line, prefix="safety", error=error), flagged, shape)
    last = shape.last_judge
    judge = (
        last[1]
        if last is not None and get("judge") == last[0]
        else _judge(Fields(obj, path=path, line=line, error=error), shape)
    )
    return Judgment(
        item_id=item_id,
        status="scored",
        judge=judge,
        key=key,
        line=line,
        served_model=served,
        scores=dict(scores),
        rationales=dict(rationales),
        safety_flagged=flagged,
        safety_reason=reason or "",
        **extra,
    )


def parse_judgment(
    obj: Any, rubric: Rubric, path: Path, line: int, error: type[TideBenchError] = DataError
) -> Judgment:
    """Check one parsed judgments line against the rubric and turn it into a :class:`Judgment`."""
    return _parse(obj, _Shape(rubric), path, line, error)


def read_judgments(
    path: str | Path,
    rubric: Rubric,
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> list[Judgment]:
    """Every judgment of one ``judgments.jsonl``, in file order; an item judged twice is refused."""
    path = Path(path)
    seen: dict[str, int] = {}
    out = []
    shape = _Shape(rubric)
    for line, obj in iter_jsonl(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks):
        judgment = _fast(obj, shape, path, line, error) or _parse(obj, shape, path, line, error)
        if judgment.item_id in seen:
            raise error(
                f"item judged twice (first on line {seen[judgment.item_id]})", path=path, line=line, field="item_id"
            )
        seen[judgment.item_id] = line
        out.append(judgment)
    return out
