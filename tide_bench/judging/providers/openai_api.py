"""OpenAI Chat Completions and any OpenAI-compatible server: structured output (JSON schema)."""

from __future__ import annotations

import json
from typing import Any

from openai import AsyncOpenAI

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import rating_schema
from tide_bench.judging.providers.base import CallOutcome, Provider
from tide_bench.judging.usage import Usage


class OpenAIProvider(Provider):
    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self.client = AsyncOpenAI(api_key=key or "EMPTY", base_url=config.base_url, max_retries=0, timeout=config.timeout_s)
        self._format = {"type": "json_schema", "json_schema": {"name": "tide_rating", "strict": True, "schema": rating_schema(config)}}

    def endpoint(self) -> str:
        return str(self.client.base_url)

    async def _list_models(self) -> Any:
        return await self.client.models.list()

    async def rate(self, system: str, user: str) -> CallOutcome:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": self._format,
            "max_tokens": int(self.config.decoding.get("max_tokens", 1024)),
        }
        if "temperature" in self.config.decoding:
            kwargs["temperature"] = float(self.config.decoding["temperature"])
        completion = await self.client.chat.completions.create(**kwargs)
        return interpret_completion(completion)


def interpret_completion(completion: Any) -> CallOutcome:
    u = completion.usage
    cached = 0
    if u is not None and getattr(u, "prompt_tokens_details", None) is not None:
        cached = int(getattr(u.prompt_tokens_details, "cached_tokens", 0) or 0)
    usage = Usage(
        input_tokens=(int(u.prompt_tokens) - cached) if u else 0,
        output_tokens=int(u.completion_tokens) if u else 0,
        cache_read_tokens=cached,
        calls=1,
    )
    if not completion.choices:
        return CallOutcome(malformed="response has no choices", usage=usage)
    choice = completion.choices[0]
    if choice.finish_reason == "content_filter":
        return CallOutcome(filtered="finish_reason=content_filter", usage=usage)
    refusal = getattr(choice.message, "refusal", None)
    if refusal:
        return CallOutcome(refusal=str(refusal)[:300], usage=usage)
    content = choice.message.content or ""
    if choice.finish_reason == "length":
        return CallOutcome(malformed="output truncated at max_tokens", usage=usage)
    try:
        return CallOutcome(payload=json.loads(content), usage=usage)
    except json.JSONDecodeError as exc:
        return CallOutcome(malformed=f"output is not JSON ({exc.msg}): {content[:200]!r}", usage=usage)
