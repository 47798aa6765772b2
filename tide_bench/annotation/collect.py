"""Collection: check returned rating files against the assignment and merge them into the
long-format ratings CSV and rater table that ``tide-bench audit`` reads.

Refused, each with a clear reason: a file that is not a ratings export, from another
assignment, from an unknown rater, a second file from the same rater (or the same file
twice), a changed file (checksum mismatch), a unit at the wrong position, a score off the
scale. Missing ratings are reported per rater (partial returns are merged, and counted).
Repeated units measure each rater's self-consistency; only their first showing enters the
ratings table.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.annotation.assign import ASSIGNMENT, unit_item_id
from tide_bench.core.errors import DataError
from tide_bench.core.hashing import canonical_json, sha256_text
from tide_bench.core.jsonio import atomic_write_text, read_json

DEMOGRAPHICS = ("age_group", "gender", "education", "comments")


@dataclass
class Collection:
    rows: list[tuple[str, str, str, int]] = field(default_factory=list)
    raters: dict[str, dict[str, str]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    missing: dict[str, list[int]] = field(default_factory=dict)
    self_consistency: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)


def find_assignment(files: list[Path]) -> Path:
    for f in files:
        for folder in (f.parent, f.parent.parent):
            if (folder / ASSIGNMENT).is_file():
                return folder / ASSIGNMENT
    raise DataError(f"no {ASSIGNMENT} found next to the returned files or one folder up", hint="pass --assignment annotation/assignment.json")


def checksum(payload: dict[str, Any]) -> str:
    return sha256_text(canonical_json({k: v for k, v in payload.items() if k != "checksum"}))


def _check_file(path: Path, assignment: dict[str, Any], seen: dict[str, str], digests: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    raw = path.read_bytes()
    digest = sha256_text(raw.decode("utf-8", errors="replace"))
    if digest in digests:
        raise DataError(f"identical to {digests[digest]}: the same file was returned twice", path=path)
    digests[digest] = path.name
    payload = read_json(path, DataError)
    if not isinstance(payload, dict) or payload.get("kind") != "tide-bench-ratings":
        raise DataError("not a tide-bench ratings file (downloaded from a rater page)", path=path)
    if payload.get("assignment_id") != assignment["assignment_id"]:
        raise DataError(f"belongs to assignment {payload.get('assignment_id')}, not {assignment['assignment_id']}", path=path, field="assignment_id")
    raters = {r["rater_id"]: r for r in assignment["raters"]}
    rater_id = payload.get("rater_id")
    if rater_id not in raters:
        raise DataError(f"unknown rater {rater_id!r}", path=path, field="rater_id")
    if rater_id in seen:
        raise DataError(f"a second file from {rater_id} (also {seen[rater_id]}): keep one", path=path, field="rater_id")
    if payload.get("checksum") != checksum(payload):
        raise DataError("checksum mismatch: the file was changed after it was downloaded", path=path, field="checksum")
    if not payload.get("consent"):
        raise DataError("the rater did not give consent: their ratings cannot be used", path=path, field="consent")
    seen[rater_id] = path.name
    sequence = raters[rater_id]["sequence"]
    factors = [f["key"] for f in assignment["rubric"]["factors"]]
    lo, hi = assignment["rubric"]["scale"]["min"], assignment["rubric"]["scale"]["max"]
    for r in payload.get("ratings") or []:
        pos = r.get("position")
        if not isinstance(pos, int) or not 0 <= pos < len(sequence) or r.get("unit_id") != sequence[pos]:
            raise DataError(f"rating for unit {r.get('unit_id')!r} at position {pos!r} does not match the assignment", path=path, field="ratings")
        for key, value in (r.get("scores") or {}).items():
            if key not in factors:
                raise DataError(f"unknown dimension {key!r}", path=path, field=f"ratings[{pos}].scores")
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise DataError(f"score {value!r} for {key} is outside {lo}..{hi}", path=path, field=f"ratings[{pos}].scores.{key}")
    return payload, factors


def collect_returns(files: list[str | Path], *, assignment_path: str | Path | None = None) -> Collection:
    paths = [Path(f) for f in files]
    if not paths:
        raise DataError("no returned files given")
    assignment = read_json(Path(assignment_path) if assignment_path else find_assignment(paths), DataError)
    overlap = int(assignment["options"]["overlap"])
    result = Collection()
    seen: dict[str, str] = {}
    digests: dict[str, str] = {}
    per_unit: dict[str, set[str]] = {}
    for path in paths:
        try:
            payload, factors = _check_file(path, assignment, seen, digests)
        except DataError as exc:
            result.refused[str(path)] = str(exc)
            continue
        rater = payload["rater_id"]
        sequence = next(r["sequence"] for r in assignment["raters"] if r["rater_id"] == rater)
        by_pos = {r["position"]: r for r in payload["ratings"]}
        result.missing[rater] = [p for p in range(len(sequence)) if set((by_pos.get(p) or {}).get("scores", {})) != set(factors)]
        first_seen: dict[str, dict[str, int]] = {}
        pairs: list[tuple[int, int]] = []
        for pos in sorted(by_pos):
            unit_id, scores = sequence[pos], by_pos[pos]["scores"]
            if unit_id in first_seen:
                pairs += [(first_seen[unit_id][f], scores[f]) for f in factors if f in scores and f in first_seen[unit_id]]
                continue
            first_seen[unit_id] = scores
            unit = assignment["units"][unit_id]
            for f, value in scores.items():
                result.rows.append((unit_item_id(unit["run"], unit["item_id"]), rater, f, value))
            if set(scores) == set(factors):
                per_unit.setdefault(unit_id, set()).add(rater)
        result.self_consistency[rater] = {
            "n_pairs": len(pairs),
            "exact_agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
            "mean_abs_difference": sum(abs(a - b) for a, b in pairs) / len(pairs) if pairs else None,
        }
        demographics = payload.get("demographics") or {}
        result.raters[rater] = {k: str(demographics.get(k) or "") for k in DEMOGRAPHICS} | {"role": "human"}
    n_units = len(assignment["units"])
    full = sum(1 for raters in per_unit.values() if len(raters) >= overlap)
    result.coverage = {"units": n_units, "target_raters_per_unit": overlap, "units_with_target": full,
                       "units_with_any": len(per_unit), "share_with_target": full / n_units if n_units else None}
    return result


def write_outputs(collection: Collection, ratings_out: str | Path, raters_out: str | Path | None) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["item_id", "rater_id", "dimension", "score"])
    writer.writerows(collection.rows)
    atomic_write_text(ratings_out, buffer.getvalue())
    if raters_out:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["rater_id", *DEMOGRAPHICS, "role"])
        for rid, info in sorted(collection.raters.items()):
            writer.writerow([rid, *(info[k] or "" for k in DEMOGRAPHICS), info["role"]])
        atomic_write_text(raters_out, buffer.getvalue())


def report(collection: Collection) -> str:
    lines = [f"merged {len(collection.rows)} ratings from {len(collection.raters)} rater(s)"]
    c = collection.coverage
    if c:
        lines.append(f"coverage: {c['units_with_target']} of {c['units']} units have >= {c['target_raters_per_unit']} complete ratings ({c['units_with_any']} have at least one)")
    for rater, missing in sorted(collection.missing.items()):
        if missing:
            lines.append(f"  {rater}: {len(missing)} item(s) not (fully) rated, positions {missing[:10]}{' ...' if len(missing) > 10 else ''}")
    for rater, sc in sorted(collection.self_consistency.items()):
        if sc["n_pairs"]:
            lines.append(f"  {rater}: self-consistency on repeated items: exact {sc['exact_agreement']:.2f}, mean |difference| {sc['mean_abs_difference']:.2f} ({sc['n_pairs']} pairs)")
    for path, why in collection.refused.items():
        lines.append(f"REFUSED {path}: {why}")
    return "\n".join(lines) + "\n" + json.dumps({"coverage": collection.coverage}, indent=None)
