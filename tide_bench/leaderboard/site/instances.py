"""The per-item data behind the instance browser: every item's conversation, each entry's reply
and judgment, as compact JSON.

Why separate script files (``instances/items.js`` and ``instances/<id>.js``): a page opened
from disk cannot ``fetch()`` a JSON file in Chromium (file:// is an opaque origin), but it can
load a ``<script src>`` from beside it, and so can a page served by any static web host. Each
file is one call, ``tideBench.receive(kind, data)``, loaded only when a reader opens that
entry, so the board's index page stays small however many entries and items it has. The
conversations (client turns, history, references) are the same for every entry and are
written once. The single-run view (:mod:`.run_view`) puts the same JSON inline instead.

Nothing here is HTML: the browser inserts every string with ``textContent``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import orjson

from tide_bench.judging.judgment import overall_of
from tide_bench.judging.rubric import Rubric

FOLDER = "instances"
ITEMS = "items"
PENDING_ITEMS = ".items-"  # an item set offered by a build worker, before the board keeps one


def item_payload(gen: Any) -> dict[str, Any]:
    """What every entry answered: the conversation so far, the client's turn, the reference."""
    return {
        "persona": gen.persona_id,
        "scenario": gen.scenario or "",
        "turn": gen.turn,
        "history": [[m["role"], m["content"]] for m in gen.history],
        "client": gen.client_utterance,
        "reference": gen.reference_reply,
    }


_NUMBERS = (int, float)


def _number(value: Any) -> float | None:
    if type(value) is float:  # what the samples reader gives: tested first, the common case
        return value if math.isfinite(value) else None
    return float(value) if isinstance(value, _NUMBERS) and math.isfinite(value) else None


def _in_order(keys: Sequence[str]) -> Callable[[Mapping[str, Any]], list[Any]]:
    """A function from a factor-keyed block (scores, rationales) to its values in ``keys`` order."""
    if len(keys) == 1:
        return lambda block: [block[keys[0]]]
    take = itemgetter(*keys)
    return lambda block: list(take(block))


def record_payload(
    gen: Any, record: Mapping[str, Any] | None, in_order: Callable[[Mapping[str, Any]], list[Any]]
) -> dict[str, Any]:
    """One entry's reply to one item with its judgment (or the reason there is none). Called for
    every item of every entry (100,000 times for a board of 50), hence each field looked up once
    (``in_order``: :func:`_in_order` of the rubric's factors, made once by the caller)."""
    metrics = gen.metrics
    status = "not judged" if record is None else record["status"]
    out: dict[str, Any] = {
        "id": gen.item_id,
        "reply": gen.reply,
        "length": _number(metrics.get("length_tokens")),
        "cosine": _number(metrics.get("cosine_sim")),
        "status": status,
    }
    if record is None:
        return out
    if status == "scored":
        scores, safety = in_order(record["scores"]), record["safety"]
        category = safety.get("category")
        out["scores"] = scores
        out["overall"] = overall_of(scores)
        out["rationales"] = in_order(record["rationales"])
        out["flagged"] = bool(safety["flagged"])
        out["flag_reason"] = safety.get("reason") or ""
        out["flag_category"] = "" if category in (None, "none") else str(category)
    else:
        out["unscored_kind"] = record.get("unscored_kind")
        out["unscored_reason"] = record.get("unscored_reason") or ""
    return out


def model_payload(
    entry_id: str,
    name: str,
    generations: Sequence[Any],
    judgments: Mapping[str, Mapping[str, Any]],
    rubric: Rubric,
    failure_kinds: Iterable[str] = (),
) -> dict[str, Any]:
    """Everything the browser shows for one entry (items in id order)."""
    in_order, get = _in_order(rubric.factor_keys), judgments.get
    return {
        "id": entry_id,
        "name": name,
        "factors": [[f.key, f.name] for f in rubric.factors],
        "scale": [rubric.scale_min, rubric.scale_max],
        "failure_kinds": sorted(failure_kinds),
        "records": [
            record_payload(g, get(g.item_id), in_order) for g in sorted(generations, key=attrgetter("item_id"))
        ],
    }


def dumps(value: Any) -> bytes:
    """JSON that is also a safe JavaScript expression and cannot end an HTML script element."""
    raw = orjson.dumps(value)
    if b"<" in raw:
        raw = raw.replace(b"<", b"\\u003c")
    if b"\xe2" in raw:  # the first byte of both separators: a one-byte search is ten times a three-byte one's speed
        raw = raw.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    return raw


def data_script(kind: str, payload: Any) -> bytes:
    return b"tideBench.receive(" + dumps(kind) + b"," + dumps(payload) + b");\n"


def write_model(site: Path, payload: Mapping[str, Any]) -> None:
    """``site/instances/<id>.js``: one entry's replies and judgments. ``site`` is a build's
    private staging folder (swapped in whole), so files are written plainly."""
    folder = site / FOLDER
    folder.mkdir(exist_ok=True)
    (folder / f"{payload['id']}.js").write_bytes(data_script("model", payload))


def write_items(
    site: Path, items: Mapping[str, dict[str, Any]] | Callable[[], Mapping[str, dict[str, Any]]], split_hash: str
) -> None:
    """The conversations of one item set, as a candidate for ``items.js`` named by its split hash.

    Each build worker offers the items of the entries it prepares; entries with the same split
    hash hold the same conversations, so the file is written once per item set (a concurrent
    writer of the same set writes the same bytes, and the rename is atomic). :func:`keep_items`
    keeps the accepted entries' set once the board is decided. ``items`` may be a function that
    makes them: it is called only when the set is written (once per worker, not per entry)."""
    folder = site / FOLDER
    folder.mkdir(exist_ok=True)
    target = folder / f"{PENDING_ITEMS}{split_hash}.js"
    if target.exists():
        return
    partial = folder / f"{PENDING_ITEMS}{split_hash}.{os.getpid()}.partial"
    made = items() if callable(items) else items
    partial.write_bytes(data_script(ITEMS, dict(sorted(made.items()))))
    partial.replace(target)


def keep_items(site: Path, split_hashes: Iterable[str]) -> None:
    """Make the accepted entries' item set ``instances/items.js`` (an empty one when no entry is
    accepted) and remove the other candidates."""
    folder = site / FOLDER
    folder.mkdir(exist_ok=True)
    kept = sorted(set(split_hashes))
    if len(kept) > 1:  # the checks of the entries against each other leave one item set per board
        raise AssertionError(f"accepted entries with {len(kept)} item sets")
    chosen = folder / f"{PENDING_ITEMS}{kept[0]}.js" if kept else None
    if chosen is not None and chosen.is_file():
        chosen.replace(folder / f"{ITEMS}.js")
    else:
        (folder / f"{ITEMS}.js").write_bytes(data_script(ITEMS, {}))
    for other in folder.glob(f"{PENDING_ITEMS}*"):
        other.unlink()
