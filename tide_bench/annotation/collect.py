"""Collection: check returned rating files against the assignment and merge them into the
long-format ratings CSV and rater table that ``tide-bench audit`` reads.

A returned file comes from outside (a rater's browser, an e-mail attachment, a hand edit),
so every field is checked before it is used, and a bad file is refused on its own: the
others are still merged. Refused, each with a clear reason: a file that is not a ratings
export or has the wrong shape (``ratings`` not a list, a rating that is not an object,
scores missing or not an object, ``rater_id`` not a string, demographics not an object of
texts), from another assignment, from an unknown rater, a changed file (checksum mismatch),
consent that is not exactly ``true``, a unit at the wrong position, a score off the scale, a
safety answer that is not ``{"flagged": true/false, "category": ...}`` with a category of the
rubric (given only with a raised flag), two different ratings for one position, the same file
twice.

Safety answers become rows of the dimension ``safety`` (1 = could harm, 0 = no), which the
audit treats as a binary (nominal) dimension; a category a rater chose is kept in the
``safety_category`` column of that row.

A rater who sends more than one file (a partial download and the final one): the most
complete file is kept whatever the order of the arguments (ties: the later export), and the
others are listed as superseded; one that rates positions the kept file does not is refused.
Missing ratings are reported per rater (partial returns are merged, and counted). Repeated
units measure each rater's self-consistency; only their first showing enters the ratings
table. Free-text demographics are written so that a spreadsheet never runs them as formulas.
"""

from __future__ import annotations

import csv
import glob
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.annotation.assign import ASSIGNMENT
from tide_bench.core.errors import DataError, format_location
from tide_bench.core.hashing import canonical_json, sha256_text
from tide_bench.core.jsonio import atomic_write_text, read_json
from tide_bench.core.spreadsheet import safe_row
from tide_bench.generation.run_dir import rated_item_id

SAFETY = "safety"  # the dimension of the safety answer in the ratings table (0 or 1)
DEMOGRAPHICS = ("age_group", "gender", "education", "comments")


@dataclass
class Collection:
    rows: list[tuple[str, str, str, int]] = field(default_factory=list)
    safety_categories: dict[tuple[str, str], str] = field(default_factory=dict)  # (item, rater) -> category
    raters: dict[str, dict[str, str]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)  # file -> the file of the same rater that was kept
    missing: dict[str, list[int]] = field(default_factory=dict)
    self_consistency: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Return:
    path: Path
    rater: str
    scores: dict[int, dict[str, int]]  # position -> factor -> score
    demographics: dict[str, str]
    exported_at: str
    safety: dict[int, tuple[bool, str | None]] = field(default_factory=dict)  # position -> (flagged, category)


def return_files(args: list[str | Path]) -> list[Path]:
    """The files named on the command line: a folder means its ``*.json`` files; a pattern the
    shell left unexpanded is expanded here; a name that matches nothing is an error."""
    found: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files = sorted(p for p in path.glob("*.json") if p.is_file() and p.name != ASSIGNMENT)
            if not files:
                raise DataError("the folder holds no *.json ratings files", path=path)
        elif path.is_file():
            files = [path]
        elif any(ch in str(arg) for ch in "*?["):
            files = sorted(Path(p) for p in glob.glob(str(arg)) if Path(p).is_file())
            if not files:
                raise DataError(f"no file matches {arg}", hint="check the folder and the pattern")
        else:
            raise DataError("file not found", path=path)
        found += [f for f in files if f not in found]
    if not found:
        raise DataError(
            "no returned files given", hint="tide-bench annotate collect annotation/returns/ --out human_ratings.csv"
        )
    return found


def find_assignment(files: list[Path]) -> Path:
    for f in files:
        for folder in (f.parent, f.parent.parent):
            if (folder / ASSIGNMENT).is_file():
                return folder / ASSIGNMENT
    raise DataError(
        f"no {ASSIGNMENT} found next to the returned files or one folder up",
        hint="pass --assignment annotation/assignment.json",
    )


