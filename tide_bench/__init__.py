"""tide-bench: a benchmark harness for empathetic dialogue in PTSD support (TIDE)."""

__version__ = "0.1.0"
