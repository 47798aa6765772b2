"""Validation pack manifests: the data files under ``tide_bench/validation/packs/``.

A pack is a public set of expert ratings of replies to people in distress that any judge
configuration can be audited against. Its manifest says where the files live upstream (a
repository at a pinned revision), how each file is checked (its sha256, else the git blob id
of the pinned upstream tree, else it is *unpinned* and refused unless the user accepts that),
its licence and what of it may leave the user's cache, its design (one consensus score per
reply, or several raters), and how each rated attribute relates to TIDE's three factors.
Everything here is read from YAML; only the reading of each pack's own file layout is code
(:mod:`tide_bench.validation.adapters`).

Optional fields, for packs whose labels are not a rating of TIDE's factors (EPITOME): ``scale:
{categorical: true}`` (levels are classes: accuracy and macro-F1 are reported too), ``rubric``
(the judge rubric a ``validation run`` uses unless told otherwise), ``domain`` (what every
report says about how far the pack's attributes are the judge's), a dimension's
``evidence_code`` (the prefix of the judge's quotes that carry it, for rationale agreement) and
``published_figures`` (published classifiers' numbers, shown beside the judges with how far
each was confirmed; they come with no per-item ratings, so with no intervals).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.yaml_io import read_yaml

PACKS_DIR = Path(__file__).resolve().parent / "packs"
PACKS_ENV = "TIDE_BENCH_VALIDATION_PACKS"  # more folders of pack manifests (os.pathsep-separated): local packs
REDISTRIBUTION = ("none", "ratings", "all")
ROLES = ("licence", "human_ratings", "published_judge", "replies")
HOSTS = {
    # host: (default base URL, how a file's URL is made from it)
    "github": ("https://raw.githubusercontent.com", "{base}/{repo}/{revision}/{path}"),
    "huggingface": ("https://huggingface.co", "{base}/datasets/{repo}/resolve/{revision}/{path}"),
}
_HEX = re.compile(r"^[0-9a-f]+$")
_RUBRIC = re.compile(r"^v[0-9]+$")
# Manifest fields that become parts of a path or URL (the cache folder <pack>/<revision>/, the
# download URL <base>/<repo>/<revision>/<path>): a strict pattern, so none can climb out of the
# cache or point a download elsewhere (R3-4).
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
FILE_PART = re.compile(r"[^\x00-\x1f\x7f/\\:*?\"<>|]+")


@dataclass(frozen=True)
class PackFile:
    path: str
    role: str
    sha256: str | None = None
    git_blob: str | None = None
    size: int | None = None
    required: bool = True
    judge: str | None = None

    @property
    def pinned(self) -> bool:
        return bool(self.sha256 or self.git_blob)


@dataclass(frozen=True)
class Dimension:
    """One rated attribute, named as upstream names it."""

    name: str
    meaning: str
    proxy_for: str | None = None  # the TIDE factor (or "safety") it stands in for, if any
    judge_factor: str | None = None  # the factor a tide-bench judge's score is compared on
    judge_threshold: float | None = None  # binary codes: judge score >= threshold counts as 1
    strength: str | None = None
    # The rubric versions ("v2", "v3") whose anchors the threshold was read off; a run judged with
    # another rubric is refused (a level means what its rubric says). None: any rubric.
    judge_rubrics: tuple[str, ...] | None = None

    def check_rubric(self, rubric: str | None) -> str | None:
        """Why a judge using ``rubric`` ("<id>@v3" or "v3") cannot be compared on this dimension, or None."""
        if self.judge_rubrics is None or self.judge_threshold is None:
            return None
        version = str(rubric or "").rpartition("@")[2]
        if version in self.judge_rubrics:
            return None
        return (
            f"dimension {self.name}: the threshold (score >= {self.judge_threshold:g}) was written for rubric "
            f"{', '.join(self.judge_rubrics)}, and this judge uses {rubric or 'an unnamed rubric'}"
        )

    evidence_code: str | None = None  # the judge's quotes for it start "<code>: " (rationale agreement)

    def mapping_line(self) -> str:
        """The audit's ``--map`` line for this attribute, or why there is none."""
        if not self.judge_factor and self.proxy_for:
            return f"{self.name}: a {self.strength or 'proxy'} of {self.proxy_for} (not compared with a judge factor)"
        if not self.judge_factor:
            return f"{self.name}: no TIDE factor (reported for completeness)"
        how = f", judge score >= {self.judge_threshold:g} counts as present" if self.judge_threshold else ""
        return f"--map {self.name}={self.judge_factor} ({self.strength or 'proxy'}{how})"


@dataclass(frozen=True)
class PublishedFigure:
    """A published classifier's numbers on the pack's data (no per-item ratings)."""

    name: str
    status: str  # how far the numbers were confirmed, and how their protocol differs
    values: dict[str, dict[str, float]]  # statistic -> dimension -> value


