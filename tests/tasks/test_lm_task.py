"""The tasks registered and built through lm-eval's own TaskManager, on both data shapes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import MULTI_EXCHANGE
from tide_bench.core.errors import ConfigError
from tide_bench.tasks.registry import TASK, TURN_TASKS, task_manager, tasks_path, turn_of_task


def _tasks(node) -> dict:
    """Flatten lm-eval's nested task dict into {task name: task object}."""
    if hasattr(node, "config") and hasattr(node, "test_docs"):
        return {node.config.task: node}
    out: dict = {}
    for child in node.values() if isinstance(node, dict) else []:
        out |= _tasks(child)
    return out


def _load(names: list[str], data: str = "sample") -> dict:
    from lm_eval.tasks import get_task_dict

    return _tasks(get_task_dict(names, task_manager({"tide_data": data, "tide_split": "test"})))


def test_task_and_per_turn_tasks_are_indexed_by_lm_eval() -> None:
    names = set(task_manager().all_tasks)
    assert TASK in names and set(TURN_TASKS) <= names and "tide_empathy_guided" in names
    assert len(names) < 10  # only our tasks: no 14k-name index


def test_turn_of_task() -> None:
    assert [turn_of_task(n) for n in (TASK, *TURN_TASKS, "tide_empathy_turn12", "x_turn1")] == [None, 1, 2, 12, None]


def test_lm_eval_validate_accepts_the_tasks() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "validate", "--tasks", TASK, "--include_path", str(tasks_path())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "valid" in (proc.stdout + proc.stderr).lower()


def test_main_task_on_single_exchange_data_holds_every_item_of_the_split() -> None:
    tasks = _load([TASK])
    assert set(tasks) == {TASK}
    docs = list(tasks[TASK].test_docs())
    assert len(docs) == 12 and {d["turn"] for d in docs} == {1}
    assert {d["split"] for d in docs} == {"test"}
    assert {d["tide_source"] for d in docs} == {"sample (synthetic, not TIDE)"}
    assert all(d["history"] == [] for d in docs)


def test_main_task_on_multi_exchange_data_holds_both_turns() -> None:
    docs = list(_load([TASK], str(MULTI_EXCHANGE))[TASK].test_docs())
    assert len(docs) == 12 and {d["turn"] for d in docs} == {1, 2}


def test_per_turn_tasks_select_their_turn_on_multi_exchange_data() -> None:
    tasks = _load(list(TURN_TASKS), str(MULTI_EXCHANGE))
    for name in TURN_TASKS:
        docs = list(tasks[name].test_docs())
        assert len(docs) == 6 and {d["turn"] for d in docs} == {turn_of_task(name)}


def test_a_turn_the_data_does_not_have_is_refused_with_the_reason() -> None:
    assert {d["turn"] for d in _load(["tide_empathy_turn1"])["tide_empathy_turn1"].test_docs()} == {1}
    with pytest.raises(ConfigError) as err:
        _load(["tide_empathy_turn2"])
    text = str(err.value)
    assert "has no turn-2 items" in text and "turns present: 1" in text
    assert "one exchange per conversation" in text and "run tide_empathy" in text


def test_chat_prompt_is_genuine_multi_turn() -> None:
    task = _load(["tide_empathy_turn2"], str(MULTI_EXCHANGE))["tide_empathy_turn2"]
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


def test_single_exchange_prompt_is_system_then_client() -> None:
    task = _load([TASK])[TASK]
    seen = {}
    task.fewshot_context(
        next(iter(task.test_docs())),
        0,
        apply_chat_template=True,
        chat_template=lambda m, add_generation_prompt=True: seen.setdefault("m", m),
    )
    assert [m["role"] for m in seen["m"]] == ["system", "user"]


def test_prompt_version_is_in_the_task_config() -> None:
    meta = _load([TASK])[TASK].config.metadata
    assert len(meta["prompt_sha256"]) == 64 and meta["version"] == 3.0 and meta["prompt_condition"] == "neutral"


def test_the_guided_condition_is_its_own_task_with_the_rubric_aware_prompt() -> None:
    from tide_bench.tasks.registry import GUIDED_TASK

    tasks = _load([TASK, GUIDED_TASK])
    neutral, guided = tasks[TASK].config, tasks[GUIDED_TASK].config
    assert guided.metadata["prompt_condition"] == "guided" and guided.metadata["version"] == 3.0
    assert "recognise the emotions" in guided.description and "recognise" not in neutral.description
    assert "understandable" not in neutral.description  # no rubric vocabulary to echo
    assert "clearly and kindly" in neutral.description and "clearly and kindly" in guided.description
    assert guided.metadata["prompt_sha256"] != neutral.metadata["prompt_sha256"]
    assert len(list(tasks[GUIDED_TASK].test_docs())) == len(list(tasks[TASK].test_docs()))


def test_fewshot_is_refused() -> None:
    task = _load([TASK])[TASK]
    with pytest.raises(ConfigError, match="zero-shot"):
        task.fewshot_context(next(iter(task.test_docs())), 2)


def test_missing_source_fails_with_the_explanation() -> None:
    from lm_eval.tasks import get_task_dict

    with pytest.raises(ConfigError, match="no TIDE data source chosen"):
        get_task_dict([TASK], task_manager({}))
