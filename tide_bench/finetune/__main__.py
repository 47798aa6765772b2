"""``python -m tide_bench.finetune`` / ``accelerate launch -m tide_bench.finetune``: the CLI's
``finetune`` command, with its one-line errors."""

import sys

from tide_bench.cli.main import cli

if __name__ == "__main__":
    cli(["finetune", *sys.argv[1:]])
