"""The chat templates a board renders prompts with: pinned by hash, never taken on a submitter's word.

A run made through a chat template (lm-eval's hf and vllm backends) records the template in its
lm-eval results file. That file is the submitter's own: a template with an instruction hidden in a
Jinja comment renders like the real one, and a template that prints an instruction as literal text
renders "equal" to prompts holding it. So the board accepts a recorded template only when its
sha256 is on the board's list (``chat_templates``: a YAML file beside the board, by default
``leaderboard/chat_templates.yaml``), and renders it with the special tokens the list pins for it,
not the ones the results file claims.

A maintainer adds a template after reading it in the model's ``tokenizer_config.json`` (or
``chat_template.jinja``) at the revision the entry names: ``tide-bench leaderboard template-hash
FILE`` prints the entry to add.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import read_bytes, read_json
from tide_bench.core.resources import resource_dir
from tide_bench.core.yaml_io import read_yaml

SHIPPED = "chat_templates.yaml"
TOKEN_NAMES = ("bos_token", "eos_token", "pad_token", "unk_token")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class PinnedTemplate:
    """A chat template a board renders: its hash, the models it belongs to and its special tokens."""

    sha256: str
    models: tuple[str, ...]
    tokens: dict[str, str]


def template_sha256(template: str) -> str:
    """The hash a template is pinned by (lm-eval's ``chat_template_sha`` is the same digest)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def shipped_path() -> Path:
    return resource_dir("leaderboard") / SHIPPED


def _entry(raw: Any, path: Path, k: int) -> PinnedTemplate:
    where = f"templates[{k}]"
    if not isinstance(raw, dict) or set(raw) - {"sha256", "models", "tokens"}:
        raise ConfigError("must be a mapping with sha256, models and tokens", path=path, field=where)
    sha, models, tokens = raw.get("sha256"), raw.get("models"), raw.get("tokens") or {}
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise ConfigError("must be a sha256 hex digest (64 lowercase hex digits)", path=path, field=f"{where}.sha256")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise ConfigError("must list the models (hub ids) that use this template", path=path, field=f"{where}.models")
    if not isinstance(tokens, dict) or not all(
        name in TOKEN_NAMES and isinstance(value, str) for name, value in tokens.items()
    ):
        raise ConfigError(
            f"must map special-token names ({', '.join(TOKEN_NAMES)}) to their text", path=path, field=f"{where}.tokens"
        )
    return PinnedTemplate(sha, tuple(models), dict(tokens))


def load_pinned_templates(path: str | Path | None = None) -> dict[str, PinnedTemplate]:
    """The pinned templates of a list file (the shipped one when ``path`` is None), by hash."""
    path = Path(path) if path else shipped_path()
    raw = read_yaml(path)
    entries = (raw or {}).get("templates") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) - {"templates"} or not isinstance(entries, list | type(None)):
        raise ConfigError("must be a mapping with one key, templates: a list of pinned templates", path=path)
    pinned: dict[str, PinnedTemplate] = {}
    for k, item in enumerate(entries or []):
        entry = _entry(item, path, k)
        if entry.sha256 in pinned:
            raise ConfigError("pins a template twice", path=path, field=f"templates[{k}].sha256")
        pinned[entry.sha256] = entry
    return pinned


MAX_CONFIG_BYTES = 20_000_000  # a tokenizer_config.json with its added tokens is a few MB at most


def _token_text(value: Any) -> str | None:
    """A special token as a tokenizer config or an lm-eval results file writes it."""
    if isinstance(value, dict):  # {"content": "<s>", "lstrip": false, ...}
        value = value.get("content")
    elif isinstance(value, list) and value:  # lm-eval: [token, id]
        value = value[0]
    return value if isinstance(value, str) else None


def read_template_file(path: Path) -> tuple[str, dict[str, str]]:
    """The chat template and special tokens in ``path``: a ``tokenizer_config.json``, an lm-eval
    results file, or a ``chat_template.jinja`` (transformers 4.43 and later save the template there);
    the template and the tokens are each read from whichever of the two files beside each other holds them."""
    config_path = path.with_name("tokenizer_config.json") if path.suffix == ".jinja" else path
    jinja_path = path if path.suffix == ".jinja" else path.with_name("chat_template.jinja")
    config: Any = {}
    if config_path.is_file() or config_path == path:
        config = read_json(config_path, ConfigError, max_bytes=MAX_CONFIG_BYTES)
        if not isinstance(config, dict):
            raise ConfigError(
                "must be a JSON object (a tokenizer_config.json or an lm-eval results file)", path=config_path
            )
    template = config.get("chat_template")
    if isinstance(template, list):  # several named templates: the default one
        template = next(
            (t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"), None
        )
    if (not isinstance(template, str) or not template) and jinja_path.is_file():
        template = read_bytes(jinja_path, ConfigError, max_bytes=MAX_CONFIG_BYTES).decode("utf-8", "replace")
    if not isinstance(template, str) or not template:
        raise ConfigError("holds no chat template", path=path, field="chat_template")
    return template, _tokens(config)


def _tokens(config: dict[str, Any]) -> dict[str, str]:
    found = {name: _token_text(config.get(name, config.get(f"tokenizer_{name}"))) for name in TOKEN_NAMES}
    return {name: text for name, text in found.items() if text is not None}


def template_entry(path: Path, models: list[str]) -> str:
    """The YAML list entry that pins the chat template in ``path`` for ``models``, to append to a
    board's ``chat_templates`` file."""
    import yaml

    template, tokens = read_template_file(path)
    entry = {"sha256": template_sha256(template), "models": models, "tokens": tokens}
    return yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=200)
