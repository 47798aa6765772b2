"""Planning rates for ``study --dry-run``: measured where anything was measured, else stated assumptions.

Three sources, best first, and every estimate names the one it used:

1. **this study**: a finished stage of the same model in this study folder (its record's
   ``measured`` tokens/s or items/s);
2. **a GPU check**: ``--rates FILE``, the ``results.json`` that ``benchmarks/gpu_check.sh``
   writes (its ``rates`` block: LoRA tokens/s at the 0.5B and 3B shapes, generation tokens/s
   through the harness, with the machine and the date), or a YAML file of the same shape;
3. **assumptions**: ``studies/rates/assumed.yaml``, labelled "assumed (not measured)".

A rate that none of them gives leaves the estimate "unknown", which the totals then say.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import read_json
from tide_bench.core.resources import resource_dir
from tide_bench.core.yaml_io import read_yaml

ASSUMED = "rates/assumed.yaml"
MAX_RATES_BYTES = 2_000_000
_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)


@dataclass
class Rates:
    """Rates by device kind (cpu, cuda), each keyed by model size in billions of parameters."""

    source: str
    devices: dict[str, dict[str, Any]]
    tokens_per_char: float = 0.25
    template_tokens: int = 30
    validation_cost: float = 0.33
    judge: dict[str, Any] = field(default_factory=dict)
    measured: bool = False

    def machine(self, device: str) -> str:
        return str((self.devices.get(device) or {}).get("machine") or device)

    def finetune_seconds_per_token(self, device: str, size_b: float | None) -> float | None:
        """Seconds per training token at ``size_b``: linear in size between the sizes given."""
        anchors = _anchors((self.devices.get(device) or {}).get("finetune_tokens_per_s"))
        if not anchors or size_b is None:
            return None
        points = [(b, 1.0 / r) for b, r in anchors]
        if size_b <= points[0][0] or len(points) == 1:  # below the smallest size given: in proportion to size
            b0, s0 = points[0] if size_b <= points[0][0] else points[-1]
            return s0 * size_b / b0
        segments = list(itertools.pairwise(points))
        (b0, s0), (b1, s1) = next(((a, b) for a, b in segments if size_b <= b[0]), segments[-1])
        return s0 + (size_b - b0) / (b1 - b0) * (s1 - s0)

    def generate_tokens_per_s(self, device: str, backend: str, size_b: float | None) -> float | None:
        """Generation tokens/s at ``size_b``: the nearest size given, scaled as 1/size."""
        by_backend = (self.devices.get(device) or {}).get("generate_tokens_per_s") or {}
        anchors = _anchors(by_backend.get(backend) if isinstance(by_backend, dict) else None)
        if not anchors or size_b is None:
            return None
        b0, r0 = min(anchors, key=lambda a: abs(a[0] - size_b))
        return r0 * b0 / size_b


def _anchors(raw: Any) -> list[tuple[float, float]]:
    if not isinstance(raw, dict):
        return []
    out = []
    for size, rate in raw.items():
        try:
            b, r = float(size), float(rate)
        except (TypeError, ValueError):
            continue
        if b > 0 and r > 0:
            out.append((b, r))
    return sorted(out)


def assumed_rates() -> Rates:
    raw = yaml.safe_load((resource_dir("studies") / ASSUMED).read_text(encoding="utf-8"))
    return _from_mapping(raw, measured=False)


def _from_mapping(raw: Any, *, measured: bool, path: Path | None = None) -> Rates:
    if not isinstance(raw, dict) or not isinstance(raw.get("devices"), dict):
        raise ConfigError("a rates file holds a 'devices' mapping (cpu, cuda: finetune/generate tokens/s)", path=path)
    for kind, values in raw["devices"].items():
        if not isinstance(values, dict):
            raise ConfigError("must be a mapping of rates", path=path, field=f"devices.{kind}")
    if not isinstance(raw.get("judge") or {}, dict):
        raise ConfigError("must be a mapping", path=path, field="judge")
    return Rates(
        source=str(raw.get("source") or (path.name if path else "rates")),
        devices=raw["devices"],
        tokens_per_char=_positive(raw, "tokens_per_char", 0.25, path),
        template_tokens=int(_positive(raw, "template_tokens", 30, path)),
        validation_cost=_positive(raw, "validation_cost", 0.33, path),
        judge=dict(raw.get("judge") or {}),
        measured=measured,
    )


def load_rates(path: str | Path | None) -> Rates:
    """``--rates FILE`` (a GPU check's results.json, or a YAML/JSON rates file), falling back to the
    assumptions for whatever it does not give; without a file, the assumptions."""
    assumed = assumed_rates()
    if path is None:
        return assumed
    path = Path(path)
    # the guarded readers: a regular file, size-limited, depth-limited, no alias bomb (R3-7, R3S-7)
    raw = read_json(path, ConfigError, max_bytes=MAX_RATES_BYTES) if path.suffix == ".json" else read_yaml(path)
    if isinstance(raw, dict) and isinstance(raw.get("rates"), dict):  # a GPU check's results.json
        raw = raw["rates"]
    measured = _from_mapping(raw, measured=True, path=path)
    devices = {kind: dict(assumed.devices.get(kind) or {}) for kind in {*assumed.devices, *measured.devices}}
    given = []
    for kind, values in measured.devices.items():
        for key, value in values.items():
            if value and key != "machine":
                given.append(
                    f"{kind} {key.replace('_tokens_per_s', '')}"
                    + (f" ({', '.join(value)})" if key.startswith("generate") else "")
                )
                if key.startswith("generate") and isinstance(value, dict):  # a backend not measured keeps its rate
                    value = dict(devices[kind].get(key) or {}) | value
                devices[kind][key] = value
            elif key == "machine":
                devices[kind][key] = value
    return Rates(
        source=f"{measured.source} for {'; '.join(given) or 'nothing'}; the rest assumed (studies/rates/assumed.yaml)",
        devices=devices,
        tokens_per_char=_positive(raw, "tokens_per_char", assumed.tokens_per_char, path),
        template_tokens=int(_positive(raw, "template_tokens", assumed.template_tokens, path)),
        validation_cost=_positive(raw, "validation_cost", assumed.validation_cost, path),
        judge=assumed.judge | measured.judge,
        measured=True,
    )


def _positive(raw: dict[str, Any], key: str, default: float, path: Path | None) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ConfigError(f"must be a non-negative number, not {value!r}", path=path, field=key)
    return float(value)


def size_billions(parameters: int | None, *names: str) -> float | None:
    """A model's size: its ``parameters``, else read from its name ("Qwen2.5-0.5B", "SmolLM2-135M")."""
    if parameters:
        return parameters / 1e9
    for name in names:
        for number, unit in _SIZE.findall(name or ""):
            return float(number) / (1000.0 if unit.lower() == "m" else 1.0)
    return None
