"""The ``tide-bench`` command line (click). Each command is a thin shell over a Python API."""

USER_ERROR_EXIT = 2  # a refused input (a TideBenchError, a refused submission); a check that finds problems exits 1
