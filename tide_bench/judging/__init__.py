"""Judging: an LLM rates each reply on the paper's three empathy factors plus a safety flag.

Imports :mod:`tide_bench.core` and :mod:`tide_bench.generation` (to read run directories).
Configuration is data: ``judges/`` holds the rubric, the prompt template, the price table and
one folder per judge configuration. Public API::

    from tide_bench.judging import load_judge, JudgeOptions, judge_run, dry_run
    estimate = dry_run("runs/x", "runs/x/judge", load_judge("claude-sonnet"), JudgeOptions())
    result = judge_run("runs/x", "runs/x/judge", load_judge("claude-sonnet"), JudgeOptions())
"""

from tide_bench.judging.config import JudgeConfig, available_judges, load_judge
from tide_bench.judging.engine import JudgeOptions, JudgeResult, check_budget, dry_run, judge_run
from tide_bench.judging.rubric import Rubric, load_rubric

__all__ = [
    "JudgeConfig",
    "JudgeOptions",
    "JudgeResult",
    "Rubric",
    "available_judges",
    "check_budget",
    "dry_run",
    "judge_run",
    "load_judge",
    "load_rubric",
]
