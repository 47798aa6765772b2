"""Data flows one way: each stage imports only the stages before it.

core -> data -> metrics -> epitome -> tasks -> generation -> judging -> agreement -> validation
-> leaderboard -> (finetune, annotation) -> study -> (demo, cli). Validation (judges audited against
public expert ratings) needs judging and agreement; the model leaderboard shows its stamps.
A reader can trust a module's package to tell what
it may depend on; this test keeps that true.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tide_bench

ORDER = [
    "core",
    "data",
    "metrics",
    "epitome",
    "tasks",
    "generation",
    "judging",
    "agreement",
    "validation",
    "leaderboard",
    "finetune",
    "annotation",
    "study",
    "demo",
    "cli",
]
PACKAGE = Path(tide_bench.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tide_bench."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("tide_bench.")}
    return found


def test_stages_import_only_earlier_stages() -> None:
    violations = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2 or rel.name == "__main__.py":  # entry points may reach the CLI
            continue
        stage = rel.parts[0]
        if stage not in ORDER:
            violations.append(f"{rel}: package '{stage}' is not in the layer order")
            continue
        allowed = set(ORDER[: ORDER.index(stage) + 1])
        for imported in _imports(path) - allowed:
            violations.append(f"{rel} imports tide_bench.{imported}")
    assert violations == []
