"""JSON and JSONL reading with line numbers, and atomic writes.

Every later stage reads files written by earlier ones (or by users); a bad line must be
reported by file and line, and a crash mid-write must never leave a file that looks whole.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tide_bench.core.errors import TideBenchError

try:  # orjson parses the large samples files several times faster; json is the fallback
    from orjson import JSONDecodeError as _FastDecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads, _FastDecodeError = json.loads, json.JSONDecodeError


def read_json(path: str | Path, error: type[TideBenchError] = TideBenchError) -> Any:
    """Parse a JSON file, naming the file, line and column on failure."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error("file not found", path=path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"invalid UTF-8 at byte {exc.start}", path=path, line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None


def iter_jsonl(path: str | Path, error: type[TideBenchError] = TideBenchError) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file."""
    path = Path(path)
    if not path.is_file():
        raise error("file not found", path=path)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark (Excel, Notepad)
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                yield number, _loads_line(raw)
            except (UnicodeDecodeError, _FastDecodeError, json.JSONDecodeError) as exc:
                if not _is_utf8(raw):
                    raise error("invalid UTF-8", path=path, line=number) from None
                raise error(f"invalid JSON: {getattr(exc, 'msg', str(exc))}", path=path, line=number) from None


def _loads_line(raw: bytes) -> Any:
    """orjson first (fast); Python's json where orjson refuses a line, because lm-eval writes
    ``NaN`` for undefined per-item metrics (distinct-2 of a one-word reply) and json reads it."""
    try:
        return _loads(raw)
    except _FastDecodeError:
        return json.loads(raw)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
