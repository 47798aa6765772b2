"""Anthropic Messages API: forced tool use for the rating; the system block is cacheable."""

from __future__ import annotations

from typing import Any

from anthropic import AsyncAnthropic

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import TOOL_DESCRIPTION, TOOL_NAME, rating_schema
from tide_bench.judging.providers.base import CallOutcome, Provider
from tide_bench.judging.usage import Usage


class AnthropicProvider(Provider):
    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self.client = AsyncAnthropic(api_key=key, base_url=config.base_url, max_retries=0, timeout=config.timeout_s)
        self._schema = rating_schema(config)

    def endpoint(self) -> str:
        return str(self.client.base_url)

    async def _list_models(self) -> Any:
        return await self.client.models.list(limit=1)

    def params(self, system: str, user: str) -> dict[str, Any]:
        """Request parameters, shared by synchronous calls and Message Batches."""
        system_block: dict[str, Any] = {"type": "text", "text": system}
        if self.config.prompt_caching:
            system_block["cache_control"] = {"type": "ephemeral"}
        params: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": int(self.config.decoding.get("max_tokens", 1024)),
            "system": [system_block],
            "messages": [{"role": "user", "content": user}],
            "tools": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": self._schema}],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }
        if "temperature" in self.config.decoding:
            params["temperature"] = float(self.config.decoding["temperature"])
        return params

    async def rate(self, system: str, user: str) -> CallOutcome:
        params = self.params(system, user)
        # anthropic 2.x rejects temperature as a keyword argument: it travels in the body.
        body = {"temperature": params.pop("temperature")} if "temperature" in params else None
        message = await self.client.messages.create(**params, extra_body=body)
        return interpret_message(message)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def interpret_message(message: Any) -> CallOutcome:
    """Turn a Messages API response (object or dict, sync or batch) into a :class:`CallOutcome`."""
    usage_obj = _get(message, "usage") or {}
    usage = Usage(
        input_tokens=int(_get(usage_obj, "input_tokens", 0) or 0),
        output_tokens=int(_get(usage_obj, "output_tokens", 0) or 0),
        cache_read_tokens=int(_get(usage_obj, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(_get(usage_obj, "cache_creation_input_tokens", 0) or 0),
        calls=1,
    )
    stop = _get(message, "stop_reason")
    blocks = _get(message, "content") or []
    text = " ".join(str(_get(b, "text", "")) for b in blocks if _get(b, "type") == "text").strip()
    if stop == "refusal":
        return CallOutcome(refusal=f"stop_reason=refusal {text[:200]}".strip(), usage=usage)
    for block in blocks:
        if _get(block, "type") == "tool_use" and _get(block, "name") == TOOL_NAME:
            return CallOutcome(payload=_get(block, "input"), usage=usage)
    if stop == "max_tokens":
        return CallOutcome(malformed="output truncated at max_tokens before the tool call completed", usage=usage)
    return CallOutcome(malformed=f"no {TOOL_NAME} tool call in the response (stop_reason={stop}); text: {text[:200]!r}", usage=usage)
