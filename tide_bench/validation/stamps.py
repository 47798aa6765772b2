"""A judge configuration's validation stamp, as the model leaderboard shows it beside every entry.

The judges board (``tide-bench validation board``) writes ``judges.json`` with one stamp per
judge configuration, keyed ``<name>@<first 8 characters of its config version>`` (the audit's
judge key). A configuration the board does not hold, or any entry when no board is given,
reads "judge not validated": the absence of evidence is said, never left blank.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import read_json

STAMPS_FILE = "judges.json"
PAGE = "index.html"
JUDGES_PAGE = "judges.html"  # the judges board's page as the model leaderboard links it
STAMPS_MAX_BYTES = 100_000_000
NOT_VALIDATED = {"status": "not validated", "text": "judge not validated", "anchor": None}


def judge_key(judge: dict[str, Any] | None) -> str | None:
    if not judge or not judge.get("name") or not judge.get("version"):
        return None
    return f"{judge['name']}@{str(judge['version'])[:8]}"


def load_stamps(board_dir: str | Path | None) -> dict[str, dict[str, Any]]:
    """The stamps of a judges board folder; empty when none is given."""
    if board_dir is None:
        return {}
    path = Path(board_dir) / STAMPS_FILE
    data = read_json(path, DataError, max_bytes=STAMPS_MAX_BYTES)
    if not isinstance(data, dict) or not isinstance(data.get("stamps"), dict):
        raise DataError(
            "not a judges board (no 'stamps')",
            path=path,
            hint="build one with: tide-bench validation board --report R.json --out DIR",
        )
    for key, stamp in data["stamps"].items():
        fields = stamp if isinstance(stamp, dict) else {}
        if not (
            isinstance(fields.get("status"), str)
            and isinstance(fields.get("text"), str)
            and isinstance(fields.get("anchor"), str | None)
        ):
            raise DataError(
                "each stamp needs a text 'status' and 'text' and an 'anchor' text or null",
                path=path,
                field=f"stamps.{key}",
            )
    return data["stamps"]


def stamp_for(judge: dict[str, Any] | None, stamps: dict[str, dict[str, Any]]) -> dict[str, Any]:
    key = judge_key(judge)
    return dict(stamps.get(key, NOT_VALIDATED)) if key else dict(NOT_VALIDATED)
