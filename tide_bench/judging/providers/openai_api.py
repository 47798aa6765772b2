"""OpenAI Chat Completions and any OpenAI-compatible server: structured output (JSON schema)."""

from __future__ import annotations

import json
from typing import Any

from openai import AsyncOpenAI

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import output_spec
from tide_bench.judging.providers.base import Answer, CallOutcome, Provider, read_answer
from tide_bench.judging.providers.fields import count, text_of, usage_from
from tide_bench.judging.secrets import redact


class OpenAIProvider(Provider):
    api = "OpenAI"

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self.client = AsyncOpenAI(
            api_key=key or "EMPTY", base_url=config.base_url, max_retries=0, timeout=config.timeout_s
        )
        self._format = output_spec(config)

    def endpoint(self) -> str:
        return str(self.client.base_url)

    async def _list_models(self) -> Answer:
        raw = await self.client.models.with_raw_response.list()
        return Answer(raw.status_code, raw.headers.get("content-type", ""), raw.content)

    async def rate(self, system: str, user: str) -> CallOutcome:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": self._format,
            "max_tokens": int(self.config.decoding.get("max_tokens", 1024)),
        }
        if "temperature" in self.config.decoding:
            kwargs["temperature"] = float(self.config.decoding["temperature"])
        raw = await self.client.chat.completions.with_raw_response.create(**kwargs)
        answer = Answer(raw.status_code, raw.headers.get("content-type", ""), raw.content)
        completion, problem = read_answer(answer, self.api, self.public_endpoint)
        if completion is None or "choices" not in completion:
            error = (completion or {}).get("error")
            detail = f": {redact(str(error))[:200]}" if error else " (no 'choices')"
            return CallOutcome(
                rejected=problem or f"the server at {self.public_endpoint} did not answer like the OpenAI API{detail}",
                usage_reported=False,
            )
        return interpret_completion(completion)


def interpret_completion(completion: dict[str, Any]) -> CallOutcome:
    """Turn a Chat Completions answer (a JSON object of any shape) into a :class:`CallOutcome`."""
    u = completion.get("usage")
    u = u if isinstance(u, dict) else None
    details = (u or {}).get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else None
    prompt = count((u or {}).get("prompt_tokens"))
    usage, reported = usage_from(
        u,
        input_tokens=None if prompt is None else max(0, prompt - (cached or 0)),
        output_tokens=(u or {}).get("completion_tokens"),
        cache_read_tokens=cached,
    )
    served = completion.get("model")
    base = {"usage": usage, "usage_reported": reported, "served_model": served if isinstance(served, str) else None}
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        return CallOutcome(malformed="response has no choices", **base)
    choice = choices[0]
    if not isinstance(choice, dict):
        return CallOutcome(malformed=f"choices[0] is a {type(choice).__name__}, not an object", **base)
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        return CallOutcome(filtered="finish_reason=content_filter", **base)
    message = choice.get("message")
    if not isinstance(message, dict):
        return CallOutcome(malformed="choices[0] has no message", **base)
    refusal = message.get("refusal")
    if refusal:
        return CallOutcome(refusal=str(refusal)[:300], **base)
    if finish == "length":
        return CallOutcome(malformed="output truncated at max_tokens", **base)
    content = message.get("content")
    if not isinstance(content, str):
        return CallOutcome(malformed=f"message content is {type(content).__name__}, not text", **base)
    try:
        return CallOutcome(payload=json.loads(content), **base)
    except (ValueError, RecursionError) as exc:
        return CallOutcome(
            malformed=f"output is not JSON ({getattr(exc, 'msg', exc)}): {text_of(content)[:200]!r}", **base
        )
