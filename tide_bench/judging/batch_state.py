"""``batch_state.json``: every Message Batch ever submitted from a judge directory, per judge
configuration, so a paid batch is never forgotten.

A batch id is written here before anything else happens to it. Entries are never dropped:
a batch is marked ``collected_at`` when its results are in, or ``abandoned_at`` when the
user says so (``--abandon-batch``). While a batch is neither, any run in that directory with
another configuration, or in sync mode, is refused with the batch named: its results are
paid for and only a batch-mode rerun with that configuration collects them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.provenance import utc_now

STATE_FILE = "batch_state.json"
SCHEMA_VERSION = 2


class BatchState:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.jobs: dict[str, list[dict[str, Any]]] = self._read()

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self.path.is_file():
            return {}
        raw = read_json(self.path, DataError)
        if isinstance(raw, dict) and "judge_version" in raw:  # schema 1: one configuration per file
            return {str(raw["judge_version"]): list(raw.get("batches") or [])}
        jobs = raw.get("jobs") if isinstance(raw, dict) else None
        if not isinstance(jobs, dict) or not all(isinstance(b, list) for b in jobs.values()):
            raise DataError("not a tide-bench batch state file", path=self.path, hint="move it away if it is not yours")
        return {str(version): list(batches) for version, batches in jobs.items()}

    def save(self) -> None:
        write_json(self.path, {"schema_version": SCHEMA_VERSION, "jobs": self.jobs})

    def batches(self, version: str) -> list[dict[str, Any]]:
        return self.jobs.setdefault(version, [])

    def open_batches(self) -> list[tuple[str, dict[str, Any]]]:
        """(judge version, entry) of every batch neither collected nor abandoned."""
        return [
            (v, b)
            for v, entries in self.jobs.items()
            for b in entries
            if not b.get("collected_at") and not b.get("abandoned_at")
        ]

    def guard(self, version: str, mode: str, abandon: bool) -> list[str]:
        """Refuse to start while another configuration's (or a sync run's) batch is open;
        with ``abandon`` mark those batches abandoned instead. Returns what was abandoned."""
        blocking = [(v, b) for v, b in self.open_batches() if v != version or mode != "batch"]
        if not blocking:
            return []
        names = ", ".join(
            f"{b.get('id')} (judge configuration {v}, submitted {b.get('submitted_at')})" for v, b in blocking
        )
        if not abandon:
            same = all(v == version for v, _ in blocking)
            hint = (
                "rerun with --mode batch to collect it"
                if same
                else "rerun with that judge configuration and --mode batch to collect it"
            )
            raise ConfigError(
                f"{self.path.parent} has an uncollected, paid Message Batch: {names}",
                hint=hint + ", or pass --abandon-batch to give it up deliberately",
            )
        for _, entry in blocking:
            entry["abandoned_at"] = utc_now()
        self.save()
        return [str(b.get("id")) for _, b in blocking]
