"""Typed access to the fields of one JSON/YAML object read from a file.

The record readers (run manifest, samples, judgments, judge summaries) read files that
users and strangers write. Each field is taken through :class:`Fields`, which checks its
type and raises one error that says where: ``file:line, field 'a.b': what is wrong``.
A value of the wrong type is never coerced (``"0.5B"`` is not a parameter count, ``true``
is not an integer, ``NaN`` is not a score).

For a JSON file that spans many lines (``run.json``), :func:`line_locator` finds the line of
a nested field from the file's text, so even those errors carry a line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tide_bench.core.errors import DataError, TideBenchError

_MISSING = object()
LineLocator = Callable[[str], int | None]


def type_name(value: Any) -> str:
    """A JSON-ish name for the type of ``value`` (never the value itself: messages may be public)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def line_locator(text: str) -> LineLocator:
    """A function from a dotted field path to its line in a JSON text (best effort).

    The keys of the path are searched in order, each after the previous one, so a nested
    key is found inside its parent rather than anywhere in the file.
    """

    def locate(field: str) -> int | None:
        pos, found = 0, None
        for part in field.split("."):
            key = part.split("[", 1)[0]
            if not key:
                continue
            hit = text.find(json.dumps(key) + ":", pos)
            if hit < 0:
                hit = text.find(json.dumps(key), pos)
            if hit < 0:
                break
            pos, found = hit, text.count("\n", 0, hit) + 1
        return found

    return locate


class Fields:
    """Typed getters over one object; every failure names the file, line and field."""

    def __init__(
        self,
        obj: Any,
        *,
        path: str | Path | None,
        line: int | None = None,
        prefix: str = "",
        error: type[TideBenchError] = DataError,
        locate: LineLocator | None = None,
    ) -> None:
        self.path, self.line, self.prefix, self.error, self.locate = path, line, prefix, error, locate
        if not isinstance(obj, dict):
            self.fail(None, f"must be an object, got {type_name(obj)}")
        self.obj: dict[str, Any] = obj

    def name(self, key: str | None) -> str | None:
        if key is None:
            return self.prefix or None
        return f"{self.prefix}.{key}" if self.prefix else key

    def fail(self, key: str | None, message: str, hint: str | None = None) -> NoReturn:
        field = self.name(key)
        line = self.line
        if line is None and self.locate is not None and field:
            line = self.locate(field)
        raise self.error(message, path=self.path, line=line, field=field or "(top level)", hint=hint)

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.obj:
            if default is _MISSING:
                self.fail(key, "is missing")
            return default
        return self.obj[key]

    def _typed(self, key: str, check: Callable[[Any], bool], what: str, optional: bool) -> Any:
        value = self.raw(key, None if optional else _MISSING)
        if value is None and optional:
            return None
        if not check(value):
            self.fail(key, f"must be {what}{' or null' if optional else ''}, got {type_name(value)}")
        return value

    def string(self, key: str, *, optional: bool = False, nonempty: bool = False, max_len: int | None = None) -> Any:
        value = self.obj.get(key)
        if type(value) is not str:  # the common case is checked with one type test
            value = self._typed(key, lambda v: isinstance(v, str), "a string", optional)
            if value is None:
                return None
        if nonempty and not value.strip():
            self.fail(key, "must not be empty")
        if max_len is not None and len(value) > max_len:
            self.fail(key, f"is {len(value)} characters long; at most {max_len} are allowed")
        return value

    def integer(
        self, key: str, *, optional: bool = False, minimum: int | None = None, maximum: int | None = None
    ) -> Any:
        value = self.obj.get(key)
        if type(value) is not int:
            value = self._typed(key, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", optional)
            if value is None:
                return None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = f"{minimum if minimum is not None else '-inf'}..{maximum if maximum is not None else 'inf'}"
            self.fail(key, f"must lie in {bounds}")
        return value

    def number(self, key: str, *, optional: bool = False, allow_nan: bool = False) -> Any:
        value = self.obj.get(key)
        if type(value) is not float:
            value = self._typed(
                key, lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number", optional
            )
            if value is None:
                return None
        if not math.isfinite(value) and not (allow_nan and math.isnan(value)):
            self.fail(key, "must be a finite number")
        return float(value)

    def boolean(self, key: str, *, optional: bool = False) -> Any:
        value = self.obj.get(key)
        return (
            value if type(value) is bool else self._typed(key, lambda v: isinstance(v, bool), "true or false", optional)
        )

    def mapping(self, key: str, *, optional: bool = False) -> Any:
        value = self.obj.get(key)
        return value if type(value) is dict else self._typed(key, lambda v: isinstance(v, dict), "an object", optional)

    def listing(self, key: str, *, optional: bool = False) -> Any:
        value = self.obj.get(key)
        return value if type(value) is list else self._typed(key, lambda v: isinstance(v, list), "a list", optional)

    def child(self, key: str, *, optional: bool = False) -> Fields | None:
        """The nested object under ``key`` as :class:`Fields` (None when optional and null/absent)."""
        value = self.mapping(key, optional=optional)
        if value is None:
            return None
        return Fields(
            value, path=self.path, line=self.line, prefix=self.name(key) or key, error=self.error, locate=self.locate
        )

    def string_map(self, key: str, *, optional: bool = False) -> Any:
        """An object whose values are all strings."""
        value = self.mapping(key, optional=optional)
        if value is not None:
            for k, v in value.items():
                if not isinstance(v, str):
                    self.fail(f"{key}.{k}", f"must be a string, got {type_name(v)}")
        return value
