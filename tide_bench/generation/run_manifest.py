"""The typed reader of ``run.json``, the manifest of a run directory.

Every stage that reads a run (judge, leaderboard, annotation) reads its manifest through
:func:`read_manifest`, so a field of the wrong type is refused the same way everywhere, as
``run.json:LINE, field 'data.split': must be a string, got a list``. The writer is
:mod:`tide_bench.generation.manifest`; ``docs/run-directory.md`` lists the fields.

Presence rules: ``data`` (with ``split`` and ``split_sha256``) and ``files.samples`` are
required, as every consumer needs them; the other fields are optional, but when present
they must have their documented type. The untouched JSON object stays available as
:attr:`RunManifest.raw`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields, line_locator
from tide_bench.core.jsonio import parse_json, read_bytes

MANIFEST_NAME = "run.json"
MANIFEST_KIND = "tide-bench-run"


@dataclass(frozen=True)
class RunData:
    """Which data produced the run (``run.json`` ``data``)."""

    split: str
    split_sha256: str
    source: str | None = None
    source_kind: str | None = None
    is_synthetic_sample: bool | None = None
    split_version: str | None = None
    n_items: int | None = None
    dataset_sha256: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """Which model produced the run (``run.json`` ``model``)."""

    backend: str | None = None
    name: str | None = None
    args: str | None = None
    parsed_args: dict[str, str] = field(default_factory=dict)
    revision: str | None = None
    sha: str | None = None
    num_parameters: int | None = None
    dtype: str | None = None
    adapter_path: str | None = None
    is_reference: bool | None = None  # the replies are TIDE's reference replies (the board's anchor)


@dataclass(frozen=True)
class GenerationInfo:
    """How the replies were generated (``run.json`` ``generation``)."""

    apply_chat_template: bool | None = None
    gen_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    gen_kwargs_override: dict[str, Any] | None = None
    limit: float | None = None

    def setting(self, name: str) -> Any:
        """The value of one generation setting as used, or None when the run does not say.

        An override given on the command line wins; otherwise every task's own
        ``generation_kwargs`` must agree (one value for the whole run).
        """
        if self.gen_kwargs_override and name in self.gen_kwargs_override:
            return self.gen_kwargs_override[name]
        values = {repr(kw.get(name)) for kw in self.gen_kwargs.values() if name in kw}
        if len(values) != 1:
            return None
        return next(kw[name] for kw in self.gen_kwargs.values() if name in kw)


@dataclass(frozen=True)
class RunManifest:
    """A validated ``run.json``."""

    path: Path
    raw: dict[str, Any]
    data: RunData
    model: ModelInfo
    generation: GenerationInfo
    samples: dict[str, str]
    results_file: str | None = None
    prompt_sha256: str | None = None
    prompt_condition: str | None = None  # neutral, guided, reference or mixed (run.json prompt.condition)
    embedding_model: str | None = None
    n_generations: int | None = None
    command: list[str] | None = None


def _data(f: Fields) -> RunData:
    return RunData(
        split=f.string("split", nonempty=True),
        split_sha256=f.string("split_sha256", nonempty=True),
        source=f.string("source", optional=True),
        source_kind=f.string("source_kind", optional=True),
        is_synthetic_sample=f.boolean("is_synthetic_sample", optional=True),
        split_version=f.string("split_version", optional=True),
        n_items=f.integer("n_items", optional=True, minimum=0),
        dataset_sha256=f.string("dataset_sha256", optional=True),
    )


def _model(f: Fields | None) -> ModelInfo:
    if f is None:
        return ModelInfo()
    adapter = f.child("adapter", optional=True)
    return ModelInfo(
        backend=f.string("backend", optional=True),
        name=f.string("name", optional=True),
        args=f.string("args", optional=True),
        parsed_args=f.string_map("parsed_args", optional=True) or {},
        revision=f.string("revision", optional=True),
        sha=f.string("sha", optional=True),
        num_parameters=f.integer("num_parameters", optional=True, minimum=0),
        dtype=f.string("dtype", optional=True),
        adapter_path=adapter.string("path", optional=True) if adapter else None,
        is_reference=f.boolean("is_reference", optional=True),
    )


def _generation(f: Fields | None) -> GenerationInfo:
    if f is None:
        return GenerationInfo()
    per_task = f.mapping("gen_kwargs", optional=True) or {}
    for task, kwargs in per_task.items():
        if kwargs is not None and not isinstance(kwargs, dict):
            f.fail(f"gen_kwargs.{task}", "must be an object or null")
    return GenerationInfo(
        apply_chat_template=f.boolean("apply_chat_template", optional=True),
        gen_kwargs={task: kw for task, kw in per_task.items() if kw},
        gen_kwargs_override=f.mapping("gen_kwargs_override", optional=True),
        limit=f.number("limit", optional=True),
    )


def parse_manifest(obj: Any, path: Path, *, text: str = "", error: type[TideBenchError] = DataError) -> RunManifest:
    """Check the fields of a parsed ``run.json`` object (``text`` lets errors carry a line)."""
    f = Fields(obj, path=path, error=error, locate=line_locator(text) if text else None)
    kind = f.string("kind", optional=True)
    if kind is not None and kind != MANIFEST_KIND:
        f.fail("kind", f"must be {MANIFEST_KIND!r}: not a tide-bench run manifest")
    f.integer("schema_version", optional=True, minimum=1)
    files = f.child("files")
    assert files is not None
    samples = files.string_map("samples")
    if not samples:
        files.fail("samples", "lists no samples files")
    prompt = f.child("prompt", optional=True)
    metrics = f.child("reference_metrics", optional=True)
    method = metrics.child("method", optional=True) if metrics else None
    command = f.listing("command", optional=True)
    if command is not None and not all(isinstance(c, str) for c in command):
        f.fail("command", "must be a list of strings")
    data = f.child("data")
    assert data is not None
    return RunManifest(
        path=path,
        raw=f.obj,
        data=_data(data),
        model=_model(f.child("model", optional=True)),
        generation=_generation(f.child("generation", optional=True)),
        samples=dict(samples),
        results_file=files.string("results", optional=True),
        prompt_sha256=prompt.string("prompt_sha256", optional=True) if prompt else None,
        prompt_condition=prompt.string("condition", optional=True, max_len=40) if prompt else None,
        embedding_model=method.string("embedding_model", optional=True) if method else None,
        n_generations=f.integer("n_generations", optional=True, minimum=0),
        command=command,
    )


def read_manifest(
    path: str | Path,
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> RunManifest:
    """Read and check one ``run.json`` (refusing devices, links and oversize files as asked)."""
    path = Path(path)
    raw = read_bytes(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks)
    obj = parse_json(raw, path, error)
    return parse_manifest(obj, path, text=raw.decode("utf-8"), error=error)