@dataclass(frozen=True)
class Pack:
    name: str
    title: str
    citation: str
    repo: str
    host: str
    revision: str
    licence_id: str
    licence_file: str | None
    licence_summary: str
    redistribution: str
    adapter: str
    raters: str  # "single" | "multiple"
    cluster: str  # "context" | "item": the unit the bootstrap resamples
    design: str
    scale: tuple[float, float]
    files: tuple[PackFile, ...]
    dimensions: tuple[Dimension, ...]
    responders: dict[str, dict[str, Any]] = field(default_factory=dict)
    published_judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    epsilon: float | None = None
    min_items: int = 30
    modes: dict[str, str] = field(default_factory=dict)
    source: Path = PACKS_DIR
    categorical: bool = False
    rubric: str | None = None
    domain: str | None = None
    published_figures: tuple[PublishedFigure, ...] = ()

    @property
    def pinned_revision(self) -> bool:
        return bool(_HEX.match(self.revision)) and len(self.revision) == 40

    @property
    def multi_rater(self) -> bool:
        return self.raters == "multiple"

    def file(self, role: str, judge: str | None = None) -> PackFile | None:
        for f in self.files:
            if f.role == role and (judge is None or f.judge == judge):
                return f
        return None

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        raise ConfigError(f"pack {self.name} has no dimension {name!r}")

    def url(self, path: str, base: str | None = None) -> str:
        default, template = HOSTS[self.host]
        return template.format(base=(base or default).rstrip("/"), repo=self.repo, revision=self.revision, path=path)

    def families_of(self, responder: str) -> tuple[str, ...]:
        return tuple(self.responders.get(responder, {}).get("families") or ())


def _need(raw: dict[str, Any], key: str, path: Path, kind: type | tuple[type, ...] = str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or value in ("", None):
        raise ConfigError(f"missing or invalid {key!r}", path=path, field=key)
    return value


def _file(raw: Any, path: Path, k: int) -> PackFile:
    where = f"files[{k}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or raw.get("role") not in ROLES:
        raise ConfigError(f"each file needs a 'path' and a 'role' in {ROLES}", path=path, field=where)
    rel = raw["path"]
    parts = rel.split("/")
    if not all(FILE_PART.fullmatch(p) and p not in (".", "..") and p.strip() == p for p in parts):
        raise ConfigError(
            f"file path {rel!r} must be relative, stay inside the pack and name a plain file (parts separated "
            "by '/', no '.', '..', backslash, drive or control character)",
            path=path,
            field=f"{where}.path",
        )
    sha, blob = raw.get("sha256"), raw.get("git_blob")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64 and _HEX.match(sha)):
        raise ConfigError("sha256 must be 64 hex digits", path=path, field=f"{where}.sha256")
    if blob is not None and not (isinstance(blob, str) and len(blob) == 40 and _HEX.match(blob)):
        raise ConfigError("git_blob must be 40 hex digits", path=path, field=f"{where}.git_blob")
    if not (sha or blob or raw.get("unpinned") is True):
        raise ConfigError(
            "a file needs a sha256 or a git_blob, or 'unpinned: true' (then fetch asks for --allow-unpinned)",
            path=path,
            field=where,
        )
    size = raw.get("size")
    if size is not None and not (isinstance(size, int) and size >= 0):
        raise ConfigError("size must be a non-negative integer", path=path, field=f"{where}.size")
    return PackFile(rel, raw["role"], sha, blob, size, bool(raw.get("required", True)), raw.get("judge"))


def _dimension(raw: Any, path: Path, k: int) -> Dimension:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError("each dimension needs a 'name'", path=path, field=f"dimensions[{k}]")
    threshold = raw.get("judge_threshold")
    rubrics = raw.get("judge_rubrics")
    if rubrics is not None and not (
        isinstance(rubrics, list) and rubrics and all(isinstance(r, str) and _RUBRIC.match(r) for r in rubrics)
    ):
        raise ConfigError(
            "judge_rubrics must be a non-empty list of rubric versions such as [v2, v3]",
            path=path,
            field=f"dimensions[{k}].judge_rubrics",
        )
    code = raw.get("evidence_code")
    if code is not None and not (isinstance(code, str) and re.fullmatch(r"[A-Za-z]{1,8}", code)):
        raise ConfigError("evidence_code must be 1-8 letters", path=path, field=f"dimensions[{k}].evidence_code")
    return Dimension(
        name=raw["name"],
        meaning=str(raw.get("meaning") or ""),
        proxy_for=raw.get("proxy_for"),
        judge_factor=raw.get("judge_factor"),
        judge_threshold=None if threshold is None else float(threshold),
        strength=raw.get("strength"),
        judge_rubrics=None if rubrics is None else tuple(rubrics),
        evidence_code=code,
    )


