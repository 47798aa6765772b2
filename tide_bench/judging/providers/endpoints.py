"""The base URL a provider sends to, known without making its client."""

from __future__ import annotations

import os
from urllib.parse import urlsplit


def base_url(configured: str | None, env_var: str, default: str) -> str:
    """``--base-url`` or the configuration's, else the SDK's environment variable, else the API's
    own address; with one trailing slash, as the SDKs show it."""
    url = configured or os.environ.get(env_var) or default
    return url.rstrip("/") + "/"


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries user info (``http://user:pass@proxy/v1``). The SDKs' aiohttp
    transport cannot send such a URL (aiohttp refuses credentials in the URL next to an
    Authorization header), so those requests go through the SDK's default httpx transport."""
    parts = urlsplit(url)
    return parts.username is not None or parts.password is not None
