"""TIDE as lm-evaluation-harness tasks: prompts, the task class and where the YAMLs live.

Imports :mod:`tide_bench.core`, :mod:`tide_bench.data` and :mod:`tide_bench.metrics`.
The task configuration itself is data: ``tasks/tide_empathy/*.yaml`` at the top of the
repository (shipped inside the wheel). ``lm_task`` imports lm-eval, so it is not imported here.
"""

from tide_bench.tasks.prompts import build_messages, prompt_sha256, render_plain
from tide_bench.tasks.registry import TASK, TURN_TASKS, tasks_path

__all__ = ["TASK", "TURN_TASKS", "build_messages", "prompt_sha256", "render_plain", "tasks_path"]
