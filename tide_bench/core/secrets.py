"""One redactor for every stage: keys, tokens and credentials never reach a file, log or message.

Secrets enter tide-bench three ways, and each has its own guard here:

* **API keys in the environment** (the judge's key, an HF token): :func:`redact` replaces the
  value of every known key variable, of any variable a judge configuration names
  (``extra_vars``), and of every secret registered while in use (:func:`register_secret`).
  Registration exists because an error message is often formatted far from the code that
  knows which variable held the key (inside a retry loop, an SDK exception): a key that was
  read once is redacted everywhere in this process, whoever writes the text.
* **Credentials in a URL** (``http://user:pass@proxy/v1?api-key=...``): :func:`redact_url`
  keeps scheme, host, port and path and drops user info, query and fragment; :func:`redact`
  masks user info and query strings of URLs inside free text.
* **Secrets echoed back by a server**: a judge server may repeat the key, the basic-auth header
  or the URL's password inside a *successful* answer (a rationale quoting what it received).
  :func:`scrub_json` replaces every secret this process knows (the values :func:`redact` knows,
  with the encoded forms a header carries) and nothing else: the answer's own words stay exactly
  as written (no credential-shaped pattern is applied, so "basic needs" is not masked). Every
  judge answer passes through it once, where it is read (``judging.outcome.CallOutcome``).
* **Tokens in lm-eval model arguments** (``token=hf_...``, ``api_key=...``, ``*_token=...``):
  :func:`redact_model_args` masks those values, :func:`redact_command` does it for a whole
  command line, before ``run.json`` or lm-eval's results file is written.

Every writer of a record (``run.json`` from ``eval`` and ``import``, lm-eval's results copied by
``import`` and ``submit``, a submission's files, a study's stage records) passes the whole
record through :func:`redact_record` just before writing: the one function that knows every
shape above, in strings (a string ``--model-args``, a command line, free text) and in
mappings (a key named like a credential: ``token``, ``api_key``, ``password``, ...).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
KNOWN_KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "TIDE_BENCH_JUDGE_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
)
MIN_SECRET_LENGTH = 6  # shorter values ("EMPTY", "1") would mask ordinary words
_PATTERNS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), REDACTED),
    (re.compile(r"(?i)(x-api-key|api[_-]?key|authorization)([\"':= ]+)[A-Za-z0-9._~+/=-]{8,}"), REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@"), rf"\1{REDACTED}@"),  # URL user info
    (re.compile(r"(?i)\b(https?://[^\s?#\"']+)\?[^\s\"']*"), rf"\1?{REDACTED}"),  # URL query strings
)
# Model-argument keys whose value is a credential: token, api_key, hf_token, auth_token, ...
_SECRET_ARG = re.compile(
    r"(?i)(?P<key>(?:^|(?<=[,\s]))[A-Za-z0-9_.-]*(?:token|api_?key|secret|password|passwd))\s*=\s*(?P<value>[^,\s]+)"
)
_NOT_A_SECRET = re.compile(r"(?i)^(true|false|none|null|-?\d+)$")  # add_bos_token=True is a setting
_TOKEN_SETTINGS = ("bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "end_token")  # tokenizer words
_in_use: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact ``value`` from every text this process redacts from now on."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        _in_use.add(value)


def known_secrets(extra_vars: Iterable[str | None] = ()) -> list[str]:
    """Every secret value this process knows, longest first: the registered ones and the values
    of the known key variables (and of ``extra_vars``)."""
    values = set(_in_use)
    for var in (*KNOWN_KEY_VARS, *extra_vars):
        value = os.environ.get(var) if var else None
        if value and len(value) >= MIN_SECRET_LENGTH:
            values.add(value)
    return sorted(values, key=len, reverse=True)


def scrub(text: str, extra_vars: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret value replaced, and nothing else changed."""
    for value in known_secrets(extra_vars):
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrub_json(value: Any, extra_vars: Iterable[str | None] = ()) -> Any:
    """A JSON-like value with :func:`scrub` applied to every string in it (keys included); the
    value itself when it holds no known secret (the common case costs a walk, not a copy)."""
    secrets = known_secrets(extra_vars)
    if not secrets:
        return value
    return _scrubbed(value, secrets)


