"""What the judge knows about a wire protocol, declared by the protocol's own module.

A provider adapter (a module under :mod:`tide_bench.judging.providers`) registers its class
with :func:`register_provider`; its :class:`Capabilities` are class data. Everything outside
``providers/`` asks this registry, never compares a provider's name: the configuration reader
(which names exist, which need a server URL, the batch price factor of ``--price-in``), the
engine (batch mode), the cost estimate (prompt caching, batch), the prompt (how a structured
answer is requested). So a new protocol is one file, like Inspect's ``@modelapi`` providers.

This module imports nothing of the judge, so the configuration can read it while the
providers (which read configurations) are being defined. The built-in providers register
when :mod:`tide_bench.judging.providers` is imported, which ``import tide_bench.judging`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from tide_bench.core.errors import ConfigError

__all__ = [
    "Capabilities",
    "ProviderClass",
    "capabilities",
    "provider_class",
    "provider_names",
    "register_provider",
]

CACHING = ("explicit", "automatic", "none")
SYSTEM_STYLES = ("field", "message")


@dataclass(frozen=True)
class Capabilities:
    """A protocol's answers to the questions the rest of the judge asks about it."""

    api: str  # named in messages about answers that are not from this API ("Anthropic", "OpenAI")
    supports_batch: bool = False  # ``--mode batch``: the class implements ``judge_batch``
    batch_price_factor: float = 1.0  # multiplies ``--price-in/--price-out`` prices in batch mode
    # "explicit": the request marks the fixed prefix for caching (Anthropic cache_control), obeying
    # the configuration's prompt_caching; "automatic": the provider caches on its own, best effort;
    # "none": every call pays its whole input.
    prompt_caching: Literal["explicit", "automatic", "none"] = "none"
    # "field": the system text is a top-level request field; "message": the first chat message.
    system_prompt_style: Literal["field", "message"] = "message"
    needs_base_url: bool = False  # no default address: the configuration must give base_url
    key_required: bool = True  # a missing key is refused before any work

    def __post_init__(self) -> None:
        if self.prompt_caching not in CACHING or self.system_prompt_style not in SYSTEM_STYLES:
            raise ValueError(f"prompt_caching must be one of {CACHING}, system_prompt_style one of {SYSTEM_STYLES}")
        if not 0 < self.batch_price_factor <= 1:
            raise ValueError("batch_price_factor must be in (0, 1]")


class ProviderClass(Protocol):
    """What the registry needs of a provider class (:class:`.providers.base.Provider`)."""

    name: str
    capabilities: Capabilities

    @classmethod
    def output_spec(cls, tool_name: str, description: str, schema_name: str, schema: dict[str, Any]) -> dict[str, Any]:
        """What a call sends besides the messages to force an answer that follows ``schema``."""
        ...


P = TypeVar("P")
_REGISTRY: dict[str, Any] = {}


def register_provider(name: str) -> Callable[[P], P]:
    """Class decorator: ``@register_provider("my-protocol")`` makes the class the provider of
    judge configurations that say ``provider: my-protocol``. Registering a name twice with
    another class is an error (two modules claiming one protocol)."""

    def add(cls: P) -> P:
        if not isinstance(getattr(cls, "capabilities", None), Capabilities):
            raise TypeError(f"provider {name!r} ({cls!r}) declares no Capabilities")
        held = _REGISTRY.get(name)
        if held is not None and held is not cls:
            raise ValueError(f"provider {name!r} is registered twice ({held!r} and {cls!r})")
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls

    return add


def provider_names() -> tuple[str, ...]:
    """The registered providers, in registration order."""
    return tuple(_REGISTRY)


def provider_class(name: str) -> ProviderClass:
    """The class registered as ``name``, or a clear error naming the known ones."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ConfigError(f"provider must be one of {', '.join(_REGISTRY)}, not {name!r}", field="provider")
    return cls  # type: ignore[no-any-return]


def capabilities(name: str) -> Capabilities:
    return provider_class(name).capabilities
