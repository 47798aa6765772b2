"""The rubric: three factors with anchored 1-5 descriptors and a safety definition.

Loaded from ``judges/rubric_v4.yaml`` (the default) or an earlier version's file; the judge
prompt, the judge's output schema and the human rating page all render it from here, so
judges and people rate against the same words.

Version 2 adds, all optional in the file format so that version 1 loads and renders exactly as
before (its content hash, and so every v1 judge configuration version, is unchanged):
``rules`` (general decision rules), per-factor ``caps`` and worked ``examples`` per level on a
fixed ``examples_context``, a ``risk_cue`` step with named kinds, and safety ``categories``
(code: description) instead of v1's unnamed ``flag_if`` list.

Version 3 adds, again optional so that v1 and v2 load, hash and render exactly as before:
``behaviours`` (codes for what a reply does), caps as ``{at, when, text}`` (the level, the
behaviours that trigger it, the words the judge reads) and per-factor ``limits`` (ceilings the
anchors themselves set for a behaviour), ``situations`` (positive mappings: what the right reply
to a risk disclosure, acute distress, plain talk or a message without a reaction earns on each
factor, with the behaviours each level ``needs``), whole-reply ``worked_examples``, a
``risk_cue.severity`` ladder (C-SSRS) and safety categories as ``{text, when}`` listed in order
of precedence. The codes are read by :mod:`tide_bench.judging.rubric_check`, which proves that
the probes' expected scores are reachable under every cap and mapping; the judge reads only the
texts. Version 3 renders in working order (rules, risk cue, safety, situations, factors).

Version 4 (clinical re-check of v3, issue 44) adds, optional again so that v1-v3 load, hash and
render exactly as before: ``risk_cue.ladders`` (a severity ladder per group of kinds: the C-SSRS
triage for suicide and self-harm and, adapted, harm to others; soon / present_now for a danger to
the person or to someone else), so a severity is valid only on its kind's ladder and a ``>=``
code compares rungs of one ladder; and ``mapping_rules``, the machine-readable form of two rules
the judge reads: ``caps_win`` (a mapping's floor never rises above a cap or limit the reply
triggers: a cap applies to anything a reply adds beyond the safety or grounding content) and
``no_floor_when_flagged`` (a reply flagged in any safety category earns no floor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.resources import resource_dir
from tide_bench.core.yaml_io import load_shipped_yaml, load_yaml

RUBRIC_VERSIONS = ("v1", "v2", "v3", "v4", "epitome", "perceived")  # epitome: EPITOME's mechanisms, 0-2
# The seeker's view: the lay raters' perceived-empathy instrument, also a judge's rubric (docs/judging.md).
SEEKER_RUBRIC = "perceived"
_RUBRIC_FILES = {SEEKER_RUBRIC: ("perceived_empathy_v1.yaml", "prompt_perceived.yaml")}
DEFAULT_RUBRIC = "v4"
NO_CATEGORY = "none"  # the safety category of an unflagged reply, and the risk-cue kind of a message without one
SEVERITY_KINDS = ("suicide_self_harm", "harm_to_others")  # risk-cue kinds graded on v3's one ladder (v4: its ladders)
MAPPING_RULES = ("caps_win", "no_floor_when_flagged")  # v4: how a mapping's floor meets caps and flags
_AT = re.compile(r"\bat (\d+)\b")


@dataclass(frozen=True)
class Limit:
    """A ceiling for replies that show any of ``when``: a cap (``text`` rendered) or a limit the
    anchors set (``anchor``: the level whose description sets it; not rendered)."""

    at: int
    when: tuple[str, ...]
    text: str = ""
    anchor: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at, "when": list(self.when)}
        if self.text:
            out["text"] = self.text
        if self.anchor is not None:
            out["anchor"] = self.anchor
        return out


@dataclass(frozen=True)
class SituationLevel:
    text: str
    needs: tuple[str, ...]


@dataclass(frozen=True)
class Situation:
    """A positive mapping: what the right reply in this situation earns, factor by factor."""

    key: str
    name: str
    text: str
    levels: dict[str, dict[int, SituationLevel]]
    ceilings: dict[str, int] = field(default_factory=dict)  # factor -> the ceiling for every reply

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "text": self.text,
            **({"ceilings": dict(self.ceilings)} if self.ceilings else {}),
            "levels": {
                f: {str(k): {"text": v.text, "needs": list(v.needs)} for k, v in levels.items()}
                for f, levels in self.levels.items()
            },
        }


@dataclass(frozen=True)
class Ladder:
    """A severity ladder (v4): the rungs, lowest first, and the risk-cue kinds graded on it."""

    name: str
    kinds: tuple[str, ...]
    rungs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kinds": list(self.kinds), "rungs": list(self.rungs)}


@dataclass(frozen=True)
class Factor:
    key: str
    name: str
    question: str
    anchors: dict[int, str]
    caps: tuple[str, ...] = ()
    examples: dict[int, str] = field(default_factory=dict)
    cap_rules: tuple[Limit, ...] = ()  # v3: the caps with their level and triggering behaviours
    limits: tuple[Limit, ...] = ()  # v3: ceilings the anchors set (machine-readable, not rendered)
    message_needs: dict[int, tuple[str, ...]] = field(default_factory=dict)  # v3: level -> message features


@dataclass(frozen=True)
class Rubric:
    id: str
    version: int
    scale_min: int
    scale_max: int
    factors: tuple[Factor, ...]
    safety_question: str
    safety_flag_if: tuple[str, ...]
    safety_note: str
    source: str
    rules: tuple[str, ...] = ()
    examples_context: str = ""
    safety_categories: dict[str, str] = field(default_factory=dict)  # code -> description (v2)
    risk_cue_question: str = ""
    risk_cue_kinds: dict[str, str] = field(default_factory=dict)  # kind -> description, "none" first (v2)
    risk_severities: dict[str, str] = field(default_factory=dict)  # v3: the C-SSRS ladder, "none" first
    behaviours: dict[str, str] = field(default_factory=dict)  # v3: reply behaviour codes
    message_features: dict[str, str] = field(default_factory=dict)  # v3: client-message feature codes
    situations: tuple[Situation, ...] = ()  # v3: positive mappings
    worked_examples: tuple[dict[str, Any], ...] = ()  # v3: whole replies scored on every factor
    category_when: dict[str, tuple[str, ...]] = field(default_factory=dict)  # v3: code -> behaviours
    category_only_in: dict[str, tuple[str, ...]] = field(default_factory=dict)  # v3: code -> situations
    ladders: tuple[Ladder, ...] = ()  # v4: a severity ladder per group of kinds (v3: one ladder, SEVERITY_KINDS)
    mapping_rules: tuple[str, ...] = ()  # v4: codes of MAPPING_RULES this rubric states

    @property
    def factor_keys(self) -> list[str]:
        return [f.key for f in self.factors]

    @property
    def has_categories(self) -> bool:
        """Whether judgments carry a safety category and a risk cue (rubric v2 and later)."""
        return bool(self.safety_categories)

    @property
    def has_severity(self) -> bool:
        """Whether the risk cue carries a C-SSRS severity (rubric v3 and later)."""
        return bool(self.risk_severities)

    @property
    def has_escalation(self) -> bool:
        """Whether judgments report ``over_escalation`` (rubric v4: a reply behaviour of that name)."""
        return self.has_severity and "over_escalation" in self.behaviours

    @property
    def severity_codes(self) -> list[str]:
        return list(self.risk_severities)

    @property
    def severity_ladders(self) -> tuple[Ladder, ...]:
        """The ladders severities are graded on (v3: its one ladder, for SEVERITY_KINDS)."""
        if self.ladders or not self.risk_severities:
            return self.ladders
        kinds = tuple(k for k in SEVERITY_KINDS if k in self.risk_cue_kinds)
        return (Ladder("C-SSRS", kinds, tuple(self.severity_codes[1:])),)

    def rungs_for(self, kind: str) -> tuple[str, ...]:
        """The severities a risk cue of ``kind`` may carry (``("none",)`` for a kind no ladder grades)."""
        return next((ladder.rungs for ladder in self.severity_ladders if kind in ladder.kinds), (NO_CATEGORY,))

    @property
    def graded_kinds(self) -> tuple[str, ...]:
        return tuple(k for ladder in self.severity_ladders for k in ladder.kinds)

    def states(self, rule: str) -> bool:
        """Whether the rubric states one of :data:`MAPPING_RULES` (v4)."""
        return rule in self.mapping_rules

    def situation(self, key: str) -> Situation | None:
        return next((s for s in self.situations if s.key == key), None)

    @property
    def category_codes(self) -> list[str]:
        """Every safety category a judgment may name, ``none`` last."""
        return [*self.safety_categories, NO_CATEGORY]

    def content_hash(self) -> str:
        return sha256_json(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        factors = []
        for f in self.factors:
            block: dict[str, Any] = {
                "key": f.key,
                "name": f.name,
                "question": f.question,
                "anchors": {str(k): v for k, v in f.anchors.items()},
            }
            if f.cap_rules:
                block["caps"] = [c.to_dict() for c in f.cap_rules]
            elif f.caps:
                block["caps"] = list(f.caps)
            if f.limits:
                block["limits"] = [c.to_dict() for c in f.limits]
            if f.message_needs:
                block["message_needs"] = {str(k): list(v) for k, v in f.message_needs.items()}
            if f.examples:
                block["examples"] = {str(k): v for k, v in f.examples.items()}
            factors.append(block)
        out: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "scale": {"min": self.scale_min, "max": self.scale_max},
        }
        if self.rules:
            out["rules"] = list(self.rules)
        if self.mapping_rules:
            out["mapping_rules"] = list(self.mapping_rules)
        if self.examples_context:
            out["examples_context"] = self.examples_context
        if self.behaviours:
            out["behaviours"] = dict(self.behaviours)
        if self.message_features:
            out["message_features"] = dict(self.message_features)
        if self.situations:
            out["situations"] = {s.key: s.to_dict() for s in self.situations}
        out["factors"] = factors
        if self.worked_examples:
            out["worked_examples"] = [dict(e) for e in self.worked_examples]
        if self.risk_cue_kinds:
            out["risk_cue"] = {"question": self.risk_cue_question, "kinds": dict(self.risk_cue_kinds)}
            if self.risk_severities:
                out["risk_cue"]["severity"] = dict(self.risk_severities)
            if self.ladders:
                out["risk_cue"]["ladders"] = [ladder.to_dict() for ladder in self.ladders]
        if self.safety_categories:
            categories: dict[str, Any] = (
                {c: self._category_dict(c, t) for c, t in self.safety_categories.items()}
                if self.category_when
                else dict(self.safety_categories)
            )
            out["safety"] = {"question": self.safety_question, "categories": categories, "note": self.safety_note}
        else:
            out["safety"] = {
                "question": self.safety_question,
                "flag_if": list(self.safety_flag_if),
                "note": self.safety_note,
            }
        return out

    def _category_dict(self, code: str, text: str) -> dict[str, Any]:
        out: dict[str, Any] = {"text": text, "when": list(self.category_when.get(code, ()))}
        if code in self.category_only_in:
            out["only_in"] = list(self.category_only_in[code])
        return out

    def render(self) -> str:
        """The rubric as plain text for a judge prompt (v3: in the order the judge works)."""
        if self.version >= 3:
            return self._render_v3()
        lines = [f"Scale: integers {self.scale_min} (worst) to {self.scale_max} (best).", ""]
        if self.rules:
            lines.append("## General rules (every factor)")
            lines += [f"  - {rule}" for rule in self.rules]
            lines.append("")
        lines += self._examples_context_lines("worked examples")
        for f in self.factors:
            lines += self._factor_lines(f)
        if self.risk_cue_kinds:
            lines.append(f"## Risk cue\n{self.risk_cue_question} Kinds:")
            lines += [f"  - {kind}: {text}" for kind, text in self.risk_cue_kinds.items()]
            lines.append("")
        lines += self._safety_lines()
        return "\n".join(lines)

    def _examples_context_lines(self, what: str) -> list[str]:
        if not self.examples_context:
            return []
        return [
            f"## Context of the {what} (a fixed synthetic message, not one you rate)",
            f"  {self.examples_context}",
            "",
        ]

    def _factor_lines(self, f: Factor) -> list[str]:
        lines = [f"## {f.name} (`{f.key}`)\n{f.question}"]
        lines += [f"  {level}: {text}" for level, text in sorted(f.anchors.items())]
        lines += [f"  Cap: {cap}" for cap in f.caps]
        if f.examples:
            lines.append("  Worked examples (replies to the context above), by level:")
            lines += [f"    {level}: {text}" for level, text in sorted(f.examples.items())]
        lines.append("")
        return lines

    def _safety_lines(self) -> list[str]:
        lines = []
        if self.safety_categories:
            lines.append(f"## Safety\n{self.safety_question} Categories (flag the reply when one applies):")
            lines += [f"  - {code}: {text}" for code, text in self.safety_categories.items()]
            lines.append(f"  - {NO_CATEGORY}: none of the above applies (not flagged).")
        else:
            lines.append(f"## Safety flag\n{self.safety_question} Flag it if the reply:")
            lines += [f"  - {item}" for item in self.safety_flag_if]
        lines.append(self.safety_note)
        return lines

    def _render_v3(self) -> str:
        names = {f.key: f.name.lower() for f in self.factors}
        lines = [f"Scale: integers {self.scale_min} (worst) to {self.scale_max} (best).", ""]
        lines.append("## General rules (every factor)")
        lines += [f"  - {rule}" for rule in self.rules]
        lines += ["", f"## Risk cue\n{self.risk_cue_question} Kinds:"]
        lines += [f"  - {kind}: {text}" for kind, text in self.risk_cue_kinds.items()]
        if self.ladders:
            lines += self._ladder_lines()
        elif self.risk_severities:
            kinds = " and ".join(SEVERITY_KINDS)
            lines.append(f"  Severity (for {kinds}; none for every other kind), the Columbia (C-SSRS) ladder:")
            lines += [f"  - {code}: {text}" for code, text in self.risk_severities.items()]
        lines.append("")
        lines += self._safety_lines()
        heading = (
            "the least the right support earns; a cap on anything else the reply adds wins"
            if self.states("caps_win")
            else "score it this way, never lower; no cap applies to it"
        )
        lines += ["", f"## What the right reply earns ({heading})"]
        for sit in self.situations:
            lines.append(f"### {sit.name}\n{sit.text}")
            for key, levels in sit.levels.items():
                lines.append(f"  - {names[key]}: " + " ".join(level.text for _, level in sorted(levels.items())))
        lines.append("")
        lines += self._examples_context_lines("per-level worked examples")
        for f in self.factors:
            lines += self._factor_lines(f)
        if self.worked_examples:
            lines.append("## Worked examples of whole replies (synthetic messages, not ones you rate)")
            for ex in self.worked_examples:
                scores = ", ".join(f"{names[k]} {v}" for k, v in ex["scores"].items())
                lines += [
                    f"  Message: {ex['context']}",
                    f"  Reply: {ex['reply']}",
                    f"  Scores: {scores}. {ex['why']}",
                    "",
                ]
        return "\n".join(lines).rstrip()

    def _ladder_lines(self) -> list[str]:
        """v4: each ladder with its rungs; every other kind has severity none."""
        lines = []
        for ladder in self.ladders:
            lines.append(f"  Severity, {ladder.name}:")
            lines += [f"  - {code}: {self.risk_severities[code]}" for code in ladder.rungs]
        lines.append(f"  Every other kind: {NO_CATEGORY} ({self.risk_severities[NO_CATEGORY]})")
        return lines


def rubric_path(version: str) -> Path:
    """The rubric file of a version name (``v1``, ``v2``; ``perceived``: the lay instrument's file)."""
    if version not in RUBRIC_VERSIONS:
        raise ConfigError(f"unknown rubric {version!r}; choose {', '.join(RUBRIC_VERSIONS)}", field="--rubric")
    name = _RUBRIC_FILES[version][0] if version in _RUBRIC_FILES else f"rubric_{version}.yaml"
    return resource_dir("judges") / name


def prompt_path(version: str) -> Path:
    """The judge prompt that goes with a rubric version (``prompt_v4.yaml`` with ``rubric_v4.yaml``)."""
    rubric = rubric_path(version)
    if version in _RUBRIC_FILES:
        return rubric.with_name(_RUBRIC_FILES[version][1])
    return rubric.with_name(rubric.name.replace("rubric_", "prompt_"))


def _levels(raw: Any, lo: int, hi: int, path: Path, where: str, *, complete: bool) -> dict[int, str]:
    if not all(isinstance(v, str) for v in (raw or {}).values()):
        raise ConfigError("every level must be a text (quote one that holds ': ')", path=path, field=where)
    levels = {int(k): str(v) for k, v in (raw or {}).items()}
    wanted = list(range(lo, hi + 1))
    if (sorted(levels) != wanted) if complete else not set(levels) <= set(wanted):
        what = "one entry per level" if complete else "entries only for levels"
        raise ConfigError(f"must have {what} {lo}..{hi}", path=path, field=where)
    return levels


def _codes(raw: Any, path: Path, where: str) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError("must be a mapping of code: description (texts)", path=path, field=where)
    codes = {str(k): str(v) for k, v in raw.items()}
    if any(not code.isidentifier() for code in codes):
        raise ConfigError("codes must be identifiers (letters, digits, '_')", path=path, field=where)
    return codes


def _texts(raw: Any, path: Path, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ConfigError("must be a list of texts (quote an item that holds ': ')", path=path, field=where)
    return tuple(raw)


def load_rubric(path: str | Path | None = None) -> Rubric:
    """A rubric file (default: the current version, ``judges/rubric_v4.yaml``).

    The file is read on every call, but the same text is parsed once per process (YAML parsing
    is slow: validating 50 submissions parsed it 50 times, 0.5 s of a leaderboard build), so
    callers share one :class:`Rubric` per file content: treat it as read-only (it is frozen).
    """
    path = Path(path) if path else rubric_path(DEFAULT_RUBRIC)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("rubric file not found", path=path) from None
    except ValueError as exc:  # not UTF-8
        raise ConfigError(f"malformed rubric: {type(exc).__name__}: {exc}", path=path) from None
    return _parse_rubric(text, str(path))


def _code_list(
    raw: Any, known: dict[str, str], path: Path, where: str, *, severities: list[str] = ()
) -> tuple[str, ...]:
    """A list of behaviour codes, each one declared under ``behaviours`` (optionally ``CODE>=SEVERITY``)."""
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw):
        raise ConfigError("must be a non-empty list of behaviour codes", path=path, field=where)
    for code in raw:
        base, _, severity = code.partition(">=")
        if base not in known:
            raise ConfigError(f"unknown behaviour {base!r} (declare it under 'behaviours')", path=path, field=where)
        if severity and severity not in severities:
            raise ConfigError(f"unknown severity {severity!r} in {code!r}", path=path, field=where)
    return tuple(raw)


def _limit(raw: Any, known: dict[str, str], lo: int, hi: int, path: Path, where: str, *, cap: bool) -> Limit:
    if not isinstance(raw, dict) or type(raw.get("at")) is not int or not lo <= raw["at"] <= hi:
        raise ConfigError(f"needs 'at' (an integer level {lo}..{hi})", path=path, field=where)
    when = _code_list(raw.get("when"), known, path, f"{where}.when")
    if cap:
        text = raw.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ConfigError("a cap needs its 'text' (what the judge reads)", path=path, field=where)
        stated = [int(m) for m in _AT.findall(text)]
        if stated[:1] != [raw["at"]]:
            raise ConfigError(
                f"the text says 'at {stated[0] if stated else '?'}' but 'at' is {raw['at']}", path=path, field=where
            )
        return Limit(raw["at"], when, text)
    anchor = raw.get("anchor")
    if type(anchor) is not int or not lo <= anchor <= hi:
        raise ConfigError("a limit cites the anchor level it comes from ('anchor')", path=path, field=where)
    return Limit(raw["at"], when, anchor=anchor)


def _caps(
    raw: Any, known: dict[str, str], lo: int, hi: int, path: Path, where: str
) -> tuple[tuple[str, ...], tuple[Limit, ...]]:
    """v1/v2 caps are texts; v3 caps are ``{at, when, text}`` (all of one form in a factor)."""
    if raw is None or (isinstance(raw, list) and all(isinstance(x, str) for x in raw)):
        return _texts(raw, path, where), ()
    if not isinstance(raw, list) or not known:
        raise ConfigError("must be a list of texts, or (with 'behaviours') of {at, when, text}", path=path, field=where)
    rules = tuple(_limit(c, known, lo, hi, path, f"{where}[{i}]", cap=True) for i, c in enumerate(raw))
    return tuple(r.text for r in rules), rules


def _situations(
    raw: Any, known: dict[str, str], factors: list[str], lo: int, hi: int, path: Path
) -> tuple[Situation, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not known:
        raise ConfigError("must be a mapping of situations (and needs 'behaviours')", path=path, field="situations")
    out = []
    for key, block in raw.items():
        where = f"situations.{key}"
        if not isinstance(block, dict) or not all(isinstance(block.get(k), str) for k in ("name", "text")):
            raise ConfigError("needs 'name', 'text' and 'levels'", path=path, field=where)
        levels: dict[str, dict[int, SituationLevel]] = {}
        for factor, by_level in (block.get("levels") or {}).items():
            if factor not in factors or not isinstance(by_level, dict):
                raise ConfigError(f"unknown factor {factor!r}", path=path, field=f"{where}.levels")
            levels[factor] = {}
            for level, entry in by_level.items():
                at = f"{where}.levels.{factor}.{level}"
                if not isinstance(level, int) or not lo <= level <= hi or not isinstance(entry, dict):
                    raise ConfigError(f"levels are integers {lo}..{hi} with {{text, needs}}", path=path, field=at)
                if not isinstance(entry.get("text"), str):
                    raise ConfigError("needs a 'text'", path=path, field=at)
                levels[factor][level] = SituationLevel(entry["text"], _code_list(entry.get("needs"), known, path, at))
        if not levels:
            raise ConfigError("needs 'levels' for at least one factor", path=path, field=where)
        ceilings = block.get("ceilings") or {}
        if not isinstance(ceilings, dict) or not all(
            k in factors and type(v) is int and lo <= v <= hi for k, v in ceilings.items()
        ):
            raise ConfigError("'ceilings' maps factors to levels", path=path, field=f"{where}.ceilings")
        out.append(Situation(str(key), block["name"], " ".join(block["text"].split()), levels, dict(ceilings)))
    return tuple(out)


def _worked(raw: Any, rubric_parts: dict[str, Any], path: Path) -> tuple[dict[str, Any], ...]:
    if raw is None:
        return ()
    known, factors, situations, lo, hi = (rubric_parts[k] for k in ("known", "factors", "situations", "lo", "hi"))
    if not isinstance(raw, list):
        raise ConfigError("must be a list of whole-reply examples", path=path, field="worked_examples")
    out = []
    for i, ex in enumerate(raw):
        where = f"worked_examples[{i}]"
        ok = isinstance(ex, dict) and all(isinstance(ex.get(k), str) for k in ("situation", "context", "reply", "why"))
        if not ok or ex["situation"] not in situations:
            raise ConfigError(
                "needs a known 'situation', 'context', 'reply', 'why' and 'scores'", path=path, field=where
            )
        scores = ex.get("scores")
        if (
            not isinstance(scores, dict)
            or not scores
            or not set(scores) <= set(factors)
            or not all(type(v) is int and lo <= v <= hi for v in scores.values())
        ):
            raise ConfigError(f"'scores' gives factors ({', '.join(factors)}) a level", path=path, field=where)
        block = {k: " ".join(str(ex[k]).split()) for k in ("situation", "context", "reply", "why")}
        block["behaviours"] = list(_code_list(ex.get("behaviours"), known, path, f"{where}.behaviours"))
        block["scores"] = dict(scores)
        if ex.get("message"):
            block["message"] = list(_code_list(ex["message"], rubric_parts["features"], path, f"{where}.message"))
        if ex.get("severity") is not None:
            block["severity"] = str(ex["severity"])
        out.append(block)
    return tuple(out)


def _categories(
    raw: Any, known: dict[str, str], severities: list[str], path: Path
) -> tuple[dict[str, str], dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """v2 categories are ``code: text``; v3 ``code: {text, when}``, in order of precedence."""
    if isinstance(raw, dict) and raw and all(isinstance(v, dict) for v in raw.values()):
        if not known:
            raise ConfigError("categories with 'when' need 'behaviours'", path=path, field="safety.categories")
        texts = _codes({k: v.get("text") for k, v in raw.items()}, path, "safety.categories")
        when = {
            k: _code_list(v.get("when"), known, path, f"safety.categories.{k}.when", severities=severities)
            for k, v in raw.items()
        }
        only = {k: tuple(str(x) for x in v["only_in"]) for k, v in raw.items() if v.get("only_in")}
        return {k: " ".join(t.split()) for k, t in texts.items()}, when, only
    return _codes(raw, path, "safety.categories"), {}, {}


def _factor(f: dict[str, Any], known: dict[str, str], features: dict[str, str], lo: int, hi: int, path: Path) -> Factor:
    """One factor of the rubric: its anchors, caps, limits, examples and message needs, checked."""
    where = f"factors.{f['key']}"
    caps, cap_rules = _caps(f.get("caps"), known, lo, hi, path, f"{where}.caps")
    limits = tuple(
        _limit(x, known, lo, hi, path, f"{where}.limits[{i}]", cap=False) for i, x in enumerate(f.get("limits") or [])
    )
    needs = f.get("message_needs") or {}
    if not isinstance(needs, dict) or not all(isinstance(k, int) and lo <= k <= hi for k in needs):
        raise ConfigError("maps levels to message features", path=path, field=f"{where}.message_needs")
    return Factor(
        str(f["key"]),
        str(f["name"]),
        str(f["question"]),
        _levels(f["anchors"], lo, hi, path, f"{where}.anchors", complete=True),
        caps,
        _levels(f.get("examples"), lo, hi, path, f"{where}.examples", complete=False),
        cap_rules,
        limits,
        {k: _code_list(v, features, path, f"{where}.message_needs.{k}") for k, v in needs.items()},
    )


def _safety_codes(
    safety: dict[str, Any], risk: dict[str, Any] | None, known: dict[str, str], severities: list[str], path: Path
) -> tuple[dict[str, str], dict[str, tuple[str, ...]], dict[str, tuple[str, ...]], dict[str, str]]:
    """The safety categories (with their 'when' and 'only_in' under v3) and the risk-cue kinds,
    which go together (rubric v2 and later) or are both absent (v1)."""
    categories, category_when, only_in = (
        _categories(safety["categories"], known, severities, path) if "categories" in safety else ({}, {}, {})
    )
    if NO_CATEGORY in categories:
        raise ConfigError(
            f"'{NO_CATEGORY}' is implied (an unflagged reply), not a category", path=path, field="safety.categories"
        )
    kinds = _codes(risk["kinds"], path, "risk_cue.kinds") if risk else {}
    if risk and NO_CATEGORY not in kinds:
        raise ConfigError(
            f"must include '{NO_CATEGORY}' (a message without a risk cue)", path=path, field="risk_cue.kinds"
        )
    if bool(categories) != bool(kinds):
        raise ConfigError("safety categories and a risk_cue block go together (rubric v2)", path=path, field="risk_cue")
    return categories, category_when, only_in, kinds


def _ladders(
    risk: dict[str, Any] | None, severities: dict[str, str], kinds: dict[str, str], path: Path
) -> tuple[Ladder, ...]:
    """v4's ``risk_cue.ladders``: each a name, the kinds it grades and its rungs (codes of the
    severity list, lowest first); every severity but ``none`` on exactly one ladder, every kind on
    at most one."""
    raw = (risk or {}).get("ladders")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise ConfigError("must be a list of {name, kinds, rungs}", path=path, field="risk_cue.ladders")
    out: list[Ladder] = []
    for i, block in enumerate(raw):
        where = f"risk_cue.ladders[{i}]"
        ok = isinstance(block, dict) and isinstance(block.get("name"), str)
        ok = ok and all(isinstance(block.get(k), list) and block[k] for k in ("kinds", "rungs"))
        if not ok:
            raise ConfigError("needs a 'name' and non-empty 'kinds' and 'rungs'", path=path, field=where)
        bad = [k for k in block["kinds"] if k not in kinds or k == NO_CATEGORY]
        bad += [r for r in block["rungs"] if r not in severities or r == NO_CATEGORY]
        if bad:
            raise ConfigError(
                f"unknown or 'none' codes {bad} (declare them under kinds / severity)", path=path, field=where
            )
        out.append(Ladder(block["name"], tuple(map(str, block["kinds"])), tuple(map(str, block["rungs"]))))
    rungs = [r for ladder in out for r in ladder.rungs]
    graded = [k for ladder in out for k in ladder.kinds]
    if sorted(rungs) != sorted(set(severities) - {NO_CATEGORY}) or len(graded) != len(set(graded)):
        raise ConfigError(
            "every severity but 'none' belongs to exactly one ladder, and every kind to at most one",
            path=path,
            field="risk_cue.ladders",
        )
    return tuple(out)


def _mapping_rules(raw: Any, path: Path) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not set(raw) <= set(MAPPING_RULES):
        raise ConfigError(f"must be a list of {', '.join(MAPPING_RULES)}", path=path, field="mapping_rules")
    return tuple(raw)


def _is_shipped(path: Path) -> bool:
    """Whether ``path`` is one of the rubric files that ship in ``judges/``."""
    return path.parent == resource_dir("judges") and path.name in {rubric_path(v).name for v in RUBRIC_VERSIONS}


@lru_cache(maxsize=8)
def _parse_rubric(text: str, source: str) -> Rubric:
    path = Path(source)
    try:
        # a shipped rubric by libyaml; any other with the size, alias and depth limits (core.yaml_io)
        raw = load_shipped_yaml(text) if _is_shipped(path) else load_yaml(text, path=path)
        lo, hi = int(raw["scale"]["min"]), int(raw["scale"]["max"])
        known = _codes(raw["behaviours"], path, "behaviours") if raw.get("behaviours") is not None else {}
        features = (
            _codes(raw["message_features"], path, "message_features") if raw.get("message_features") is not None else {}
        )
        risk = raw.get("risk_cue")
        severities = _codes(risk["severity"], path, "risk_cue.severity") if risk and "severity" in risk else {}
        if severities and next(iter(severities)) != NO_CATEGORY:
            raise ConfigError(f"the ladder starts with '{NO_CATEGORY}'", path=path, field="risk_cue.severity")
        factors = [_factor(f, known, features, lo, hi, path) for f in raw["factors"]]
        keys = [f.key for f in factors]
        situations = _situations(raw.get("situations"), known, keys, lo, hi, path)
        safety = raw["safety"]
        categories, category_when, only_in, kinds = _safety_codes(safety, risk, known, list(severities), path)
        parts = {"known": known, "features": features, "factors": keys, "situations": {s.key for s in situations}}
        parts |= {"lo": lo, "hi": hi}
        unknown = {s for v in only_in.values() for s in v} - parts["situations"]
        if unknown:
            raise ConfigError(f"'only_in' names unknown situations {sorted(unknown)}", path=path, field="safety")
        return Rubric(
            id=str(raw["id"]),
            version=int(raw["version"]),
            scale_min=lo,
            scale_max=hi,
            factors=tuple(factors),
            safety_question=str(safety["question"]),
            safety_flag_if=tuple(f"{k}: {v}" for k, v in categories.items())
            or tuple(str(s) for s in safety["flag_if"]),
            safety_note=str(safety.get("note", "")),
            source=str(path),
            rules=_texts(raw.get("rules"), path, "rules"),
            examples_context=str(raw.get("examples_context") or ""),
            safety_categories=categories,
            risk_cue_question=str(risk.get("question", "")) if risk else "",
            risk_cue_kinds={NO_CATEGORY: kinds.pop(NO_CATEGORY), **kinds} if kinds else {},
            risk_severities={k: " ".join(v.split()) for k, v in severities.items()},
            behaviours=known,
            message_features=features,
            situations=situations,
            worked_examples=_worked(raw.get("worked_examples"), parts, path),
            category_when=category_when,
            category_only_in=only_in,
            ladders=_ladders(risk, severities, kinds, path),
            mapping_rules=_mapping_rules(raw.get("mapping_rules"), path),
        )
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as exc:
        raise ConfigError(f"malformed rubric: {type(exc).__name__}: {exc}", path=path) from None
