"""JSON and JSONL reading with line numbers, and atomic writes.

Every later stage reads files written by earlier ones (or by users, or by strangers: a
leaderboard submission); a bad line must be reported by file and line, and a crash mid-write
must never leave a file that looks whole.

Reading is guarded before a single byte is read: a path that is not a regular file (a
device such as ``/dev/zero``, a pipe, a folder) is refused, and so is a file over
``max_bytes`` or, with ``follow_symlinks=False``, a symbolic link (``O_NOFOLLOW``: the check
and the open are one system call, so a link swapped in between cannot slip through).

Writes go through a temporary file in the same folder and a rename; the result gets the
usual mode of a new file (``0666`` minus the umask, i.e. ``0644`` by default), not the
``0600`` of a temporary file, so a web server running as another user can read a built site.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tide_bench.core.errors import TideBenchError

_loads: Callable[[str | bytes], Any]
_FastDecodeError: type[ValueError]
try:  # orjson parses the large samples files several times faster; json is the fallback
    from orjson import JSONDecodeError as _FastDecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads, _FastDecodeError = json.loads, json.JSONDecodeError

_UMASK_LOCK = threading.Lock()


def _nan_only(name: str) -> float:
    if name == "NaN":
        return float("nan")
    raise ValueError(f"{name} is not a JSON number")


def _describe_size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


@contextlib.contextmanager
def open_regular(
    path: str | Path,
    error: type[TideBenchError] = TideBenchError,
    *,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> Iterator[BinaryIO]:
    """Open ``path`` for binary reading only if it is a regular file within ``max_bytes``.

    Refused before reading: a missing file, a symbolic link (unless ``follow_symlinks``), a
    device, pipe, socket or folder, and a file larger than ``max_bytes``. The handle is
    additionally capped at ``max_bytes`` in case the file grows while it is read.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error("file not found", path=path) from None
    except IsADirectoryError:
        raise error("is a folder, not a file", path=path) from None
    except OSError as exc:
        if not follow_symlinks and path.is_symlink():
            raise error("is a symbolic link: only regular files are read", path=path) from None
        raise error(f"cannot be opened ({exc.strerror})", path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device, pipe or socket"
            raise error(f"is {kind}, not a regular file: refused without reading it", path=path)
        if max_bytes is not None and info.st_size > max_bytes:
            raise error(
                f"is {_describe_size(info.st_size)}, over the {_describe_size(max_bytes)} limit: refused without "
                "reading it",
                path=path,
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle if max_bytes is None else _Capped(handle, max_bytes, path, error)  # type: ignore[misc]


class _Capped:
    """A read-only view of a binary handle that refuses to go past ``limit`` bytes."""

    def __init__(self, handle: BinaryIO, limit: int, path: Path, error: type[TideBenchError]) -> None:
        self._handle, self._left, self._path, self._error = handle, limit, path, error

    def _take(self, data: bytes) -> bytes:
        self._left -= len(data)
        if self._left < 0:
            raise self._error("grew past the size limit while it was read", path=self._path)
        return data

    def read(self, size: int = -1) -> bytes:
        return self._take(self._handle.read(self._left + 1 if size < 0 else min(size, self._left + 1)))


def read_bytes(
    path: str | Path,
    error: type[TideBenchError] = TideBenchError,
    *,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> bytes:
    """The bytes of a regular file (see :func:`open_regular` for what is refused)."""
    with open_regular(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks) as handle:
        return handle.read()


def read_json(
    path: str | Path,
    error: type[TideBenchError] = TideBenchError,
    *,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> Any:
    """Parse a JSON file, naming the file, line and column on failure."""
    path = Path(path)
    return parse_json(read_bytes(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks), path, error)


def parse_json(raw: bytes, path: str | Path, error: type[TideBenchError] = TideBenchError) -> Any:
    """Parse the bytes of a JSON file read from ``path`` (used in messages only)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"invalid UTF-8 at byte {exc.start}", path=path, line=line) from None
    try:
        value = json.loads(text)  # NaN is accepted here: typed readers check the fields that must be finite
    except json.JSONDecodeError as exc:
        raise error(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise error("invalid JSON: nested too deeply", path=path) from None
    if not _encodable(value):
        raise error(LONE_SURROGATE, path=path)
    return value


LONE_SURROGATE = "invalid JSON: a \\u escape encodes half a surrogate pair, which is no character"


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text held in a field (e.g. ``persona_json``): orjson's strict parser, which
    refuses NaN, Infinity and lone surrogates. Raises ``ValueError`` when it is not JSON."""
    try:
        return _loads(text)
    except (_FastDecodeError, json.JSONDecodeError, RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None


def _encodable(value: Any) -> bool:
    """Whether every string in a parsed JSON value can be written as UTF-8 (Python's json
    accepts ``"\\ud800"``, a lone surrogate that breaks every later write or hash)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def iter_jsonl(
    path: str | Path,
    error: type[TideBenchError] = TideBenchError,
    *,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
    allow_nan: bool = False,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file.

    ``allow_nan`` accepts the ``NaN`` that Python's ``json.dumps`` writes for a float NaN
    (lm-eval's samples files carry it for metrics that are undefined on an item);
    ``Infinity`` is refused either way.
    """
    path = Path(path)
    data = read_bytes(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks)
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark (Excel, Notepad)
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:  # the common line parsed directly; a blank or bad one goes through _parse_line
            value = _loads(raw)
        except Exception:
            if not raw.strip():
                continue
            value = _parse_line(raw, path, number, error, allow_nan)
        yield number, value


def _parse_line(raw: bytes, path: Path, number: int, error: type[TideBenchError], allow_nan: bool) -> Any:
    try:
        return _loads(raw)
    except (UnicodeDecodeError, _FastDecodeError, json.JSONDecodeError, RecursionError) as exc:
        if not _is_utf8(raw):
            raise error("invalid UTF-8", path=path, line=number) from None
        if allow_nan:
            value = None
            with contextlib.suppress(ValueError, RecursionError):
                value = json.loads(raw, parse_constant=_nan_only)
            if value is not None:
                if not _encodable(value):
                    raise error(LONE_SURROGATE, path=path, line=number) from None
                return value
        raise error(
            f"invalid JSON: {getattr(exc, 'msg', None) or 'not a JSON value'}", path=path, line=number
        ) from None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def current_umask() -> int:
    with _UMASK_LOCK:  # os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def default_file_mode() -> int:
    """The mode a newly created file gets under the current umask (0644 by default)."""
    return 0o666 & ~current_umask()


def default_dir_mode() -> int:
    """The mode a newly created folder gets under the current umask (0755 by default)."""
    return 0o777 & ~current_umask()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, default_file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 text atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
