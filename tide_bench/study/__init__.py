"""Studies: the paper's grid (models x zero-shot/fine-tuned, plus the TIDE reference) as one
resumable command, ending in the study's board and a report with the paper's figures.

Imports every stage below it (data, generation, judging, agreement, leaderboard, finetune,
annotation). Public API::

    from tide_bench.study import load_study, make_plan, format_plan, run_study
    spec = load_study("studies/pursuit_of_empathy.yaml")
    print(format_plan(make_plan(spec, out)))          # what would run, and what it would cost
    result = run_study(spec, out)                      # resumable; result.site, result.report
"""

from tide_bench.study.estimate import format_plan
from tide_bench.study.invoke import run_study
from tide_bench.study.plan import StudyPlan, make_plan, study_run_dirs
from tide_bench.study.runner import StudyResult
from tide_bench.study.spec import ModelSpec, StudySpec, load_study

__all__ = [
    "ModelSpec",
    "StudyPlan",
    "StudyResult",
    "StudySpec",
    "format_plan",
    "load_study",
    "make_plan",
    "run_study",
    "study_run_dirs",
]
