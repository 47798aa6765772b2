"""What checking one submission folder found: its located problems, warnings, and (when it
passed) the :class:`~.layout.Submission` that scoring reads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.leaderboard.submission.layout import Submission
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.recompute import SpotCheck


class _Stop(Exception):
    """A problem after which the remaining checks of this submission cannot run."""


@dataclass
class CheckResult:
    id: str
    folder: Path
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    submission: Submission | None = None
    spot_check: SpotCheck | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def errors(self) -> list[str]:
        return [str(p) for p in self.problems]

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain data (``leaderboard validate --json``): problems located by
        file, line and field inside the submission, as on the page."""
        return {
            "id": self.id,
            "ok": self.ok,
            "n_items": self.submission.n_items if self.submission else None,
            "problems": [dataclasses.asdict(p) for p in self.problems],
            "warnings": list(self.warnings),
            "spot_check": self.spot_check.as_dict() if self.spot_check else None,
            "seconds": round(self.seconds, 3),
        }

    def refuse(self, message: str, path: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.problems.append(Problem(message, path, line, field))
        self.submission = None

    def stop(self, message: str, path: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.refuse(message, path, line, field)
        raise _Stop
