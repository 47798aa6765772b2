"""The GPU measurements tide-bench's device defaults are chosen from (``device_evidence.yaml``).

Fine-tuning's micro-batch and dtypes (:mod:`tide_bench.finetune.defaults`) and generation's batch
size (:mod:`tide_bench.generation.device_choice`) are functions of the device's facts *and* of these
rows, so a new GPU check's rows change the defaults without a code change, and a test can hand in
rows of its own. Each row is a mapping of measured values; a malformed file is refused with its
path and the row's position.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError

EVIDENCE_FILE = Path(__file__).with_name("device_evidence.yaml")
TRAINING_KEYS = ("device", "params", "micro_batch", "base_dtype", "max_seq_tokens", "tokens_per_s", "peak_allocated_gb")
GENERATION_KEYS = ("device", "params", "path", "batch_size", "items_per_s")


@dataclass(frozen=True)
class Evidence:
    """The measured rows: ``training`` (LoRA steps) and ``generation`` (batched greedy decoding)."""

    training: tuple[dict[str, Any], ...]
    generation: tuple[dict[str, Any], ...]
    source: str = str(EVIDENCE_FILE.name)


def _rows(raw: Any, section: str, keys: tuple[str, ...], path: Path) -> tuple[dict[str, Any], ...]:
    rows = raw.get(section) or []
    if not isinstance(rows, list):
        raise ConfigError(f"'{section}' must be a list of rows", path=path, field=section)
    for k, row in enumerate(rows):
        missing = [key for key in keys if not isinstance(row, dict) or row.get(key) in (None, "")]
        if missing:
            raise ConfigError(f"row {k + 1} lacks {', '.join(missing)}", path=path, field=f"{section}[{k}]")
    return tuple(rows)


def load_evidence(path: Path = EVIDENCE_FILE) -> Evidence:
    """The rows of ``path`` (the shipped file by default), checked for the fields the choices read."""
    from tide_bench.core.yaml_io import read_yaml

    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError("the evidence file holds a mapping with 'training' and 'generation' lists", path=path)
    return Evidence(
        _rows(raw, "training", TRAINING_KEYS, path), _rows(raw, "generation", GENERATION_KEYS, path), path.name
    )


@lru_cache(maxsize=1)
def shipped_evidence() -> Evidence:
    return load_evidence(EVIDENCE_FILE)
