"""Provider adapters: one class per wire protocol, all returning a :class:`CallOutcome`.

Anthropic and OpenAI go through their SDKs' typed calls, OpenAI-compatible servers through a
lean aiohttp path (:mod:`.compatible_api`). Each adapter registers itself with its capabilities
(:func:`tide_bench.judging.capabilities.register_provider`), and every module of this folder is
imported here, so a new protocol is one file in it (docs/architecture.md, "Add a judge
provider"). No SDK is imported until a provider sends its first request.
"""

from __future__ import annotations

import importlib
import pkgutil

from tide_bench.judging.capabilities import provider_class
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.providers.base import CallOutcome, Provider
from tide_bench.judging.secrets import api_key, protect_url

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")  # each adapter registers itself


def make_provider(config: JudgeConfig) -> Provider:
    """Build the provider for ``config``; a missing required key fails here, before any work.
    Credentials in the base URL it sends to (``--base-url``, the configuration's, or the SDK's
    environment variable) are registered for redaction before any request is made."""
    protect_url(config.base_url)
    cls = provider_class(config.provider)
    key = api_key(config.api_key_env, required=cls.capabilities.key_required, provider=config.name)
    provider: Provider = cls(config, key)  # type: ignore[operator]
    _ = provider.public_endpoint  # registers the credentials of the URL requests go to
    return provider


__all__ = ["CallOutcome", "Provider", "make_provider"]
