"""AnnoMI's ``AnnoMI-full.csv``: one row per (utterance, annotator).

The items are the therapist turns that *every* annotator of the release coded (in the pinned
release: 216 turns of 7 transcripts, 10 experts each); the code is ``reflection_exists``
(True/False). The judge sees the client's turn before the therapist's (the item adapter's one
message + one reply); a turn that opens the session has no message.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path

from tide_bench.core.errors import DataError
from tide_bench.validation.adapters.common import PackData, check_mode, rating_matrices
from tide_bench.validation.store import FetchedPack

REQUIRED = ("transcript_id", "utterance_id", "interlocutor", "utterance_text", "annotator_id")
CODES = {"True": 1.0, "False": 0.0}
MAX_FIELD = 1 << 20


def _int(value: str, path: Path, line: int, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(f"must be a whole number, got {value[:40]!r}", path=path, line=line, field=name) from None


def load(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    pack = fetched.pack
    check_mode(pack, mode)
    dims = [d.name for d in pack.dimensions]
    path = fetched.require("human_ratings", "the expert codes")
    codes: dict[tuple[int, int], dict[str, dict[str, str]]] = defaultdict(dict)
    speaker: dict[tuple[int, int], str] = {}
    text: dict[tuple[int, int], str] = {}
    default_limit = csv.field_size_limit(MAX_FIELD)  # process-wide: restored below for every other reader
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in (*REQUIRED, *dims) if c not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"not the AnnoMI-full layout: missing column(s) {', '.join(missing)}", path=path)
            for row in reader:
                line = reader.line_num
                if None in row or None in row.values():  # DictReader's marks for extra or missing fields
                    raise DataError(
                        f"the row has {'more' if None in row else 'fewer'} fields than the header", path=path, line=line
                    )
                key = (
                    _int(row["transcript_id"], path, line, "transcript_id"),
                    _int(row["utterance_id"], path, line, "utterance_id"),
                )
                rater = f"expert-{_int(row['annotator_id'], path, line, 'annotator_id')}"
                codes[key][rater] = {d: row[d] for d in dims}
                speaker[key] = row["interlocutor"]
                text.setdefault(key, row["utterance_text"])
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text ({exc.reason})", path=path) from None
    except csv.Error as exc:
        raise DataError(f"malformed CSV: {exc}", path=path) from None
    finally:
        csv.field_size_limit(default_limit)
    if not codes:
        raise DataError("no coded utterances", path=path)
    panel = max(len(r) for r in codes.values())
    keys = sorted(k for k, r in codes.items() if len(r) == panel and speaker[k] == "therapist")
    if not keys:
        raise DataError("no therapist turn is coded by every annotator", path=path)
    raters = sorted({r for k in keys for r in codes[k]}, key=lambda r: int(r.split("-")[1]))
    handling: Counter[str] = Counter()
    human = rating_matrices(dims, len(raters), len(keys), path)
    for j, key in enumerate(keys):
        for i, rater in enumerate(raters):
            for d in dims:
                value = codes[key].get(rater, {}).get(d)
                if value in CODES:
                    human[d][i, j] = CODES[value]
                else:
                    handling[f"experts: {d} neither True nor False ({value!r}), left out"] += 1
    data = PackData(
        pack=pack,
        mode=mode,
        item_ids=[f"{t}:{u}" for t, u in keys],
        clusters=[f"{t}:{u}" for t, u in keys],
        responders=["therapist"] * len(keys),
        raters=raters,
        human=human,
        handling=handling,
        notes=[
            f"{len(keys)} therapist turns coded by all {panel} annotators, from "
            f"{len({t for t, _ in keys})} transcripts (of {len({t for t, _ in codes})})"
        ],
    )
    # Every turn has a text (a reply), whether or not the session's turns are asked for: the length slope uses it.
    data.replies = [text[k] for k in keys]
    if texts:
        data.messages = [_previous_client(k, speaker, text) for k in keys]
    return data


def _previous_client(key: tuple[int, int], speaker: dict[tuple[int, int], str], text: dict[tuple[int, int], str]):
    transcript, utterance = key
    for u in range(utterance - 1, -1, -1):
        if speaker.get((transcript, u)) == "client":
            return text[(transcript, u)]
    return None
