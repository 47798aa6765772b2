"""What produced a result: package versions, platform and time, recorded in every output."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from importlib import metadata

TRACKED_PACKAGES = (
    "tide-bench",
    "lm_eval",
    "transformers",
    "torch",
    "peft",
    "datasets",
    "sentence-transformers",
    "rouge-score",
    "anthropic",
    "openai",
    "numpy",
    "scipy",
    "krippendorff",
)


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def environment() -> dict[str, object]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": package_versions(),
    }


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
