"""Read ratings (long CSV/JSONL), the rater table, and judge outputs into one table.

Ratings: one row per rating, ``item_id, rater_id, dimension, score`` (numeric). Not every
rater rates every item. Bad rows are errors naming the file, line and field; nothing is
skipped silently. A judge becomes a rater (``rater_id`` = its judge id); its unscored items
are counted and reported, never turned into ratings.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl

REQUIRED = ("item_id", "rater_id", "dimension", "score")


@dataclass
class RatingsTable:
    """Long-format ratings plus who is a judge and what each judge left unscored."""

    rows: list[tuple[str, str, str, float]] = field(default_factory=list)  # item, rater, dimension, score
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)  # rater_id -> {file, n_scored, n_unscored, reasons}
    sources: list[str] = field(default_factory=list)

    def dimensions(self) -> list[str]:
        return sorted({r[2] for r in self.rows})

    def raters(self, dimension: str) -> list[str]:
        return sorted({r[1] for r in self.rows if r[2] == dimension})

    def human_raters(self, dimension: str) -> list[str]:
        return [r for r in self.raters(dimension) if r not in self.judges]

    def matrix(self, dimension: str, raters: list[str], items: list[str] | None = None) -> tuple[list[str], Any]:
        """Raters x items array of scores (NaN where missing) for one dimension."""
        import numpy as np

        cells = {(r[0], r[1]): r[3] for r in self.rows if r[2] == dimension and r[1] in raters}
        items = items if items is not None else sorted({i for i, _ in cells})
        index = {item: j for j, item in enumerate(items)}
        data = np.full((len(raters), len(items)), np.nan)
        for (item, rater), score in cells.items():
            if item in index:
                data[raters.index(rater), index[item]] = score
        return items, data


def _parse_score(value: Any, path: Path, line: int, lo: float | None, hi: float | None) -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise DataError(f"score {value!r} is not a number", path=path, line=line, field="score") from None
    if not math.isfinite(score):
        raise DataError(f"score {value!r} is not a finite number", path=path, line=line, field="score")
    if lo is not None and hi is not None and not lo <= score <= hi:
        raise DataError(f"score {score:g} is outside the scale {lo:g}..{hi:g}", path=path, line=line, field="score", hint="fix the value or pass --scale MIN-MAX")
    return score


def _records(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DataError("file not found", path=path)
    if path.suffix.lower() in (".jsonl", ".json"):
        for line, obj in iter_jsonl(path, DataError):
            if not isinstance(obj, dict):
                raise DataError("each line must be a JSON object", path=path, line=line)
            yield line, obj
        return
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:
                raise DataError("empty file", path=path)
            yield from enumerate(reader, start=2)
    except UnicodeDecodeError as exc:
        raise DataError(f"invalid UTF-8 ({exc.reason})", path=path) from None


def load_ratings(
    path: str | Path,
    *,
    scale: tuple[float, float] | None = (1, 5),
    mapping: dict[str, str] | None = None,
    table: RatingsTable | None = None,
) -> RatingsTable:
    """Load long-format ratings; ``mapping`` renames dimensions (human name -> judge name)."""
    path = Path(path)
    table = table or RatingsTable()
    lo, hi = scale if scale else (None, None)
    seen: dict[tuple[str, str, str], int] = {}
    for line, rec in _records(path):
        for key in REQUIRED:
            if rec.get(key) in (None, ""):
                raise DataError(f"missing {key!r} (columns: {', '.join(REQUIRED)})", path=path, line=line, field=key)
        dimension = str(rec["dimension"]).strip()
        dimension = (mapping or {}).get(dimension, dimension)
        cell = (str(rec["item_id"]).strip(), str(rec["rater_id"]).strip(), dimension)
        if cell in seen:
            raise DataError(f"duplicate rating of item {cell[0]!r} by rater {cell[1]!r} on {cell[2]!r} (first on line {seen[cell]})", path=path, line=line)
        seen[cell] = line
        table.rows.append((*cell, _parse_score(rec["score"], path, line, lo, hi)))
    table.sources.append(str(path))
    return table


def load_raters(path: str | Path) -> dict[str, dict[str, str]]:
    """``rater_id -> {column: value}``; empty values become ``"(not given)"``."""
    path = Path(path)
    raters: dict[str, dict[str, str]] = {}
    for line, rec in _records(path):
        rid = str(rec.get("rater_id") or "").strip()
        if not rid:
            raise DataError("missing 'rater_id'", path=path, line=line, field="rater_id")
        if rid in raters:
            raise DataError(f"rater {rid!r} listed twice", path=path, line=line, field="rater_id")
        raters[rid] = {k: (str(v).strip() if v not in (None, "") else "(not given)") for k, v in rec.items() if k != "rater_id"}
    return raters


def judge_rater_id(judge: dict[str, Any]) -> str:
    return f"judge:{judge.get('name')}@{str(judge.get('version', ''))[:8]}"


def annotation_prefix(path: Path, table: RatingsTable) -> str:
    """Ratings collected with ``tide-bench annotate`` name items ``<run folder>/<item id>``;
    a judge's items match them through the run folder its judge directory sits in."""
    run_name = path.resolve().parent.parent.name
    prefix = f"{run_name}/"
    return prefix if any(r[0].startswith(prefix) for r in table.rows) else ""


def load_judgments(path: str | Path, table: RatingsTable) -> RatingsTable:
    """Add a judge's scored items as ratings; count its unscored ones."""
    path = Path(path)
    prefix = annotation_prefix(path, table)
    per_judge: dict[str, Counter[str]] = defaultdict(Counter)
    for line, rec in iter_jsonl(path, DataError):
        judge = rec.get("judge") if isinstance(rec, dict) else None
        if not isinstance(judge, dict) or "item_id" not in rec or rec.get("status") not in ("scored", "unscored"):
            raise DataError("not a tide-bench judgment (needs item_id, status, judge)", path=path, line=line)
        rid = judge_rater_id(judge)
        if rec["status"] == "unscored":
            per_judge[rid][str(rec.get("unscored_kind"))] += 1
            per_judge[rid]["__unscored__"] += 1
            continue
        per_judge[rid]["__scored__"] += 1
        for dimension, score in (rec.get("scores") or {}).items():
            table.rows.append((prefix + str(rec["item_id"]), rid, dimension, _parse_score(score, path, line, None, None)))
    for rid, counts in per_judge.items():
        table.judges[rid] = {
            "file": str(path),
            "n_scored": counts.pop("__scored__", 0),
            "n_unscored": counts.pop("__unscored__", 0),
            "unscored_reasons": dict(counts),
        }
    table.sources.append(str(path))
    return table