def _scrubbed(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_scrubbed(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(item, secrets) for item in value]
    return value


def redact(text: str, extra_vars: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret and credential-shaped substring replaced."""
    text = scrub(text, extra_vars)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_json(value: Any, extra_vars: Iterable[str | None] = ()) -> Any:
    """A copy of a JSON-like value with :func:`redact` applied to every string in it."""
    extra = tuple(extra_vars)
    if isinstance(value, str):
        return redact(value, extra)
    if isinstance(value, dict):
        return {key: redact_json(item, extra) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(item, extra) for item in value]
    return value


def url_secrets(url: str | None) -> list[str]:
    """The credential parts of a URL, to register: password, user name and query values as
    written and decoded, and the ``Basic`` header token that user info becomes on the wire
    (a server that echoes its request headers quotes that token, not the password)."""
    if not url:
        return []
    parts = urlsplit(url)
    found = [p for p in (parts.password, parts.username) if p]
    found += [pair.partition("=")[2] for pair in parts.query.split("&") if pair.partition("=")[2]]
    if parts.username is not None or parts.password is not None:
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        found.append(base64.b64encode(f"{user}:{password}".encode()).decode())
    found += [unquote(value) for value in found]
    found += [quote(value, safe="") for value in found]
    return list(dict.fromkeys(found))


def redact_url(url: str | None) -> str | None:
    """``scheme://host:port/path``: user info, query string and fragment removed."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def redact_model_args(args: str) -> str:
    """lm-eval ``key=value,...`` arguments with credential values masked."""

    def mask(match: re.Match[str]) -> str:
        value = match.group("value")
        if _NOT_A_SECRET.match(value) or match.group("key").lower().endswith(_TOKEN_SETTINGS):
            return match.group(0)
        register_secret(value)
        return f"{match.group('key')}={REDACTED}"

    return redact(_SECRET_ARG.sub(mask, args))


def redact_args_dict(args: dict[str, Any]) -> dict[str, Any]:
    """Model arguments as lm-eval records them in a results file (a dict), credentials masked."""
    masked = {}
    for key, value in args.items():
        text = redact_model_args(f"{key}={value}")
        masked[key] = value if text == f"{key}={value}" else REDACTED
    return masked


_SECRET_KEY = re.compile(r"(?i)(token|api_?key|secret|password|passwd|authorization|credential)s?$")


def _is_secret_field(key: Any, value: Any) -> bool:
    if not isinstance(key, str) or not _SECRET_KEY.search(key) or key.lower().endswith(_TOKEN_SETTINGS):
        return False
    return isinstance(value, str) and bool(value) and value != REDACTED and not _NOT_A_SECRET.match(value)


def redact_record(value: Any, extra_vars: Iterable[str | None] = ()) -> Any:
    """A copy of a JSON-like record safe to write: every string through
    :func:`redact_model_args` (credential arguments, then :func:`redact`'s keys, tokens and
    URL credentials), and the value of every mapping key named like a credential masked
    (``{"token": "..."}``, ``{"api_key": "..."}``; tokenizer settings such as ``bos_token`` and
    plain flags are kept). Keys are redacted as text too."""
    _register_fields(value)  # first, so that the same value elsewhere in the record is masked too
    return _redacted(value, tuple(extra_vars))


def _register_fields(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if _is_secret_field(key, item):
                register_secret(item)
            else:
                _register_fields(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _register_fields(item)


def _redacted(value: Any, extra: tuple[str | None, ...]) -> Any:
    if isinstance(value, str):
        return redact(redact_model_args(value), extra) if value else value
    if isinstance(value, dict):
        return {
            (redact(key, extra) if isinstance(key, str) else key): REDACTED
            if _is_secret_field(key, item)
            else _redacted(item, extra)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redacted(item, extra) for item in value]
    return value


def redact_command(argv: Iterable[str]) -> list[str]:
    """A command line with credentials in model arguments, URLs and known keys masked."""
    return [redact_model_args(arg) for arg in argv]
