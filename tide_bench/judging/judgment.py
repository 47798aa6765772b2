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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import MaxLen
from pydantic import Field, Strict, ValidationInfo, model_validator

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.core.records import Bool, Count, Int, NonBlank, Record, Str, load, null_as, refusal
from tide_bench.core.secrets import redact
from tide_bench.generation.run_dir import Generation
from tide_bench.judging.config import JudgeConfig, JudgeIdentity
from tide_bench.judging.given_labels import RISK_LABEL_KEYS, label_record
from tide_bench.judging.outcome import Unscored
from tide_bench.judging.parse import Rating
from tide_bench.judging.rubric import NO_CATEGORY, Rubric
from tide_bench.judging.usage import Usage

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
        absent = dict.fromkeys(_LAYOUT_FIELDS[layout])  # null, but part of the line
        return Judgment(status="unscored", unscored_kind=kind, unscored_reason=text, **absent, **common)
    return Judgment(status="scored", **common, **_rated(rating, layout, gen.reply))


# The fields a line of each layout holds beside v1's (an unscored line holds them as null).
_LAYOUT_FIELDS = {
    "v1": (),
    "v2": ("risk_cue", "evidence"),
    "v3": ("risk_cue", "evidence", "judge_directed_text", "evidence_unmatched"),
    "v4": ("risk_cue", "evidence", "judge_directed_text", "evidence_unmatched", "over_escalation"),
}


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
    safety: dict[str, Any] = {"flagged": rating.safety_flagged, "reason": clip(rating.safety_reason)}
    out: dict[str, Any] = {
        "scores": dict(rating.scores),
        "rationales": {k: clip(v) for k, v in rating.rationales.items()},
        "safety": safety,
    }
    if layout != "v1":
        safety["category"] = rating.safety_category
        risk = {"present": rating.risk_cue_present, "kind": rating.risk_cue_kind}
        out |= {"risk_cue": risk, "evidence": tuple(clip(quote) for quote in rating.evidence or ())}
    if layout in ("v3", "v4"):
        risk["severity"] = rating.risk_cue_severity
        out |= {
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


# --- the record -----------------------------------------------------------------------------

STATUSES = ("scored", "unscored")
MAX_CODE = 64  # a category or risk-cue kind code
MAX_FIELD = 300  # a scenario or persona id

Text = Annotated[str, Strict(), MaxLen(MAX_TEXT)]
Code = Annotated[NonBlank, MaxLen(MAX_CODE)]
Short = Annotated[str, Strict(), MaxLen(MAX_FIELD)]


class Safety(Record):
    """A scored judgment's ``safety`` block: the flag, its reason (required when raised; an
    unraised flag's missing reason reads as ``""``) and, under a rubric with safety categories
    (v2), the category (``none`` exactly when the flag is not raised)."""

    flagged: Bool
    reason: Annotated[Text, null_as(str)] = ""
    category: Code | None = None

    @model_validator(mode="after")
    def _reason_given(self) -> Safety:
        if self.flagged and "reason" not in self.model_fields_set:
            raise refusal("is missing", "reason")
        if self.flagged and not self.reason.strip():
            raise refusal("must not be empty", "reason")
        return self


class RiskCue(Record):
    """A rubric-v2 judgment's ``risk_cue``: whether the client's messages carried one, its kind
    (``none`` exactly when absent) and, under rubric v3, its severity."""

    present: Bool
    kind: Code
    severity: Code | None = None


class Judgment(Record):
    """One line of ``judgments.jsonl``, declared once: built by the writer (:func:`make_judgment`),
    read and checked by :func:`read_judgments` (the rubric's rules: :class:`Rules`), written by
    :meth:`to_json`.

    Which safety fields a line carries is its :attr:`layout`: ``v1`` (``safety``), ``v2`` (also
    the category, ``risk_cue`` and ``evidence``), ``v3`` (also the severity, ``judge_directed_text``
    and ``evidence_unmatched``), ``v4`` (also ``over_escalation`` and ``risk_label``, the label the
    judge was shown, kept on unscored lines too); an unscored line carries the others as null. ``line`` is where the
    judgment was read (0 when built), not part of it: it is not written and equality ignores it.
    The run fields (``usage`` ... ``cached``) are None on a line written before they existed."""

    item_id: Annotated[NonBlank, MaxLen(300)]
    status: Literal["scored", "unscored"]
    scores: dict[str, Int] | None = None
    rationales: dict[str, Text] | None = None
    safety: Safety | None = None
    risk_cue: RiskCue | None = None  # rubric v2
    evidence: tuple[Text, ...] | None = None  # rubric v2
    judge_directed_text: Bool | None = None  # rubric v3
    evidence_unmatched: Int | None = None  # rubric v3
    over_escalation: Bool | None = None  # rubric v4
    risk_label: dict[str, Str] | None = None  # rubric v4: the fixed label shown to the judge (scored or not)
    unscored_kind: Str | None = None
    unscored_reason: Text | None = None
    judge: JudgeIdentity
    served_model: Annotated[str, Strict(), MaxLen(MAX_NAME)] | None = None
    usage: Usage | None = None  # tokens of every call this judgment cost, retries included
    attempts: Count | None = None  # HTTP requests made for this item, failed ones included
    mode: Annotated[str, Strict(), MaxLen(MAX_CODE)] | None = None  # sync or batch
    turn: Int | None = None
    scenario: Short | None = None
    persona_id: Short | None = None
    cached: Bool | None = None  # reused from the cache in the run that wrote it
    key: Annotated[NonBlank, MaxLen(200)]
    line: int = Field(default=0, exclude=True)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Judgment:
        rules = info.context.get("rules") if info.context else None
        if self.status == "scored":
            _check_scored(self, rules)
        else:
            _check_unscored(self)
        _check_risk_label(self, rules)
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Judgment):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # equal judgments read from two lines differ in line

    @property
    def layout(self) -> str:
        """``v1`` ... ``v4``: which safety fields the line holds (those it was given)."""
        given = self.model_fields_set
        if "over_escalation" in given or "risk_label" in given:
            return "v4"
        if "judge_directed_text" in given or "evidence_unmatched" in given:
            return "v3"
        if self.risk_cue is not None and self.risk_cue.severity is not None:
            return "v3"
        if "risk_cue" in given or "evidence" in given or (self.safety is not None and self.safety.category is not None):
            return "v2"
        return "v1"

    @classmethod
    def null_allowed(cls, field: str, given: Any) -> bool | None:
        """Whether a field may be null in ``given`` (the line read): the scored blocks in an
        unscored line, the unscored kind in a scored one (for messages; the rules say the rest)."""
        status = given.get("status") if isinstance(given, dict) else None
        if field in ("scores", "rationales", "safety"):
            return status != "scored"
        if field == "unscored_kind":
            return status != "unscored"
        return None

    @classmethod
    def from_json(
        cls, obj: Any, rubric: Rubric, path: Path, line: int, error: type[TideBenchError] = DataError
    ) -> Judgment:
        """One parsed judgments line, checked against the rubric (:func:`parse_judgment`)."""
        return parse_judgment(obj, rubric, path, line, error)

    def to_json(self) -> dict[str, Any]:
        """The ``judgments.jsonl`` line: the fields in declaration order, those of the layout only."""
        layout = self.layout
        left_out: dict[str, Any] = {"over_escalation": True, "risk_label": True}
        if layout == "v1":
            left_out |= {"risk_cue": True, "evidence": True, "judge_directed_text": True, "evidence_unmatched": True}
            left_out["safety"] = {"category"}
        elif layout == "v2":
            left_out |= {"judge_directed_text": True, "evidence_unmatched": True, "risk_cue": {"severity"}}
        elif layout == "v4":
            left_out = {}
        return self.model_dump(mode="json", exclude=left_out)

    @property
    def scored(self) -> bool:
        return self.status == "scored"

    @property
    def safety_flagged(self) -> bool | None:
        return self.safety.flagged if self.safety is not None else None

    @property
    def safety_reason(self) -> str | None:
        return self.safety.reason if self.safety is not None else None

    @property
    def safety_category(self) -> str | None:
        return self.safety.category if self.safety is not None else None

    @property
    def risk_cue_present(self) -> bool | None:
        return self.risk_cue.present if self.risk_cue is not None else None

    @property
    def risk_cue_kind(self) -> str | None:
        return self.risk_cue.kind if self.risk_cue is not None else None

    @property
    def risk_cue_severity(self) -> str | None:
        return self.risk_cue.severity if self.risk_cue is not None else None

    @property
    def overall(self) -> float:
        """The item's overall empathy: the mean of its factor scores (scored judgments only)."""
        if self.scores is None:
            raise ValueError(f"{self.item_id} is unscored: it has no overall score")
        return overall_of(tuple(self.scores.values()))

    def as_record(self) -> dict[str, Any]:
        """The checked subset the leaderboard, the study and ``view`` use: the line's fields in
        its order without the run fields, an unscored line's null rubric-v2/v3 fields and the
        judge's ``reference``. Its ``scores`` and ``rationales`` are the judgment's own dicts,
        not copies (a build makes 100,000 records): read them, do not change them."""
        scored, safety, risk = self.status == "scored", self.safety, self.risk_cue
        out: dict[str, Any] = {
            "item_id": self.item_id,
            "status": self.status,
            "scores": self.scores,
            "rationales": self.rationales,
            "safety": {"flagged": safety.flagged, "reason": safety.reason} if safety is not None else None,
        }
        layout = self.layout
        if layout != "v1" and scored and safety is not None and risk is not None:
            out["safety"]["category"] = safety.category
            out["risk_cue"] = {"present": risk.present, "kind": risk.kind}
            out["evidence"] = list(self.evidence or ())
            if layout in ("v3", "v4"):
                out["risk_cue"]["severity"] = risk.severity
                out["judge_directed_text"] = self.judge_directed_text
                out["evidence_unmatched"] = self.evidence_unmatched
        if layout == "v4":
            out["over_escalation"] = self.over_escalation
            out["risk_label"] = dict(self.risk_label) if self.risk_label is not None else None
        out["unscored_kind"] = self.unscored_kind
        out["unscored_reason"] = self.unscored_reason
        out["judge"] = self.judge.as_dict()
        out["served_model"] = self.served_model
        out["key"] = self.key
        return out


