"""One reader per pack layout: the only code a pack needs (its manifest says the rest)."""

from __future__ import annotations

from collections.abc import Callable

from tide_bench.core.errors import ConfigError
from tide_bench.validation.adapters import annomi, counselbench, mentalalign
from tide_bench.validation.adapters.common import MODES, PackData
from tide_bench.validation.store import FetchedPack

ADAPTERS: dict[str, Callable[..., PackData]] = {
    "mentalalign": mentalalign.load,
    "annomi": annomi.load,
    "counselbench": counselbench.load,
}


def load_data(fetched: FetchedPack, mode: str = "tide", *, texts: bool = False) -> PackData:
    """Read a fetched pack; ``texts`` also reads the messages (replies are read when present)."""
    try:
        reader = ADAPTERS[fetched.pack.adapter]
    except KeyError:
        raise ConfigError(f"no reader for adapter {fetched.pack.adapter!r}", path=fetched.pack.source) from None
    return reader(fetched, mode, texts=texts)


__all__ = ["MODES", "PackData", "load_data"]
