"""MentalAlign-70k's spreadsheets: one row per context (``ConvID``, ``context``) and one column
per reply (``human_response_<key>`` / ``judge_response_<key>``) holding a JSON object of the
seven attribute scores, sometimes inside a Markdown fence.

Two facts found in the files shape the default (``tide``) mode, both documented in
docs/validation.md: the human and judge spreadsheets are sorted by context text but do not
hold exactly the same contexts, so in 21 rows the same ConvID carries *different* contexts
(joining on ConvID alone, as the authors' code does, pairs ratings of different replies);
and 33 human cells rate every attribute 0, which marks an unrated reply, beside 8 scores of 6.
``mode="authors"`` reproduces the authors' analysis code instead (ConvID join, every number kept).
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.validation.adapters.common import PackData, check_mode, scale_value
from tide_bench.validation.store import FetchedPack

HUMAN_PREFIX = "human_response_"
JUDGE_PREFIX = "judge_response_"


def read_sheet(path: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The first worksheet as (stripped header names, rows padded to the header's width)."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a file that is not a workbook
        raise DataError(f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})", path=path) from None
    try:
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = next(rows, None)
        if not header:
            raise DataError("the first worksheet is empty", path=path)
        names = [str(h).strip() if h is not None else "" for h in header]
        width = len(names)
        body = [tuple(r[:width]) + (None,) * (width - len(r)) for r in rows]
    finally:
        book.close()
    return names, body


def parse_cell(cell: Any, attributes: list[str]) -> list[float | None]:
    """The authors' reading of a rating cell (``_parse_rating``), for every attribute at once:
    strip a ```json fence, parse JSON, take each attribute; None where that fails or is empty."""
    if cell is None or cell == "":
        return [None] * len(attributes)
    text = str(cell).strip()
    if text.startswith("```json"):
        text = text.replace("```json", "").replace("```", "").strip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return [None] * len(attributes)
    if not isinstance(data, dict):
        return [None] * len(attributes)
    return [_number(data.get(a)) for a in attributes]


def _number(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool | dict | list):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _columns(names: list[str], path: Path, prefix: str, keys: list[str]) -> dict[str, int]:
    where = {n: i for i, n in enumerate(names)}
    missing = [c for c in ("ConvID", "context", *(prefix + k for k in keys)) if c not in where]
    if missing:
        raise DataError(
            f"not the MentalAlign layout: missing column(s) {', '.join(missing)}",
            path=path,
            hint=f"expected ConvID, context and {prefix}<key> for keys {', '.join(keys)}",
        )
    return where


def _conv_id(value: Any, path: Path, line: int) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DataError("ConvID must be a number", path=path, line=line, field="ConvID") from None
    if not np.isfinite(number) or not number.is_integer():
        raise DataError("ConvID must be a whole number", path=path, line=line, field="ConvID")
    return str(int(number))


def _scores(
    cell: Any, dims: list[str], fetched: FetchedPack, mode: str, handling: Counter[str], who: str
) -> list[float]:
    out = []
    for dim, value in zip(dims, parse_cell(cell, dims), strict=True):
        if value is None or not np.isfinite(value):
            handling[f"{who}: no parsable {dim} score (empty cell or not JSON)"] += 1
            out.append(np.nan)
        else:
            out.append(scale_value(value, fetched.pack, mode, handling, who))
    return out


