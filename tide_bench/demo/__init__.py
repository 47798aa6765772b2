"""The offline demo: the built-in sample, the SmolLM2-135M demo model, every stage that runs.

Imports any earlier stage; nothing imports it but the CLI.
"""

from tide_bench.demo.model import demo_model_args, prepare_demo_model

__all__ = ["demo_model_args", "prepare_demo_model"]
