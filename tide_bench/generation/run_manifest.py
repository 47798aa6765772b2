"""The typed reader of ``run.json``, the manifest of a run directory.

Every stage that reads a run (judge, leaderboard, annotation) reads its manifest through
:func:`read_manifest`, so a field of the wrong type is refused the same way everywhere, as
``run.json:LINE, field 'data.split': must be a string, got a list``. The writer is
:mod:`tide_bench.generation.manifest`; ``docs/run-directory.md`` lists the fields.

Presence rules: ``data`` (with ``split`` and ``split_sha256``) and ``files.samples`` are
required, as every consumer needs them; the other fields are optional, but when present
they must have their documented type. :class:`RunManifest` declares the fields another stage
reads (the rest of the file is not checked); the untouched JSON object stays available as
:attr:`RunManifest.raw`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from annotated_types import Ge, MaxLen
from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.jsonio import parse_json, read_bytes
from tide_bench.core.records import Bool, Count, NonBlank, Number, Record, Str, line_locator, load, null_as, refusal

MANIFEST_NAME = "run.json"
MANIFEST_KIND = "tide-bench-run"


class RunData(Record):
    """Which data produced the run (``run.json`` ``data``)."""

    split: NonBlank
    split_sha256: NonBlank
    source: Str | None = None
    source_kind: Str | None = None
    is_synthetic_sample: Bool | None = None
    split_version: Str | None = None
    n_items: Count | None = None
    dataset_sha256: Str | None = None


class Adapter(Record):
    path: Str | None = None


class ModelInfo(Record):
    """Which model produced the run (``run.json`` ``model``)."""

    backend: Str | None = None
    name: Str | None = None
    args: Str | None = None
    parsed_args: Annotated[dict[str, Str], null_as(dict)] = Field(default_factory=dict)
    revision: Str | None = None
    sha: Str | None = None
    num_parameters: Count | None = None
    dtype: Str | None = None
    adapter: Adapter | None = None
    is_reference: Bool | None = None  # the replies are TIDE's reference replies (the board's anchor)

    @property
    def adapter_path(self) -> str | None:
        return self.adapter.path if self.adapter is not None else None


def _drop_unset(per_task: dict[str, Any]) -> dict[str, Any]:
    return {task: kwargs for task, kwargs in per_task.items() if kwargs}


class GenerationInfo(Record):
    """How the replies were generated (``run.json`` ``generation``)."""

    apply_chat_template: Bool | None = None
    gen_kwargs: Annotated[dict[str, dict[str, Any] | None], null_as(dict), AfterValidator(_drop_unset)] = Field(
        default_factory=dict
    )
    gen_kwargs_override: dict[str, Any] | None = None
    limit: Number | None = None

    def setting(self, name: str) -> Any:
        """The value of one generation setting as used, or None when the run does not say.

        An override given on the command line wins; otherwise every task's own
        ``generation_kwargs`` must agree (one value for the whole run).
        """
        if self.gen_kwargs_override and name in self.gen_kwargs_override:
            return self.gen_kwargs_override[name]
        values = {repr(kw.get(name)) for kw in self.gen_kwargs.values() if kw and name in kw}
        if len(values) != 1:
            return None
        return next(kw[name] for kw in self.gen_kwargs.values() if kw and name in kw)


class RunFiles(Record):
    samples: dict[str, Str]
    results: Str | None = None

    @field_validator("samples")
    @classmethod
    def _some(cls, samples: dict[str, str]) -> dict[str, str]:
        if not samples:
            raise refusal("lists no samples files")
        return samples


class RunPrompt(Record):
    prompt_sha256: Str | None = None
    condition: Annotated[Str, MaxLen(40)] | None = None  # neutral, guided, reference or mixed


class MetricsMethod(Record):
    embedding_model: Str | None = None


class ReferenceMetrics(Record):
    method: MetricsMethod | None = None


class RunManifest(Record):
    """A validated ``run.json``: the fields another stage reads, where the file holds them.
    ``path`` and ``raw`` (the untouched object) are the reader's, not part of the file."""

    path: Path = Field(exclude=True)
    raw: dict[str, Any] = Field(exclude=True, repr=False)
    kind: Str | None = None
    schema_version: Annotated[int, Ge(1)] | None = None
    files: RunFiles
    prompt: RunPrompt | None = None
    reference_metrics: ReferenceMetrics | None = None
    command: list[Str] | None = None
    data: RunData
    model: ModelInfo = ModelInfo()
    generation: GenerationInfo = GenerationInfo()
    n_generations: Count | None = None

    @model_validator(mode="before")
    @classmethod
    def _read(cls, obj: Any, info: ValidationInfo) -> Any:
        """The object read from ``context["path"]``, with that path and itself as ``raw`` (a null
        ``model`` or ``generation`` block reads as an empty one)."""
        if info.context is None or not isinstance(obj, dict):
            return obj
        given = {k: v for k, v in obj.items() if v is not None or k not in ("model", "generation")}
        return given | {"path": info.context["path"], "raw": obj}

    @field_validator("kind")
    @classmethod
    def _ours(cls, kind: str | None) -> str | None:
        if kind is not None and kind != MANIFEST_KIND:
            raise refusal(f"must be {MANIFEST_KIND!r}: not a tide-bench run manifest")
        return kind

    @property
    def samples(self) -> dict[str, str]:
        return self.files.samples

    @property
    def results_file(self) -> str | None:
        return self.files.results

    @property
    def prompt_sha256(self) -> str | None:
        return self.prompt.prompt_sha256 if self.prompt is not None else None

    @property
    def prompt_condition(self) -> str | None:
        return self.prompt.condition if self.prompt is not None else None

    @property
    def embedding_model(self) -> str | None:
        method = self.reference_metrics.method if self.reference_metrics is not None else None
        return method.embedding_model if method is not None else None


def parse_manifest(obj: Any, path: Path, *, text: str = "", error: type[TideBenchError] = DataError) -> RunManifest:
    """Check the fields of a parsed ``run.json`` object (``text`` lets errors carry a line)."""
    locate = line_locator(text) if text else None
    return load(RunManifest, obj, path=path, locate=locate, error=error, context={"path": path})


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
