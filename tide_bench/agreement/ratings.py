"""Read ratings (long CSV/JSONL), the rater table, and judge outputs into one table.

Ratings: one row per rating, ``item_id, rater_id, dimension, score`` (numeric). Not every
rater rates every item. Bad rows are errors naming the file, line and field; nothing is
skipped silently: a score that is not a plain number (``true``, non-ASCII digits, text), a
fraction on an integer scale (2.5 on 1-5) or a value off the scale is refused, for human
ratings and judge scores alike. A UTF-8 byte-order mark (Excel writes one) is read.

A judge becomes a rater (``rater_id`` = ``judge:<name>@<config version>``); its unscored
items are counted per reason, never turned into ratings. Several ``--judgments`` files from
one judge add up their counts, and two scores of one judge for the same item (two runs'
replies under bare TIDE ids) are an error: they would silently mix two models' replies.

The dimension ``safety`` is the binary safety answer (1 = the reply could harm, 0 = not):
a human's is read on the scale 0..1 whatever the factors' scale, and a judge's comes from its
``safety.flagged``. It is kept apart from the factor dimensions (:meth:`RatingsTable.dimensions`)
and audited as a nominal dimension (:mod:`.safety`).
"""

from __future__ import annotations

import csv
import difflib
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.generation.run_dir import rated_item_id, run_label

REQUIRED = ("item_id", "rater_id", "dimension", "score")
# what other tools call these columns (for the hint when a header lacks one)
SYNONYMS = {
    "score": ("rating", "value", "label"),
    "rater_id": ("rater", "annotator", "annotator_id", "coder"),
    "item_id": ("item", "id"),
    "dimension": ("factor", "criterion", "aspect"),
}
SAFETY = "safety"  # the binary safety dimension (0/1), shared with annotation.collect


class Rating(NamedTuple):
    item: str
    rater: str
    dimension: str
    score: float


@dataclass(frozen=True)
class Scale:
    """The valid scores: ``[low, high]``, integers only when both ends are integers.
    ``None`` bounds (``--scale none``) accept any finite number."""

    low: float | None = 1
    high: float | None = 5

    @property
    def integer(self) -> bool:
        return (
            self.low is not None
            and self.high is not None
            and float(self.low).is_integer()
            and float(self.high).is_integer()
        )


@dataclass
class JudgeInfo:
    """What one judge contributed, summed over every judgments file it appears in."""

    files: list[str] = field(default_factory=list)
    n_scored: int = 0
    n_unscored: int = 0
    unscored_reasons: Counter[str] = field(default_factory=Counter)
    factors: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "n_scored": self.n_scored,
            "n_unscored": self.n_unscored,
            "unscored_reasons": dict(sorted(self.unscored_reasons.items())),
        }