def _figures(raw: Any, path: Path, dims: set[str]) -> tuple[PublishedFigure, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError("published_figures must be a list", path=path, field="published_figures")
    out = []
    for k, entry in enumerate(raw):
        where = f"published_figures[{k}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError("each published figure needs a 'name'", path=path, field=where)
        values = entry.get("values")
        if not isinstance(values, dict) or not values:
            raise ConfigError("'values' must map statistic -> dimension -> number", path=path, field=where)
        clean: dict[str, dict[str, float]] = {}
        for stat, per_dim in values.items():
            if not isinstance(per_dim, dict) or set(per_dim) - dims:
                raise ConfigError(
                    f"values.{stat} must map the pack's dimensions to numbers", path=path, field=f"{where}.values"
                )
            try:
                clean[str(stat)] = {str(d): float(v) for d, v in per_dim.items()}
            except (TypeError, ValueError):
                raise ConfigError(f"values.{stat}: not a number", path=path, field=f"{where}.values") from None
        out.append(PublishedFigure(entry["name"], " ".join(str(entry.get("status") or "").split()), clean))
    return tuple(out)


def parse_pack(raw: Any, path: Path) -> Pack:
    """Build a :class:`Pack` from a manifest's YAML content (every field checked)."""
    if not isinstance(raw, dict):
        raise ConfigError("a pack manifest must be a mapping", path=path)
    source = _need(raw, "source", path, dict)
    licence = _need(raw, "licence", path, dict)
    design = _need(raw, "design", path, dict)
    scale = _need(raw, "scale", path, dict)
    redistribution = licence.get("redistribution")
    if redistribution not in REDISTRIBUTION:
        raise ConfigError(f"licence.redistribution must be one of {REDISTRIBUTION}", path=path, field="licence")
    host = source.get("host", "github")
    if host not in HOSTS:
        raise ConfigError(f"source.host must be one of {sorted(HOSTS)}", path=path, field="source.host")
    files = tuple(_file(f, path, k) for k, f in enumerate(_need(raw, "files", path, list)))
    dims = tuple(_dimension(d, path, k) for k, d in enumerate(_need(raw, "dimensions", path, list)))
    alt = raw.get("alt_test") or {}
    if design.get("raters") not in ("single", "multiple") or design.get("cluster") not in ("context", "item"):
        raise ConfigError("design needs raters: single|multiple and cluster: context|item", path=path, field="design")
    try:
        low, high = float(scale["min"]), float(scale["max"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError("scale needs numeric min and max", path=path, field="scale") from None
    for key, pattern, what in (("revision", REVISION, "a commit or tag"), ("repo", REPO, "owner/name")):
        value = source.get(key)
        if not (isinstance(value, str) and pattern.fullmatch(value) and ".." not in value):
            raise ConfigError(
                f"source.{key} {value!r} is not {what} ({pattern.pattern}): it names a folder of the cache "
                "and part of the download URL",
                path=path,
                field=f"source.{key}",
            )
    rubric = raw.get("rubric")
    if rubric is not None and not isinstance(rubric, str):
        raise ConfigError("rubric must name a judge rubric (tide-bench judge --rubric)", path=path, field="rubric")
    return Pack(
        name=_need(raw, "name", path),
        title=_need(raw, "title", path),
        citation=str(raw.get("citation") or "").strip(),
        repo=_need(source, "repo", path),
        host=host,
        revision=str(_need(source, "revision", path)),
        licence_id=str(licence.get("id") or "none stated"),
        licence_file=licence.get("file"),
        licence_summary=str(licence.get("summary") or "").strip(),
        redistribution=redistribution,
        adapter=_need(raw, "adapter", path),
        raters=design["raters"],
        cluster=design["cluster"],
        design=str(design.get("description") or "").strip(),
        scale=(low, high),
        files=files,
        dimensions=dims,
        responders=dict(raw.get("responders") or {}),
        published_judges=dict(raw.get("published_judges") or {}),
        epsilon=None if alt.get("epsilon") is None else float(alt["epsilon"]),
        min_items=int(alt.get("min_items", 30)),
        modes={str(k): str(v).strip() for k, v in (raw.get("modes") or {}).items()},
        source=path,
        categorical=scale.get("categorical") is True,
        rubric=rubric,
        domain=" ".join(str(raw["domain"]).split()) if raw.get("domain") else None,
        published_figures=_figures(raw.get("published_figures"), path, {d.name for d in dims}),
    )


def _pack_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(PACKS_ENV, "").split(os.pathsep) if p]
    return [PACKS_DIR, *extra]


def available_packs() -> list[str]:
    return sorted({p.stem for d in _pack_dirs() for p in d.glob("*.yaml")})


def load_pack(name: str) -> Pack:
    """The manifest of pack ``name`` (``validation list`` shows them): the shipped packs, then
    the folders in ``$TIDE_BENCH_VALIDATION_PACKS``."""
    valid = isinstance(name, str) and re.fullmatch(r"[a-z0-9_-]+", name) is not None
    path = next((d / f"{name}.yaml" for d in _pack_dirs() if (d / f"{name}.yaml").is_file()), None) if valid else None
    if path is None:
        raise ConfigError(f"unknown validation pack {name!r}", hint=f"available: {', '.join(available_packs())}")
    return _load(path, name)


def _load(path: Path, name: str) -> Pack:
    raw = read_yaml(path)  # a pack may come from the user's $TIDE_BENCH_VALIDATION_PACKS: size and alias limits
    pack = parse_pack(raw, path)
    if pack.name != name:
        raise ConfigError(f"the manifest names itself {pack.name!r}, not {name!r}", path=path, field="name")
    return pack
