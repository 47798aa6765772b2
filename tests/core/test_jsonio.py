"""Guarded reads (nothing but regular files within a size limit is read) and atomic writes
with the usual file mode."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_text, iter_jsonl, read_bytes, read_json, write_json, write_jsonl


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_atomic_writes_get_the_mode_the_umask_gives(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        write_jsonl(tmp_path / "b.jsonl", [{"x": 1}])
        atomic_write_text(tmp_path / "c.txt", "hello")
    finally:
        os.umask(old)
    for name in ("a.json", "b.jsonl", "c.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert not list(tmp_path.glob(".*.tmp"))


def test_symlink_is_refused_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text('{"a": 1}')
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert read_json(tmp_path / "link.json") == {"a": 1}
    with pytest.raises(DataError, match="is a symbolic link"):
        read_json(tmp_path / "link.json", DataError, follow_symlinks=False)


def test_devices_pipes_and_folders_are_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a device, pipe or socket, not a regular file: refused without reading it"):
        read_bytes("/dev/zero", DataError)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DataError, match="pipe"):  # would block forever if it were opened for reading normally
        list(iter_jsonl(tmp_path / "fifo", DataError))
    with pytest.raises(DataError, match="folder"):
        read_json(tmp_path, DataError)


def test_oversize_files_are_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"a": 1}\n' * 1000)
    with pytest.raises(DataError, match=r"is 9000 bytes, over the 100 bytes limit"):
        list(iter_jsonl(path, DataError, max_bytes=100))
    assert len(list(iter_jsonl(path, DataError, max_bytes=9000))) == 1000


def test_nan_only_where_allowed(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": NaN}\n')
    with pytest.raises(DataError, match=r"x\.jsonl:1: invalid JSON"):
        list(iter_jsonl(path, DataError))
    assert [v["a"] != v["a"] for _, v in iter_jsonl(path, DataError, allow_nan=True)] == [True]
    path.write_text('{"a": -Infinity}\n')
    with pytest.raises(DataError, match="invalid JSON"):
        list(iter_jsonl(path, DataError, allow_nan=True))


def test_deeply_nested_json_is_an_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match=r"nested too deeply|invalid JSON"):
        read_json(tmp_path / "deep.json", DataError)
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(DataError, match="invalid JSON"):
        list(iter_jsonl(tmp_path / "deep.jsonl", DataError, allow_nan=True))


def test_lone_surrogate_escapes_are_refused_everywhere(tmp_path: Path) -> None:
    """Python's json accepts "\\ud800", a string no file or hash can hold afterwards."""
    (tmp_path / "a.json").write_text('{"a": "\\ud800"}')
    with pytest.raises(DataError, match="half a surrogate pair"):
        read_json(tmp_path / "a.json", DataError)
    (tmp_path / "b.jsonl").write_text('{"a": "\\ud800", "m": NaN}\n')
    with pytest.raises(DataError, match=r"b\.jsonl:1: invalid JSON"):
        list(iter_jsonl(tmp_path / "b.jsonl", DataError, allow_nan=True))


def test_lm_eval_samples_with_nan_metrics_are_read_by_every_stage(tmp_path: Path) -> None:
    """lm-eval writes NaN for an undefined per-item metric (distinct-2 of a one-word reply)."""
    from tests.helpers import make_run
    from tide_bench.generation import load_run

    run = make_run(tmp_path / "run", "Okay.")
    samples = next(run.rglob("samples_*.jsonl"))
    samples.write_text(samples.read_text().replace('"within_reply_distinct_2": 0.9', '"within_reply_distinct_2": NaN'))
    loaded = load_run(run)
    assert len(loaded.generations) == 12 and all(
        g.metrics["within_reply_distinct_2"] != g.metrics["within_reply_distinct_2"] for g in loaded.generations
    )


def test_long_and_blank_lines_keep_the_numbers_of_the_file(tmp_path: Path) -> None:
    text = "x" * 3_000_000
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a": 1}\n' + json.dumps({"text": text}).encode() + b"\n\n" + b'{"b": 2}')
    assert [(n, list(v)) for n, v in iter_jsonl(path)] == [(1, ["a"]), (2, ["text"]), (4, ["b"])]
    assert next(v for n, v in iter_jsonl(path) if n == 2)["text"] == text
