"""Where the task YAMLs are, which names they define, and which turns a dataset can serve.

lm-eval 0.4.13 has no plugin discovery: its ``TaskManager`` indexes only its own
``lm_eval/tasks`` tree and an ``include_path``. The wheel therefore installs a copy of
``tasks/tide_empathy`` into that tree (editable installs get live ``include:`` stubs, see
``hatch_build.py``), so the literal ``lm_eval --tasks tide_empathy`` works;
:func:`lm_eval_copy_status` says whether that copy is there and current. ``tasks_path()`` is
the folder holding the YAMLs themselves; ``task_manager()`` builds a manager that indexes only
it, which takes ~0 s instead of ~14 s for lm-eval's 14k built-in task names.

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
GUIDED_TASK = "tide_empathy_guided"  # the rubric-aware prompt condition (tasks/tide_empathy/tide_empathy_guided.yaml)
PERSONA_SWAP_TASK = "tide_empathy_persona_swap"  # persona-swap minimal pairs (docs/robustness.md)
TURN_TASKS = ("tide_empathy_turn1", "tide_empathy_turn2")
TURN_KEY = "tide_turn"
STUB_HEADER = "# editable install of tide-bench"  # first line of hatch_build.py's stubs
_TURN_TASK = re.compile(r"^tide_empathy_turn(\d+)$")


NOTHING_TO_INCLUDE = Path(__file__).resolve().parent / "nothing_to_include"


def tasks_path() -> Path:
    """The folder holding the task YAMLs (``tasks/`` of a checkout, or the wheel's copy)."""
    return resource_dir("tasks")


def include_path() -> tuple[Path, str]:
    """What to pass to ``lm_eval --include_path``, and the status of lm-eval's own copy.

    When lm-eval already finds a current copy of our tasks, passing the YAML folder again
    would only make it warn that each task overrides itself: an empty folder is returned.
    """
    status, _ = lm_eval_copy_status()
    return (NOTHING_TO_INCLUDE if status == "current" else tasks_path()), status


def installed_tasks_dir() -> Path | None:
    """``lm_eval/tasks/tide_empathy`` of the lm-eval that ``import lm_eval`` finds, if any."""
    import importlib.util

    spec = importlib.util.find_spec("lm_eval.tasks")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / TASK


def lm_eval_copy_status() -> tuple[str, str]:
    """``("current" | "missing" | "stale", explanation)`` for lm-eval's own copy of our tasks.

    A wheel installs byte-for-byte copies of every file of ``tasks_path()/tide_empathy``; an
    editable install, one stub per ``*.yaml`` that ``include:`` s the checkout file (the
    template is then read from the checkout). Anything else is stale: a YAML edited or added
    since an old editable install copied the folder.
    """
    source = tasks_path() / TASK
    installed = installed_tasks_dir()
    if installed is None or not installed.is_dir():
        return "missing", (
            f"lm-eval's task tree has no {TASK}/ folder ({installed or 'lm_eval.tasks is not importable'}): "
            "lm-eval is imported from another place than the one tide-bench was installed into"
        )
    if installed.resolve() == source.resolve():
        return "current", f"lm-eval reads the tasks straight from {source}"
    stubs = _read(installed / f"{TASK}.yaml").startswith(STUB_HEADER)
    for src in sorted(p for p in source.iterdir() if p.is_file()):
        if stubs and src.suffix != ".yaml":
            continue
        text = _read(installed / src.name)
        expected = f"include: {src.resolve()}" if stubs else None
        if (expected not in text) if expected else (text != _read(src)):
            return "stale", f"{installed / src.name} is not the current {src.name} ({src})"
    return "current", f"lm-eval finds the tasks in {installed}"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


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


ED_TASK = "ed_empathy_first_turn"  # tasks/ed_empathy/: EmpatheticDialogues (docs/tasks.md)
CONDITION_TASKS = {"neutral": TASK, "guided": GUIDED_TASK, "ed": ED_TASK}
TASK_FOLDERS = {ED_TASK: "ed_empathy"}  # tasks outside tasks/tide_empathy/


def task_of_condition(condition: str) -> str:
    """The task that carries a prompt condition (``neutral`` -> ``tide_empathy``)."""
    if condition not in CONDITION_TASKS:
        raise ConfigError(f"unknown prompt condition {condition!r}; choose {', '.join(CONDITION_TASKS)}")
    return CONDITION_TASKS[condition]


def _task_yaml(path: Path) -> dict:
    """A task YAML as data, lm-eval's ``!function`` tags read as nothing."""
    import yaml

    class _IgnoreTags(yaml.SafeLoader):
        pass

    _IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_IgnoreTags) or {}


def system_prompt(condition: str = "neutral") -> str:
    """The system prompt of a condition, read from its task YAML (following ``include:``), so
    fine-tuning trains on exactly the text evaluation sends."""
    task = task_of_condition(condition)
    path = tasks_path() / TASK_FOLDERS.get(task, TASK) / f"{task}.yaml"
    while True:
        config = _task_yaml(path)
        if "description" in config:
            return str(config["description"]).strip()
        if "include" not in config:
            raise ConfigError(f"no description in {path} or its includes")
        path = path.parent / str(config["include"])