@dataclass(frozen=True)
class Rules:
    """What a judgment must hold under one rubric (read once per file): its factors, the score
    range and the codes of its categories, risk-cue kinds and severities (None: not checked)."""

    factors: tuple[str, ...]
    low: int
    high: int
    categories: frozenset[str] | None = None
    kinds: frozenset[str] | None = None
    severities: frozenset[str] | None = None
    rungs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # each kind's ladder (v3: one ladder; v4: per kind)
    escalation: bool = False  # rubric v4: over_escalation and risk_label

    @classmethod
    def of(cls, rubric: Rubric) -> Rules:
        return cls(
            tuple(rubric.factor_keys),
            rubric.scale_min,
            rubric.scale_max,
            frozenset(rubric.category_codes) if rubric.has_categories else None,
            frozenset(rubric.risk_cue_kinds) if rubric.has_categories else None,
            frozenset(rubric.severity_codes) if rubric.has_severity else None,
            tuple((k, rubric.rungs_for(k)) for k in rubric.risk_cue_kinds) if rubric.has_severity else (),
            rubric.has_escalation,
        )

    def ladder(self, kind: str) -> tuple[str, ...]:
        """The severities a risk-cue kind may take (``none`` alone for a kind no ladder grades)."""
        return dict(self.rungs).get(kind, (NO_CATEGORY,))

    def graded(self) -> str:
        return " or ".join(k for k, rungs in self.rungs if rungs != (NO_CATEGORY,))


