"""What every provider adapter shares: its declared capabilities, reading an HTTP answer without
trusting its shape, the answer cap and redirect rule (:mod:`.transport`), the pre-flight check,
and a client made on first use.

A provider is one class, registered under its protocol's name with
:func:`tide_bench.judging.capabilities.register_provider`; its :class:`.Capabilities` tell the
rest of the judge what it supports (batch, prompt caching, where the system text goes), and
its methods say how a structured answer is requested (:meth:`Provider.output_spec`) and which
failures are worth sending again (:meth:`Provider.retryable`).

Adapters call their SDK's typed methods (``messages.create``, ``chat.completions.create``) for the
*raw* response and parse the JSON themselves: an SDK model
built from an unexpected body (a gateway's HTML page, a local server's partial answer) fails
in ways no caller can anticipate (``AttributeError`` deep in the SDK), while a dict can be
checked key by key. Non-2xx statuses still raise the SDK's exceptions (or, on the lean
OpenAI-compatible path, :class:`.compatible_api.StatusError`), which the retry layer classifies.

The client, and with it the SDK's import (2-4 s for the Anthropic SDK), is made when the
first request is sent: building a provider checks the key and nothing else, so a dry run, a
run whose judgments are all cached, and ``--help`` never import an SDK.
"""

from __future__ import annotations

import asyncio
import json
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from tide_bench.core.errors import ConfigError
from tide_bench.judging.capabilities import Capabilities
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.outcome import CallOutcome
from tide_bench.judging.providers.endpoints import has_credentials
from tide_bench.judging.providers.transport import AnswerTooLarge, RedirectRefused, SdkGuard, transport_refusal
from tide_bench.judging.retry import FatalJudgeError, TransientFailure, call_with_retries, describe, standard_retryable
from tide_bench.judging.secrets import protect_url

__all__ = ["Answer", "CallOutcome", "Provider", "load_json", "read_answer"]
NO_MODELS_ENDPOINT = (404, 405, 501)  # gateways and proxies that serve only the messages route


@dataclass(frozen=True)
class Answer:
    """An HTTP answer reduced to what interpretation needs."""

    status: int
    content_type: str
    body: bytes


def load_json(body: bytes | str) -> Any:
    """Parse JSON fast (orjson); what orjson refuses (NaN, a byte-order mark, another UTF, a lone
    surrogate escape such as ``"\\ud800"``) is read by the standard parser, so an answer means
    what it meant before, except that a lone surrogate becomes ``?``: text that cannot be written
    as UTF-8 would otherwise stop the run when its judgment is cached or written."""
    try:
        return orjson.loads(body)
    except ValueError:
        return _encodable(json.loads(body))


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    return value


