"""Anthropic Messages API: forced tool use for the rating; the system block is cacheable.

The real SDK sends every request through its typed ``messages.create`` (its request validation,
authentication, headers, errors and base-URL rules), on the SDK's own aiohttp transport
(measured faster than httpx's pool under concurrency: docs/benchmarks.md, "Judging"),
asking for the raw answer so that an unexpected body is read as data, never as an SDK model
that fails on access. The transport's hooks cap the answer and keep the key at the configured
origin (:mod:`.transport`). The SDK is imported on the first request
(:attr:`.base.Provider.client`), never by a dry run. Message Batches use the SDK's resources
(:mod:`tide_bench.judging.providers.anthropic_batch`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tide_bench.judging.capabilities import Capabilities, register_provider
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import TOOL_NAME, output_spec
from tide_bench.judging.providers.anthropic_message import interpret_message, not_a_message
from tide_bench.judging.providers.base import Answer, CallOutcome, Provider, read_answer
from tide_bench.judging.providers.endpoints import base_url

DEFAULT_BASE_URL = "https://api.anthropic.com"
# The SDK's messages.create() takes no temperature keyword (anthropic 2.x); in the body it is
# what the API reads, so it goes in extra_body.
BODY_ONLY = ("temperature",)


@register_provider("anthropic")
class AnthropicProvider(Provider):
    capabilities = Capabilities(
        api="Anthropic",
        supports_batch=True,  # Message Batches
        batch_price_factor=0.5,
        prompt_caching="explicit",  # cache_control on the system block
        system_prompt_style="field",
    )
    connection_errors: ClassVar[tuple[tuple[str, str], ...]] = (("anthropic", "APIConnectionError"),)

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self._tool = output_spec(config)
        self._url = base_url(config.base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)

    @classmethod
    def output_spec(cls, tool_name: str, description: str, schema_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        """A tool the call forces (``tool_choice``), whose input is the answer."""
        return {"name": tool_name, "description": description, "input_schema": schema}

    def _make_client(self) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self._key,
            base_url=self._url,
            max_retries=0,
            timeout=self.config.timeout_s,
            http_client=self.sdk_http_client(anthropic),
        )

    def endpoint(self) -> str:
        return self._url

    async def _list_models(self) -> Answer:
        raw = await self.client.models.with_raw_response.list(limit=1)
        return Answer(raw.status_code, raw.headers.get("content-type", ""), await raw.read())

    def params(self, system: str, user: str) -> dict[str, Any]:
        """Request parameters, shared by synchronous calls and Message Batches."""
        system_block: dict[str, Any] = {"type": "text", "text": system}
        if self.config.prompt_caching:
            system_block["cache_control"] = {"type": "ephemeral"}
        params: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": int(self.config.decoding.get("max_tokens", 1024)),
            "system": [system_block],
            "messages": self.messages(system, user),
            "tools": [self._tool],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }
        if "temperature" in self.config.decoding:
            params["temperature"] = float(self.config.decoding["temperature"])
        return params

    async def _rate(self, system: str, user: str) -> CallOutcome:
        params = self.params(system, user)
        body = {name: params.pop(name) for name in BODY_ONLY if name in params}
        raw = await self.client.messages.with_raw_response.create(**params, extra_body=body or None)
        answer = Answer(raw.status_code, raw.headers.get("content-type", ""), await raw.read())
        message, problem = read_answer(answer, self.api, self.public_endpoint)
        if message is None or message.get("type") == "error" or "content" not in message:
            return CallOutcome(rejected=problem or not_a_message(message, self.public_endpoint), usage_reported=False)
        return interpret_message(message)

    async def judge_batch(self, session: Any, plan: Any) -> list[dict[str, Any]]:
        from tide_bench.judging.providers.anthropic_batch import judge_batch

        return await judge_batch(session, plan)
