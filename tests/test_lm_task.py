"""The tasks registered and built through lm-eval's own TaskManager."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tide_bench.core.errors import ConfigError
from tide_bench.tasks.registry import GROUP, SUBTASKS, task_manager, tasks_path


def _tasks(node) -> dict:
    """Flatten lm-eval's nested task dict into {task name: task object}."""
    if hasattr(node, "config") and hasattr(node, "test_docs"):
        return {node.config.task: node}
    out: dict = {}
    for child in (node.values() if isinstance(node, dict) else []):
        out |= _tasks(child)
    return out


def test_group_and_subtasks_are_indexed_by_lm_eval() -> None:
    tm = task_manager()
    names = set(tm.all_tasks)
    assert GROUP in names
    assert set(SUBTASKS) <= names
    assert len(names) < 10  # only our tasks: no 14k-name index


def test_lm_eval_validate_accepts_the_tasks() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "validate", "--tasks", GROUP, "--include_path", str(tasks_path())],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in (proc.stdout + proc.stderr).lower()


@pytest.fixture
def loaded_tasks() -> dict:
    from lm_eval.tasks import get_task_dict

    tm = task_manager({"tide_data": "sample", "tide_split": "test"})
    return _tasks(get_task_dict([GROUP], tm))


def test_subtasks_hold_their_turns_of_the_chosen_split(loaded_tasks: dict) -> None:
    assert set(loaded_tasks) == set(SUBTASKS)
    for turn, name in enumerate(SUBTASKS, start=1):
        docs = list(loaded_tasks[name].test_docs())
        assert len(docs) == 6
        assert {d["turn"] for d in docs} == {turn}
        assert {d["split"] for d in docs} == {"test"}
        assert {d["tide_source"] for d in docs} == {"sample (synthetic, not TIDE)"}


def test_chat_prompt_is_genuine_multi_turn(loaded_tasks: dict) -> None:
    task = loaded_tasks["tide_empathy_turn2"]
    doc = next(iter(task.test_docs()))
    seen = {}

    def fake_template(messages, add_generation_prompt=True):
        seen["messages"], seen["agp"] = messages, add_generation_prompt
        return "RENDERED"

    out = task.fewshot_context(doc, 0, apply_chat_template=True, chat_template=fake_template)
    assert out == "RENDERED" and seen["agp"] is True
    roles = [m["role"] for m in seen["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "supportive listener" in seen["messages"][0]["content"]
    plain = task.fewshot_context(doc, 0)
    assert plain.endswith("Supporter:") and "Client: " in plain


def test_prompt_version_is_in_the_task_config(loaded_tasks: dict) -> None:
    meta = loaded_tasks["tide_empathy_turn1"].config.metadata
    assert len(meta["prompt_sha256"]) == 64 and meta["version"] == 1.0


def test_fewshot_is_refused(loaded_tasks: dict) -> None:
    task = loaded_tasks["tide_empathy_turn1"]
    with pytest.raises(ConfigError, match="zero-shot"):
        task.fewshot_context(next(iter(task.test_docs())), 2)


def test_missing_source_fails_with_the_explanation() -> None:
    from lm_eval.tasks import get_task_dict

    with pytest.raises(ConfigError, match="no TIDE data source chosen"):
        get_task_dict([GROUP], task_manager({}))
