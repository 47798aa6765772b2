"""The rubric: three factors with anchored 1-5 descriptors and a safety definition.

Loaded from ``judges/rubric_v2.yaml`` (the default) or ``judges/rubric_v1.yaml``; the judge
prompt, the judge's output schema and the human rating page all render it from here, so
judges and people rate against the same words.

Version 2 adds, all optional in the file format so that version 1 loads and renders exactly as
before (its content hash, and so every v1 judge configuration version, is unchanged):
``rules`` (general decision rules), per-factor ``caps`` and worked ``examples`` per level on a
fixed ``examples_context``, a ``risk_cue`` step with named kinds, and safety ``categories``
(code: description) instead of v1's unnamed ``flag_if`` list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.resources import resource_dir
from tide_bench.core.yaml_io import load_yaml

RUBRIC_VERSIONS = ("v1", "v2")
DEFAULT_RUBRIC = "v2"
NO_CATEGORY = "none"  # the safety category of an unflagged reply, and the risk-cue kind of a message without one


@dataclass(frozen=True)
class Factor:
    key: str
    name: str
    question: str
    anchors: dict[int, str]
    caps: tuple[str, ...] = ()
    examples: dict[int, str] = field(default_factory=dict)


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

    @property
    def factor_keys(self) -> list[str]:
        return [f.key for f in self.factors]

    @property
    def has_categories(self) -> bool:
        """Whether judgments carry a safety category and a risk cue (rubric v2 and later)."""
        return bool(self.safety_categories)

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
            if f.caps:
                block["caps"] = list(f.caps)
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
        if self.examples_context:
            out["examples_context"] = self.examples_context
        out["factors"] = factors
        if self.risk_cue_kinds:
            out["risk_cue"] = {"question": self.risk_cue_question, "kinds": dict(self.risk_cue_kinds)}
        if self.safety_categories:
            out["safety"] = {
                "question": self.safety_question,
                "categories": dict(self.safety_categories),
                "note": self.safety_note,
            }
        else:
            out["safety"] = {
                "question": self.safety_question,
                "flag_if": list(self.safety_flag_if),
                "note": self.safety_note,
            }
        return out

    def render(self) -> str:
        """The rubric as plain text for a judge prompt."""
        lines = [f"Scale: integers {self.scale_min} (worst) to {self.scale_max} (best).", ""]
        if self.rules:
            lines.append("## General rules (every factor)")
            lines += [f"  - {rule}" for rule in self.rules]
            lines.append("")
        if self.examples_context:
            lines.append("## Context of the worked examples (a fixed synthetic message, not one you rate)")
            lines.append(f"  {self.examples_context}")
            lines.append("")
        for f in self.factors:
            lines.append(f"## {f.name} (`{f.key}`)\n{f.question}")
            lines += [f"  {level}: {text}" for level, text in sorted(f.anchors.items())]
            lines += [f"  Cap: {cap}" for cap in f.caps]
            if f.examples:
                lines.append("  Worked examples (replies to the context above), by level:")
                lines += [f"    {level}: {text}" for level, text in sorted(f.examples.items())]
            lines.append("")
        if self.risk_cue_kinds:
            lines.append(f"## Risk cue\n{self.risk_cue_question} Kinds:")
            lines += [f"  - {kind}: {text}" for kind, text in self.risk_cue_kinds.items()]
            lines.append("")
        if self.safety_categories:
            lines.append(f"## Safety\n{self.safety_question} Categories (flag the reply when one applies):")
            lines += [f"  - {code}: {text}" for code, text in self.safety_categories.items()]
            lines.append(f"  - {NO_CATEGORY}: none of the above applies (not flagged).")
        else:
            lines.append(f"## Safety flag\n{self.safety_question} Flag it if the reply:")
            lines += [f"  - {item}" for item in self.safety_flag_if]
        lines.append(self.safety_note)
        return "\n".join(lines)


def rubric_path(version: str) -> Path:
    """The rubric file of a version name (``v1``, ``v2``)."""
    if version not in RUBRIC_VERSIONS:
        raise ConfigError(f"unknown rubric {version!r}; choose {', '.join(RUBRIC_VERSIONS)}", field="--rubric")
    return resource_dir("judges") / f"rubric_{version}.yaml"


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
    """A rubric file (default: the current version, ``judges/rubric_v2.yaml``).

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


@lru_cache(maxsize=8)
def _parse_rubric(text: str, source: str) -> Rubric:
    path = Path(source)
    try:
        raw = load_yaml(text, path=path)  # size, alias and depth limits (core.yaml_io)
        lo, hi = int(raw["scale"]["min"]), int(raw["scale"]["max"])
        factors = []
        for f in raw["factors"]:
            where = f"factors.{f['key']}"
            factors.append(
                Factor(
                    str(f["key"]),
                    str(f["name"]),
                    str(f["question"]),
                    _levels(f["anchors"], lo, hi, path, f"{where}.anchors", complete=True),
                    _texts(f.get("caps"), path, f"{where}.caps"),
                    _levels(f.get("examples"), lo, hi, path, f"{where}.examples", complete=False),
                )
            )
        safety = raw["safety"]
        categories = _codes(safety["categories"], path, "safety.categories") if "categories" in safety else {}
        if NO_CATEGORY in categories:
            raise ConfigError(
                f"'{NO_CATEGORY}' is implied (an unflagged reply), not a category", path=path, field="safety.categories"
            )
        risk = raw.get("risk_cue")
        kinds = _codes(risk["kinds"], path, "risk_cue.kinds") if risk else {}
        if risk and NO_CATEGORY not in kinds:
            raise ConfigError(
                f"must include '{NO_CATEGORY}' (a message without a risk cue)", path=path, field="risk_cue.kinds"
            )
        if bool(categories) != bool(kinds):
            raise ConfigError(
                "safety categories and a risk_cue block go together (rubric v2)", path=path, field="risk_cue"
            )
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
        )
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as exc:
        raise ConfigError(f"malformed rubric: {type(exc).__name__}: {exc}", path=path) from None
