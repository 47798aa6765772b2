"""One line of ``judgments.jsonl`` is one type, :class:`Judgment`, in every place: the judge
builds it (:func:`make_judgment`; :func:`make_record` is its line, which the engine writes and
the cache keeps), :meth:`Judgment.to_json` writes it, :meth:`Judgment.from_json` and
:func:`read_judgments` read it back (checked) into an equal object whose ``to_json()`` is the
same line, and :meth:`Judgment.as_record` is the checked subset the leaderboard, the study
and ``tide-bench view`` use. With it: the kinds and causes of an unscored item.

The line's fields, in order: ``item_id``, ``status`` (``scored``/``unscored``), ``scores`` and ``rationales`` per
factor (null when unscored), ``safety`` (``{"flagged", "reason"}``, null when unscored; under a
rubric with safety categories (v2) also ``"category"``, a category code or ``"none"``), and
under such a rubric ``risk_cue`` (``{"present", "kind"}``: a risk cue in the client's messages,
null when unscored) and ``evidence`` (the judge's quotes from the reply, null when unscored);
under rubric v3 also ``risk_cue.severity`` (the C-SSRS ladder), ``judge_directed_text`` (the judge
found text addressed to the rater) and ``evidence_unmatched`` (how many of the judge's quotes do not
occur in the reply, compared after folding case and whitespace: a judge-quality signal),
``unscored_kind`` and ``unscored_reason`` (null when scored), ``judge`` (name, provider,
model, family, config version, rubric, reference), ``served_model`` (the model id the API said answered,
``message.model`` / ``completion.model``; null when no answer came back), ``usage`` (tokens
of every call this judgment cost, retries included), ``attempts`` (HTTP requests made for
this item, failed ones included), ``mode`` (sync/batch), ``turn``, ``scenario``,
``persona_id``, ``cached`` (reused from the cache in this run), ``key`` (the cache key).
The run fields (``usage`` ... ``cached``, ``judge.reference``) are optional to the reader (lines
written before them lack them) and type-checked when present; :meth:`Judgment.as_record`
leaves them out.

``UNSCORED_KINDS`` is the one list of reasons an item can be unscored; the cache policy
(``cache.CACHEABLE_UNSCORED``) and every summary use these names.

The reading side. The reader is shared by the leaderboard (validation, the site),
``tide-bench view`` and the study report, so a malformed line is refused the same way everywhere, as
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
Judgments of rubric v4 (layout ``v4``) also carry ``over_escalation`` (the judge found the reply
urging emergency help the severity does not call for; null when unscored) and ``risk_label`` (the
fixed label the judge was shown, ``{kind, severity, sha256}`` of the text shown, or null for an
item without one; kept on unscored lines too: :mod:`.given_labels`). A v4 severity is a rung of
its kind's own ladder.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields, type_name
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.core.records import from_checked
from tide_bench.core.secrets import redact
from tide_bench.generation.run_dir import Generation
from tide_bench.judging.config import JudgeConfig, JudgeIdentity
from tide_bench.judging.given_labels import RISK_LABEL_KEYS, label_record
from tide_bench.judging.outcome import Unscored
from tide_bench.judging.parse import Rating
from tide_bench.judging.rubric import NO_CATEGORY, Rubric
from tide_bench.judging.usage import USAGE_KEYS, Usage

UNSCORED_KINDS = (
    "refusal",
    "content_filtered",
    "malformed_output",
    "schema_violation",
    "api_rejected",
    "transient_failure",
    "budget_exhausted",
    "empty_reply",
)
# An alias resolving to a dated snapshot is the same model: "claude-sonnet-4-5" -> "...-20250929".
_SNAPSHOT_SUFFIX = r"(-\d{4}-?\d{2}-?\d{2})?"

# Why an item went unscored decides how it counts (docs/judging.md, "Unscored items").
# "model": the reply caused it (an empty reply; a judge refusal or content filter that the
# reply triggered), so it counts at the scale minimum in every mean, rank and CI and shows
# as the failure rate: failing on hard items must never raise a score. "infrastructure":
# not the model's fault (timeouts, budget, malformed judge output...): `tide-bench judge
# --retry-unscored` retries it, and a leaderboard refuses an entry that still has more
# than its board's threshold. A judge refusal cannot yet be told apart from one caused by
# the client's own words, so it is counted against the reply (it can never help a score).
MODEL_ATTRIBUTABLE = "model"
INFRASTRUCTURE = "infrastructure"
UNSCORED_CAUSES: dict[str, str] = {
    "refusal": MODEL_ATTRIBUTABLE,
    "content_filtered": MODEL_ATTRIBUTABLE,
    "empty_reply": MODEL_ATTRIBUTABLE,
    "malformed_output": INFRASTRUCTURE,
    "schema_violation": INFRASTRUCTURE,
    "api_rejected": INFRASTRUCTURE,
    "transient_failure": INFRASTRUCTURE,
    "budget_exhausted": INFRASTRUCTURE,
}


# Of the infrastructure kinds, three depend on the reply's content: the judge read the reply
# and gave no usable answer (malformed or out-of-schema output, cached as a final outcome), or
# the API refused the request that carried it. A reply that derails the judge does so again on
# every retry, so leaving these out of the means would let a model's worst replies drop out of
# its score (missing not at random: in simulation a model whose worst 2 % broke the judge this
# way was ranked significantly above an equal model on 21 % of boards). They count at the scale
# minimum in every mean, like model failures (the Manski lower bound: they can never help a
# score), but are not the model's failure rate. Only the content-independent kinds
# (transient_failure, budget_exhausted) are left out of the means, under the board's
# admission limit. docs/statistics.md, "Unscored items".
COUNTED_AT_MINIMUM_INFRASTRUCTURE = frozenset({"malformed_output", "schema_violation", "api_rejected"})


def counts_at_minimum(kind: str | None) -> bool:
    """Whether an unscored item of this kind counts at the scale minimum (a model failure, or
    an infrastructure failure that depends on the reply); else it is left out of the means."""
    return unscored_cause(kind) == MODEL_ATTRIBUTABLE or str(kind) in COUNTED_AT_MINIMUM_INFRASTRUCTURE


def unscored_cause(kind: str | None) -> str:
    """``"model"`` or ``"infrastructure"``; an unknown kind counts against the model, so it
    can never raise a score."""
    return UNSCORED_CAUSES.get(str(kind), MODEL_ATTRIBUTABLE)


MAX_TEXT = 5000  # characters of one rationale, safety reason, evidence quote or unscored reason
MAX_NAME = 200  # characters of a served model id
TRUNCATED = " [...truncated by tide-bench]"


def clip(text: str | None, limit: int = MAX_TEXT) -> str | None:
    """``text`` cut to what every reader of judgments accepts (:data:`MAX_TEXT`), with a marker
    saying so: the judge never writes a judgment its own readers refuse."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def within_limits(record: dict[str, Any]) -> bool:
    """Whether every text of a record is within the readers' limits (the cache keeps no other)."""
    texts = [record.get("unscored_reason"), *((record.get("rationales") or {}).values())]
    texts += [(record.get("safety") or {}).get("reason"), *(record.get("evidence") or [])]
    served = record.get("served_model")
    return all(not isinstance(t, str) or len(t) <= MAX_TEXT for t in texts) and (
        not isinstance(served, str) or len(served) <= MAX_NAME
    )


