"""Choose and load a TIDE source; the choice is always explicit and always recorded.

A source spec is one of:

* ``sample``                 - the built-in synthetic sample (not TIDE; for demo and tests);
* ``risk-supplement``        - the built-in risk supplement: synthetic risk and acute-distress contexts
  on every rung of the C-SSRS ladder, written to published guidance, with labels and expected
  handling (not TIDE; not yet clinician-reviewed; ``tide_bench/data/risk_supplement/README.md``);
* ``hub`` / ``hub:OWNER/NAME[@REVISION]`` - the gated hub dataset (default ``yenopoya/TIDE``);
* a path to a local snapshot directory (``conversations/`` + ``metadata/``);
* ``ed:PATH``                - the user's EmpatheticDialogues release (tarball or folder,
  :mod:`tide_bench.data.ed`): one item per conversation, speakers as the clusters.

It is taken from, in order: the explicit argument (``--data``), lm-eval's ``--metadata``
key ``tide_data``, the ``TIDE_BENCH_DATA`` environment variable. With none of these set,
loading fails: the sample is never substituted for real data silently.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import holds_float, sha256_json
from tide_bench.data.ed import SPLIT_VERSION as ED_SPLIT_VERSION
from tide_bench.data.ed import read_ed
from tide_bench.data.hub import DEFAULT_REPO, download_snapshot
from tide_bench.data.schema import SPLIT_CHOICES, TideItem
from tide_bench.data.snapshot import Problem, ShapeReport, SnapshotReader
from tide_bench.data.splits import SPLIT_VERSION

ENV_VAR = "TIDE_BENCH_DATA"
METADATA_KEY = "tide_data"
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
RISK_SUPPLEMENT = "risk-supplement"
RISK_SUPPLEMENT_DIR = Path(__file__).resolve().parent / "risk_supplement"
ED_PREFIX = "ed:"
# A data folder holding this file is a synthetic fixture in a real dataset's layout: its first line
# says what it is, and every report and page built on it carries that line as a banner.
SYNTHETIC_MARKER = "SYNTHETIC.txt"
SAMPLE_WORDING = "tide-bench's built-in synthetic sample (not TIDE)"


def synthetic_wording(spec: str | None) -> str | None:
    """What a data spec's synthetic data is, in its own words (the TIDE sample, the risk
    supplement, a fixture folder marked with :data:`SYNTHETIC_MARKER`); None for real data."""
    if spec == "sample":
        return SAMPLE_WORDING
    if spec == RISK_SUPPLEMENT:
        return "tide-bench's synthetic risk supplement (not TIDE; developer-labelled)"
    if not spec:
        return None
    folder = Path(spec[len(ED_PREFIX) :] if spec.startswith(ED_PREFIX) else spec).expanduser()
    marker = folder / SYNTHETIC_MARKER
    if marker.is_file() and not marker.is_symlink():
        with marker.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline(300).strip()
        return first or "a synthetic fixture"
    return None


@dataclass(frozen=True)
class DataSource:
    """A resolved source: what kind, where it lives on disk, and how to name it in results."""

    kind: str  # "sample" | "hub" | "local" | "ed"
    path: Path
    label: str  # recorded in results, e.g. "sample", "local:/data/TIDE", "hub:yenopoya/TIDE@abc123"
    is_sample: bool = False
    synthetic: str | None = None  # what synthetic data this is, in its own words (None: real data)


@dataclass
class LoadedDataset:
    """All items of a source plus the identifiers that results record."""

    source: DataSource
    items: list[TideItem]
    problems: list[Problem] = field(default_factory=list)
    shape: ShapeReport = field(default_factory=ShapeReport)
    split_version: str = SPLIT_VERSION  # how items got their split (ED: the release's own files)
    release: dict | None = None  # what reading a release found (ED: broken rows, skipped conversations)

    def items_for(self, split: str) -> list[TideItem]:
        if split not in SPLIT_CHOICES:
            raise ConfigError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_CHOICES)}")
        return list(self.items) if split == "all" else [i for i in self.items if i.split == split]

    def content_hash(self, split: str = "all") -> str:
        """sha256 of the split's items (content only, sorted by id): equal data, equal hash."""
        return split_content_hash(self.items_for(split), split)

    def provenance(self, split: str) -> dict:
        """The block every result carries to say which data produced it."""
        return (
            {
                "source": self.source.label,
                "source_kind": self.source.kind,
                "is_synthetic_sample": self.source.is_sample,
                "split": split,
                "split_version": self.split_version,
                "n_items": len(self.items_for(split)),
                "split_sha256": self.content_hash(split),
                "dataset_sha256": self.content_hash("all"),
            }
            | ({"release": self.release} if self.release is not None else {})
            | ({"synthetic": self.source.synthetic} if self.source.synthetic else {})
        )

    def turns(self, split: str = "all") -> list[int]:
        """The client-turn numbers present in a split (``[1]`` for single-exchange data)."""
        return sorted({i.turn for i in self.items_for(split)})

    def counts(self) -> dict:
        by_split: dict[str, dict[str, int]] = {}
        for split in ("train", "validation", "test"):
            items = self.items_for(split)
            by_split[split] = {
                "personas": len({i.persona_id for i in items}),
                "conversations": len({(i.persona_id, i.conversation_id) for i in items}),
                "items": len(items),
            }
        return {
            "personas": len({i.persona_id for i in self.items}),
            "conversations": len({(i.persona_id, i.conversation_id) for i in self.items}),
            "items": len(self.items),
            "by_split": by_split,
            "by_scenario": dict(sorted(Counter(i.scenario or "(none)" for i in self.items).items())),
            "by_turn": {str(k): v for k, v in sorted(Counter(i.turn for i in self.items).items())},
        }