def load(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    pack = fetched.pack
    check_mode(pack, mode)
    keys = list(pack.responders)
    dims = [d.name for d in pack.dimensions]
    path = fetched.require("human_ratings", "the human ratings")
    names, rows = read_sheet(path)
    col = _columns(names, path, HUMAN_PREFIX, keys)
    items, clusters, responders, contexts = [], [], [], {}
    handling: Counter[str] = Counter()
    human = {d: [] for d in dims}
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        if all(v is None for v in row):
            continue
        cid = _conv_id(row[col["ConvID"]], path, line)
        if cid in seen:
            raise DataError(f"ConvID {cid} appears twice (first at line {seen[cid]})", path=path, line=line)
        seen[cid] = line
        contexts[cid] = str(row[col["context"]] or "").strip()
        for key in keys:
            items.append(f"{cid}:{key}")
            clusters.append(cid)
            responders.append(key)
            values = _scores(row[col[HUMAN_PREFIX + key]], dims, fetched, mode, handling, "experts")
            for dim, value in zip(dims, values, strict=True):
                human[dim].append(value)
    if not items:
        raise DataError("no rated contexts", path=path)
    data = PackData(
        pack=pack,
        mode=mode,
        item_ids=items,
        clusters=clusters,
        responders=responders,
        raters=["experts"],
        human={d: np.array(v, dtype=float)[None, :] for d, v in human.items()},
        handling=handling,
    )
    index = data.index()
    for judge in pack.published_judges:
        f = pack.file("published_judge", judge)
        if f is None or fetched.path("published_judge", judge) is None:
            continue
        data.published[judge], data.judge_handling[judge] = _judge(
            fetched, f.path, judge, keys, dims, contexts, index, mode
        )
    data.replies = _replies(fetched, contexts, keys, clusters, responders)  # None when the zip was not fetched
    if texts:
        data.messages = [contexts[c] for c in clusters]
    return data


def _judge(
    fetched: FetchedPack,
    rel: str,
    judge: str,
    keys: list[str],
    dims: list[str],
    contexts: dict[str, str],
    index: dict[str, int],
    mode: str,
) -> tuple[dict[str, np.ndarray], Counter[str]]:
    path = fetched.root / rel
    names, rows = read_sheet(path)
    col = _columns(names, path, JUDGE_PREFIX, keys)
    out = {d: np.full(len(index), np.nan) for d in dims}
    handling: Counter[str] = Counter()
    for line, row in enumerate(rows, start=2):
        if all(v is None for v in row):
            continue
        cid = _conv_id(row[col["ConvID"]], path, line)
        if cid not in contexts:
            handling["rows whose ConvID the human ratings lack"] += 1
            continue
        if mode == "tide" and str(row[col["context"]] or "").strip() != contexts[cid]:
            handling["rows left out: the judge rated another context under this ConvID"] += 1
            continue
        for key in keys:
            values = _scores(row[col[JUDGE_PREFIX + key]], dims, fetched, mode, handling, judge)
            i = index[f"{cid}:{key}"]
            for dim, value in zip(dims, values, strict=True):
                out[dim][i] = value
    return out, handling


def _replies(
    fetched: FetchedPack, contexts: dict[str, str], keys: list[str], clusters: list[str], responders: list[str | None]
) -> list[str | None] | None:
    """The replies' texts from ``MentalBench-100k.zip`` (one CSV with ``context`` and one column
    per responder), joined on the context text; None when the zip was not fetched."""
    path = fetched.path("replies")
    if path is None:
        return None
    import csv
    import io

    columns = {k: str(fetched.pack.responders[k].get("column") or k) for k in keys}
    by_context: dict[str, dict[str, str]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = [n for n in archive.namelist() if n.lower().endswith(".csv") and not n.startswith("__MACOSX")]
            if not members:
                raise DataError("no CSV file inside the replies archive", path=path)
            for member in members:
                with archive.open(member) as raw:
                    reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
                    need = ["context", *columns.values()]
                    if reader.fieldnames is None or any(c not in reader.fieldnames for c in need):
                        raise DataError(
                            f"{member}: not the MentalBench-100k layout (needs columns {', '.join(need)})", path=path
                        )
                    for row in reader:
                        by_context.setdefault(str(row["context"]).strip(), {k: row[c] for k, c in columns.items()})
    except zipfile.BadZipFile:
        raise DataError("the replies archive is not a zip file", path=path) from None
    return [by_context.get(contexts[c], {}).get(str(k)) for c, k in zip(clusters, responders, strict=True)]
