"""Options shared by several commands, defined once."""

from __future__ import annotations

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
