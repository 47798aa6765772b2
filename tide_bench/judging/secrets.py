"""Keys come from the environment only, and never reach a file, log or error message.

The redactor itself lives in :mod:`tide_bench.core.secrets` (generation uses it too). Here:
reading the judge's key, which registers it for redaction, so every message this process
writes is free of it whichever module formats the message, and the judge's ``base_url``,
whose user info and query values are registered the same way.
"""

from __future__ import annotations

import os

from tide_bench.core.errors import ConfigError
from tide_bench.core.secrets import REDACTED, redact, redact_url, register_secret, url_secrets

__all__ = ["REDACTED", "api_key", "protect_url", "redact", "redact_url"]


def api_key(env_var: str | None, *, required: bool, provider: str) -> str | None:
    """Read the key from ``env_var``; a required key that is missing is a clear error."""
    value = os.environ.get(env_var) if env_var else None
    if required and not value:
        raise ConfigError(
            f"no API key for the {provider} judge: set the {env_var} environment variable",
            hint="keys are read from the environment only; use --dry-run to estimate cost without a key",
        )
    register_secret(value)
    return value


def protect_url(url: str | None) -> str | None:
    """Register the credentials a URL carries and return it with them removed (for display)."""
    for secret in url_secrets(url):
        register_secret(secret)
    return redact_url(url)
