"""Generation: run TIDE through lm-eval and describe the run (``run.json``).

Imports :mod:`tide_bench.core`, :mod:`tide_bench.data`, :mod:`tide_bench.metrics` and
:mod:`tide_bench.tasks`. Later stages read run directories through :mod:`.run_dir`.
"""

from tide_bench.generation.run_dir import Generation, RunDirectory, load_run, run_label
from tide_bench.generation.runner import EvalConfig, run_eval

__all__ = ["EvalConfig", "Generation", "RunDirectory", "load_run", "run_eval", "run_label"]
