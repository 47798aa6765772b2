"""Where the task YAMLs are and which names they define.

lm-eval 0.4.13 has no plugin discovery: its ``TaskManager`` indexes only its own tasks and
an ``include_path``. ``tasks_path()`` is that include path (also printed by
``tide-bench tasks-path``); ``task_manager()`` builds a manager that indexes only our tasks,
which takes ~0 s instead of ~14 s for lm-eval's 14k built-in task names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tide_bench.core.resources import resource_dir

GROUP = "tide_empathy"
SUBTASKS = ("tide_empathy_turn1", "tide_empathy_turn2")


def tasks_path() -> Path:
    """The directory to pass to ``lm_eval --include_path``."""
    return resource_dir("tasks")


def task_manager(metadata: dict[str, Any] | None = None) -> Any:
    """An lm-eval ``TaskManager`` over tide-bench's tasks only."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata=metadata)


def entry_point() -> str:
    """Target of the ``lm_eval.tasks`` entry point (read by lm-eval versions with plugin
    discovery, upstream PR #4015): the include path as a string."""
    return str(tasks_path())
