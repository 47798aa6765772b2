"""The leaderboard's columns, read from one declaration (``columns.yaml`` beside this module).

Why one declaration: the scoring of per-item metrics (:mod:`.scores`), the exports
(:mod:`..site.exports`) and the page's table (:mod:`..site.pages`) used to spell the columns out each in
its own way, so adding a metric meant three edits that could disagree. Here a column is one
entry; the rubric's factors are expanded from the rubric file (their keys and names), never
typed in code. HELM declares its columns in one schema file in the same spirit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.yaml_io import read_yaml
from tide_bench.judging.rubric import Rubric
from tide_bench.metrics.table import metric

COLUMNS_FILE = Path(__file__).with_name("columns.yaml")
KINDS = (
    "rank",
    "model",
    "size",
    "condition",
    "score",
    "metric",
    "rate",
    "fraction",
    "count",
    "number",
    "text",
    "verdict",
)
BLOCK_KINDS = ("score", "metric", "rate")  # a {mean, ci_low, ci_high, ...} block
REQUIRED_METRICS = ("cosine_sim",)  # the ranking falls back to it on a board without a judge
FACTOR_GROUP = "factors"


@dataclass(frozen=True)
class Column:
    """One column: where its value sits in a row, how it is shown, and which end is best."""

    key: str
    label: str
    kind: str
    source: tuple[str, ...]
    better: str | None = None
    digits: int = 2
    group: str | None = None
    page: bool = True
    csv: bool = True
    md: bool = False
    help: str = ""
    warn: str | None = None  # a row field that, when true, marks this column's cell with a warning
    when_present: bool = False  # shown only when some row has a value (shown_columns)

    @property
    def is_block(self) -> bool:
        return self.kind in BLOCK_KINDS

    def raw(self, row: dict[str, Any]) -> Any:
        """The row's value at ``source`` (a block for block kinds); None when absent."""
        value: Any = row
        for part in self.source:
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return None
        return value

    def number(self, row: dict[str, Any]) -> float | None:
        """The column's number for sorting and export: a block's mean, a verdict's value (the size of
        the gap it shows: 0 for none shown, None when not estimable), or the plain value."""
        value = self.raw(row)
        if isinstance(value, dict):
            value = value.get("value" if self.kind == "verdict" else "mean")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)


def _column(entry: dict[str, Any], where: str) -> Column:
    unknown = set(entry) - {
        "key",
        "label",
        "kind",
        "source",
        "better",
        "digits",
        "group",
        "page",
        "csv",
        "md",
        "help",
        "warn",
        "against_reference",
        "when_present",
    }
    if unknown or not isinstance(entry.get("key"), str) or entry.get("kind") not in KINDS:
        raise ConfigError(
            f"malformed column {entry!r}: needs a key and a kind ({', '.join(KINDS)})"
            + (f"; unknown fields {sorted(unknown)}" if unknown else ""),
            path=where,
        )
    if entry.get("better") not in (None, "high", "low"):
        raise ConfigError(f"column {entry['key']}: better must be high or low", path=where)
    return Column(
        key=entry["key"],
        label=str(entry.get("label") or entry["key"]),
        kind=entry["kind"],
        source=tuple(str(entry.get("source") or entry["key"]).split(".")),
        better=entry.get("better"),
        digits=int(entry.get("digits", 2)),
        group=entry.get("group"),
        page=bool(entry.get("page", True)),
        csv=bool(entry.get("csv", True)),
        md=bool(entry.get("md", False)),
        help=str(entry.get("help") or ""),
        warn=entry.get("warn"),
        when_present=bool(entry.get("when_present", False)),
    )


