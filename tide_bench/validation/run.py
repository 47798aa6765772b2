"""``tide-bench validation run PACK --judge J --out RUN_DIR``: a judge rates a pack's replies.

The judge runs as on any run (:func:`tide_bench.judging.judge_run`: cache, retries, budget,
unscored items recorded with their reason), on the pack's items through the item adapter.
What the judge *writes about* the texts (rationales, quoted evidence, reasons) quotes the
pack's texts, so the full judge folder, with its cache, stays inside the pack's cache entry;
``RUN_DIR`` receives only ids, scores, flags, usage and the judge's identity (with
``text_withheld: true``). Nothing from a pack whose licence forbids redistribution is ever
copied into a run folder, so a run folder can be shared, submitted or committed. Where the pack
annotates the words that carry each attribute (EPITOME's rationales), each judgment's quotes
are compared with them here, inside the cache, and only the counts travel
(:mod:`.evidence`).

The judge's rubric must rate what the pack's attributes are compared on (its ``judge_factor``
keys): a pack may name its rubric (``rubric: epitome``), which ``validation run`` then uses
unless told otherwise.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from tide_bench.core.atomic_dir import staged_folder
from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import iter_jsonl, read_json, write_json, write_jsonl
from tide_bench.core.provenance import utc_now
from tide_bench.judging import JudgeConfig, JudgeOptions, judge_run
from tide_bench.judging.files import CACHE_FILE, CONFIG_FILE, JUDGMENTS_FILE, SUMMARY_FILE
from tide_bench.validation.adapters import load_data
from tide_bench.validation.evidence import COUNTS_FIELD, item_counts
from tide_bench.validation.items import item_id, pack_run
from tide_bench.validation.manifest import Pack
from tide_bench.validation.store import load_fetched, pack_root

RUN_RECORD = "validation_run.json"
RUN_KIND = "tide-bench-validation-run"
TEXT_FIELDS = ("rationales", "evidence", "unscored_reason")


def withhold_text(record: dict[str, Any]) -> dict[str, Any]:
    """A judgment without anything that may quote the pack's texts."""
    out = {k: (None if k in TEXT_FIELDS else v) for k, v in record.items()}
    if isinstance(out.get("safety"), dict):
        out["safety"] = {k: v for k, v in out["safety"].items() if k != "reason"}
    out["text_withheld"] = True
    return out


def _shareable(record: dict[str, Any], data: Any, index: dict[str, int]) -> dict[str, Any]:
    """The judgment as the run folder keeps it: texts withheld, evidence counts added."""
    out = withhold_text(record)
    i = index.get(str(record.get("item_id")))
    if record.get("status") == "scored" and i is not None:
        counts = item_counts(data, i, record.get("evidence"))
        if counts is not None:
            out[COUNTS_FIELD] = counts
    return out


def _check_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / RUN_RECORD).is_file())):
        raise ConfigError(
            f"{out} exists and is not a validation run folder: refusing to replace it",
            hint="choose a new --out (a previous `validation run` folder is replaced)",
        )


def refuse_rubric(pack: Pack, rubric: str | None) -> None:
    """Refuse a judge whose rubric a pack's score threshold was not written for (before any call is paid).

    A validation run judges with the configuration's own rubric (v3 by default), because the
    judges board stamps a configuration version and the version hashes the rubric: the board's
    judge is validated only by a run of that very configuration. A threshold that turns a judge
    score into a binary code is read off one rubric's anchors, so the pack names the rubrics it holds for.
    """
    refusals = [why for d in pack.dimensions if (why := d.check_rubric(rubric))]
    if refusals:
        raise ConfigError(
            "; ".join(refusals),
            hint="judge with --rubric set to one the pack names (tide_bench/validation/packs/"
            f"{pack.name}.yaml, judge_rubrics), or add a threshold read off the new rubric's anchors",
        )


def check_rubric(pack: Pack, config: JudgeConfig) -> None:
    """The judge's rubric must score every factor the pack's attributes are compared on."""
    needed = {d.judge_factor for d in pack.dimensions if d.judge_factor}
    missing = sorted(needed - set(config.rubric.factor_keys))
    if missing:
        hint = f"judge it with --rubric {pack.rubric}" if pack.rubric else "use a rubric that rates them"
        raise ConfigError(
            f"pack {pack.name} compares the judge on {', '.join(missing)}, which rubric "
            f"{config.rubric.id}@v{config.rubric.version} does not rate",
            hint=hint,
        )


def run_pack(
    name: str,
    config: JudgeConfig,
    out: str | Path,
    options: JudgeOptions | None = None,
    *,
    limit: int | None = None,
) -> dict[str, Any]:
    """Judge pack ``name``'s replies with ``config``; write the shareable run folder ``out``."""
    out = Path(out)
    _check_target(out)
    fetched = load_fetched(name)
    check_rubric(fetched.pack, config)
    refuse_rubric(fetched.pack, config.identity().get("rubric"))
    data = load_data(fetched, "tide", texts=True)
    run = pack_run(data, limit)
    work = pack_root(fetched.pack) / "runs" / f"{config.name}-{config.version}"
    options = replace(options or JudgeOptions(), cache_path=work / CACHE_FILE, overwrite=True)
    result = judge_run(run, work, config, options)
    with staged_folder(out) as staging:
        index = {item_id(fetched.pack.name, item): i for i, item in enumerate(data.item_ids)}
        write_jsonl(staging / JUDGMENTS_FILE, [_shareable(r, data, index) for r in result.records])
        for name_ in (CONFIG_FILE, SUMMARY_FILE):
            shutil.copyfile(work / name_, staging / name_)
        record = {
            "kind": RUN_KIND,
            "pack": fetched.pack.name,
            "revision": fetched.pack.revision,
            "judge": config.identity(),
            "n_items": len(run.generations),
            "limit": limit,
            "calls_made": result.calls_made,
            "text_withheld": True,
            "full_judgments": "kept in the pack's cache entry (they quote the pack's texts)",
            "created_at": utc_now(),
        }
        write_json(staging / RUN_RECORD, record)
    return {"out": str(out), "summary": result.summary, "warnings": result.warnings, **record}


def read_run(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """A validation run folder: its record, its judgments and its judge summary (None if absent)."""
    from tide_bench.core.errors import DataError

    folder = Path(folder)
    record_path = folder / RUN_RECORD
    if not record_path.is_file():
        raise DataError(
            f"{folder} is not a validation run folder (no {RUN_RECORD})",
            hint="make one with: tide-bench validation run PACK --judge NAME --out DIR",
        )
    record = read_json(record_path, DataError)
    if not isinstance(record, dict) or record.get("kind") != RUN_KIND:
        raise DataError("not a tide-bench validation run record", path=record_path)
    judgments = [rec for _, rec in iter_jsonl(folder / JUDGMENTS_FILE, DataError)]
    summary_path = folder / SUMMARY_FILE
    summary = read_json(summary_path, DataError) if summary_path.is_file() else None
    return record, judgments, summary
