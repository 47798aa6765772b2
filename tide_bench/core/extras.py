"""What ``pip install tide-bench`` leaves out, and what to tell a user who needs it.

The plain install judges runs, audits a judge against people, builds rating pages, checks
and builds the leaderboard, and views runs: none of that needs a neural network, so it
installs no torch (a leaderboard maintainer's CI, a researcher auditing a judge). Generating
replies, fine-tuning, the demo, cosine similarity and the leaderboard's embedding spot check
run models: the ``eval`` extra, ``pip install 'tide-bench[eval]'``. Commands that need it say
so before they start (:func:`require_eval`); an import that fails deeper down is turned into
the same message by the command line (:func:`eval_module_missing`).
"""

from __future__ import annotations

import importlib.util

from tide_bench.core.errors import ConfigError

# The top-level modules the [eval] extra brings (pyproject.toml lists the distributions).
EVAL_MODULES = ("torch", "transformers", "lm_eval.api", "peft", "accelerate", "sentence_transformers", "datasets")
EVAL_PACKAGES = frozenset(m.split(".")[0] for m in EVAL_MODULES) | {"gguf"}  # gguf: the demo model's loader
INSTALL_HINT = (
    "pip install 'tide-bench[eval]' (install torch first, the build for your machine: see the README's Install)"
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing (or only a namespace folder)
        return False


def missing_eval_modules() -> list[str]:
    """The [eval] extra's modules that cannot be imported here. ``lm_eval.api`` rather than
    ``lm_eval``: the wheel puts its task files under ``lm_eval/tasks/`` even when lm-eval is
    not installed, and that folder alone imports as an empty namespace package."""
    return [m.split(".")[0] for m in EVAL_MODULES if not _installed(m)]


def require_eval(what: str) -> None:
    """Refuse to start ``what`` (a command) when the [eval] extra is not installed."""
    missing = missing_eval_modules()
    if missing:
        raise ConfigError(
            f"{what} needs the model stack ({', '.join(missing)}): tide-bench's [eval] extra, not installed here",
            hint=INSTALL_HINT,
        )


def eval_module_missing(exc: ImportError) -> str | None:
    """The user-facing message for an import of an [eval] module that failed, else None."""
    name = (exc.name or "").split(".")[0]
    if name not in EVAL_PACKAGES:
        return None
    return f"this command needs {name}, which comes with tide-bench's [eval] extra (not installed here); {INSTALL_HINT}"
