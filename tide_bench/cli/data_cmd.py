"""``tide-bench data ...``: inspect and validate a TIDE source."""

from __future__ import annotations

import json
import sys

import click

from tide_bench.cli.options import data_option
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.data import format_report, validate


@click.group(cls=SpellingGroup)
def data() -> None:
    """Inspect TIDE data sources.

    \b
    Examples:
      tide-bench data validate --data sample            # the built-in synthetic sample
      tide-bench data validate --data ~/data/TIDE       # a snapshot you downloaded
    """


@data.command("validate")
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate_cmd(data: str | None, as_json: bool) -> None:
    """Check a TIDE source: counts per split, scenario and turn; schema problems.

    Reports duplicate ids, empty texts, invalid UTF-8 or JSON (with file and line), records
    without a client turn or reference reply, and a mismatch with the full set's expected
    500 personas / 10,000 conversations. Exits 1 when any error is found.

    \b
    Example:
      tide-bench data validate --data ~/data/TIDE
    """
    report = validate(data)
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if not report["ok"]:
        sys.exit(1)