def _factor_block(block: dict[str, Any] | None, key: str, rules: Rules | None) -> dict[str, Any]:
    if block is None:
        raise refusal("must be an object, got null", key)
    if rules is not None and block.keys() != set(rules.factors):
        raise refusal(
            f"must hold exactly the rubric's factors ({', '.join(rules.factors)}); it holds {len(block)} other or "
            "missing key(s)",
            key,
        )
    return block


def _check_scored(j: Judgment, rules: Rules | None) -> None:
    scores = _factor_block(j.scores, "scores", rules)
    if rules is not None:
        for factor, value in scores.items():
            if not rules.low <= value <= rules.high:
                raise refusal(f"must lie in {rules.low}..{rules.high}", f"scores.{factor}")
    for factor, text in _factor_block(j.rationales, "rationales", rules).items():
        if not text.strip():
            raise refusal("must be a non-empty string, got a blank one", f"rationales.{factor}")
    if j.safety is None:
        raise refusal("must be an object, got null", "safety")
    for key in ("unscored_kind", "unscored_reason"):
        if getattr(j, key) is not None:
            raise refusal("must be null in a scored judgment", key)
    _check_categories(j, j.safety, rules)


def _code(code: str, allowed: frozenset[str] | None, at: str) -> None:
    if allowed is not None and code not in allowed:
        raise refusal(f"is not a code of the rubric (known: {', '.join(sorted(allowed))})", at)


