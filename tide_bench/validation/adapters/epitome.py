"""EPITOME's three Reddit files (``dataset/*-reddit.csv``): one item per labelled pair.

The files are read by :func:`tide_bench.epitome.corpus.read_corpus` (aligned row for row, the
61 duplicated pairs kept, every damage an error naming file, line and field), the same reader
that trains the local scorer, so the pack's items and the scorer's cross-validation rows are
the same pairs in the same order. An item is ``<sp_id>/<rp_id>`` (``~2``, ``~3`` for a pair's
later copies); its cluster is the seeker post; its message the seeker's post; its reply the
supporter's reply; its annotated spans the authors' rationales.

A local scorer folder (``tide-bench epitome train``) given as ``--judge-ratings MODEL_DIR`` is
read by :func:`model_ratings`: its held-out predictions from grouped cross-validation
(``cv_predictions.jsonl``: ids and levels, no text), for the shipped scorer, the fine-tuned
encoder alone and the TF-IDF baseline, so the report computes their statistics exactly as it
does a judge's. In-sample predictions would flatter it, so a card without cross-validation is
refused, as is a card trained on other files than the fetched pack's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.epitome.corpus import read_corpus
from tide_bench.epitome.mechanisms import BY_FACTOR
from tide_bench.validation.adapters.common import PackData, check_mode
from tide_bench.validation.store import FetchedPack

CV_PREDICTIONS = "cv_predictions.jsonl"  # the name tide_bench.epitome.train writes
CARD = "card.json"
VARIANTS = (
    # (where the row keeps the levels: None = top level, the row's name)
    (None, "local EPITOME scorer"),
    ("encoder_only", "local EPITOME scorer, fine-tuned encoder alone"),
    ("baseline", "TF-IDF + logistic regression (the scorer's folds)"),
)


@dataclass
class ModelRatings:
    """A local model's held-out levels on the pack's items (NaN = no prediction)."""

    name: str
    scores: dict[str, np.ndarray]
    identity: dict[str, Any]
    inputs: list[dict[str, str]]


def _keys(fetched: FetchedPack) -> dict[str, str]:
    """Pack dimension -> mechanism key (er, ip, ex)."""
    out = {}
    for d in fetched.pack.dimensions:
        if d.name not in BY_FACTOR:
            raise ConfigError(
                f"dimension {d.name!r} is not an EPITOME mechanism ({', '.join(BY_FACTOR)})",
                path=fetched.pack.source,
                field="dimensions",
            )
        out[d.name] = BY_FACTOR[d.name].key
    return out


def load(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    pack = fetched.pack
    check_mode(pack, mode)
    keys = _keys(fetched)
    corpus = read_corpus(fetched.root)
    seen: Counter[tuple[str, str]] = Counter()
    ids = []
    for pair in corpus.pairs:
        seen[(pair.sp_id, pair.rp_id)] += 1
        k = seen[(pair.sp_id, pair.rp_id)]
        ids.append(f"{pair.sp_id}/{pair.rp_id}" + (f"~{k}" if k > 1 else ""))
    human = {dim: np.array([[float(p.levels[key]) for p in corpus.pairs]]) for dim, key in keys.items()}
    data = PackData(
        pack=pack,
        mode=mode,
        item_ids=ids,
        clusters=[p.sp_id for p in corpus.pairs],
        responders=["reddit"] * len(ids),
        raters=["authors' annotation"],
        human=human,
        notes=[
            f"{len(ids)} (seeker post, reply) pairs from {len({p.sp_id for p in corpus.pairs})} seeker posts",
            *corpus.notes,
        ],
        data_sha256=corpus.sha256,
    )
    data.replies = [p.response_post for p in corpus.pairs]
    data.spans = {dim: [list(p.rationales[key]) for p in corpus.pairs] for dim, key in keys.items()}
    if texts:
        data.messages = [p.seeker_post for p in corpus.pairs]
    return data


def claims(folder: str | Path) -> bool:
    """Whether ``folder`` looks like a local scorer folder (its card is there)."""
    return (Path(folder) / CARD).is_file()


def model_ratings(data: PackData, folder: str | Path) -> list[ModelRatings]:
    """The local scorer's cross-validated levels (see the module docstring)."""
    from tide_bench.epitome.scorer import read_card

    folder = Path(folder)
    card = read_card(folder)
    cv = card.get("cv") or {}
    if not cv:
        raise DataError(
            "the scorer was trained without cross-validation (--folds 0): it has no held-out predictions",
            path=folder / CARD,
            hint="its in-sample levels would flatter it; train with the default 5 folds",
        )
    trained_on = (card.get("data") or {}).get("sha256")
    if trained_on != data.data_sha256:
        raise DataError(
            "the scorer was trained on other files than this pack's: its cross-validated figures are not about them",
            path=folder / CARD,
            field="data.sha256",
            hint=f"train it on the fetched pack: tide-bench epitome train --from {data.pack.name}'s files",
        )
    path = folder / CV_PREDICTIONS
    if not path.is_file():
        raise DataError(f"no {CV_PREDICTIONS} beside the card", path=folder, hint="train the scorer again")
    keys = _keys_of(data)
    n = len(data.item_ids)
    scores = {name: {dim: np.full(n, np.nan) for dim in keys} for _, name in VARIANTS}
    present = {name: False for _, name in VARIANTS}
    for line, row in iter_jsonl(path, DataError):
        i = row.get("row") if isinstance(row, dict) else None
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
            raise DataError("a row outside the pack's pairs", path=path, line=line, field="row")
        item = data.item_ids[i].split("~")[0]
        if f"{row.get('sp_id')}/{row.get('rp_id')}" != item:
            raise DataError(f"row {i} is not pair {item}: the files differ", path=path, line=line, field="rp_id")
        for where, name in VARIANTS:
            block = row if where is None else row.get(where)
            if block is None and where is not None:
                continue
            if not isinstance(block, dict):
                raise DataError("levels must be an object", path=path, line=line, field=where)
            present[name] = True
            for dim, key in keys.items():
                value = block.get(key)
                if value not in (0, 1, 2) or isinstance(value, bool):
                    raise DataError("a level must be 0, 1 or 2", path=path, line=line, field=f"{where or ''}.{key}")
                scores[name][dim][i] = float(value)
    folds = cv.get("folds")
    identity = {
        "card_sha256": sha256_file(folder / CARD),
        "encoder": (card.get("encoder") or {}).get("label"),
        "folds": folds,
        "grouping": cv.get("grouping"),
        "tfidf_weight": (card.get("blend") or {}).get("tfidf_weight"),
    }
    inputs = [{"path": str(p), "sha256": sha256_file(p)} for p in (folder / CARD, path)]
    return [
        ModelRatings(f"{name} (grouped {folds}-fold CV)", scores[name], identity | {"variant": name}, inputs)
        for _, name in VARIANTS
        if present[name]
    ]


def _keys_of(data: PackData) -> dict[str, str]:
    return {dim: BY_FACTOR[dim].key for dim in data.human}
