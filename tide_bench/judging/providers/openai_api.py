"""OpenAI Chat Completions: structured output (JSON schema), through the OpenAI SDK.

The reading of the answer is shared with the lean path for OpenAI-compatible servers
(:mod:`.compatible_api`); only the transport differs. For OpenAI itself the real SDK sends the
request through its typed ``chat.completions.create`` (its request validation, authentication,
organisation headers, errors and base-URL rules), on its own aiohttp transport, asking for the
raw answer; the transport's hooks cap the answer and keep the key at the configured origin
(:mod:`.transport`). The SDK is imported on the first request.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tide_bench.judging.capabilities import Capabilities, register_provider
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import output_spec
from tide_bench.judging.providers.base import Answer, CallOutcome, Provider, load_json, read_answer
from tide_bench.judging.providers.endpoints import base_url
from tide_bench.judging.providers.fields import count, text_of, usage_from
from tide_bench.judging.secrets import redact

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def chat_params(config: JudgeConfig, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chat Completions request: the messages, the JSON schema and the decoding settings."""
    params: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "response_format": output_spec(config),
        "max_tokens": int(config.decoding.get("max_tokens", 1024)),
    }
    if "temperature" in config.decoding:
        params["temperature"] = float(config.decoding["temperature"])
    return params


def read_completion(answer: Answer, api: str, where: str) -> CallOutcome:
    """A Chat Completions answer as a :class:`CallOutcome` (any body: never raises)."""
    completion, problem = read_answer(answer, api, where)
    if completion is None or "choices" not in completion:
        error = (completion or {}).get("error")
        detail = f": {redact(str(error))[:200]}" if error else " (no 'choices')"
        return CallOutcome(
            rejected=problem or f"the server at {where} did not answer like the {api} API{detail}",
            usage_reported=False,
        )
    return interpret_completion(completion)


@register_provider("openai")
class OpenAIProvider(Provider):
    capabilities = Capabilities(
        api="OpenAI",
        # OpenAI's Batch API is 50 % off but not implemented: sync mode only.
        prompt_caching="automatic",
        system_prompt_style="message",
    )
    connection_errors: ClassVar[tuple[tuple[str, str], ...]] = (("openai", "APIConnectionError"),)

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self._url = base_url(config.base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)

    def _make_client(self) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=self._key or "EMPTY",
            base_url=self._url,
            max_retries=0,
            timeout=self.config.timeout_s,
            http_client=self.sdk_http_client(openai),
        )

    def endpoint(self) -> str:
        return self._url

    async def _list_models(self) -> Answer:
        raw = await self.client.models.with_raw_response.list()
        return Answer(raw.status_code, raw.headers.get("content-type", ""), raw.content)

    async def _rate(self, system: str, user: str) -> CallOutcome:
        params = chat_params(self.config, self.messages(system, user))
        raw = await self.client.chat.completions.with_raw_response.create(**params)
        answer = Answer(raw.status_code, raw.headers.get("content-type", ""), raw.content)
        return read_completion(answer, self.api, self.public_endpoint)


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
        return CallOutcome(payload=load_json(content), **base)
    except (ValueError, RecursionError) as exc:
        return CallOutcome(
            malformed=f"output is not JSON ({getattr(exc, 'msg', exc)}): {text_of(content)[:200]!r}", **base
        )