def _check_categories(j: Judgment, safety: Safety, rules: Rules | None) -> None:
    """The category, risk cue and evidence of a rubric-v2 judgment (all or none of them), and
    under rubric v3 the severity, the judge-directed text and the unmatched quotes."""
    given = j.model_fields_set
    present = [k for k in ("risk_cue", "evidence") if getattr(j, k) is not None]
    present += ["safety.category"] if "category" in safety.model_fields_set else []
    if not present:
        return
    if len(present) < 3:
        raise refusal("a judgment with a safety category, risk_cue or evidence needs all three (rubric v2)", present[0])
    risk, category = j.risk_cue, safety.category
    assert risk is not None
    if category is None:
        raise refusal("must be a string, got null", "safety.category")
    _code(category, rules.categories if rules else None, "safety.category")
    if safety.flagged != (category != NO_CATEGORY):
        raise refusal(f"must be '{NO_CATEGORY}' exactly when the flag is not raised", "safety.category")
    _code(risk.kind, rules.kinds if rules else None, "risk_cue.kind")
    if risk.present != (risk.kind != NO_CATEGORY):
        raise refusal(f"must be '{NO_CATEGORY}' exactly when no risk cue is present", "risk_cue.kind")
    if rules is None or rules.severities is None:
        return
    if risk.severity is None:
        raise refusal("is missing" if "severity" not in risk.model_fields_set else "must be a string, got null",
                      "risk_cue.severity")  # fmt: skip
    _code(risk.severity, rules.severities, "risk_cue.severity")
    rungs = rules.ladder(risk.kind)
    if (rungs == (NO_CATEGORY,)) != (risk.severity == NO_CATEGORY):
        raise refusal(f"must be '{NO_CATEGORY}' exactly when the kind is not {rules.graded()}", "risk_cue.severity")
    if risk.severity not in rungs:
        raise refusal(f"is not on the ladder of kind {risk.kind!r} ({', '.join(rungs)})", "risk_cue.severity")
    if j.judge_directed_text is None:
        raise refusal("is missing" if "judge_directed_text" not in given else "must be true or false, got null",
                      "judge_directed_text")  # fmt: skip
    n_quotes = len(j.evidence or ())
    if j.evidence_unmatched is None or not 0 <= j.evidence_unmatched <= n_quotes:
        raise refusal(f"must be an integer between 0 and the number of quotes ({n_quotes})", "evidence_unmatched")
    if rules.escalation and j.over_escalation is None:
        raise refusal("is missing" if "over_escalation" not in given else "must be true or false, got null",
                      "over_escalation")  # fmt: skip


def _check_risk_label(j: Judgment, rules: Rules | None) -> None:
    """A v4 line's ``risk_label`` (scored or unscored): null, or a kind of the rubric on its ladder."""
    label = j.risk_label
    if label is None or rules is None or not rules.escalation:
        return
    if set(label) != set(RISK_LABEL_KEYS):
        raise refusal(f"must hold exactly {', '.join(RISK_LABEL_KEYS)}", "risk_label")
    _code(label["kind"], rules.kinds, "risk_label.kind")
    if label["severity"] not in rules.ladder(label["kind"]):
        rungs = ", ".join(rules.ladder(label["kind"]))
        raise refusal(f"is not on the ladder of kind {label['kind']!r} ({rungs})", "risk_label.severity")
    if not re.fullmatch(r"[0-9a-f]{64}", label["sha256"]):
        raise refusal("must be 64 lowercase hex digits", "risk_label.sha256")


def _check_unscored(j: Judgment) -> None:
    if j.unscored_kind is None:
        raise refusal("is missing" if "unscored_kind" not in j.model_fields_set else "must be a string, got null",
                      "unscored_kind")  # fmt: skip
    if j.unscored_kind not in UNSCORED_KINDS:
        raise refusal(f"is not a known kind (known: {', '.join(UNSCORED_KINDS)})", "unscored_kind")
    for key in _NULL_WHEN_UNSCORED:
        if getattr(j, key) is not None:
            raise refusal("must be null in an unscored judgment", key)


_NULL_WHEN_UNSCORED = (
    "scores",
    "rationales",
    "safety",
    "risk_cue",
    "evidence",
    "judge_directed_text",
    "evidence_unmatched",
    "over_escalation",
)


def parse_judgment(
    obj: Any, rubric: Rubric | Rules, path: Path, line: int, error: type[TideBenchError] = DataError
) -> Judgment:
    """Check one parsed judgments line against the rubric and turn it into a :class:`Judgment`."""
    rules = rubric if isinstance(rubric, Rules) else Rules.of(rubric)
    if type(obj) is dict:
        obj["line"] = line  # where it was read (the parsed line is the reader's own)
    return load(Judgment, obj, path=path, line=line, error=error, context={"rules": rules})


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
    rules = Rules.of(rubric)
    for line, obj in iter_jsonl(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks):
        judgment = parse_judgment(obj, rules, path, line, error)
        if judgment.item_id in seen:
            raise error(
                f"item judged twice (first on line {seen[judgment.item_id]})", path=path, line=line, field="item_id"
            )
        seen[judgment.item_id] = line
        out.append(judgment)
    return out
