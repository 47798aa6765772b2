"""A notice before any text goes to a hosted API, and a confirmation the first time (issue 44, V14).

Why: "people will point this at real session transcripts" (clinical re-check V14). A warning in
``--help`` and the docs is not enough. Before ``tide-bench judge`` or ``tide-bench eval`` with an API
backend sends anything to a **hosted** endpoint (one whose host is not this machine or a private
network: not ``localhost``, a loopback, private or link-local address, or a ``.local`` name),
stderr says::

    Sending N conversations to PROVIDER (MODEL); they are subject to its retention terms (docs/privacy.md).

**The first run** to one endpoint and model from one output folder must be confirmed: at a terminal
by answering the prompt, elsewhere (CI, a script, a pipe) by passing ``--yes``; without either it
stops before anything is sent. "First" is per output folder (the judge's ``--out``, the run's
``--output-dir``) and per provider, endpoint and model: the confirmation is recorded in that folder
(:data:`CONSENT_FILE`, which holds no text and no key), so a resumed or repeated run into the same
folder shows the notice and goes on, and a new folder, endpoint or model asks again.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import atomic_write_text
from tide_bench.core.provenance import utc_now

CONSENT_FILE = ".tide-bench-hosted-consent.json"
NOTICE = "Sending {n} conversations to {provider} ({model}); they are subject to its retention terms (docs/privacy.md)."
LOCAL_NAMES = ("localhost",)
LOCAL_SUFFIXES = (".localhost", ".local", ".internal")


def is_hosted(url: str) -> bool:
    """Whether ``url`` leaves this machine and its private network (see the module docstring)."""
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower().rstrip(".")
    if not host or host in LOCAL_NAMES or host.endswith(LOCAL_SUFFIXES):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True  # a public name
    return not (address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified)


def _consents(folder: Path) -> list[dict[str, Any]]:
    path = folder / CONSENT_FILE
    try:
        value = json.loads(path.read_text(encoding="utf-8")) if path.is_file() and not path.is_symlink() else []
    except (OSError, ValueError, RecursionError):
        return []
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def confirm_hosted(
    folder: Path,
    *,
    n: int,
    provider: str,
    endpoint: str,
    model: str,
    yes: bool,
    interactive: bool,
    echo: Callable[[str], None],
    ask: Callable[[str], bool],
) -> bool:
    """Say on ``echo`` (stderr) what will be sent where, and on a first run to a hosted ``endpoint``
    make sure it was confirmed (``yes``, or ``ask`` at a terminal); record the confirmation in
    ``folder``. Returns whether a notice was due (False: nothing to send, or not hosted). Raises
    :class:`ConfigError` (nothing sent) when a first run is not confirmed."""
    if n <= 0 or not is_hosted(endpoint):
        return False
    echo(NOTICE.format(n=n, provider=provider, model=model))
    key = {"provider": provider, "endpoint": endpoint, "model": model}
    known = _consents(folder)
    if any({k: c.get(k) for k in key} == key for c in known):
        return True
    if not yes:
        if not interactive:
            raise ConfigError(
                f"this is the first run from {folder} to the hosted API at {endpoint} ({model}), and nobody is "
                "at a terminal to confirm it: nothing was sent",
                hint="read docs/privacy.md (never send identifiable client text to a hosted API), then pass --yes",
            )
        if not ask("Send them?"):
            raise ConfigError("not confirmed: nothing was sent", hint="pass --yes to confirm without a prompt")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / CONSENT_FILE, json.dumps([*known, key | {"confirmed_at": utc_now()}], indent=2))
    return True
