"""One reader per pack layout: the only code a pack needs (its manifest says the rest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.validation.adapters import annomi, counselbench, epitome, mentalalign
from tide_bench.validation.adapters.common import MODES, PackData
from tide_bench.validation.store import FetchedPack

ADAPTERS: dict[str, Callable[..., PackData]] = {
    "mentalalign": mentalalign.load,
    "annomi": annomi.load,
    "counselbench": counselbench.load,
    "epitome": epitome.load,
}
# Adapters whose pack can also be reported for a local model folder (``--judge-ratings DIR``):
# (does the folder look like one, its ratings on the pack's items).
LOCAL_MODELS: dict[str, tuple[Callable[..., bool], Callable[..., list[Any]]]] = {
    "epitome": (epitome.claims, epitome.model_ratings),
}


def load_data(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    """Read a fetched pack; ``texts`` also reads the messages (replies are read when present)."""
    try:
        reader = ADAPTERS[fetched.pack.adapter]
    except KeyError:
        raise ConfigError(f"no reader for adapter {fetched.pack.adapter!r}", path=fetched.pack.source) from None
    return reader(fetched, mode, texts=texts)


def local_model(pack: Any, folder: Any) -> Callable[..., list[Any]] | None:
    """The reader of a local model folder for ``pack``, when the folder is one (else None)."""
    entry = LOCAL_MODELS.get(pack.adapter)
    return entry[1] if entry and entry[0](folder) else None


__all__ = ["MODES", "PackData", "load_data", "local_model"]