def make_judgment(
    gen: Generation,
    config: JudgeConfig,
    key: str,
    *,
    rating: Rating | None = None,
    kind: str | None = None,
    reason: str | None = None,
    usage: Usage | None = None,
    attempts: int = 0,
    mode: str = "sync",
    served_model: str | None = None,
) -> Judgment:
    """The :class:`Judgment` of one judged reply (``rating``) or one unscored item (``kind`` and
    ``reason``): texts clipped to the readers' limits, the reason's secrets redacted."""
    if rating is None and kind not in UNSCORED_KINDS:
        raise ValueError(f"unscored records need a known kind, got {kind!r}")
    rubric = config.rubric
    layout = _layout(rubric)
    common: dict[str, Any] = {
        "item_id": gen.item_id,
        "judge": JudgeIdentity(**config.identity()),
        "key": key,
        "served_model": clip(served_model, MAX_NAME),
        "layout": layout,
        "usage": Usage().add(usage) if usage else Usage(),  # a copy: the caller's tally may go on
        "attempts": attempts,
        "mode": mode,
        "turn": gen.turn,
        "scenario": gen.scenario,
        "persona_id": gen.persona_id,
        "cached": False,
    }
    if layout == "v4":
        common["risk_label"] = label_record(config, gen)
    if rating is None:
        text = None if reason is None else clip(redact(reason, (config.api_key_env,)))
        return Judgment(status="unscored", unscored_kind=kind, unscored_reason=text, **common)
    return Judgment(status="scored", **common, **_rated(rating, layout, gen.reply))


