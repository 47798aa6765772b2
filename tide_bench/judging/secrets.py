"""Keys come from the environment only, and never reach a file, log or error message.

:func:`redact` is applied to every text that could carry provider output or an exception
message before it is stored or shown.
"""

from __future__ import annotations

import os
import re

from tide_bench.core.errors import ConfigError

KNOWN_KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TIDE_BENCH_JUDGE_API_KEY", "HF_TOKEN", "ANTHROPIC_AUTH_TOKEN")
_PATTERNS = (
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)(x-api-key|api[_-]?key|authorization)([\"':= ]+)[A-Za-z0-9._~+/=-]{8,}"),
)
REDACTED = "[REDACTED]"


def redact(text: str, extra_vars: tuple[str, ...] = ()) -> str:
    for var in (*KNOWN_KEY_VARS, *extra_vars):
        value = os.environ.get(var)
        if value and len(value) >= 6:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def api_key(env_var: str | None, *, required: bool, provider: str) -> str | None:
    """Read the key from ``env_var``; a required key that is missing is a clear error."""
    value = os.environ.get(env_var) if env_var else None
    if required and not value:
        raise ConfigError(
            f"no API key for the {provider} judge: set the {env_var} environment variable",
            hint="keys are read from the environment only; use --dry-run to estimate cost without a key",
        )
    return value
