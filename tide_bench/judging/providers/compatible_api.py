"""OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LM Studio...): a lean HTTP path.

A local judge answers in tens of milliseconds with hundreds of requests in flight, so the
client's own CPU decides the throughput. Measured against the fake server (10 ms latency, 256
in flight, docs/benchmarks.md "Judging"): the OpenAI SDK costs ~3 ms of CPU per call
on httpx and ~1.1-1.3 ms on its aiohttp transport, a plain aiohttp session ~0.25 ms. So this
path posts a body encoded once per configuration (:func:`chat_body`, :class:`.body.RequestBody`)
with aiohttp directly and reads the answer with the same code as the SDK path
(:func:`.openai_api.read_completion`); OpenAI itself keeps its SDK (:mod:`.openai_api`).

What the SDK did and this path keeps: ``Authorization: Bearer KEY`` ("EMPTY" without a key),
the request timeout (``timeout_s``), proxies from the environment (``HTTP(S)_PROXY``,
``NO_PROXY``), redirects within the configured origin. As for the SDKs (:mod:`.transport`),
answers are read up to ``max_answer_bytes`` and a redirect to another origin is refused unless
the configuration allows it, and then followed without credentials.
A non-2xx answer raises :class:`StatusError` (``status_code``, ``headers`` for
``retry-after``, a short message that never includes an HTML page); a refused or dropped
connection raises :class:`ServerUnreachable` (a ``ConnectionError``) and a timeout
``TimeoutError``, which the retry layer treats as the SDKs' connection errors. User info in the
base URL (``http://user:pass@proxy/v1``) is sent as HTTP basic authentication, as httpx did,
to that origin only, and never shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from tide_bench import __version__
from tide_bench.judging.capabilities import Capabilities, register_provider
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.providers.base import Answer, CallOutcome, Provider, load_json
from tide_bench.judging.providers.body import RequestBody
from tide_bench.judging.providers.endpoints import base_url
from tide_bench.judging.providers.openai_api import DEFAULT_BASE_URL, chat_params, read_completion
from tide_bench.judging.providers.transport import check_redirect, read_capped

REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 10  # as aiohttp and httpx
ERROR_BODY_BYTES = 65_536  # an error answer is read for its message only


def chat_body(config: JudgeConfig, system: str) -> RequestBody:
    """The Chat Completions request of :func:`.openai_api.chat_params`, everything but the
    item's message encoded once."""
    fixed = chat_params(config, [{"role": "system", "content": system}])
    before = fixed.pop("messages")
    return RequestBody(fixed, before)


class StatusError(Exception):
    """A non-2xx answer of an OpenAI-compatible server."""

    def __init__(self, status: int, headers: Mapping[str, str], message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.headers = headers
        self.message = message


class ServerUnreachable(ConnectionError):
    """The connection was refused, reset or dropped before an answer came."""


def status_message(status: int, content_type: str, body: bytes) -> str:
    """What a failed request says: the API's error message when it sent one, else the shape
    of the body (a gateway's HTML page is never quoted)."""
    try:
        value = load_json(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        value = None
    error = value.get("error") if isinstance(value, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str) and message:
        return f"Error code: {status} - {message[:500]}"
    return f"Error code: {status} ({content_type or 'no content type'}, {len(body)} bytes)"


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))


def _env_proxy(url: str) -> dict[str, Any]:
    """``proxy``/``proxy_auth`` request arguments from HTTP(S)_PROXY and NO_PROXY, as httpx honoured them."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


async def _head(content: Any, limit: int) -> bytes:
    """At most ``limit`` bytes of a body (an error answer is read for its message only)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in content.iter_chunked(limit):
        parts.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


@register_provider("openai-compatible")
class CompatibleProvider(Provider):
    capabilities = Capabilities(api="OpenAI", needs_base_url=True, key_required=False)

    def __init__(self, config: JudgeConfig, key: str | None) -> None:
        super().__init__(config, key)
        self._url = base_url(config.base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        self._target, self._basic = _split_credentials(self._url)
        self._proxy: dict[str, Any] = {}
        self._credentials: dict[str, str] = {}
        self._body: tuple[str, RequestBody] | None = None

    def _make_client(self) -> Any:
        import aiohttp

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"tide-bench/{__version__}",
        }
        # Sent with each request to the configured origin only (never as session defaults,
        # which a redirect to another host would carry along).
        self._credentials = {
            "Authorization": aiohttp.BasicAuth(*self._basic).encode()
            if self._basic
            else f"Bearer {self._key or 'EMPTY'}"
        }
        self._proxy = _env_proxy(self._target)
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # the engine's workers bound what is in flight
            timeout=aiohttp.ClientTimeout(total=self.config.timeout_s),
            headers=headers,
            # The environment's proxy is looked up once (above): trust_env would look it up, and
            # read ~/.netrc, in a thread on every request, and a netrc entry would clash with the key.
            trust_env=False,
        )

    def endpoint(self) -> str:
        return self._url

    def body(self, system: str, user: str) -> bytes:
        """One call's request body; the fixed part is encoded once per system text."""
        if self._body is None or self._body[0] != system:
            self._body = (system, chat_body(self.config, system))
        return self._body[1].render(user)

    async def _send(self, method: str, path: str, body: bytes | None = None) -> Answer:
        import aiohttp

        try:
            return await self._follow(self.client, method, self._target + path, body)
        except TimeoutError:  # asyncio.TimeoutError, and aiohttp.ServerTimeoutError with it
            raise TimeoutError(f"no answer within {self.config.timeout_s:g} s") from None
        except aiohttp.ClientError as exc:
            raise ServerUnreachable(f"{type(exc).__name__}: {exc}") from None

    async def _follow(self, session: Any, method: str, url: str, body: bytes | None) -> Answer:
        """Send, following redirects by hand: within the configured origin with credentials,
        to another origin only when allowed and then without them."""
        own, proxy = True, self._proxy
        for _ in range(MAX_REDIRECTS + 1):
            headers = self._credentials if own else {}
            async with session.request(
                method, url, data=body, headers=headers, allow_redirects=False, **proxy
            ) as response:
                location = response.headers.get("Location") if response.status in REDIRECTS else None
                if location is None:
                    return await self._answer(response)
                target = urljoin(url, location)
                own = check_redirect(self._target, url, target, allowed=self.config.allow_cross_origin_redirects)
                if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                    method, body = "GET", None  # as browsers, aiohttp and httpx do
                url, proxy = target, _env_proxy(target)
        raise StatusError(310, {}, f"more than {MAX_REDIRECTS} redirects")

    async def _answer(self, response: Any) -> Answer:
        content_type = response.headers.get("Content-Type", "")
        if response.status >= 400:
            raw = await _head(response.content, ERROR_BODY_BYTES)
            message = status_message(response.status, content_type, raw)
            raise StatusError(response.status, response.headers.copy(), message)
        raw = await read_capped(response.content.iter_chunked(65_536), self.config.max_answer_bytes, response.headers)
        return Answer(response.status, content_type, raw)

    async def _list_models(self) -> Answer:
        return await self._send("GET", "models")

    async def _rate(self, system: str, user: str) -> CallOutcome:
        answer = await self._send("POST", "chat/completions", self.body(system, user))
        return read_completion(answer, self.api, self.public_endpoint)