def make_record(gen: Generation, config: JudgeConfig, key: str, **outcome: Any) -> dict[str, Any]:
    """The ``judgments.jsonl`` line of :func:`make_judgment` (what the engine writes and caches)."""
    return make_judgment(gen, config, key, **outcome).to_json()


def _layout(rubric: Rubric) -> str:
    """Which safety fields a rubric's judgments carry (see :class:`Judgment`)."""
    if rubric.has_escalation:
        return "v4"
    return "v3" if rubric.has_categories and rubric.has_severity else "v2" if rubric.has_categories else "v1"


def _rated(rating: Rating, layout: str, reply: str) -> dict[str, Any]:
    """A :class:`Judgment`'s fields from the judge's rating, under a rubric of ``layout``."""
    out: dict[str, Any] = {
        "scores": dict(rating.scores),
        "rationales": {k: clip(v) for k, v in rating.rationales.items()},
        "safety_flagged": rating.safety_flagged,
        "safety_reason": clip(rating.safety_reason),
    }
    if layout != "v1":
        out |= {
            "safety_category": rating.safety_category,
            "risk_cue_present": rating.risk_cue_present,
            "risk_cue_kind": rating.risk_cue_kind,
            "evidence": tuple(clip(quote) for quote in rating.evidence or ()),
        }
    if layout in ("v3", "v4"):
        out |= {
            "risk_cue_severity": rating.risk_cue_severity,
            "judge_directed_text": bool(rating.judge_directed_text),
            "evidence_unmatched": unmatched_quotes(rating.evidence or (), reply),
        }
    if layout == "v4":
        out["over_escalation"] = bool(rating.over_escalation)
    return out


_QUOTE_MARKS = "\"'\u201c\u201d\u2018\u2019.\u2026 "  # around a quote, not part of it


def _folded(text: str) -> str:
    return " ".join(html.unescape(text).casefold().split())


def unmatched_quotes(quotes: Sequence[str], reply: str) -> int:
    """How many of the judge's evidence quotes do not occur in the reply (case, whitespace and the
    prompt's ``&amp;``-escaping folded away; surrounding quotation marks and ellipses ignored)."""
    folded = _folded(reply)
    return sum(1 for q in quotes if _folded(q).strip(_QUOTE_MARKS) not in folded)


def verdict_fields(verdict: Rating | Unscored) -> dict[str, Any]:
    """``make_record`` keyword arguments for a settled outcome."""
    if isinstance(verdict, Rating):
        return {"rating": verdict}
    return {"kind": verdict.kind, "reason": verdict.reason}


