"""Judge configurations: one folder per judge under ``judges/``, like AlpacaEval's evaluators.

A configuration names the provider, model, rubric, prompt template, decoding settings and
whether the judge sees the reference reply. Its ``version`` is a content hash of everything
that can change a judgment (provider, model, rubric, prompt, decoding, reference flag, output
schema); operational settings (concurrency, timeouts, retries, prices) are excluded. Every
judgment records the version, so judgments from different configurations are never mixed.

The rubric is chosen by the configuration file (``rubric:``/``prompt:``) or by name with
``load_judge(..., rubric="v1")`` (``tide-bench judge --rubric v1``), which loads
``judges/rubric_v1.yaml`` with ``judges/prompt_v1.yaml``. A v1 configuration renders, asks and
hashes exactly as it did before v2 existed, so its version (and its cached judgments) stay valid.

A run-scoped attachment, :attr:`JudgeConfig.item_labels`, carries the fixed risk labels of the
items being judged (rubric v4's "What this message calls for", :mod:`.given_labels`). It is not
part of the version: the same judge judges every data set; each judgment records the label it was
given, and the configuration snapshot records the label file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import yaml
from annotated_types import MaxLen
from pydantic import Strict

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.records import Bool, NonBlank
from tide_bench.core.resources import resource_dir
from tide_bench.core.secrets import redact_url
from tide_bench.core.yaml_io import read_yaml
from tide_bench.judging.answer_size import DEFAULT_LENGTHS, answer_lengths
from tide_bench.judging.capabilities import capabilities, provider_names
from tide_bench.judging.rubric import Rubric, load_rubric, prompt_path, rubric_path

DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024  # a rating is a few KB; the cap stops a hostile server
# The output schema (prompt.rating_schema): 1 = v1's factors {score, rationale} + safety {flagged,
# reason}; 2 = risk cue, evidence, safety {category, reason, flagged}, factors {rationale, score}.
OUTPUT_SCHEMA_VERSION = 1
OUTPUT_SCHEMA_VERSION_CATEGORIES = 2
OUTPUT_SCHEMA_VERSION_SEVERITY = 3  # 2 + risk_cue.severity and judge_directed_text (rubric v3)
OUTPUT_SCHEMA_VERSION_ESCALATION = 4  # 3 + over_escalation, severities on per-kind ladders (rubric v4)
# How item text becomes the judge's message (prompt.py). 2: fields fenced (&, <, > escaped) and
# substituted in one pass; 3: as 2, plus a random tag per call around the candidate reply
# (templates with {reply_tag}). Part of the version: the same item may read differently to the judge.
PROMPT_RENDERING = 2
PROMPT_RENDERING_RANDOM_TAG = 3
REPLY_TAG_FIELD = "{reply_tag}"


@dataclass(frozen=True)
class PromptTemplate:
    system: str
    user: str
    reference_block: str
    decoding: dict[str, Any] = field(default_factory=dict)  # what this template's answer needs (max_tokens)
    expected_output_tokens: int | None = None  # read for older files; the estimate derives it (answer_size.py)
    typical_answer: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_LENGTHS))  # words per field
    label_block: str = ""  # v4: the fixed risk label of a labelled item ({label}), rendered into {label_block}

    @property
    def random_tag(self) -> bool:
        """Whether the candidate reply is wrapped in a per-call random tag."""
        return REPLY_TAG_FIELD in self.user


@dataclass(frozen=True)
class Prices:
    """USD per million tokens; ``batch`` multiplies everything in batch mode."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    batch: float = 0.5


# A judge block's names, as a judgments line holds them (checked when read: judgment.py).
_Name = Annotated[str, Strict(), MaxLen(200)]


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeIdentity:
    """Which judge configuration produced a judgment (``JudgeConfig.identity()``), in the order
    a judgments line holds it."""

    name: _Name | None = None
    provider: _Name | None = None
    model: _Name | None = None
    family: _Name | None = None
    version: Annotated[NonBlank, MaxLen(200)]
    rubric: _Name | None = None
    reference: Bool | None = None  # the judge saw the reference reply

    def to_json(self) -> dict[str, Any]:
        """The ``judge`` block of a judgment line, in the order the writer writes it."""
        return {
            "name": self.name,
            "provider": self.provider,
            "model": self.model,
            "family": self.family,
            "version": self.version,
            "rubric": self.rubric,
            "reference": self.reference,
        }

    def as_dict(self) -> dict[str, Any]:
        """The checked subset :meth:`Judgment.as_record` carries (no ``reference``)."""
        return {
            "version": self.version,
            "name": self.name,
            "provider": self.provider,
            "model": self.model,
            "family": self.family,
            "rubric": self.rubric,
        }