def read_answer(answer: Answer, api: str, endpoint: str) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object of an answer, or why the answer is not one from ``api``."""
    try:
        value = load_json(answer.body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        value = None
        shape = f"{answer.content_type or 'no content type'}, {len(answer.body)} bytes, not JSON"
    else:
        shape = f"JSON {type(value).__name__}" if not isinstance(value, dict) else ""
    if isinstance(value, dict):
        return value, None
    return None, f"the server at {endpoint} did not answer like the {api} API (HTTP {answer.status}, {shape})"


class Provider(ABC):
    name: ClassVar[str] = "?"  # set by register_provider
    capabilities: ClassVar[Capabilities] = Capabilities(api="?")
    connection_errors: ClassVar[tuple[tuple[str, str], ...]] = ()  # (SDK module, exception class): retried

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        self.config = config
        self._key = key  # held in memory only
        self._client: Any = None
        self._public: str | None = None

    @property
    def api(self) -> str:
        """Named in messages about answers that are not from this API."""
        return self.capabilities.api

    @classmethod
    def output_spec(cls, tool_name: str, description: str, schema_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        """What every call sends besides the messages to force an answer that follows ``schema``:
        by default the OpenAI structured-output ``response_format``."""
        return {"type": "json_schema", "json_schema": {"name": schema_name, "strict": True, "schema": schema}}

    def messages(self, system: str, user: str) -> list[dict[str, Any]]:
        """The chat messages of one call: the system text first unless the protocol takes it as
        a field of its own (``system_prompt_style``)."""
        own = [{"role": "user", "content": user}]
        return (
            own if self.capabilities.system_prompt_style == "field" else [{"role": "system", "content": system}, *own]
        )

    def retryable(self, exc: BaseException) -> bool:
        """Whether a failure without an HTTP status (a dropped connection, a timeout) may succeed
        when sent again: the standard connection errors and the SDK's own (``connection_errors``).
        A refused redirect or an answer over the cap is never sent again. Statuses are judged by
        :func:`.retry.call_with_retries` for every API alike."""
        if transport_refusal(exc) is not None:
            return False
        return standard_retryable(exc) or any(_sdk_error(module, name, exc) for module, name in self.connection_errors)

    async def judge_batch(self, session: Any, plan: Any) -> list[dict[str, Any]]:
        """Judge ``plan`` through the protocol's batch API (``capabilities.supports_batch``)."""
        raise ConfigError(f"batch mode is not implemented for the {self.name} provider", field="mode")

    @property
    def client(self) -> Any:
        """The HTTP or SDK client, made (and its SDK imported) on first use, inside the event loop."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @abstractmethod
    def _make_client(self) -> Any: ...

    def guard(self) -> SdkGuard:
        """The answer cap and redirect rule as httpx event hooks, for an SDK's HTTP client."""
        return SdkGuard(
            self.endpoint(),
            self.config.max_answer_bytes,
            allow_cross_origin=self.config.allow_cross_origin_redirects,
        )

    def sdk_http_client(self, sdk: Any) -> Any:
        """The HTTP client an SDK provider hands its SDK (``anthropic``, ``openai``): the SDK's own
        aiohttp transport (measured faster under concurrency), or its httpx one when the base URL
        carries user info (the aiohttp transport cannot send it beside a key), with
        :meth:`guard`'s hooks either way."""
        hooks = self.guard().hooks()
        if has_credentials(self.endpoint()):
            return sdk.DefaultAsyncHttpxClient(event_hooks=hooks)
        return sdk.DefaultAioHttpClient(event_hooks=hooks)

    async def rate(self, system: str, user: str) -> CallOutcome:
        """One rating call. An answer over the cap leaves the item unscored ("answer too large");
        a refused redirect stops the run, naming both hosts. ``timeout_s`` bounds the whole call,
        not each read: a server that sends a byte a minute cannot hold a worker for ever (the SDKs'
        timeouts are per read)."""
        try:
            async with asyncio.timeout(self.config.timeout_s):
                return await self._rate(system, user)
        except TimeoutError:
            raise TimeoutError(f"no whole answer within {self.config.timeout_s:g} s") from None
        except Exception as exc:
            refusal = transport_refusal(exc)
            if isinstance(refusal, AnswerTooLarge):
                return CallOutcome(rejected=str(refusal), usage_reported=False)
            if isinstance(refusal, RedirectRefused):
                raise _redirect_error(refusal) from None
            raise

    @abstractmethod
    async def _rate(self, system: str, user: str) -> CallOutcome: ...

    @abstractmethod
    async def _list_models(self) -> Answer: ...

    @abstractmethod
    def endpoint(self) -> str:
        """The base URL requests go to (known without making the client)."""

    @property
    def public_endpoint(self) -> str:
        """The base URL as it may be shown and stored: no user info, no query string (its
        credentials registered for redaction); worked out once, every answer names it."""
        if self._public is None:
            self._public = protect_url(self.endpoint()) or ""
        return self._public

    async def _models_or_status(self) -> Answer:
        try:
            async with asyncio.timeout(self.config.timeout_s):
                return await self._list_models()
        except Exception as exc:  # the SDK's status errors: a missing route is an answer here, not a failure
            status = getattr(exc, "status_code", None)
            if status in NO_MODELS_ENDPOINT:
                return Answer(status, "", b"")
            raise

    async def preflight(self) -> str | None:
        """Fail before any work when the server is unreachable, rejects the key or is not this
        API. Returns a note when the server has no model list, so the check was skipped."""
        where = self.public_endpoint
        try:
            answer, _ = await call_with_retries(
                self._models_or_status, max_retries=2, base_s=0.5, cap_s=2.0, retryable=self.retryable
            )
        except TransientFailure as exc:
            raise FatalJudgeError(
                f"cannot reach the judge API at {where}: {exc}", hint="check --base-url and the network"
            ) from None
        except FatalJudgeError:
            raise
        except Exception as exc:  # anything else the SDK raised: one clear error, never a traceback
            refusal = transport_refusal(exc)
            if isinstance(refusal, RedirectRefused):
                raise _redirect_error(refusal) from None
            raise FatalJudgeError(
                f"the judge API at {where} could not be checked: {describe(exc)}",
                hint="check --base-url, or pass --no-preflight",
            ) from None
        if answer.status in NO_MODELS_ENDPOINT:
            return f"the server at {where} has no GET /v1/models (HTTP {answer.status}): pre-flight check skipped"
        listing, problem = read_answer(answer, self.api, where)
        if problem is None and not isinstance((listing or {}).get("data"), list):
            problem = f"the server at {where} did not answer like the {self.api} API (its model list has no 'data')"
        if problem:
            raise FatalJudgeError(
                problem,
                hint="check --base-url: it must point at the API (OpenAI-compatible servers usually end in /v1)",
            )
        return None

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _redirect_error(refusal: RedirectRefused) -> FatalJudgeError:
    return FatalJudgeError(
        str(refusal),
        hint="point --base-url at the final address, or allow it with --allow-cross-origin-redirects "
        "(judge configuration: allow_cross_origin_redirects: true); credentials are then not sent there",
    )


def _sdk_error(module: str, name: str, exc: BaseException) -> bool:
    """Whether ``exc`` is ``module.name`` of an SDK already imported (an SDK that raised is
    imported; looking one up must not import it: that costs seconds)."""
    error = getattr(sys.modules.get(module), name, None)
    return isinstance(error, type) and isinstance(exc, error)