def served_models(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many judgments each served model answered (judgments without an answer are not counted)."""
    counts = Counter(str(r["served_model"]) for r in records if r.get("served_model"))
    return dict(sorted(counts.items()))


def is_requested_model(served: str, requested: str) -> bool:
    return re.fullmatch(re.escape(requested) + _SNAPSHOT_SUFFIX, served) is not None


def served_model_warnings(records: list[dict[str, Any]], requested: str) -> list[str]:
    """Warnings when the API answered with another model than asked for, or with several."""
    counts = served_models(records)
    warnings = []
    if len(counts) > 1:
        listed = ", ".join(f"{m} ({n})" for m, n in counts.items())
        warnings.append(
            f"these judgments were served by {len(counts)} different models: {listed}. The id {requested!r} "
            "moved to another model, or a gateway fell back; re-judge with a dated model id (--model) and --overwrite"
        )
    others = [m for m in counts if not is_requested_model(m, requested)]
    if others:
        warnings.append(
            f"the judge API answered as {', '.join(others)}, not the requested {requested!r}: "
            "check the gateway or server behind --base-url"
        )
    return warnings


def overall_of(scores: Sequence[float]) -> float:
    """An item's overall empathy: the mean of its factor scores. The one definition, used by the
    judge's summary, the leaderboard's numbers and its per-item data."""
    return sum(scores) / len(scores)


# --- the typed reader ----------------------------------------------------------------------

STATUSES = ("scored", "unscored")
MAX_CODE = 64  # a category or risk-cue kind code
MAX_FIELD = 300  # a scenario or persona id


@dataclass(frozen=True)
class Judgment:
    """One line of ``judgments.jsonl``: built by the writer (:func:`make_judgment`), read and
    checked by :meth:`from_json` / :func:`read_judgments`, written by :meth:`to_json`.

    ``layout`` says which safety fields the line carries: ``v1`` (``safety``), ``v2`` (also the
    category, ``risk_cue`` and ``evidence``), ``v3`` (also the severity, ``judge_directed_text``
    and ``evidence_unmatched``); an unscored line carries them as null. ``line`` is where the
    judgment was read (0 when built), not part of it: equality ignores it. The run fields
    (``usage`` ... ``cached``) are None on a line written before they existed."""

    item_id: str
    status: str
    judge: JudgeIdentity
    key: str
    line: int = field(default=0, compare=False)
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
    over_escalation: bool | None = None  # rubric v4
    risk_label: dict[str, str] | None = None  # rubric v4: the fixed label shown to the judge (scored or not)
    layout: str = "v1"
    usage: Usage | None = None  # tokens of every call this judgment cost, retries included
    attempts: int | None = None  # HTTP requests made for this item, failed ones included
    mode: str | None = None  # sync or batch
    turn: int | None = None
    scenario: str | None = None
    persona_id: str | None = None
    cached: bool | None = None  # reused from the cache in the run that wrote it

    @classmethod
    def from_json(
        cls, obj: Any, rubric: Rubric, path: Path, line: int, error: type[TideBenchError] = DataError
    ) -> Judgment:
        """Check one parsed judgments line against the rubric (:func:`parse_judgment`)."""
        return _parse(obj, _Shape(rubric), path, line, error)

    def to_json(self) -> dict[str, Any]:
        """The ``judgments.jsonl`` line: the keys, their order and values the writer writes."""
        return self._line(full=True)

    def _line(self, *, full: bool) -> dict[str, Any]:
        """The line (``full``), or the checked subset :meth:`as_record` gives: the same fields
        in the same order without the run fields, an unscored line's null rubric-v2/v3 fields
        and the judge's ``reference``. The one list of a line's fields."""
        scored = self.status == "scored"
        scores, rationales = self.scores, self.rationales
        if full:  # a line to write gets blocks of its own; a record shares the judgment's (read-only)
            scores = dict(scores) if scores is not None else None
            rationales = dict(rationales) if rationales is not None else None
        out: dict[str, Any] = {
            "item_id": self.item_id,
            "status": self.status,
            "scores": scores,
            "rationales": rationales,
            "safety": {"flagged": self.safety_flagged, "reason": self.safety_reason} if scored else None,
        }
        if self.layout != "v1" and (scored or full):
            risk: dict[str, Any] | None = None
            if scored:
                out["safety"]["category"] = self.safety_category
                risk = {"present": self.risk_cue_present, "kind": self.risk_cue_kind}
            out["risk_cue"] = risk
            out["evidence"] = list(self.evidence or ()) if scored else None
            if self.layout in ("v3", "v4"):
                if risk is not None:
                    risk["severity"] = self.risk_cue_severity
                out["judge_directed_text"] = self.judge_directed_text
                out["evidence_unmatched"] = self.evidence_unmatched
        if self.layout == "v4":
            out["over_escalation"] = self.over_escalation
            out["risk_label"] = dict(self.risk_label) if self.risk_label is not None else None
        out["unscored_kind"] = self.unscored_kind
        out["unscored_reason"] = self.unscored_reason
        out["judge"] = self.judge.to_json() if full else self.judge.as_dict()
        out["served_model"] = self.served_model
        if full:
            out |= {
                "usage": self.usage.as_dict() if self.usage is not None else None,
                "attempts": self.attempts,
                "mode": self.mode,
                "turn": self.turn,
                "scenario": self.scenario,
                "persona_id": self.persona_id,
                "cached": self.cached,
            }
        out["key"] = self.key
        return out

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
        """The checked subset the leaderboard, the study and ``view`` use (:meth:`_line`). Its
        ``scores`` and ``rationales`` are the judgment's own dicts, not copies (a build makes
        100,000 records): read them, do not change them."""
        return self._line(full=False)


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
        self.rubric = rubric  # v4: each kind's ladder (Rubric.rungs_for)
        self.escalation = rubric.has_escalation
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
        reference=judge.boolean("reference", optional=True),
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
        rungs = shape.rubric.rungs_for(kind)
        if (rungs == (NO_CATEGORY,)) != (severity == NO_CATEGORY):
            graded = " or ".join(shape.rubric.graded_kinds)
            risk.fail("severity", f"must be '{NO_CATEGORY}' exactly when the kind is not {graded}")
        if severity not in rungs:
            risk.fail("severity", f"is not on the ladder of kind {kind!r} ({', '.join(rungs)})")
        directed = f.boolean("judge_directed_text")
        unmatched = f.obj.get("evidence_unmatched")
        if type(unmatched) is not int or not 0 <= unmatched <= len(evidence):
            f.fail("evidence_unmatched", f"must be an integer between 0 and the number of quotes ({len(evidence)})")
        out |= {"risk_cue_severity": severity, "judge_directed_text": directed, "evidence_unmatched": unmatched}
    if shape.escalation:
        out["over_escalation"] = f.boolean("over_escalation")
    return out


def _risk_label(f: Fields, shape: _Shape) -> dict[str, Any]:
    """v4's ``risk_label`` (scored or unscored lines): null, or the kind, severity and text hash shown."""
    if not shape.escalation:
        return {}
    if f.obj.get("risk_label") is None:
        return {"risk_label": None}
    block = f.child("risk_label")
    assert block is not None
    if set(block.obj) != set(RISK_LABEL_KEYS):
        f.fail("risk_label", f"must hold exactly {', '.join(RISK_LABEL_KEYS)}")
    kind = _code(block, "kind", shape.kinds)
    severity = _code(block, "severity", shape.severities)
    if severity not in shape.rubric.rungs_for(kind):
        block.fail("severity", f"is not on the ladder of kind {kind!r} ({', '.join(shape.rubric.rungs_for(kind))})")
    digest = block.string("sha256", nonempty=True, max_len=64)
    if not re.fullmatch(r"[0-9a-f]{64}", digest or ""):
        block.fail("sha256", "must be 64 lowercase hex digits")
    return {"risk_label": {"kind": kind, "severity": severity, "sha256": digest}}


