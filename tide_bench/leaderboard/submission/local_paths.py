"""Local paths in public files: find them, and redact them before a submission is written.

A submission is published as a pull request, yet a run records where things lived on the
submitter's machine: the model folder in ``run.json`` (``model.args``, ``model.name``,
``command``), the data snapshot (``data.source``, each sample's ``doc.tide_source``),
lm-eval's output folder, which lm-eval names after the model path with ``/`` turned into
``__`` (``__home__alice__models__x``), and the judge configuration's ``source``. Those paths
name users, home folders and temporary folders.

``tide-bench submit`` replaces every such path by ``<local>/`` and its last component
(``/home/alice/models/SmolLM2`` -> ``<local>/SmolLM2``) and renames lm-eval's folder; the
validator refuses a submission that still holds one. System locations (``/usr``, ``/lib``,
``/etc``, ...) say nothing about a person and are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

REDACTED = "<local>"
_SYSTEM_ROOTS = ("usr", "lib", "lib32", "lib64", "bin", "sbin", "etc", "proc", "sys", "dev", "run")
_PATH_CHARS = r"[^\s\"'<>|,;=:*?]"
# An absolute POSIX path with at least two components, not part of a URL (``//``) or of a
# relative path; or a home-relative path (``~/x``, ``~alice/x``); or a Windows drive path.
_HOME_RELATIVE = rf"~[\w.-]*/{_PATH_CHARS}+"
_POSIX = rf"/(?!/)(?!(?:{'|'.join(_SYSTEM_ROOTS)})/){_PATH_CHARS}+/{_PATH_CHARS}*"
_WINDOWS = rf"[A-Za-z]:[\\/]{_PATH_CHARS}+"
_ABSOLUTE = re.compile(rf"(?<![\w./>~-])(?:{_HOME_RELATIVE}|{_POSIX}|{_WINDOWS})")
# lm-eval's sanitised form of an absolute model path: ``__home__alice__models__x``.
_SANITISED_ROOTS = (
    "home",
    "Users",
    "tmp",
    "root",
    "var",
    "private",
    "mnt",
    "media",
    "scratch",
    "data",
    "work",
    "opt",
    "srv",
    "nfs",
    "gpfs",
    "storage",
)
_SANITISED = re.compile(rf"(?<![\w.-])__(?:{'|'.join(_SANITISED_ROOTS)})__(?:[\w.-]+?__)*([\w.-]+)")


def _redact_match(match: re.Match[str]) -> str:
    """``<local>/<last component>``, or just ``<local>`` when the path is so short that its
    last component could be the user's own folder (``/home/alice``)."""
    parts = [p for p in re.split(r"[\\/]+", match.group(0)) if p and not p.endswith(":") and not p.startswith("~")]
    return f"{REDACTED}/{parts[-1]}" if len(parts) > 2 or (parts and match.group(0).startswith("~")) else REDACTED


def redact_text(text: str) -> str:
    """``text`` with every local path replaced by ``<local>/<last component>``."""
    text = _SANITISED.sub(lambda m: m.group(1), text)
    return _ABSOLUTE.sub(_redact_match, text)


def redact(value: Any) -> Any:
    """A copy of a JSON value with every string redacted (keys included)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, dict):
        return {redact_text(k) if isinstance(k, str) else k: redact(v) for k, v in value.items()}
    return value


def redact_folder_name(name: str) -> str:
    """lm-eval's output folder name without the local path lm-eval built it from."""
    return _SANITISED.sub(lambda m: m.group(1), name)


def holds_local_path(text: str) -> bool:
    return bool(_SANITISED.search(text) or _ABSOLUTE.search(text))


def local_path_fields(value: Any, prefix: str = "") -> Iterator[str]:
    """The dotted names of the fields of a JSON value whose text holds a local path."""
    if isinstance(value, str):
        if holds_local_path(value):
            yield prefix or "(top level)"
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from local_path_fields(v, f"{prefix}[{k}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(k, str) and holds_local_path(k):
                yield name
            yield from local_path_fields(v, name)
