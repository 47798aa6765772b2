"""Read a run directory back: the manifest plus one :class:`Generation` per sample.

Every later stage (judge, leaderboard, annotation) reads runs through here, so a bad
``run.json`` or samples file is reported the same way everywhere: file, line, field and
what is wrong. The typed readers live in :mod:`.run_manifest` and :mod:`.samples`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.generation.run_manifest import MANIFEST_NAME, RunManifest, read_manifest
from tide_bench.generation.samples import TASK_PREFIX, Generation, iter_samples_file, read_generations

__all__ = [
    "MANIFEST_NAME",
    "TASK_PREFIX",
    "Generation",
    "RunDirectory",
    "inside_run",
    "iter_samples_file",
    "load_run",
    "read_generations",
]


@dataclass
class RunDirectory:
    root: Path
    manifest: dict[str, Any]
    generations: list[Generation]
    info: RunManifest | None = None

    @property
    def model_name(self) -> str:
        name = self.info.model.name if self.info else None
        return str(model_display_name(name) or self.root.name)


def load_run(root: str | Path) -> RunDirectory:
    """Load and check a run directory written by ``tide-bench eval``."""
    root = Path(root)
    if root.is_file():
        raise DataError(f"{root} is a file, not a run directory", hint=f"pass the folder that holds it: {root.parent}")
    if root.exists() and not root.is_dir():
        raise DataError(f"{root} is not a folder (a pipe, device or socket): not a run directory")
    if not root.is_dir():
        raise DataError(f"run directory does not exist: {root}")
    manifest_path = root / MANIFEST_NAME
    if manifest_path.exists() and not manifest_path.is_file():
        raise DataError("is not a regular file (a folder, pipe or device)", path=manifest_path)
    if not manifest_path.is_file():
        raise DataError(
            f"no {MANIFEST_NAME} in {root}: not a finished tide-bench run",
            hint="run `tide-bench eval ... --output-dir DIR` to completion first (an interrupted run has no run.json)",
        )
    info = read_manifest(manifest_path)
    for task, rel in info.samples.items():
        inside_run(root, rel, f"files.samples.{task}")
    if info.results_file:
        inside_run(root, info.results_file, "files.results")
    generations = read_generations(root, info.samples)
    if not generations:
        raise DataError("the run holds no generations", path=manifest_path)
    return RunDirectory(root, info.raw, generations, info)


def inside_run(root: Path, rel: str, field: str) -> Path:
    """The file ``rel`` names inside the run folder ``root``, or a refusal: a path in a record
    is relative, has no ``..``, and does not lead outside the folder (not even through a link),
    so no command reads a file the run does not hold."""
    pure = PurePosixPath(rel.replace("\\", "/"))
    if not rel or pure.is_absolute() or PureWindowsPath(rel).drive or ".." in pure.parts:
        raise DataError(
            "must be a path inside the run folder (relative, without '..')", path=root / MANIFEST_NAME, field=field
        )
    path = root / rel
    if not path.resolve().is_relative_to(root.resolve()):
        raise DataError("leads outside the run folder (through a link)", path=root / MANIFEST_NAME, field=field)
    return path


def model_display_name(name: str | None) -> str | None:
    """How a model is named to people (page titles, lm-eval's output folder, boards): a local folder
    by its own name, never by an absolute path of this machine (``/home/me/.cache/.../SmolLM2-135M-Instruct``
    is ``SmolLM2-135M-Instruct``); a hub id (``Qwen/Qwen2.5-0.5B-Instruct``) or a relative folder as given.
    The full argument stays in ``run.json``'s ``model.args``, where provenance needs it."""
    if not name:
        return name
    text = name.strip()
    if text.startswith(("/", "~", "\\")) or (len(text) > 2 and text[1] == ":" and text[2] in "/\\"):
        return PureWindowsPath(text).name if "\\" in text else (Path(text).name or text)
    return text


def model_label(model: Mapping[str, Any]) -> str | None:
    """How a run's model is named to people, from run.json's ``model`` block: the display name of
    the base model and, when an adapter was loaded (``peft=``, ``lora_local_path=``, merged), the
    adapter's folder name and the start of its hash, so a fine-tuned run is never titled like its
    base (``SmolLM2-135M-Instruct + adapter demo-lora (sha256 1a2b3c4d)``)."""
    name = model_display_name(model.get("name") if isinstance(model.get("name"), str) else None)
    adapter = model.get("adapter")
    if not isinstance(adapter, dict):
        return name
    path = adapter.get("path")
    folder = model_display_name(path) if isinstance(path, str) and path else "adapter"
    digest = adapter.get("sha256")
    tail = f" (sha256 {digest[:8]})" if isinstance(digest, str) and digest else ""
    return f"{name or 'model'} + adapter {folder}{tail}"


def run_label(root: str | Path) -> str:
    """The name that identifies a run folder to people (rating tables, audit item ids): the folder's
    own name, except a study cell's ``<study>/cells/<cell>/run``, which every cell names ``run``
    and which is therefore called by its cell id."""
    path = Path(root).resolve()
    if path.name == "run" and path.parent.parent.name == "cells":
        return path.parent.name
    return path.name


def rated_item_id(run: str, item_id: str) -> str:
    """The id an item of a run gets where replies of several runs are rated together (the human
    ratings table, the audit): ``<run label>/<TIDE item id>``. One definition, for the page that
    writes it (annotation) and the audit that matches a judge's judgments to it (agreement)."""
    return f"{run}/{item_id}"