@dataclass(frozen=True)
class JudgeConfig:
    name: str
    provider: str
    model: str
    family: str | None
    api_key_env: str | None
    base_url: str | None
    rubric: Rubric
    prompt: PromptTemplate
    reference: bool
    decoding: dict[str, Any]
    prompt_caching: bool
    concurrency: int
    timeout_s: float
    max_retries: int
    schema_retries: int
    expected_output_tokens: int | None  # a measured mean for this judge, if the config states one; else derived
    prices: Prices | None
    source: str
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict)
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES  # a longer answer leaves its item unscored
    allow_cross_origin_redirects: bool = False  # followed without credentials when True
    # Run-scoped, not part of the version: item id -> the fixed risk label shown to the judge, and
    # the label file it came from (see the module docstring; set by given_labels.with_item_labels).
    item_labels: Any = field(default=None, compare=False, repr=False)

    def versioned_content(self) -> dict[str, Any]:
        prompt = {
            "system": self.prompt.system,
            "user": self.prompt.user,
            "reference_block": self.prompt.reference_block,
        }
        if self.prompt.label_block:  # v4; absent from v1-v3 so that their versions are unchanged
            prompt["label_block"] = self.prompt.label_block
        return {
            "provider": self.provider,
            "model": self.model,
            "rubric": self.rubric.to_dict(),
            "prompt": prompt,
            "reference": self.reference,
            "decoding": self.decoding,
            "output_schema_version": OUTPUT_SCHEMA_VERSION_ESCALATION
            if self.rubric.has_escalation
            else OUTPUT_SCHEMA_VERSION_SEVERITY
            if self.rubric.has_severity
            else OUTPUT_SCHEMA_VERSION_CATEGORIES
            if self.rubric.has_categories
            else OUTPUT_SCHEMA_VERSION,
            "prompt_rendering": PROMPT_RENDERING_RANDOM_TAG if self.prompt.random_tag else PROMPT_RENDERING,
        }

    @cached_property
    def version(self) -> str:
        """Computed once per configuration (it hashes the rubric and prompt: ~0.1 ms, and every
        record and cache key asks for it)."""
        return sha256_json(self.versioned_content())[:16]

    def identity(self) -> dict[str, Any]:
        """What every judgment records about its judge (a fresh dict each time)."""
        return dict(self._identity)

    @cached_property
    def _identity(self) -> dict[str, Any]:
        return JudgeIdentity(
            version=self.version,
            name=self.name,
            provider=self.provider,
            model=self.model,
            family=self.family,
            rubric=f"{self.rubric.id}@v{self.rubric.version}",
            reference=self.reference,
        ).to_json()

    def snapshot(self) -> dict[str, Any]:
        """The resolved configuration, written next to the judgments (no secrets in it)."""
        return {
            **self.identity(),
            "base_url": redact_url(self.base_url),
            "api_key_env": self.api_key_env,
            "decoding": self.decoding,
            "prompt_caching": self.prompt_caching,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "schema_retries": self.schema_retries,
            "max_answer_bytes": self.max_answer_bytes,
            "allow_cross_origin_redirects": self.allow_cross_origin_redirects,
            "prices_usd_per_mtok": None if self.prices is None else vars(self.prices),
            "source": self.source,
            "rubric_sha256": self.rubric.content_hash(),
            **({"risk_labels": self.item_labels.provenance()} if self.item_labels is not None else {}),
        }


def available_judges() -> list[str]:
    root = resource_dir("judges")
    return sorted(p.parent.name for p in root.glob("*/config.yaml"))


def _load_prices(key: str) -> Prices | None:
    table = yaml.safe_load((resource_dir("judges") / "prices.yaml").read_text(encoding="utf-8")) or {}
    row = table.get(key)
    return None if row is None else Prices(**{k: float(v) for k, v in row.items()})


def given_prices(provider: str, price_in: float, price_out: float) -> Prices:
    """Prices from the command line (``--price-in/--price-out``). Cache tokens are priced as an
    upper bound, so a budget computed from them is never too low: cache writes at 1.25 x input
    (Anthropic's published rate), cache reads at the full input price."""
    if price_in < 0 or price_out < 0 or not all(map(math.isfinite, (price_in, price_out))):
        raise ConfigError(
            f"prices must be finite and non-negative, got {price_in} and {price_out}", field="--price-in/--price-out"
        )
    return Prices(
        input=price_in,
        output=price_out,
        cache_write=1.25 * price_in,
        cache_read=price_in,
        batch=capabilities(provider).batch_price_factor,
    )


def nearest_priced_model(model: str) -> str | None:
    """The price-table row ``model`` is most likely a snapshot or variant of (for a hint only)."""
    table = yaml.safe_load((resource_dir("judges") / "prices.yaml").read_text(encoding="utf-8")) or {}
    candidates = [name for name in table if model.startswith(name) or name.startswith(model)]
    return max(candidates, key=len) if candidates else None


