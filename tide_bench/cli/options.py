"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tide_bench.data.schema import SPLIT_CHOICES
from tide_bench.data.sources import ENV_VAR

data_option = click.option(
    "--data",
    "data",
    metavar="SOURCE",
    default=None,
    help=(
        "TIDE source: 'sample' (built-in synthetic sample, not TIDE), 'risk-supplement' (built-in synthetic risk "
        "contexts on every C-SSRS level; use --split all), 'hub' or 'hub:OWNER/NAME@REV' "
        f"(gated Hugging Face dataset), or a local snapshot folder. Default: ${ENV_VAR}. "
        "There is no silent default."
    ),
)
split_option = click.option(
    "--split",
    type=click.Choice(SPLIT_CHOICES),
    default="test",
    show_default=True,
    help="Persona-disjoint split (70/10/20 by persona-id hash); the leaderboard uses 'test'.",
)

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def path_option(name: str, help: str, *, required: bool = False, dest: str | None = None, **kwargs: Any) -> Decorator:
    """A path-valued option (``click.Path(path_type=Path)``): the shape of every ``--out``,
    ``--board``, ``--cache`` and ``--judge-dir`` of the CLI; ``help`` says what it is for there."""
    names = (name, dest) if dest else (name,)
    return click.option(*names, type=click.Path(path_type=Path), required=required, help=help, **kwargs)


def out_option(help: str, *, required: bool = True, **kwargs: Any) -> Decorator:
    """``--out``: where a command writes (required unless the command has a default)."""
    return path_option("--out", help, required=required, **kwargs)


def overwrite_option(help: str) -> Decorator:
    """``--overwrite``: replace what an earlier run left in the output folder (never by default)."""
    return click.option("--overwrite", is_flag=True, help=help)


def board_option(help: str, *, required: bool = False) -> Decorator:
    """``--board``: a board configuration YAML (default: the command's own)."""
    return path_option("--board", help, required=required, default=None)


def judge_dir_option(help: str) -> Decorator:
    """``--judge-dir``: the judge's output folder of a run."""
    return path_option("--judge-dir", help, default=None)


def cache_option(help: str) -> Decorator:
    """``--cache``: a content-addressed cache file, so a rerun makes only the missing calls."""
    return path_option("--cache", help, dest="cache_path", default=None)


def seed_option(help: str, default: int) -> Decorator:
    return click.option("--seed", type=int, default=default, show_default=True, help=help)


def _stack(*decorators: Decorator) -> Decorator:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


JUDGE_HELP = "A folder under judges/ (claude-sonnet, openai-gpt, local) or a path to a config.yaml."


def judge_options(judge_help: str = JUDGE_HELP) -> Decorator:
    """``--judge`` (as ``judge_name``), ``--model``, ``--base-url`` and
    ``--allow-cross-origin-redirects``: which judge answers and where it may send, the same four
    wherever a command calls one (judge, validation run, data label-risk)."""
    return _stack(
        click.option("--judge", "judge_name", default="claude-sonnet", show_default=True, help=judge_help),
        click.option("--model", default=None, help="Override the judge model id (required for --judge local)."),
        click.option(
            "--base-url",
            default=None,
            help="API base URL; for --judge local the OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.",
        ),
        click.option(
            "--allow-cross-origin-redirects",
            "cross_origin",
            is_flag=True,
            help="Follow the judge server's redirects to another host (refused by default: the request carries "
            "the dialogue); they are then followed without the key or the URL's user info. Judge configuration: "
            "allow_cross_origin_redirects: true.",
        ),
    )


def spend_options() -> Decorator:
    """``--max-cost`` and ``--concurrency``: how much and how fast a command may call a judge."""
    return _stack(
        click.option(
            "--max-cost",
            type=float,
            default=None,
            help="Stop cleanly before spending more than this many US dollars (needs the model's prices).",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=None,
            help="Parallel requests (default: the judge configuration's).",
        ),
    )


def judge_overrides(cross_origin: bool) -> dict[str, Any]:
    """What ``--allow-cross-origin-redirects`` changes in the judge configuration (nothing unless given)."""
    return {"allow_cross_origin_redirects": True} if cross_origin else {}
