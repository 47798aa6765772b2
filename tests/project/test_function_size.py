"""No function in ``tide_bench`` is longer than 80 lines (body, docstring excluded).

Why: a function that long does several jobs, and the review behind issue 30 found each of the
11 it listed hard to test and to change. A function that grows past the limit is split by job.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tide_bench

LIMIT = 80
PACKAGE = Path(tide_bench.__file__).parent


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the end of the last one."""
    body = node.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and body_lines(node) > LIMIT:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({body_lines(node)} lines)")
    return found


def test_no_function_is_over_80_lines() -> None:
    assert long_functions(PACKAGE) == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    statements = "\n".join(f"    x{i} = {i}" for i in range(LIMIT + 1))
    (tmp_path / "m.py").write_text(f'def f():\n    """Doc."""\n{statements}\n\ndef g():\n    return 1\n')
    assert long_functions(tmp_path) == [f"m.py:1 f ({LIMIT + 1} lines)"]
