"""The metric table: each per-item reference metric declared once (``metrics.yaml``).

Why a table: a metric used to be named in four places (the names the samples reader keeps, the
functions that compute it, the task template's ``metric_list`` and the board's columns), and
lm-eval was told every one was "higher is better", reply length included. Everything that needs
a metric's name, direction or aggregation reads it here (lm-eval's registration, the samples
reader, the board's columns); the task template's ``metric_list`` is checked against it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tide_bench.core.errors import ConfigError
from tide_bench.core.yaml_io import read_yaml

METRICS_FILE = Path(__file__).with_name("metrics.yaml")
EMBEDDING = "embedding"  # the `function` of a metric computed by the sentence encoder
# the `function` of a metric computed by the local EPITOME scorer (tide_bench/epitome/scorer.py): only
# where one is named (tasks that declare it, `tide-bench epitome score`, a study's epitome stage)
EPITOME = "epitome"
_SPECIAL = (EMBEDDING, EPITOME)
DIRECTIONS = ("high", "low", "none")
AGGREGATIONS = ("mean", "nanmean")
_FIELDS = {"name", "function", "better", "aggregation", "against_reference", "description"}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FUNCTION = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

MetricFunction = Callable[[str, str, list[str]], float]


@dataclass(frozen=True)
class Metric:
    name: str
    function: str
    better: str  # high | low | none
    aggregation: str
    against_reference: bool
    description: str

    @property
    def every_run(self) -> bool:
        """Computed for every run by the reference scorer (not only where an EPITOME scorer is named)."""
        return self.function != EPITOME

    @property
    def higher_is_better(self) -> bool:
        """lm-eval's flag: true only for a metric whose high end is best (length is not)."""
        return self.better == "high"

    @property
    def column_better(self) -> str | None:
        """The board's ``better`` (high | low), None for a descriptive metric."""
        return None if self.better == "none" else self.better


def metric_table(path: Path | None = None) -> tuple[Metric, ...]:
    """The declared metrics, in file order (``path``: another table, for tests)."""
    return _load(path or METRICS_FILE)


def metric_names(path: Path | None = None) -> tuple[str, ...]:
    return tuple(m.name for m in metric_table(path))


def reference_metric_names(path: Path | None = None) -> tuple[str, ...]:
    """The metrics the reference scorer computes for every run: the table's, less the EPITOME
    scorer's (``function: epitome``, present only where a scorer was named)."""
    return tuple(m.name for m in metric_table(path) if m.every_run)


def metric(name: str, path: Path | None = None) -> Metric | None:
    return next((m for m in metric_table(path) if m.name == name), None)


def text_metric_functions(path: Path | None = None) -> tuple[tuple[str, MetricFunction], ...]:
    """``(name, function)`` of every metric computed from the texts alone (not the sentence encoder,
    not the EPITOME scorer)."""
    return _functions(path or METRICS_FILE)


@lru_cache(maxsize=8)
def _functions(path: Path) -> tuple[tuple[str, MetricFunction], ...]:
    out = []
    for m in _load(path):
        if m.function in _SPECIAL:
            continue
        module, _, attr = m.function.partition(":")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"metric {m.name}: cannot load its function {m.function!r} ({exc})", path=path, field="function"
            ) from None
        out.append((m.name, fn))
    return tuple(out)


@lru_cache(maxsize=8)
def _load(path: Path) -> tuple[Metric, ...]:
    raw = read_yaml(path, error=ConfigError)
    entries = raw.get("metrics") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ConfigError("expected a non-empty 'metrics' list of mappings", path=path, field="metrics")
    out: list[Metric] = []
    for k, entry in enumerate(entries):
        where = f"metrics[{k}]"
        unknown = sorted(set(entry) - _FIELDS)
        missing = sorted(_FIELDS - set(entry))
        if unknown or missing:
            raise ConfigError(
                f"{where}: "
                + "; ".join(
                    part
                    for part in (
                        f"unknown fields {unknown}" if unknown else "",
                        f"missing fields {missing}" if missing else "",
                    )
                    if part
                ),
                path=path,
                field=where,
                hint=f"each metric has exactly: {', '.join(sorted(_FIELDS))}",
            )
        name, function = entry["name"], entry["function"]
        checks = (
            ("name", isinstance(name, str) and bool(_NAME.match(name)), "a lower-case identifier"),
            (
                "function",
                function in _SPECIAL or (isinstance(function, str) and bool(_FUNCTION.match(function))),
                f"module:function or {EMBEDDING} or {EPITOME}",
            ),
            ("better", entry["better"] in DIRECTIONS, " | ".join(DIRECTIONS)),
            ("aggregation", entry["aggregation"] in AGGREGATIONS, " | ".join(AGGREGATIONS)),
            ("against_reference", isinstance(entry["against_reference"], bool), "true or false"),
            ("description", isinstance(entry["description"], str) and entry["description"].strip(), "a line of text"),
        )
        for field, ok, expected in checks:
            if not ok:
                raise ConfigError(f"must be {expected}", path=path, field=f"{where}.{field}")
        if name in {m.name for m in out}:
            raise ConfigError(f"metric {name} is declared twice", path=path, field=f"{where}.name")
        out.append(
            Metric(
                name=name,
                function=function,
                better=entry["better"],
                aggregation=entry["aggregation"],
                against_reference=entry["against_reference"],
                description=entry["description"].strip(),
            )
        )
    return tuple(out)
