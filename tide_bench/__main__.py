"""``python -m tide_bench``: the same command line as ``tide-bench``."""

from tide_bench.cli.main import main

main()
