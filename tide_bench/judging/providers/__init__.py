"""Provider adapters: one small class per API family, all returning a :class:`CallOutcome`:
Anthropic and OpenAI through their SDKs, OpenAI-compatible servers through a lean aiohttp path
(:mod:`.compatible_api`). No SDK is imported until a provider sends its first request."""

from __future__ import annotations

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.providers.base import CallOutcome, Provider
from tide_bench.judging.secrets import api_key, protect_url


def make_provider(config: JudgeConfig) -> Provider:
    """Build the provider for ``config``; a missing required key fails here, before any work.
    Credentials in the base URL it sends to (``--base-url``, the configuration's, or the SDK's
    environment variable) are registered for redaction before any request is made."""
    protect_url(config.base_url)
    provider: Provider
    if config.provider == "anthropic":
        from tide_bench.judging.providers.anthropic_api import AnthropicProvider

        provider = AnthropicProvider(config, api_key(config.api_key_env, required=True, provider=config.name))
    elif config.provider == "openai":
        from tide_bench.judging.providers.openai_api import OpenAIProvider

        provider = OpenAIProvider(config, api_key(config.api_key_env, required=True, provider=config.name))
    else:
        from tide_bench.judging.providers.compatible_api import CompatibleProvider

        provider = CompatibleProvider(config, api_key(config.api_key_env, required=False, provider=config.name))
    _ = provider.public_endpoint  # registers the credentials of the URL requests go to
    return provider


__all__ = ["CallOutcome", "Provider", "make_provider"]