def split_content_hash(items: Iterable[TideItem], split: str) -> str:
    """The ``split_sha256`` of a set of items: what a run records, and what the leaderboard
    recomputes from a submission's own items (so the content is checked, not the claim)."""
    records = sorted((i.content() for i in items), key=lambda r: r["item_id"])
    # Only persona metadata is free-form JSON (TideItem's two makers, the snapshot reader and the samples reader,
    # give every other field as a string, an int turn or the history's strings); a persona's items share one dict.
    floats = any(map(holds_float, {id(r["persona"]): r["persona"] for r in records}.values()))
    return sha256_json({"split_version": SPLIT_VERSION, "split": split, "items": records}, floats=floats)


def choose_spec(explicit: str | None = None, metadata: dict | None = None) -> str:
    """Pick the source spec from argument, lm-eval metadata or environment, or fail."""
    for value in (explicit, (metadata or {}).get(METADATA_KEY), os.environ.get(ENV_VAR)):
        if value not in (None, ""):
            return str(value)
    raise ConfigError(
        "no TIDE data source chosen",
        hint=(
            f'pass --data sample|hub|/path/to/TIDE (tide-bench), --metadata \'{{"{METADATA_KEY}": "..."}}\' '
            f"(lm_eval), or set {ENV_VAR}. 'sample' is a small synthetic set for demos, not TIDE."
        ),
    )


def resolve(spec: str) -> DataSource:
    """Turn a spec string into a :class:`DataSource` (downloading from the hub if asked)."""
    if spec == "sample":
        return DataSource(
            "sample", SAMPLE_DIR, "sample (synthetic, not TIDE)", is_sample=True, synthetic=SAMPLE_WORDING
        )
    if spec == RISK_SUPPLEMENT:
        return DataSource(
            RISK_SUPPLEMENT,
            RISK_SUPPLEMENT_DIR,
            "risk-supplement (synthetic, not TIDE, not yet clinician-reviewed)",
            True,
            synthetic_wording(RISK_SUPPLEMENT),
        )
    if spec.startswith(ED_PREFIX):
        path = Path(spec[len(ED_PREFIX) :]).expanduser()
        if not path.exists():
            raise DataError(
                f"EmpatheticDialogues release does not exist: {path}",
                hint="pass ed:PATH with the empatheticdialogues.tar.gz tarball or the folder it unpacks to",
            )
        return DataSource("ed", path.resolve(), f"ed:{path.resolve()}", synthetic=synthetic_wording(spec))
    if spec == "hub" or spec.startswith("hub:"):
        target = spec[4:] or DEFAULT_REPO
        repo, _, revision = target.partition("@")
        path, commit = download_snapshot(repo or DEFAULT_REPO, revision or None)
        return DataSource("hub", path, f"hub:{repo or DEFAULT_REPO}@{commit}")
    path = Path(spec).expanduser()
    if not path.exists():
        raise DataError(
            f"data directory does not exist: {path}",
            hint="pass a TIDE snapshot folder (with conversations/ and metadata/), 'hub', or 'sample'",
        )
    return DataSource("local", path.resolve(), f"local:{path.resolve()}", synthetic=synthetic_wording(spec))


def read_source(source: DataSource) -> LoadedDataset:
    """Parse a source, keeping every problem (used by ``data validate``)."""
    if source.kind == "ed":
        items, report = read_ed(source.path)
        shape = ShapeReport()
        shape.file_patterns.update({name: 1 for name in report.files})
        shape.exchanges[1] = len(items)
        return LoadedDataset(
            source, items, report.problems, shape, split_version=ED_SPLIT_VERSION, release=report.summary()
        )
    reader = SnapshotReader(source.path).read()
    return LoadedDataset(source, reader.items, reader.problems, reader.shape)


def load_dataset(spec: str | None = None, metadata: dict | None = None) -> LoadedDataset:
    """Load a source and refuse it if it has any error (warnings are kept on the result)."""
    return _load_cached(choose_spec(spec, metadata))


@lru_cache(maxsize=8)
def _load_cached(spec: str) -> LoadedDataset:
    dataset = read_source(resolve(spec))
    errors = [p for p in dataset.problems if p.severity == "error"]
    if errors:
        first = errors[0]
        more = (
            f" ({len(errors) - 1} more; run `tide-bench data validate --data {spec}` to list them)"
            if len(errors) > 1
            else ""
        )
        raise DataError(
            first.message + more,
            path=(dataset.source.path / first.path) if first.path else None,
            line=first.line,
            field=first.field,
        )
    if not dataset.items:
        raise DataError("the source holds no generation items", path=dataset.source.path)
    return dataset
