"""Two rules every judge request obeys, whichever client sends it.

**Answers are read up to a cap.** A server controls the size of what it sends; a 400 MB answer
read whole costs 1.6 GB of memory per call in flight. Every body (success or error, redirect
pages, batch results) is counted as it arrives and the read stops at ``max_answer_bytes`` (the
judge configuration's, a few MB by default): the item is then unscored, "answer too large".
A declared ``Content-Length`` over the cap is refused before any byte is read, and a compressed
body is counted as it inflates, so a small gzip bomb is stopped at the same cap.

**Credentials stay with the configured origin.** The key (bearer, ``x-api-key``) and the user
info of the base URL are sent to the scheme, host and port the configuration names, and to no
other: a redirect to another origin is refused by default (:class:`RedirectRefused`, naming both
hosts: a judge that forwards clinical text elsewhere is a decision, not a default), and when
allowed (``allow_cross_origin_redirects``) it is followed without any credential. Redirects
within the origin are followed as before.

The SDK providers get both rules from :class:`SdkGuard`'s httpx event hooks (the public hook
interface of the SDKs' HTTP clients); the lean aiohttp path (:mod:`.compatible_api`) applies
them itself with :func:`read_capped` and :func:`check_redirect`.
"""

from __future__ import annotations

import contextvars
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from tide_bench.core.secrets import known_secrets

__all__ = [
    "AnswerTooLarge",
    "RedirectRefused",
    "SdkGuard",
    "answer_limit",
    "check_redirect",
    "origin",
    "read_capped",
    "transport_refusal",
]

DEFAULT_PORTS = {"http": 80, "https": 443}
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key", "cookie")
_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("tide_bench_answer_limit", default=None)


class AnswerTooLarge(Exception):
    """The server sent (or announced) more than the cap."""

    def __init__(self, limit: int, seen: int | None = None) -> None:
        size = f"{seen:,} bytes announced" if seen is not None else "more than that"
        super().__init__(
            f"answer too large: the judge server sent over {limit:,} bytes ({size}); "
            "max_answer_bytes in the judge configuration sets the cap"
        )
        self.limit = limit


class RedirectRefused(Exception):
    """A redirect to another origin, not allowed by the configuration."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(
            f"the judge server at {source} redirected to another host, {target}: refused (the request "
            "carries the clinical text and the credentials)"
        )


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port (the default port made explicit): what same-origin compares."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port if port is not None else DEFAULT_PORTS.get(scheme)


def host_of(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}" + ("" if port == DEFAULT_PORTS.get(scheme) else f":{port}")


def check_redirect(configured: str, source: str, target: str, *, allowed: bool) -> bool:
    """Whether a redirect from ``source`` to ``target`` stays at the configured origin. A move
    to another origin raises :class:`RedirectRefused` unless ``allowed``; then it is followed
    without credentials (the caller sends none where this returns False)."""
    if origin(target) == origin(configured):
        return True
    if not allowed:
        raise RedirectRefused(host_of(source), host_of(target))
    return False


@contextmanager
def answer_limit(limit: int) -> Iterator[None]:
    """A larger cap for the answers read inside the block (a batch's results hold one answer per
    request); the SDK hooks read it when the answer's headers arrive."""
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def transport_refusal(exc: BaseException) -> AnswerTooLarge | RedirectRefused | None:
    """The cap or redirect refusal behind ``exc`` (the SDKs wrap what a hook raises in their
    connection error), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AnswerTooLarge | RedirectRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _declared_length(headers: Any) -> int | None:
    value = headers.get("content-length") if headers is not None else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class _Counter:
    """Counts a body's bytes, and its inflated bytes when it is gzip or deflate encoded."""

    def __init__(self, limit: int, encoding: str = "") -> None:
        self.limit, self.raw, self.inflated = limit, 0, 0
        encoding = encoding.strip().lower()
        self._inflate = zlib.decompressobj(wbits=47) if encoding in ("gzip", "x-gzip", "deflate") else None

    def add(self, chunk: bytes) -> None:
        self.raw += len(chunk)
        if self._inflate is not None:
            budget = self.limit - self.inflated + 1
            try:
                out = self._inflate.decompress(chunk, budget)
                self.inflated += len(out)
                while self._inflate.unconsumed_tail and self.inflated <= self.limit:
                    out = self._inflate.decompress(self._inflate.unconsumed_tail, self.limit - self.inflated + 1)
                    self.inflated += len(out)
            except zlib.error:
                self._inflate = None  # not what it says: the client's own decoder will refuse it
        if max(self.raw, self.inflated) > self.limit:
            raise AnswerTooLarge(self.limit)


async def read_capped(chunks: AsyncIterable[bytes], limit: int, headers: Any = None) -> bytes:
    """The whole body, or :class:`AnswerTooLarge` as soon as it passes ``limit`` bytes."""
    declared = _declared_length(headers)
    if declared is not None and declared > limit:
        raise AnswerTooLarge(limit, declared)
    counter, parts = _Counter(limit), []
    async for chunk in chunks:
        counter.add(chunk)
        parts.append(chunk)
    return b"".join(parts)


def _capped(inner: Any, counter: _Counter) -> Any:
    """``inner`` (an httpx byte stream) passing its raw bytes through ``counter``. The class is
    made here, not at import: httpx is loaded with the SDK, on the first request."""
    from httpx2 import AsyncByteStream

    class CappedStream(AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in inner:
                counter.add(chunk)
                yield chunk

        async def aclose(self) -> None:
            await inner.aclose()

    return CappedStream()


class SdkGuard:
    """httpx event hooks for an SDK client: credentials only to ``configured``'s origin, cross-
    origin redirects refused unless ``allow_cross_origin``, every answer read up to ``limit``."""

    def __init__(self, configured: str, limit: int, *, allow_cross_origin: bool) -> None:
        self.configured, self.limit, self.allow_cross_origin = configured, limit, allow_cross_origin

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.on_request], "response": [self.on_response]}

    async def on_request(self, request: Any) -> None:
        if origin(str(request.url)) == origin(self.configured):
            return
        secrets = known_secrets()
        for name in list(request.headers.keys()):
            value = request.headers.get(name, "")
            if name.lower() in CREDENTIAL_HEADERS or any(s in value for s in secrets):
                del request.headers[name]

    async def on_response(self, response: Any) -> None:
        limit = _LIMIT.get() or self.limit
        declared = _declared_length(response.headers)
        if declared is not None and declared > limit:
            raise AnswerTooLarge(limit, declared)
        response.stream = _capped(response.stream, _Counter(limit, response.headers.get("content-encoding", "")))
        if response.has_redirect_location:
            source = str(response.request.url)
            target = str(response.request.url.join(response.headers["location"]))
            check_redirect(self.configured, source, target, allowed=self.allow_cross_origin)
