"""The ``tide-bench`` command line (click). Each command is a thin shell over a Python API."""