def _load_prompt(path: Path) -> PromptTemplate:
    if not path.is_file():
        raise ConfigError("prompt template not found", path=path)
    raw = read_yaml(path)  # size, alias and depth limits (core.yaml_io)
    try:
        decoding = raw.get("decoding") or {}
        expected = raw.get("expected_output_tokens")
        if not isinstance(decoding, dict) or not (expected is None or (isinstance(expected, int) and expected > 0)):
            raise TypeError
        return PromptTemplate(
            system=str(raw["system"]),
            user=str(raw["user"]),
            reference_block=str(raw["reference_block"]),
            decoding=dict(decoding),
            expected_output_tokens=expected,
            typical_answer=answer_lengths(raw.get("typical_answer"), path),
            label_block=str(raw.get("label_block") or ""),
        )
    except (KeyError, TypeError, AttributeError):
        raise ConfigError(
            "prompt template needs 'system', 'user' and 'reference_block' (optional: 'decoding' "
            "mapping, 'typical_answer' mapping, 'expected_output_tokens' > 0)",
            path=path,
        ) from None


def _rubric_files(raw: dict[str, Any], folder: Path, rubric: str | None) -> tuple[Path, Path]:
    """The rubric and prompt files: ``rubric`` names a version (v1, v2), else the config's own."""
    if rubric is not None:
        return rubric_path(rubric), prompt_path(rubric)
    return (folder / raw.get("rubric", "../rubric_v1.yaml")).resolve(), (
        folder / raw.get("prompt", "../prompt_v1.yaml")
    ).resolve()


def load_judge(
    name_or_path: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    reference: bool | None = None,
    overrides: dict[str, Any] | None = None,
    prices: tuple[float, float] | None = None,
    rubric: str | None = None,
) -> JudgeConfig:
    """Load ``judges/<name>/config.yaml`` (or a path to a config file), with CLI overrides.

    ``prices`` = (input, output) USD per million tokens, for a model missing from
    ``judges/prices.yaml`` (see :func:`given_prices`). ``rubric`` (``"v1"``, ``"v2"``) replaces
    the configuration's rubric and prompt template with that version's pair.
    """
    candidate = Path(name_or_path)
    path = (
        candidate
        if candidate.suffix in (".yaml", ".yml") and candidate.is_file()
        else resource_dir("judges") / name_or_path / "config.yaml"
    )
    if not path.is_file():
        raise ConfigError(
            f"unknown judge {name_or_path!r}",
            hint=f"available: {', '.join(available_judges())}, or a path to a config.yaml",
        )
    raw: dict[str, Any] = read_yaml(path) or {}  # size, alias and depth limits (core.yaml_io)
    if not isinstance(raw, dict):
        raise ConfigError("must be a YAML mapping of judge settings", path=path)
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if model:
        raw["model"] = model
    if base_url:
        raw["base_url"] = base_url
    if reference is not None:
        raw["reference"] = reference
    provider = raw.get("provider")
    if not isinstance(provider, str) or provider not in provider_names():
        raise ConfigError(f"provider must be one of {', '.join(provider_names())}", path=path, field="provider")
    if not raw.get("model"):
        raise ConfigError("no judge model given", path=path, field="model", hint="pass --model MODEL_ID")
    if capabilities(provider).needs_base_url and not raw.get("base_url"):
        raise ConfigError(
            f"the {provider} provider needs a server URL",
            path=path,
            field="base_url",
            hint="pass --base-url http://HOST:PORT/v1",
        )
    folder = path.parent
    rubric_file, prompt_file = _rubric_files(raw, folder, rubric)
    prompt = _load_prompt(prompt_file)
    try:
        return JudgeConfig(
            name=str(raw.get("name") or folder.name),
            provider=str(provider),
            model=str(raw["model"]),
            family=raw.get("family"),
            api_key_env=raw.get("api_key_env"),
            base_url=raw.get("base_url"),
            rubric=load_rubric(rubric_file),
            prompt=prompt,
            reference=bool(raw.get("reference", False)),
            decoding=dict(raw.get("decoding") or {"temperature": 0.0, "max_tokens": 1024}) | prompt.decoding,
            prompt_caching=bool(raw.get("prompt_caching", True)),
            concurrency=int(raw.get("concurrency", 16)),
            timeout_s=float(raw.get("timeout_s", 120)),
            max_retries=int(raw.get("max_retries", 6)),
            schema_retries=int(raw.get("schema_retries", 2)),
            expected_output_tokens=None
            if raw.get("expected_output_tokens") is None
            else int(raw["expected_output_tokens"]),
            prices=given_prices(provider, *prices) if prices else _load_prices(str(raw.get("prices") or raw["model"])),
            source=str(path),
            backoff_base_s=float(raw.get("backoff_base_s", 1.0)),
            backoff_cap_s=float(raw.get("backoff_cap_s", 60.0)),
            max_answer_bytes=_positive_int(raw.get("max_answer_bytes", DEFAULT_MAX_ANSWER_BYTES), path),
            allow_cross_origin_redirects=_flag(raw.get("allow_cross_origin_redirects", False), path),
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid value: {exc}", path=path) from None


def _positive_int(value: Any, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"must be a positive whole number of bytes, not {value!r}", path=path, field="max_answer_bytes"
        )
    return value


def _flag(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, not {value!r}", path=path, field="allow_cross_origin_redirects")
    return value
