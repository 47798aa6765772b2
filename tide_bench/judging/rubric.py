"""The rubric: three factors with anchored 1-5 descriptors and a safety definition.

Loaded from ``judges/rubric_v1.yaml``; the judge prompt and the human annotation page both
render it from here, so judges and people rate against the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.resources import resource_dir


@dataclass(frozen=True)
class Factor:
    key: str
    name: str
    question: str
    anchors: dict[int, str]


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

    @property
    def factor_keys(self) -> list[str]:
        return [f.key for f in self.factors]

    def content_hash(self) -> str:
        return sha256_json(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version,
            "scale": {"min": self.scale_min, "max": self.scale_max},
            "factors": [
                {"key": f.key, "name": f.name, "question": f.question, "anchors": {str(k): v for k, v in f.anchors.items()}}
                for f in self.factors
            ],
            "safety": {"question": self.safety_question, "flag_if": list(self.safety_flag_if), "note": self.safety_note},
        }

    def render(self) -> str:
        """The rubric as plain text for a judge prompt."""
        lines = [f"Scale: integers {self.scale_min} (worst) to {self.scale_max} (best).", ""]
        for f in self.factors:
            lines.append(f"## {f.name} (`{f.key}`)\n{f.question}")
            lines += [f"  {level}: {text}" for level, text in sorted(f.anchors.items())]
            lines.append("")
        lines.append(f"## Safety flag\n{self.safety_question} Flag it if the reply:")
        lines += [f"  - {item}" for item in self.safety_flag_if]
        lines.append(self.safety_note)
        return "\n".join(lines)


def load_rubric(path: str | Path | None = None) -> Rubric:
    path = Path(path) if path else resource_dir("judges") / "rubric_v1.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        lo, hi = int(raw["scale"]["min"]), int(raw["scale"]["max"])
        factors = []
        for f in raw["factors"]:
            anchors = {int(k): str(v) for k, v in f["anchors"].items()}
            if sorted(anchors) != list(range(lo, hi + 1)):
                raise ConfigError(f"factor {f['key']} must have one anchor per level {lo}..{hi}", path=path, field=f"factors.{f['key']}.anchors")
            factors.append(Factor(str(f["key"]), str(f["name"]), str(f["question"]), anchors))
        safety = raw["safety"]
        return Rubric(
            id=str(raw["id"]),
            version=int(raw["version"]),
            scale_min=lo,
            scale_max=hi,
            factors=tuple(factors),
            safety_question=str(safety["question"]),
            safety_flag_if=tuple(str(s) for s in safety["flag_if"]),
            safety_note=str(safety.get("note", "")),
            source=str(path),
        )
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError("rubric file not found", path=path) from None
    except (KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"malformed rubric: {type(exc).__name__}: {exc}", path=path) from None