@lru_cache(maxsize=4)
def _declared(path: Path) -> tuple[dict[str, Any], ...]:
    raw = read_yaml(path) or {}  # size, alias and depth limits (core.yaml_io)
    entries = raw.get("columns") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError("expected a 'columns' list of mappings", path=path)
    keys = [e.get("key") for e in entries if "key" in e]
    if len(keys) != len(set(keys)):
        raise ConfigError("a column key is declared twice", path=path)
    metrics = {e.get("key") for e in entries if e.get("kind") == "metric"}
    missing = [m for m in REQUIRED_METRICS if m not in metrics]
    if missing:
        raise ConfigError(f"the columns must include the metric(s) {', '.join(missing)}", path=path)
    return tuple(_with_metric_table(e, path) if e.get("kind") == "metric" else e for e in entries)


def _with_metric_table(entry: dict[str, Any], path: Path) -> dict[str, Any]:
    """A ``kind: metric`` column with the metric table's direction, ``against_reference``,
    description and ``when_present`` (a metric only some runs have) filled in (metrics/metrics.yaml,
    the one declaration); a column that states the direction or ``against_reference`` must agree
    with the table."""
    declared = metric(str(entry.get("key")))
    if declared is None:
        raise ConfigError(
            f"column {entry.get('key')}: kind metric, but the metric table declares no such metric",
            path=path,
            field=f"columns.{entry.get('key')}",
            hint="declare it in tide_bench/metrics/metrics.yaml first (docs/architecture.md, Add a reference metric)",
        )
    from_table = {
        "better": declared.column_better,
        "against_reference": declared.against_reference,
    }
    for field, value in from_table.items():
        if field == "better" and entry.get(field) not in (None, "high", "low"):
            continue  # not a direction at all: the column check names it
        if field in entry and entry[field] != value:
            raise ConfigError(
                f"column {entry['key']}: {field} is {entry[field]!r} here but {value!r} in the metric table",
                path=path,
                field=f"columns.{entry['key']}.{field}",
                hint="leave it out: the metric table says it once",
            )
    # a metric not every run computes (the EPITOME scorer's) is shown only where some row has it
    return {"help": declared.description, "when_present": not declared.every_run} | from_table | entry


PROVISIONAL = (
    "(uncalibrated: provisional until the judge's agreement with trained raters is established for this factor; "
    "docs/judging.md, calibration) "
)


def factor_columns(rubric: Rubric) -> list[Column]:
    """One score column per rubric factor, named by the rubric; the help marks each as provisional
    until a calibration with people exists (clinical re-check L4)."""
    return [
        Column(
            key=f.key,
            label=f.name,
            kind="score",
            source=("factors", f.key),
            better="high",
            digits=2,
            group=FACTOR_GROUP,
            help=PROVISIONAL + f.question,
        )
        for f in rubric.factors
    ]


def board_columns(rubric: Rubric, path: Path | None = None) -> list[Column]:
    """Every column in display order, the rubric's factors expanded in place."""
    where = path or COLUMNS_FILE
    out: list[Column] = []
    for entry in _declared(where):
        if entry.get("factors"):
            out += factor_columns(rubric)
        else:
            out.append(_column(entry, str(where)))
    return out


def metric_keys(path: Path | None = None) -> tuple[str, ...]:
    """The per-item reference metrics the board averages (the ``kind: metric`` columns)."""
    return tuple(e["key"] for e in _declared(path or COLUMNS_FILE) if e.get("kind") == "metric")


def against_reference_keys(path: Path | None = None) -> tuple[str, ...]:
    """The metrics that compare a reply with TIDE's reference reply (``against_reference``): for the
    reference row itself they would be perfect by construction, so they are not applicable there."""
    return tuple(
        e["key"] for e in _declared(path or COLUMNS_FILE) if e.get("kind") == "metric" and e.get("against_reference")
    )


def shown_columns(columns: Sequence[Column], rows: Sequence[dict[str, Any]]) -> list[Column]:
    """``columns`` without the ``when_present`` ones that no row has a value for."""
    return [c for c in columns if not c.when_present or any(c.number(r) is not None for r in rows)]