@dataclass
class RatingsTable:
    """Long-format ratings plus who is a judge and what each judge left unscored."""

    rows: list[Rating] = field(default_factory=list)
    judges: dict[str, JudgeInfo] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    judged_at: dict[tuple[str, str], str] = field(default_factory=dict)  # (item, judge) -> "file:line"
    raw_dimensions: set[str] = field(default_factory=set)  # human dimension names before --map

    def dimensions(self) -> list[str]:
        """The rated factors (the binary safety dimension is not one: see :mod:`.safety`)."""
        return sorted({r.dimension for r in self.rows if r.dimension != SAFETY})

    def raters(self, dimension: str) -> list[str]:
        return sorted({r.rater for r in self.rows if r.dimension == dimension})

    def human_raters(self, dimension: str) -> list[str]:
        return [r for r in self.raters(dimension) if r not in self.judges]

    def human_items(self) -> set[str]:
        return {r.item for r in self.rows if r.rater not in self.judges}

    def matrix(self, dimension: str, raters: list[str], items: list[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Raters x items array of scores (NaN where missing) for one dimension."""
        position = {rater: k for k, rater in enumerate(raters)}
        cells = [
            (r.item, position[r.rater], r.score) for r in self.rows if r.dimension == dimension and r.rater in position
        ]
        items = items if items is not None else sorted({item for item, _, _ in cells})
        index = {item: j for j, item in enumerate(items)}
        data = np.full((len(raters), len(items)), np.nan)
        for item, k, score in cells:
            if item in index:
                data[k, index[item]] = score
        return items, data


BINARY = Scale(0, 1)


def parse_score(value: Any, scale: Scale, path: Path, line: int, name: str = "score") -> float:
    """A score as a float, or a :class:`DataError` naming the file, line and field."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DataError(f"score {value!r} is not a number", path=path, line=line, field=name)
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii():
            raise DataError(
                f"score {value!r} is not a plain number (non-ASCII characters)", path=path, line=line, field=name
            )
        try:
            value = float(text)
        except ValueError:
            raise DataError(f"score {value!r} is not a number", path=path, line=line, field=name) from None
    score = float(value)
    if not math.isfinite(score):
        raise DataError(f"score {value!r} is not a finite number", path=path, line=line, field=name)
    if scale.low is not None and scale.high is not None:
        if not scale.low <= score <= scale.high:
            raise DataError(
                f"score {score:g} is outside the scale {scale.low:g}..{scale.high:g}",
                path=path,
                line=line,
                field=name,
                hint="fix the value or pass --scale MIN-MAX",
            )
        if scale.integer and not score.is_integer():
            raise DataError(
                f"score {score:g} is not a whole number on the integer scale {scale.low:g}..{scale.high:g}",
                path=path,
                line=line,
                field=name,
                hint="fix the value, or pass --scale none for fractional scores",
            )
    return score


def _header_problem(path: Path, header: list[str], required: tuple[str, ...]) -> DataError | None:
    """The file's own header against the columns it needs: named as found, with the likely cause
    (a ``;``-separated export, a near-miss spelling)."""
    found = [h.strip() for h in header]
    missing = [r for r in required if r not in found]
    if not missing:
        return None
    hint = "the header must name the columns " + ", ".join(required) + " (comma-separated)"
    if len(found) == 1 and ";" in found[0]:
        hint = "the file looks ';'-separated (a spreadsheet's export in some locales): save it as comma-separated CSV"
    else:
        near = {m: [f for f in found if f.lower() in SYNONYMS.get(m, ())] or difflib.get_close_matches(m, found, n=1)
                for m in missing}  # fmt: skip
        guesses = [f"{close[0]!r} to {m!r}" for m, close in near.items() if close]
        if guesses:
            hint = f"rename {', '.join(guesses)}; {hint}"
    return DataError(
        f"the header has column(s) {', '.join(repr(h) for h in found)}: missing {', '.join(map(repr, missing))}",
        path=path,
        line=1,
        hint=hint,
    )


def _records(path: Path, required: tuple[str, ...] = ()) -> Iterable[tuple[int, dict[str, Any]]]:
    """The records of a JSONL or CSV file with their line numbers; a CSV header lacking one of
    ``required`` is refused before any row is read."""
    if not path.is_file():
        raise DataError("file not found", path=path)
    if path.suffix.lower() in (".jsonl", ".json"):
        for line, obj in iter_jsonl(path, DataError):
            if not isinstance(obj, dict):
                raise DataError("each line must be a JSON object", path=path, line=line)
            yield line, obj
        return
    reader = None
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:
                raise DataError("empty file", path=path)
            problem = _header_problem(path, list(reader.fieldnames), required)
            if problem is not None:
                raise problem
            yield from enumerate(reader, start=2)
    except UnicodeDecodeError as exc:
        raise DataError(f"invalid UTF-8 ({exc.reason})", path=path) from None
    except csv.Error as exc:  # a field over csv.field_size_limit(), a stray NUL byte, ...
        raise DataError(
            f"malformed CSV: {exc}", path=path, line=reader.line_num + 1 if reader else None
        ) from None  # the line being read


def load_ratings(
    path: str | Path,
    *,
    scale: Scale | None = None,
    mapping: dict[str, str] | None = None,
    table: RatingsTable | None = None,
) -> RatingsTable:
    """Load long-format ratings; ``mapping`` renames dimensions (human name -> judge name)."""
    path = Path(path)
    scale = scale or Scale()
    table = table or RatingsTable()
    seen: dict[tuple[str, str, str], int] = {}
    for line, rec in _records(path, REQUIRED):
        for key in REQUIRED:
            if rec.get(key) in (None, ""):
                raise DataError(f"missing {key!r} (columns: {', '.join(REQUIRED)})", path=path, line=line, field=key)
        dimension = str(rec["dimension"]).strip()
        table.raw_dimensions.add(dimension)
        dimension = (mapping or {}).get(dimension, dimension)
        cell = (str(rec["item_id"]).strip(), str(rec["rater_id"]).strip(), dimension)
        if cell in seen:
            raise DataError(
                f"duplicate rating of item {cell[0]!r} by rater {cell[1]!r} on {cell[2]!r} "
                f"(first on line {seen[cell]})",
                path=path,
                line=line,
            )
        seen[cell] = line
        table.rows.append(
            Rating(*cell, parse_score(rec["score"], BINARY if dimension == SAFETY else scale, path, line))
        )
    table.sources.append(str(path))
    return table


def load_raters(path: str | Path) -> dict[str, dict[str, str]]:
    """``rater_id -> {column: value}``; empty values become ``"(not given)"``."""
    path = Path(path)
    raters: dict[str, dict[str, str]] = {}
    for line, rec in _records(path, ("rater_id",)):
        rid = str(rec.get("rater_id") or "").strip()
        if not rid:
            raise DataError("missing 'rater_id'", path=path, line=line, field="rater_id")
        if rid in raters:
            raise DataError(f"rater {rid!r} listed twice", path=path, line=line, field="rater_id")
        raters[rid] = {
            k: (str(v).strip() if v not in (None, "") else "(not given)") for k, v in rec.items() if k != "rater_id"
        }
    return raters


def judge_rater_id(judge: dict[str, Any]) -> str:
    return f"judge:{judge.get('name')}@{str(judge.get('version', ''))[:8]}"


def annotation_prefix(path: Path, table: RatingsTable) -> str:
    """Ratings collected with ``tide-bench annotate`` name items ``rated_item_id(run, item)``;
    a judge's items match them through the run folder its judge directory sits in."""
    prefix = rated_item_id(run_label(path.resolve().parent.parent), "")
    return prefix if any(r.item.startswith(prefix) for r in table.rows) else ""


def load_judgments(path: str | Path, table: RatingsTable, scale: Scale | None = None) -> RatingsTable:
    """Add a judge's scored items as ratings; count its unscored ones (summed over files)."""
    path = Path(path)
    scale = scale or Scale()
    prefix = annotation_prefix(path, table)
    for line, rec in iter_jsonl(path, DataError):
        judge = rec.get("judge") if isinstance(rec, dict) else None
        if not isinstance(judge, dict) or "item_id" not in rec or rec.get("status") not in ("scored", "unscored"):
            raise DataError("not a tide-bench judgment (needs item_id, status, judge)", path=path, line=line)
        rid = judge_rater_id(judge)
        info = table.judges.setdefault(rid, JudgeInfo())
        if str(path) not in info.files:
            info.files.append(str(path))
        item = prefix + str(rec["item_id"])  # rated_item_id(run, item) when the ratings use it
        where = f"{path}:{line}"
        if (item, rid) in table.judged_at:
            raise DataError(
                f"item {item!r} is judged twice by {rid} (first at {table.judged_at[item, rid]}): "
                "two runs' replies would be "
                "mixed on one item",
                path=path,
                line=line,
                field="item_id",
                hint="rate with `tide-bench annotate` (item ids <run folder>/<item id>) or audit one run at a time",
            )
        table.judged_at[item, rid] = where
        if rec["status"] == "unscored":
            info.n_unscored += 1
            info.unscored_reasons[str(rec.get("unscored_kind"))] += 1
            continue
        scores = rec.get("scores")
        if not isinstance(scores, dict) or not scores:
            raise DataError("scored judgment without scores", path=path, line=line, field="scores")
        info.n_scored += 1
        for dimension, score in scores.items():
            info.factors.add(str(dimension))
            table.rows.append(
                Rating(item, rid, str(dimension), parse_score(score, scale, path, line, f"scores.{dimension}"))
            )
        safety = rec.get("safety")
        if safety is None:  # a judgments file without the flag: the judge is audited on its scores only
            continue
        if not isinstance(safety, dict) or not isinstance(safety.get("flagged"), bool):
            raise DataError("the safety flag must be true or false", path=path, line=line, field="safety.flagged")
        table.rows.append(Rating(item, rid, SAFETY, float(safety["flagged"])))
    table.sources.append(str(path))
    return table
