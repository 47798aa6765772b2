"""Clinician adjudication of severe risk flags: one record per reviewed reply (issue 44, V3).

Why: "one flagged reply to 'I've taken something' should be read by a clinician before it decides
anything, in either direction" (clinical re-check V3). A board names its adjudication file with
the key ``severe_adjudication`` (a path relative to the board file). It is JSON Lines, one object
per reviewed reply::

    {"item_id": "rs12/c10/turn1", "reply_sha256": "<sha256 of the reply's UTF-8 text>",
     "verdict": "confirmed" | "cleared", "reviewer": "Dr A. Reviewer", "date": "2026-12-10",
     "note": "optional"}

``confirmed``: the reply mishandles the item's risk; ``cleared``: it does not. A record is keyed by
the item and the reply's hash, so it applies to exactly that reply (any entry that gave the same
reply to the same item; :func:`~tide_bench.judging.risk_handling.reply_hash`), and a changed
reply is a new reply, pending again. The build's
``leaderboard.json`` lists each entry's severe flags with the hash to write
(``risk_handling.severe_flags``). How a record counts: :mod:`tide_bench.judging.risk_handling`.

The file is checked as a whole before anything is published: a malformed line refuses the build
with its file, line and field (:func:`read_adjudication`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from annotated_types import MaxLen
from pydantic import AfterValidator, model_validator

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.core.records import NonBlank, Record, Str, load, refusal
from tide_bench.judging.risk_handling import CLEARED, CONFIRMED

VERDICTS = (CONFIRMED, CLEARED)
KEYS = ("item_id", "reply_sha256", "verdict", "reviewer", "date", "note")
MAX_BYTES = 20_000_000
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Verdict:
    """One reviewer's verdict on one reply to one severe item."""

    verdict: str
    reviewer: str
    date: str
    line: int

    @property
    def mishandled(self) -> bool:
        return self.verdict == CONFIRMED

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reviewer": self.reviewer, "date": self.date}


@dataclass(frozen=True)
class Adjudication:
    """A board's adjudication file: verdicts by (item id, reply hash)."""

    verdicts: dict[tuple[str, str], Verdict]
    path: Path | None = None
    sha256: str = ""

    def get(self, item_id: str, reply_hash: str) -> Verdict | None:
        return self.verdicts.get((item_id, reply_hash))

    def review(self, item_id: str, reply_hash: str) -> dict[str, Any] | None:
        """The verdict on one reply as risk handling reads it (a ``Review``), or None: pending."""
        found = self.verdicts.get((item_id, reply_hash))
        return found.as_dict() if found is not None else None

    def summary(self) -> dict[str, Any]:
        counts = {v: sum(x.verdict == v for x in self.verdicts.values()) for v in VERDICTS}
        source = self.path.name if self.path else None
        return {"source": source, "sha256": self.sha256, "n_records": len(self.verdicts)} | counts


def _sha256(text: str) -> str:
    if not _SHA256.fullmatch(text):
        raise refusal("must be the sha256 of the reply (64 lowercase hex digits)")
    return text


def _date(text: str) -> str:
    try:
        if not _DATE.fullmatch(text):
            raise ValueError
        dt.date.fromisoformat(text)
    except ValueError:
        raise refusal("must be a date, YYYY-MM-DD") from None
    return text


class AdjudicationRecord(Record):
    """A line of an adjudication file, declared once: which reply (item and reply hash), the
    verdict, who gave it and when. A field the record does not declare is refused (a misspelt
    ``verdict`` must not pass as a record without one)."""

    @model_validator(mode="before")
    @classmethod
    def _no_other_fields(cls, value: Any) -> Any:
        unknown = sorted(str(k) for k in value if k not in KEYS) if isinstance(value, dict) else []
        if unknown:
            raise refusal(f"is not a field of an adjudication record (fields: {', '.join(KEYS)})", unknown[0])
        return value

    item_id: Annotated[NonBlank, MaxLen(300)]
    reply_sha256: Annotated[Str, AfterValidator(_sha256)]
    verdict: Str
    reviewer: Annotated[NonBlank, MaxLen(200)]
    date: Annotated[Str, AfterValidator(_date)]
    note: Annotated[Str, MaxLen(2000)] | None = None

    @model_validator(mode="after")
    def _known_verdict(self) -> AdjudicationRecord:
        if self.verdict not in VERDICTS:
            raise refusal(f"must be one of {', '.join(VERDICTS)} (confirmed: the reply mishandles the risk)", "verdict")
        return self


def _record(obj: Any, path: Path, line: int) -> tuple[tuple[str, str], Verdict]:
    read = load(AdjudicationRecord, obj, path=path, line=line)
    return (read.item_id, read.reply_sha256), Verdict(read.verdict, read.reviewer.strip(), read.date, line)


def read_adjudication(path: str | Path) -> Adjudication:
    """Every record of an adjudication file, checked; raises :class:`DataError` naming the file, the
    line and the field of the first problem (a reply reviewed twice names both lines)."""
    path = Path(path)
    verdicts: dict[tuple[str, str], Verdict] = {}
    digest = hashlib.sha256()
    for number, obj in iter_jsonl(path, DataError, max_bytes=MAX_BYTES, follow_symlinks=False):
        key, verdict = _record(obj, path, number)
        if key in verdicts:
            raise DataError(
                f"this reply to {key[0]} was already adjudicated on line {verdicts[key].line}: keep one record per "
                "reply",
                path=path,
                line=number,
                field="reply_sha256",
            )
        verdicts[key] = verdict
    digest.update(path.read_bytes())
    return Adjudication(verdicts, path, digest.hexdigest())
