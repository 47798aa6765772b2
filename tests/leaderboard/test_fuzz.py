"""Fuzz: change one field of an honest submission at a time (issue 11).

Each example picks one file of the submission (run.json, a samples line, a judgments line,
the judge summary, the judge configuration, submission.yaml), one field anywhere in it, and
deletes it or replaces it with an arbitrary JSON value (including paths that lead outside
the folder and devices). Validation must then either refuse the submission, naming a file
of it (and the line and field where the format has them), or accept it, in which case the
board recomputes and renders the entry. Never a traceback, and never a file opened outside
the submission (an audit hook records every open).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import board, fake_judge, judged_submission, record_opens, samples_files
from tide_bench.core.resources import resource_dir
from tide_bench.judging.rubric import load_rubric
from tide_bench.leaderboard import validate_folder
from tide_bench.leaderboard.scoring.columns import board_columns
from tide_bench.leaderboard.scoring.scores import score_entry
from tide_bench.leaderboard.site.pages import render_index, render_model_page

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = [
    Path(sys.prefix).resolve(),
    Path(sys.base_prefix).resolve(),
    (ROOT / "tide_bench").resolve(),
    resource_dir("leaderboard").resolve(),
    resource_dir("judges").resolve(),
]
SPECIAL = [
    "\ud800",  # a lone surrogate: Python's json reads it, UTF-8 cannot hold it
    "../../../../etc/passwd",
    "/dev/zero",
    "/etc/hostname",
    "..",
    "",
    "x" * 400,
    "tide_empathy",
    "NaN",
    "\u202e",
    "<script>",
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.sampled_from(SPECIAL),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
DELETE = object()


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("fuzz")
    with fake_judge("sk-test-fuzz-000") as server:
        folder = judged_submission(
            tmp, server, "model-a", lambda i: f"Reply [[SCORES:{1 + len(i.item_id) % 5},4,3]] {i.item_id}"
        )
    yield folder


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if depth < 4 and isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k), depth + 1)
    elif depth < 4 and isinstance(value, list):
        for k, v in enumerate(value[:4]):
            out += _paths(v, (*prefix, k), depth + 1)
    return out


def _mutate(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return value if new is DELETE else new
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if new is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


def _targets(folder: Path) -> list[tuple[str, int | None]]:
    """(relative file, line index or None for whole-file documents)."""
    out: list[tuple[str, int | None]] = [
        ("run/run.json", None),
        ("judge/judge_summary.json", None),
        ("judge/judge_config.json", None),
        ("submission.yaml", None),
    ]
    for path in [*samples_files(folder), folder / "judge" / "judgments.jsonl"]:
        n = len(path.read_text().splitlines())
        out += [(path.relative_to(folder).as_posix(), k) for k in (0, n - 1)]
    return out


@st.composite
def mutations(draw: st.DrawFn, folder: Path) -> tuple[str, int | None, tuple[Any, ...], Any]:
    rel, line = draw(st.sampled_from(_targets(folder)))
    text = (folder / rel).read_text()
    doc = (
        yaml.safe_load(text)
        if rel.endswith(".yaml")
        else json.loads(text.splitlines()[line] if line is not None else text)
    )
    path = draw(st.sampled_from(_paths(doc) or [()]))
    new = DELETE if path and draw(st.booleans()) and draw(st.booleans()) else draw(JSON_VALUES)
    return rel, line, path, new


def _apply(folder: Path, rel: str, line: int | None, path: tuple[Any, ...], new: Any) -> None:
    file = folder / rel
    if rel.endswith(".yaml"):
        file.write_text(yaml.safe_dump(_mutate(yaml.safe_load(file.read_text()), path, new), allow_unicode=True))
    elif line is None:
        file.write_text(json.dumps(_mutate(json.loads(file.read_text()), path, new)))
    else:
        lines = file.read_text().splitlines()
        lines[line] = json.dumps(_mutate(json.loads(lines[line]), path, new))
        file.write_text("\n".join(lines) + "\n")


def _allowed(opened: str, folder: Path) -> bool:
    path = Path(opened)
    path = (Path.cwd() / path) if not path.is_absolute() else path
    resolved = Path(os.path.normpath(path))
    return resolved.is_relative_to(folder) or any(resolved.resolve().is_relative_to(a) for a in ALLOWED)


@settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_one_changed_field_is_refused_with_its_location_or_recomputed(honest: Path, data: st.DataObject) -> None:
    rel, line, path, new = data.draw(mutations(honest))
    work = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        folder = work / "model-a"
        shutil.copytree(honest, folder)
        _apply(folder, rel, line, path, new)
        with record_opens() as opened:
            check = validate_folder(folder, board(), spot_checks=False)
        outside = [o for o in opened if not _allowed(o, folder)]
        assert not outside, f"read outside the submission: {outside}"
        if check.ok:
            assert check.submission is not None
            row = score_entry(check.submission).row
            assert row["n_items"] == len(check.submission.generations)
            page = {
                "name": "b",
                "demo": False,
                "built_at": "t",
                "split": "test",
                "ranking_metric": "empathy",
                "judge": None,
                "audit": None,
                "rows": [row | {"rank": 1}],
                "refused": {},
            }
            rubric = load_rubric()
            render_index(page, rubric, board_columns(rubric))
            render_model_page(row, check.submission, page, rubric, board_columns(rubric))
        else:
            assert any(p.path for p in check.problems), (rel, path, check.errors)
            assert all(p.line is None or p.line >= 1 for p in check.problems)
    finally:
        shutil.rmtree(work, ignore_errors=True)
