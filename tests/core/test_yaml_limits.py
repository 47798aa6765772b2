"""Every YAML a user writes is read with size, alias and depth limits (issue 32, N9).

The study file, a submission's metadata, a board, a judge configuration and a validation pack
manifest all go through
tide_bench/core/yaml_io.py: an alias bomb ("billion laughs") is a clear error in well under a
second, before anything walks the document; so is a nesting too deep or a file too large.
Ordinary anchors still work where they are allowed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.core.errors import ConfigError, DataError, TideBenchError

BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + k)}: &{chr(98 + k)} [{','.join(['*' + chr(97 + k)] * 9)}]" for k in range(8)]
    + ["name: *i"]
)
DEEP = "x: " + "[" * 5000 + "]" * 5000


def _study(path: Path) -> Any:
    from tide_bench.study.spec import load_study

    return load_study(path)


def _board(path: Path) -> Any:
    from tide_bench.leaderboard import load_board

    return load_board(path)


def _judge(path: Path) -> Any:
    from tide_bench.judging import load_judge

    return load_judge(str(path))


def _meta(path: Path) -> Any:
    """submission.yaml as validation reads it (submission.checks.check_meta)."""
    from tide_bench.core.errors import DataError
    from tide_bench.core.jsonio import read_bytes
    from tide_bench.leaderboard.config import META_MAX_BYTES
    from tide_bench.leaderboard.submission.layout import parse_meta

    return parse_meta(read_bytes(path, DataError, max_bytes=META_MAX_BYTES, follow_symlinks=False), path)[0]


def _pack(path: Path) -> Any:
    """A validation pack manifest from the user's own folder ($TIDE_BENCH_VALIDATION_PACKS)."""
    from tide_bench.validation.manifest import PACKS_ENV, load_pack

    before = os.environ.get(PACKS_ENV)
    os.environ[PACKS_ENV] = str(path.parent)
    try:
        return load_pack(path.stem)
    finally:
        if before is None:
            del os.environ[PACKS_ENV]
        else:
            os.environ[PACKS_ENV] = before


def _rubric(path: Path) -> Any:
    """A rubric of the user's own (``--rubric PATH``): only the shipped ones are read by libyaml."""
    from tide_bench.judging.rubric import load_rubric

    return load_rubric(path)


LOADERS: dict[str, Callable[[Path], Any]] = {
    "rubric": _rubric,
    "study": _study,
    "board": _board,
    "judge": _judge,
    "submission": _meta,
    "pack": _pack,
}


@pytest.mark.parametrize("kind", sorted(LOADERS))
@pytest.mark.parametrize("text", [BOMB, DEEP], ids=["alias-bomb", "deep-nesting"])
def test_a_hostile_yaml_is_a_clear_error_at_once(tmp_path: Path, kind: str, text: str) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text)
    with pytest.raises(TideBenchError) as refused:  # refused on the composed graph, before any expansion
        LOADERS[kind](path)
    message = str(refused.value)
    assert f"{kind}.yaml" in message and any(
        w in message for w in ("aliases", "nested more than", "anchors and aliases")
    ), message


@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_an_oversize_yaml_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text("# padding\n" * 300_000)
    with pytest.raises(TideBenchError, match=r"bytes|MB"):
        LOADERS[kind](path)


def test_a_shipped_rubric_reads_the_same_by_libyaml(tmp_path: Path) -> None:
    """The shipped rubrics are read by libyaml (core.yaml_io.load_shipped_yaml): the same values
    as the guarded loader gives, and the same rubric as a copy elsewhere (read with the limits)."""
    from tide_bench.core.yaml_io import load_shipped_yaml, load_yaml
    from tide_bench.judging.rubric import RUBRIC_VERSIONS, _is_shipped, load_rubric, rubric_path

    for version in RUBRIC_VERSIONS:
        path = rubric_path(version)
        text = path.read_text(encoding="utf-8")
        copy = tmp_path / path.name
        copy.write_text(text, encoding="utf-8")
        assert _is_shipped(path) and not _is_shipped(copy)
        assert load_shipped_yaml(text) == load_yaml(text)
        assert load_rubric(path).to_dict() == load_rubric(copy).to_dict()


def test_ordinary_anchors_still_work_where_allowed() -> None:
    from tide_bench.core.yaml_io import load_yaml

    assert load_yaml("base: &b {dtype: float32}\nmodel: *b\n") == {
        "base": {"dtype": "float32"},
        "model": {"dtype": "float32"},
    }
    with pytest.raises(DataError, match="anchors and aliases"):
        load_yaml("a: &b 1\nc: *b\n", error=DataError, aliases=False)


_STRUCTURE = ["&a ", "*a", "&b ", "*b", "[", "]", "{", "}", ": ", "- ", "\n", "\n  ", "x", "'", '"', "<<: *a"]
_PIECES = st.sampled_from([*_STRUCTURE, "!!python/object:os.system", "\t", "#", ",", "?", "|", ">", "\x00", "é"])


@settings(max_examples=400, derandomize=True, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=40))
def test_fuzzed_yaml_loads_or_fails_clearly(pieces: list[str]) -> None:
    from tide_bench.core.yaml_io import load_yaml

    try:
        load_yaml("".join(pieces), path="fuzz.yaml")
    except ConfigError as exc:
        assert "fuzz.yaml" in str(exc)
