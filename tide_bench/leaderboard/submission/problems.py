"""One reason a submission is refused, located as ``file:line, field 'x'`` inside the submission.

Paths are relative to the submission folder: the refusal list is published on the site, and
the maintainer's own folders are nobody's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tide_bench.core.errors import TideBenchError, format_location


def relative(path: str | Path | None, root: Path) -> str | None:
    """``path`` relative to the submission folder when it lies inside it, else its name."""
    if path is None:
        return None
    path = Path(path)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        try:
            return path.absolute().relative_to(root.absolute()).as_posix()
        except ValueError:
            return path.name


@dataclass(frozen=True)
class Problem:
    message: str
    path: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = format_location(self.path, self.line, self.field)
        return f"{where}: {self.message}" if where else self.message

    @classmethod
    def from_error(cls, exc: TideBenchError, root: Path) -> Problem:
        return cls(exc.detail, relative(exc.path, root), exc.line, exc.field)