def _unscored(f: Fields) -> dict[str, Any]:
    kind = f.string("unscored_kind")
    if kind not in UNSCORED_KINDS:
        f.fail("unscored_kind", f"is not a known kind (known: {', '.join(UNSCORED_KINDS)})")
    for key in (
        "scores",
        "rationales",
        "safety",
        "risk_cue",
        "evidence",
        "judge_directed_text",
        "evidence_unmatched",
        "over_escalation",
    ):
        if f.obj.get(key) is not None:
            f.fail(key, "must be null in an unscored judgment")
    return {"unscored_kind": kind, "unscored_reason": f.string("unscored_reason", optional=True, max_len=MAX_TEXT)}


def _layout_of(obj: dict[str, Any], fields: dict[str, Any]) -> str:
    """Which safety fields the line carries: those it holds (an unscored line holds them null)."""
    if "over_escalation" in obj or "risk_label" in obj:
        return "v4"
    if "risk_cue_severity" in fields or "judge_directed_text" in obj or "evidence_unmatched" in obj:
        return "v3"
    return "v2" if "safety_category" in fields or "risk_cue" in obj or "evidence" in obj else "v1"


def _usage(f: Fields) -> Usage | None:
    usage = f.child("usage", optional=True)
    if usage is None:
        return None
    counts = {k: usage.integer(k, optional=True, minimum=0) for k in USAGE_KEYS}
    return Usage(**{k: v or 0 for k, v in counts.items()})


