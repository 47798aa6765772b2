"""tide-bench: a benchmark harness for empathetic dialogue in PTSD support (TIDE)."""

import logging as _logging

__version__ = "0.1.0"


class _NoKernelHubHint(_logging.Filter):
    """bitsandbytes' CPU backend logs, when imported (transformers' Trainer imports it), that it could
    not fetch an optional kernel from the Hugging Face Hub: tide-bench never downloads kernels, and
    the 4-bit CPU path runs without it. That one line is dropped; every other message is kept."""

    def filter(self, record: _logging.LogRecord) -> bool:
        return "kernels-community" not in record.getMessage()


_logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_NoKernelHubHint())
