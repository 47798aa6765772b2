"""Anthropic Messages API: forced tool use for the rating; the system block is cacheable.

The real SDK sends every request (its authentication, headers, errors and base-URL rules),
with two choices made for throughput, both measured (docs/benchmarks.md, "Judging at scale"):
the SDK's own aiohttp transport (``DefaultAioHttpClient``) instead of httpx's connection pool,
and the request body encoded once per configuration (:class:`.body.RequestBody`) and sent
with the SDK's ``client.post``, instead of ``messages.create`` deep-copying, transforming and
encoding the 15 KB of fixed request on every call. The SDK is imported on the first request
(:attr:`.base.Provider.client`), never by a dry run. Message Batches use the SDK's resources
(:mod:`tide_bench.judging.providers.anthropic_batch`).
"""

from __future__ import annotations

from typing import Any

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import TOOL_NAME, output_spec
from tide_bench.judging.providers.base import Answer, CallOutcome, Provider, read_answer
from tide_bench.judging.providers.body import RequestBody
from tide_bench.judging.providers.endpoints import base_url, has_credentials
from tide_bench.judging.providers.fields import text_of, usage_from
from tide_bench.judging.secrets import redact

DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicProvider(Provider):
    api = "Anthropic"

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self._tool = output_spec(config)
        self._url = base_url(config.base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)

    def _make_client(self) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self._key,
            base_url=self._url,
            max_retries=0,
            timeout=self.config.timeout_s,
            http_client=None if has_credentials(self._url) else anthropic.DefaultAioHttpClient(),
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
            "messages": [{"role": "user", "content": user}],
            "tools": [self._tool],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }
        if "temperature" in self.config.decoding:
            params["temperature"] = float(self.config.decoding["temperature"])
        return params

    def _fixed_body(self, system: str) -> RequestBody:
        # The SDK's messages.create() rejects temperature as a keyword argument (anthropic 2.x);
        # in the body it is what the API reads.
        fixed = self.params(system, "")
        del fixed["messages"]
        return RequestBody(fixed)

    async def rate(self, system: str, user: str) -> CallOutcome:
        import httpx2

        url = self._url + "v1/messages"  # absolute: the SDK then skips merging it with its base URL
        raw = await self.client.post(url, cast_to=httpx2.Response, content=self.body(system, user))
        answer = Answer(raw.status_code, raw.headers.get("content-type", ""), await raw.aread())
        message, problem = read_answer(answer, self.api, self.public_endpoint)
        if message is None or message.get("type") == "error" or "content" not in message:
            return CallOutcome(rejected=problem or _not_a_message(message, self.public_endpoint), usage_reported=False)
        return interpret_message(message)


def _not_a_message(answer: dict[str, Any] | None, where: str) -> str:
    error = (answer or {}).get("error")
    detail = f": {redact(str(error))[:200]}" if error else " (no 'content')"
    return f"the server at {where} did not answer like the Anthropic API{detail}"


def interpret_message(message: Any) -> CallOutcome:
    """Turn a Messages API response (dict, or SDK object in batch results) into a :class:`CallOutcome`.

    Nothing in ``message`` is trusted: a missing or mistyped field becomes a ``malformed``
    outcome or a zero count, never an exception.
    """
    usage_obj = _get(message, "usage")
    usage, reported = usage_from(
        usage_obj,
        input_tokens=_get(usage_obj, "input_tokens"),
        output_tokens=_get(usage_obj, "output_tokens"),
        cache_read_tokens=_get(usage_obj, "cache_read_input_tokens"),
        cache_write_tokens=_get(usage_obj, "cache_creation_input_tokens"),
    )
    served = _get(message, "model")
    base = {"usage": usage, "usage_reported": reported, "served_model": served if isinstance(served, str) else None}
    stop = _get(message, "stop_reason")
    blocks = _get(message, "content")
    blocks = blocks if isinstance(blocks, list) else []
    text = " ".join(text_of(_get(b, "text")) for b in blocks if _get(b, "type") == "text").strip()
    if stop == "refusal":
        return CallOutcome(refusal=f"stop_reason=refusal {text[:200]}".strip(), **base)
    for block in blocks:
        if _get(block, "type") == "tool_use" and _get(block, "name") == TOOL_NAME:
            return CallOutcome(payload=_get(block, "input"), **base)
    if stop == "max_tokens":
        return CallOutcome(malformed="output truncated at max_tokens before the tool call completed", **base)
    return CallOutcome(
        malformed=f"no {TOOL_NAME} tool call in the response (stop_reason={text_of(stop)[:40]}); text: {text[:200]!r}",
        **base,
    )


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    try:
        return getattr(obj, key, None)
    except Exception:  # an SDK object built from a strange batch line can fail on access: treat as absent
        return None