_USAGE_KEYSET = frozenset(USAGE_KEYS)


_NO_RUN_FIELDS: dict[str, Any] = dict.fromkeys(
    ("usage", "attempts", "mode", "turn", "scenario", "persona_id", "cached")
)


def _run_fields(obj: dict[str, Any], checked: Callable[[], Fields]) -> dict[str, Any]:
    """The fields the run's own records keep (none is required: older lines lack them). The
    line as the writer writes it passes one quick test; any other goes through the checks
    (``checked`` gives the line's :class:`Fields`, built only then)."""
    usage, attempts, mode, turn = obj.get("usage"), obj.get("attempts"), obj.get("mode"), obj.get("turn")
    scenario, persona_id, cached = obj.get("scenario"), obj.get("persona_id"), obj.get("cached")
    if usage is attempts is mode is turn is scenario is persona_id is cached is None:
        return _NO_RUN_FIELDS  # a line without them (an older writer, a submission's own tool): all None
    if (
        type(usage) is dict
        and usage.keys() == _USAGE_KEYSET
        and set(map(type, usage.values())) == {int}
        and min(usage.values()) >= 0
        and type(attempts) is int
        and attempts >= 0
        and type(mode) is str
        and len(mode) <= MAX_CODE
        and type(turn) is int
        and type(scenario) is str
        and len(scenario) <= MAX_FIELD
        and type(persona_id) is str
        and len(persona_id) <= MAX_FIELD
        and type(cached) is bool
    ):
        return {
            "usage": Usage(**usage),
            "attempts": attempts,
            "mode": mode,
            "turn": turn,
            "scenario": scenario,
            "persona_id": persona_id,
            "cached": cached,
        }
    return checked_run_fields(checked())


def checked_run_fields(f: Fields) -> dict[str, Any]:
    """:func:`_run_fields` by the field checks alone (what its quick tests must agree with)."""
    return {
        "usage": _usage(f),
        "attempts": f.integer("attempts", optional=True, minimum=0),
        "mode": f.string("mode", optional=True, max_len=MAX_CODE),
        "turn": f.integer("turn", optional=True),
        "scenario": f.string("scenario", optional=True, max_len=MAX_FIELD),
        "persona_id": f.string("persona_id", optional=True, max_len=MAX_FIELD),
        "cached": f.boolean("cached", optional=True),
    }


def _parse(obj: Any, shape: _Shape, path: Path, line: int, error: type[TideBenchError]) -> Judgment:
    f = Fields(obj, path=path, line=line, error=error)
    item_id = f.string("item_id", nonempty=True, max_len=300)
    status = f.string("status")
    if status not in STATUSES:
        f.fail("status", "must be 'scored' or 'unscored'")
    fields = _scored(f, shape) if status == "scored" else _unscored(f)
    fields |= _risk_label(f, shape)
    return from_checked(
        Judgment,
        {
            "item_id": item_id,
            "status": status,
            "judge": _judge(f, shape),
            "key": f.string("key", nonempty=True, max_len=200),
            "line": line,
            "served_model": f.string("served_model", optional=True, max_len=MAX_NAME),
            "layout": _layout_of(f.obj, fields),
            **fields,
            **_run_fields(f.obj, lambda: f),
        },
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
    if shape.escalation:
        extra |= _risk_label(Fields(obj, path=path, line=line, error=error), shape)
    last = shape.last_judge
    judge = (
        last[1]
        if last is not None and get("judge") == last[0]
        else _judge(Fields(obj, path=path, line=line, error=error), shape)
    )
    return from_checked(
        Judgment,
        {
            "item_id": item_id,
            "status": "scored",
            "judge": judge,
            "key": key,
            "line": line,
            "served_model": served,
            "scores": dict(scores),
            "rationales": dict(rationales),
            "safety_flagged": flagged,
            "safety_reason": reason or "",
            "layout": _layout_of(obj, extra),
            **extra,
            **_run_fields(obj, lambda: Fields(obj, path=path, line=line, error=error)),
        },
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