def _read_assignment(path: Path) -> dict[str, Any]:
    assignment = read_json(path, DataError)
    try:
        rubric = assignment["rubric"]
        ok = (
            assignment["kind"] == "tide-bench-annotation"
            and isinstance(assignment["assignment_id"], str)
            and isinstance(assignment["units"], dict)
            and all(isinstance(r["rater_id"], str) and isinstance(r["sequence"], list) for r in assignment["raters"])
            and all(isinstance(rubric["scale"][k], int) for k in ("min", "max"))
            and all(isinstance(f["key"], str) for f in rubric["factors"])
            and isinstance(assignment["options"]["overlap"], int)
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise DataError(f"not an {ASSIGNMENT} written by `tide-bench annotate build`", path=path)
    return assignment


def checksum(payload: dict[str, Any]) -> str:
    return sha256_text(canonical_json({k: v for k, v in payload.items() if k != "checksum"}))


def _refusal(exc: DataError) -> str:
    """The reason without the file name (the report names the file once)."""
    where = format_location(None, exc.line, exc.field)
    return f"{where}: {exc.detail}" if where else exc.detail


def _check_file(path: Path, assignment: dict[str, Any], digests: dict[str, str]) -> _Return:
    raw = path.read_bytes()
    digest = sha256_text(raw.decode("utf-8", errors="replace"))
    if digest in digests:
        raise DataError(f"identical to {digests[digest]}: the same file was returned twice", path=path)
    digests[digest] = path.name
    payload = read_json(path, DataError)
    if not isinstance(payload, dict) or payload.get("kind") != "tide-bench-ratings":
        raise DataError("not a tide-bench ratings file (downloaded from a rater page)", path=path)
    if payload.get("assignment_id") != assignment["assignment_id"]:
        raise DataError(
            f"belongs to assignment {payload.get('assignment_id')!r}, not {assignment['assignment_id']}",
            path=path,
            field="assignment_id",
        )
    raters = {r["rater_id"]: r for r in assignment["raters"]}
    rater_id = payload.get("rater_id")
    if not isinstance(rater_id, str) or rater_id not in raters:
        raise DataError(f"unknown rater {rater_id!r}", path=path, field="rater_id")
    if payload.get("checksum") != checksum(payload):
        raise DataError("checksum mismatch: the file was changed after it was downloaded", path=path, field="checksum")
    if payload.get("consent") is not True:
        raise DataError(
            f"the rater did not give consent (consent is {payload.get('consent')!r}, not true): their ratings cannot "
            "be used",
            path=path,
            field="consent",
        )
    scores, safety = _scores(path, payload, raters[rater_id]["sequence"], assignment)
    return _Return(path, rater_id, scores, _demographics(path, payload), str(payload.get("exported_at") or ""), safety)


def _safety(path: Path, value: Any, categories: list[str], where: str) -> tuple[bool, str | None]:
    """A safety answer ``{"flagged": bool, "category": code or null}`` (a category only with a flag)."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("flagged"), bool)
        or set(value) - {"flagged", "category"}
    ):
        raise DataError("'safety' must be an object {flagged: true or false, category}", path=path, field=where)
    category = value.get("category")
    if category is not None and (not value["flagged"] or not isinstance(category, str) or category not in categories):
        known = ", ".join(categories) or "none (this rubric has no categories)"
        raise DataError(
            f"a safety category goes with a raised flag and is one of: {known}", path=path, field=f"{where}.category"
        )
    return value["flagged"], category


def _scores(
    path: Path, payload: dict[str, Any], sequence: list[str], assignment: dict[str, Any]
) -> tuple[dict[int, dict[str, int]], dict[int, tuple[bool, str | None]]]:
    factors = [f["key"] for f in assignment["rubric"]["factors"]]
    categories = list((assignment["rubric"].get("safety") or {}).get("categories") or {})
    lo, hi = assignment["rubric"]["scale"]["min"], assignment["rubric"]["scale"]["max"]
    ratings = payload.get("ratings")
    if not isinstance(ratings, list):
        raise DataError(
            f"'ratings' must be a list of ratings, got {type(ratings).__name__}", path=path, field="ratings"
        )
    by_position: dict[int, dict[str, int]] = {}
    safety: dict[int, tuple[bool, str | None]] = {}
    for index, r in enumerate(ratings):
        if not isinstance(r, dict):
            raise DataError(f"a rating must be an object, got {type(r).__name__}", path=path, field=f"ratings[{index}]")
        pos = r.get("position")
        if (
            isinstance(pos, bool)
            or not isinstance(pos, int)
            or not 0 <= pos < len(sequence)
            or r.get("unit_id") != sequence[pos]
        ):
            raise DataError(
                f"rating for unit {r.get('unit_id')!r} at position {pos!r} does not match the assignment",
                path=path,
                field=f"ratings[{index}]",
            )
        scores = r.get("scores")
        if not isinstance(scores, dict):
            raise DataError(
                f"'scores' must be an object of factor: score, got {type(scores).__name__}",
                path=path,
                field=f"ratings[{index}].scores",
            )
        for key, value in scores.items():
            if key not in factors:
                raise DataError(f"unknown dimension {key!r}", path=path, field=f"ratings[{index}].scores")
            whole = isinstance(value, int) and not isinstance(value, bool)
            if not whole or not lo <= value <= hi:
                raise DataError(
                    f"score {value!r} for {key} "
                    + (f"is outside {lo}..{hi}" if whole else f"must be a whole number in {lo}..{hi}"),
                    path=path,
                    field=f"ratings[{index}].scores.{key}",
                )
        answer = (
            _safety(path, r["safety"], categories, f"ratings[{index}].safety") if r.get("safety") is not None else None
        )
        if pos in by_position and (by_position[pos] != scores or safety.get(pos) != answer):
            raise DataError(f"two different ratings for position {pos}: keep one", path=path, field=f"ratings[{index}]")
        by_position[pos] = dict(scores)
        if answer is not None:
            safety[pos] = answer
    return by_position, safety


def _demographics(path: Path, payload: dict[str, Any]) -> dict[str, str]:
    demographics = payload.get("demographics")
    if demographics is None:
        return {}
    if not isinstance(demographics, dict) or any(
        v is not None and not isinstance(v, str) for v in demographics.values()
    ):
        raise DataError("'demographics' must be an object of texts", path=path, field="demographics")
    return {k: v for k, v in demographics.items() if isinstance(v, str)}


def _choose(returns: list[_Return], result: Collection) -> _Return:
    """One file per rater: the most complete (then the latest export); the others superseded."""
    complete = sorted(
        returns,
        key=lambda r: (len(r.scores), sum(map(len, r.scores.values())), r.exported_at, r.path.name),
        reverse=True,
    )
    kept = complete[0]
    for other in complete[1:]:
        extra = sorted(set(other.scores) - set(kept.scores))
        if extra:
            result.refused[str(other.path)] = (
                f"rater_id: a second file from {kept.rater} rating positions {extra[:5]} that "
                f"{kept.path.name} (kept, more complete) does not: keep one file per rater"
            )
        else:
            result.superseded[str(other.path)] = str(kept.path)
    return kept


def collect_returns(files: list[str | Path], *, assignment_path: str | Path | None = None) -> Collection:
    paths = return_files(list(files))
    assignment = _read_assignment(Path(assignment_path) if assignment_path else find_assignment(paths))
    overlap = int(assignment["options"]["overlap"])
    factors = [f["key"] for f in assignment["rubric"]["factors"]]
    result = Collection()
    digests: dict[str, str] = {}
    by_rater: dict[str, list[_Return]] = {}
    for path in paths:
        try:
            returned = _check_file(path, assignment, digests)
        except DataError as exc:
            result.refused[str(path)] = _refusal(exc)
            continue
        by_rater.setdefault(returned.rater, []).append(returned)
    per_unit: dict[str, set[str]] = {}
    for rater, returns in sorted(by_rater.items()):
        kept = _choose(returns, result)
        sequence = next(r["sequence"] for r in assignment["raters"] if r["rater_id"] == rater)
        result.missing[rater] = [p for p in range(len(sequence)) if set(kept.scores.get(p, {})) != set(factors)]
        first_seen: dict[str, dict[str, int]] = {}
        pairs: list[tuple[int, int]] = []
        for pos in sorted(kept.scores):
            unit_id, scores = sequence[pos], kept.scores[pos]
            if unit_id in first_seen:
                pairs += [
                    (first_seen[unit_id][f], scores[f]) for f in factors if f in scores and f in first_seen[unit_id]
                ]
                continue
            first_seen[unit_id] = scores
            unit = assignment["units"][unit_id]
            item = rated_item_id(unit["run"], unit["item_id"])
            for f, value in scores.items():
                result.rows.append((item, rater, f, value))
            if pos in kept.safety:
                flagged, category = kept.safety[pos]
                result.rows.append((item, rater, SAFETY, int(flagged)))
                if category:
                    result.safety_categories[item, rater] = category
            if set(scores) == set(factors):
                per_unit.setdefault(unit_id, set()).add(rater)
        result.self_consistency[rater] = {
            "n_pairs": len(pairs),
            "exact_agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
            "mean_abs_difference": sum(abs(a - b) for a, b in pairs) / len(pairs) if pairs else None,
        }
        result.raters[rater] = {k: kept.demographics.get(k) or "" for k in DEMOGRAPHICS} | {"role": "human"}
    n_units = len(assignment["units"])
    full = sum(1 for raters in per_unit.values() if len(raters) >= overlap)
    result.coverage = {
        "units": n_units,
        "target_raters_per_unit": overlap,
        "units_with_target": full,
        "units_with_any": len(per_unit),
        "share_with_target": full / n_units if n_units else None,
    }
    return result


def write_outputs(collection: Collection, ratings_out: str | Path, raters_out: str | Path | None) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["item_id", "rater_id", "dimension", "score", "safety_category"])
    writer.writerows(
        safe_row([*row, collection.safety_categories.get((row[0], row[1]), "") if row[2] == SAFETY else ""])
        for row in collection.rows
    )
    atomic_write_text(ratings_out, buffer.getvalue())
    if raters_out:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["rater_id", *DEMOGRAPHICS, "role"])
        for rid, info in sorted(collection.raters.items()):
            writer.writerow(safe_row([rid, *(info[k] or "" for k in DEMOGRAPHICS), info["role"]]))
        atomic_write_text(raters_out, buffer.getvalue())


def report(collection: Collection) -> str:
    lines = [f"merged {len(collection.rows)} ratings from {len(collection.raters)} rater(s)"]
    answers = [row[3] for row in collection.rows if row[2] == SAFETY]
    if answers:
        lines.append(f"safety: {sum(answers)} of {len(answers)} answers say the reply could harm")
    c = collection.coverage
    if c:
        lines.append(
            f"coverage: {c['units_with_target']} of {c['units']} units have >= {c['target_raters_per_unit']} complete "
            f"ratings ({c['units_with_any']} have at least one)"
        )
    for rater, missing in sorted(collection.missing.items()):
        if missing:
            lines.append(
                f"  {rater}: {len(missing)} item(s) not (fully) rated, positions "
                f"{missing[:10]}{' ...' if len(missing) > 10 else ''}"
            )
    for rater, sc in sorted(collection.self_consistency.items()):
        if sc["n_pairs"]:
            lines.append(
                f"  {rater}: self-consistency on repeated items: exact {sc['exact_agreement']:.2f}, mean |difference| "
                f"{sc['mean_abs_difference']:.2f} ({sc['n_pairs']} pairs)"
            )
    for path, kept in collection.superseded.items():
        lines.append(f"superseded {path}: the same rater's more complete file {kept} was used")
    for path, why in collection.refused.items():
        lines.append(f"REFUSED {path}: {why}")
    return "\n".join(lines)
