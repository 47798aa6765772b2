"""CounselBench-Eval in the layout the authors' analysis code reads
(``krippendorff_alpha_calculation/get_data.py`` upstream)::

    {questionID: {responder: {"survey_id": [rater ids], "overall_score": [...],
                              "empathy_score": [...], ...}}}

Five professionals per reply; a score list is aligned with ``survey_id``. "I am not sure",
empty answers and anything not a number on the scale are missing (counted). Texts, when the
file carries them, are read from ``questionTitle``/``questionText`` and each responder's
``response`` (unconfirmed field names: the Hub copy could not be inspected).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import read_json
from tide_bench.validation.adapters.common import PackData, check_mode, rating_matrices, scale_value
from tide_bench.validation.store import FetchedPack


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and np.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def load(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    pack = fetched.pack
    check_mode(pack, mode)
    dims = [d.name for d in pack.dimensions]
    path = fetched.require("human_ratings", "the professionals' ratings")
    raw = read_json(path, DataError)
    if not isinstance(raw, dict) or not raw:
        raise DataError("expected an object of questions {questionID: {responder: {...}}}", path=path)
    items, clusters, responders, messages, replies = [], [], [], [], []
    cells: list[dict[str, dict[str, float]]] = []
    handling: Counter[str] = Counter()
    for qid, block in raw.items():
        if not isinstance(block, dict):
            raise DataError("a question must map responders to their ratings", path=path, field=str(qid))
        question = " ".join(str(block.get(k) or "") for k in ("questionTitle", "questionText")).strip() or None
        for responder, ratings in block.items():
            if responder in ("questionTitle", "questionText", "topic"):
                continue
            where = f"{qid}.{responder}"
            if not isinstance(ratings, dict) or not isinstance(ratings.get("survey_id"), list):
                raise DataError("a responder's ratings need a 'survey_id' list", path=path, field=where)
            per_rater: dict[str, dict[str, float]] = {}
            for k, rater in enumerate(ratings["survey_id"]):
                scores = {}
                for dim in dims:
                    values = ratings.get(f"{dim}_score", [])
                    if not isinstance(values, list):
                        raise DataError("scores must be a list aligned with survey_id", path=path, field=where)
                    value = _number(values[k]) if k < len(values) else None
                    if value is None:
                        handling[f"professionals: {dim} not a number (e.g. 'I am not sure'), left out"] += 1
                        continue
                    scores[dim] = scale_value(value, pack, mode, handling, "professionals")
                per_rater[str(rater)] = scores
            items.append(f"{qid}:{responder}")
            clusters.append(str(qid))
            responders.append(str(responder))
            messages.append(question)
            reply = ratings.get("response")
            replies.append(reply if isinstance(reply, str) else None)
            cells.append(per_rater)
    raters = sorted({r for c in cells for r in c})
    position = {r: i for i, r in enumerate(raters)}
    human = rating_matrices(dims, len(raters), len(items), path)
    for j, per_rater in enumerate(cells):
        for rater, scores in per_rater.items():
            for dim, value in scores.items():
                human[dim][position[rater], j] = value
    unknown = sorted(set(responders) - set(pack.responders))
    data = PackData(
        pack=pack,
        mode=mode,
        item_ids=items,
        clusters=clusters,
        responders=responders,
        raters=raters,
        human=human,
        handling=handling,
        notes=[f"responder(s) not in the manifest (no family known): {', '.join(unknown)}"] if unknown else [],
    )
    data.replies = replies if any(r is not None for r in replies) else None
    if texts:
        data.messages = messages
    return data
