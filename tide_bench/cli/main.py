"""``tide-bench``: the command line. Each command is a thin shell over a Python API.

User errors (:class:`~tide_bench.core.errors.TideBenchError`) are printed as one clear
message without a traceback and exit with status 2; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click

from tide_bench import __version__
from tide_bench.cli import USER_ERROR_EXIT
from tide_bench.cli.annotate_cmd import annotate
from tide_bench.cli.audit_cmd import audit_cmd
from tide_bench.cli.consistency_cmd import consistency_cmd
from tide_bench.cli.data_cmd import data
from tide_bench.cli.demo_cmd import demo, demo_model_cmd
from tide_bench.cli.epitome_cmd import epitome
from tide_bench.cli.eval_cmd import eval_cmd, import_cmd, tasks_path_cmd
from tide_bench.cli.finetune_cmd import finetune_cmd, merge_cmd
from tide_bench.cli.judge_cmd import judge_cmd
from tide_bench.cli.leaderboard_cmd import leaderboard, submit_cmd
from tide_bench.cli.leftovers import absent_paths
from tide_bench.cli.robustness_cmd import robustness
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.cli.study_cmd import study_cmd
from tide_bench.cli.validation_cmd import validation
from tide_bench.cli.view_cmd import view_cmd
from tide_bench.core.errors import TideBenchError
from tide_bench.core.extras import eval_module_missing
from tide_bench.core.paths import remove_empty_folders

_ABSENT = "tide_bench.absent_paths"
# Deprecations inside dependencies' own code, printed on every run, that a user of the command line can do nothing
# about (library callers keep them): peft reads transformers 5's deprecated `is_gradient_checkpointing` whenever it
# wraps or loads an adapter (fine-tuning, the study, `eval` with an adapter).
THIRD_PARTY_NOISE = (r"`is_gradient_checkpointing` is deprecated",)


class TideGroup(SpellingGroup):
    """The top-level group: user errors become one message and exit status 2; lm-eval's
    option spellings (``--model_args``) are accepted by every command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ABSENT] = absent_paths(args)  # before anything runs: what a refused command must not leave
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with warnings.catch_warnings():
                for message in THIRD_PARTY_NOISE:
                    warnings.filterwarnings("ignore", message=message, category=FutureWarning)
                return super().invoke(ctx)
        except TideBenchError as exc:
            remove_empty_folders(ctx.meta.get(_ABSENT, ()))
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(USER_ERROR_EXIT)
        except ImportError as exc:  # an [eval] module imported deep inside a command, on a plain install
            message = eval_module_missing(exc)
            if message is None:
                raise
            remove_empty_folders(ctx.meta.get(_ABSENT, ()))
            click.secho(f"error: {message}", fg="red", err=True)
            sys.exit(USER_ERROR_EXIT)


@click.group(cls=TideGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="tide-bench")
def cli() -> None:
    """Benchmark harness for empathetic dialogue in PTSD support (TIDE).

    \b
    The pipeline, one command per stage:
      tide-bench data validate --data DIR     check a TIDE snapshot (counts, schema, splits)
      tide-bench eval ...                     generate replies through lm-evaluation-harness
      tide-bench import LM_EVAL_OUT --out RUN adopt a plain `lm_eval --tasks tide_empathy` run
      tide-bench tasks-path                   where lm-eval finds the tasks (for lm_eval --include_path)
      tide-bench finetune --model M --out A   LoRA on the train split (the paper's fine-tuned condition)
      tide-bench merge-adapter A --out M      merge a LoRA adapter into its base model (e.g. for vLLM)
      tide-bench judge RUN --out DIR          rate replies with an LLM judge (3 factors + safety)
      tide-bench view RUN                     one run's replies, scores and rationales as an HTML file
      tide-bench robustness pairs|report      persona-swap minimal pairs: does a stated identity move replies?
      tide-bench consistency FOLDER           spread and safety across `eval --samples K` (judged)
      tide-bench audit --ratings F ...        judge-human agreement (alpha, kappa, CIs, rater groups)
      tide-bench annotate build|collect|plan  offline, blinded rating pages for people; merge returns; power
      tide-bench validation list|fetch|run|report|board  audit a judge against public expert ratings
      tide-bench submit RUN --meta M --out D  package a judged run as a leaderboard submission
      tide-bench leaderboard validate|build|pin|template-hash  check entries; build the site; pin a release
      tide-bench epitome train|score          EPITOME's empathy mechanisms with a local scorer
      tide-bench study STUDY.yaml             the paper's grid (models x zero-shot/fine-tuned + reference), resumable
      tide-bench demo                         the whole pipeline offline on the built-in sample
      tide-bench demo-model                   the demo model's folder, for plain lm_eval's pretrained=

    \b
    Examples:
      tide-bench demo                                 # the pipeline offline on the built-in sample
      tide-bench eval --data sample --model-args pretrained=demo --limit 2 --output-dir runs/demo
      tide-bench study studies/demo.yaml --dry-run    # what a study would run, and what it costs
      tide-bench COMMAND --help                       # every command documents itself with examples

    Options also take lm-eval's spellings: --model_args, --batch_size, --output_path, ...

    TIDE text is sensitive mental-health dialogue. Read docs/privacy.md before sending it
    to any third-party API.
    """


cli.add_command(data)
cli.add_command(demo_model_cmd)
cli.add_command(eval_cmd)
cli.add_command(import_cmd)
cli.add_command(finetune_cmd)
cli.add_command(merge_cmd)
cli.add_command(tasks_path_cmd)
cli.add_command(judge_cmd)
cli.add_command(audit_cmd)
cli.add_command(consistency_cmd)
cli.add_command(annotate)
cli.add_command(submit_cmd)
cli.add_command(leaderboard)
cli.add_command(study_cmd)
cli.add_command(view_cmd)
cli.add_command(validation)
cli.add_command(demo)
cli.add_command(epitome)
cli.add_command(robustness)


def main() -> None:
    cli()


if __name__ == "__main__":  # pragma: no cover
    main()
