"""One entry's per-item files in the site: ``instances/<id>.js``, its item set and
``downloads/<id>/`` (the raw judgments and a flat ``items.csv``). Written by the build's worker
processes right after scoring the entry, so the per-item data never travels back to the process
that writes the pages."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from tide_bench.core.spreadsheet import csv_table
from tide_bench.judging.files import JUDGMENTS_FILE
from tide_bench.judging.judgment import MODEL_ATTRIBUTABLE, UNSCORED_CAUSES
from tide_bench.judging.rubric import Rubric
from tide_bench.leaderboard.site.instances import FOLDER, item_payload, model_payload, write_items, write_model
from tide_bench.leaderboard.submission.layout import JUDGMENTS, Submission

DOWNLOADS = "downloads"

FAILURE_KINDS = sorted(k for k, cause in UNSCORED_CAUSES.items() if cause == MODEL_ATTRIBUTABLE)


def items_csv(payload: Mapping[str, Any], items: Mapping[str, Any]) -> str:
    """One row per item: identifiers, the scores as they were given, flags, and the reply (text
    that a spreadsheet would run as a formula gets a leading ``'``; ``instances/`` and the raw
    judgments keep the exact text). ``items``: each record's item by id, anything with the
    ``persona_id``, ``scenario`` and ``turn`` of a :class:`~tide_bench.generation.samples.Generation`.
    Built a column at a time (:func:`~tide_bench.core.spreadsheet.csv_table`)."""
    factors = [f[0] for f in payload["factors"]]
    header = ["item_id", "persona_id", "scenario", "turn", "status", *factors, "overall", "safety_flagged"]
    header += ["unscored_kind", "length_tokens", "cosine_sim", "reply"]
    records = payload["records"]
    ids = list(map(itemgetter("id"), records))
    where = list(map(items.get, ids))
    blank = [None] * len(factors)
    scores = [rec.get("scores") or blank for rec in records]
    columns: list[Sequence[Any]] = [ids]
    columns.append([None if g is None else g.persona_id for g in where])
    columns.append([None if g is None else g.scenario or "" for g in where])
    columns.append([None if g is None else g.turn for g in where])
    columns.append(list(map(itemgetter("status"), records)))
    columns += list(zip(*scores, strict=True)) if records else [[] for _ in factors]
    flags = ("overall", "flagged", "unscored_kind", "length", "cosine")
    columns += [[rec.get(key) for rec in records] for key in flags]
    columns.append(list(map(itemgetter("reply"), records)))
    return csv_table(header, columns)  # every cell made spreadsheet-safe (core.spreadsheet)


def write_entry_files(folder: Path, entry_id: str, name: str, sub: Submission, rubric: Rubric) -> list[str]:
    """One entry's per-item files in the site ``folder``: ``instances/<id>.js``, its item set
    (:func:`~.instances.write_items`) and ``downloads/<id>/`` (the raw judgments and items.csv).
    A build worker calls this right after scoring the entry, so the per-item data never has to
    travel back to the process that writes the pages; returns the downloads, site-relative."""
    payload = model_payload(entry_id, name, sub.generations, sub.judgments, rubric, FAILURE_KINDS)
    write_model(folder, payload)
    write_items(folder, lambda: {g.item_id: item_payload(g) for g in sub.generations}, sub.split_hash)
    where = {g.item_id: g for g in sub.generations}
    target = folder / DOWNLOADS / entry_id
    target.mkdir(parents=True)
    downloads = []
    if (sub.root / JUDGMENTS).is_file():
        shutil.copyfile(sub.root / JUDGMENTS, target / JUDGMENTS_FILE)
        downloads.append(f"{DOWNLOADS}/{entry_id}/{JUDGMENTS_FILE}")
    (target / "items.csv").write_text(items_csv(payload, where), "utf-8")
    downloads.append(f"{DOWNLOADS}/{entry_id}/items.csv")
    return downloads


def remove_entry_files(folder: Path, entry_id: str) -> None:
    """Undo :func:`write_entry_files` for an entry the board refused after all."""
    (folder / FOLDER / f"{entry_id}.js").unlink(missing_ok=True)
    shutil.rmtree(folder / DOWNLOADS / entry_id, ignore_errors=True)
    with contextlib.suppress(OSError):  # as if never written: no empty downloads/ when no entry has any
        (folder / DOWNLOADS).rmdir()
