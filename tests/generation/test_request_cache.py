"""lm-eval's request cache is keyed by what the requests were built from (found merging issue 26).

lm-eval names a cached request file by task, shots, chat template and system-instruction hash,
not by the task's prompt or its documents. After tide-bench's task prompt changed (rubric v3,
task prompt 3.0), a run with ``--cache-requests true`` was served the old prompts from an earlier
run's cache while run.json recorded the new prompt hash; the board's per-item prompt check then
refused it. tide-bench now points lm-eval's cache at a folder keyed by the task files, the data
and the limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tide_bench.generation.runner import EvalConfig, _request_cache_at, request_cache_folder

PROVENANCE = {"source": "sample", "split": "test", "split_sha256": "a" * 64}


def _config(**kw: object) -> EvalConfig:
    return EvalConfig(**({"model": "hf", "model_args": "pretrained=demo", "cache_requests": "true"} | kw))


def test_the_folder_changes_with_the_data_the_limit_and_the_task_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LM_HARNESS_CACHE_PATH", raising=False)
    base = request_cache_folder(_config(), PROVENANCE)
    assert base.parent == tmp_path / "cache" / "lm-eval-requests"
    assert request_cache_folder(_config(), dict(PROVENANCE)) == base  # the same inputs: the same cache
    assert request_cache_folder(_config(), PROVENANCE | {"split_sha256": "b" * 64}) != base
    assert request_cache_folder(_config(), PROVENANCE | {"source": "local:/x"}) != base
    assert request_cache_folder(_config(limit=4), PROVENANCE) != base

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "t.yaml").write_text("description: old prompt\n")
    monkeypatch.setattr("tide_bench.tasks.registry.tasks_path", lambda: tasks)
    old = request_cache_folder(_config(), PROVENANCE)
    (tasks / "t.yaml").write_text("description: new prompt\n")
    assert request_cache_folder(_config(), PROVENANCE) != old  # a changed task prompt: a fresh cache

    monkeypatch.setenv("LM_HARNESS_CACHE_PATH", str(tmp_path / "lm"))
    assert request_cache_folder(_config(), PROVENANCE).parent == tmp_path / "lm"


def test_lm_evals_cache_path_is_set_for_the_run_and_restored(tmp_path: Path) -> None:
    from lm_eval.caching import cache

    before = cache.PATH
    with _request_cache_at(tmp_path / "k"):
        assert str(tmp_path / "k") == cache.PATH and (tmp_path / "k").is_dir()
        assert cache._cache_file_path("requests-x").startswith(str(tmp_path / "k"))
    assert before == cache.PATH
    with _request_cache_at(None):
        assert before == cache.PATH
