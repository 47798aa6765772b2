"""Where the task YAMLs are, which names they define, and which turns a dataset can serve.

lm-eval 0.4.13 has no plugin discovery: its ``TaskManager`` indexes only its own tasks and
an ``include_path``. ``tasks_path()`` is that include path (also printed by
``tide-bench tasks-path``); ``task_manager()`` builds a manager that indexes only our tasks,
which takes ~0 s instead of ~14 s for lm-eval's 14k built-in task names.

``tide_empathy`` is one task over every client turn, so it works on any conversation shape.
The per-turn tasks (``tide_empathy_turn<k>``, selected by ``dataset_kwargs: {tide_turn: k}``
in their YAML) exist for multi-exchange data; on data without turn ``k`` they refuse to build
and say why, before any model loads when run through ``tide-bench eval``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.resources import resource_dir

TASK = "tide_empathy"
TURN_TASKS = ("tide_empathy_turn1", "tide_empathy_turn2")
TURN_KEY = "tide_turn"
_TURN_TASK = re.compile(r"^tide_empathy_turn(\d+)$")


def tasks_path() -> Path:
    """The directory to pass to ``lm_eval --include_path``."""
    return resource_dir("tasks")


def task_manager(metadata: dict[str, Any] | None = None) -> Any:
    """An lm-eval ``TaskManager`` over tide-bench's tasks only."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata=metadata)


def turn_of_task(name: str) -> int | None:
    """The client turn a per-turn task selects (``tide_empathy_turn2`` -> 2), else ``None``."""
    match = _TURN_TASK.match(name)
    return int(match.group(1)) if match else None


def check_turn_available(dataset: Any, split: str, turn: int) -> None:
    """Refuse a per-turn task on data that has no item of that turn, saying what it has."""
    present = dataset.turns(split)
    if turn in present:
        return
    shape = dataset.shape.summary() if dataset.shape.exchanges else "no conversations"
    raise ConfigError(
        f"tide_empathy_turn{turn}: split {split!r} of {dataset.source.label} has no turn-{turn} items "
        f"(turns present: {', '.join(map(str, present)) or 'none'}; {shape})",
        hint=f"run {TASK}, which covers every turn; its results and summaries break scores down by turn",
    )


def entry_point() -> str:
    """Target of the ``lm_eval.tasks`` entry point (read by lm-eval versions with plugin
    discovery, upstream PR #4015): the include path as a string."""
    return str(tasks_path())
