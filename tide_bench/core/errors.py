"""User-facing errors.

A :class:`TideBenchError` is a problem with the user's input or environment (a missing
file, a malformed record, an unknown task). The CLI prints its message without a traceback
and exits non-zero; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


def format_location(path: str | None, line: int | None = None, field: str | None = None) -> str:
    """``"file:line, field 'x'"``: how every error and validation problem says where."""
    parts = []
    if path:
        parts.append(path if line is None else f"{path}:{line}")
    if field:
        parts.append(f"field '{field}'")
    return ", ".join(parts)


class TideBenchError(Exception):
    """An error the user can fix; the message says what and where."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.hint = hint
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = format_location(self.path, self.line, self.field)
        text = f"{where}: {self.detail}" if where else self.detail
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class DataError(TideBenchError):
    """The dataset (snapshot, sample or hub copy) is missing, malformed or inconsistent."""


class ConfigError(TideBenchError):
    """A configuration value (task, model, option, environment variable) is unusable."""
