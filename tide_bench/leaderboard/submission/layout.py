"""A submission folder: its layout, its metadata file, and what validation hands to scoring.

Layout of ``leaderboard/submissions/<id>/``::

    submission.yaml          metadata (schema: leaderboard/schema/submission.schema.json)
    run/run.json             the run manifest (local paths redacted by ``tide-bench submit``)
    run/lm_eval/...          lm-eval's results and samples files
    judge/judgments.jsonl    the per-item judgments (scored or unscored), unchanged
    judge/judge_config.json  the judge configuration and its version
    judge/judge_summary.json the judge's own summary (checked against the recomputation)
    judge/severe_samples.jsonl  the repeated judge calls on severe risk items (majority of k)
    risk_supplement/run/...  the same model's run on the built-in risk supplement (same layout)
    risk_supplement/judge/...  its judgments, by the same judge (where the board requires it)
    seeker_judge/judgments.jsonl  the seeker's view of the run's replies (--rubric perceived; optional)
    samples/sample-N/run/..., samples/sample-N/judge/...  K sampled runs of the same items (eval --samples)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import DataError
from tide_bench.core.yaml_io import NoAliasLoader, load_yaml
from tide_bench.generation.run_manifest import RunManifest
from tide_bench.generation.samples import Generation
from tide_bench.judging.files import CONFIG_FILE, JUDGMENTS_FILE, RUN_SUBDIR, SUBMITTED_FILES, SUMMARY_FILE

META = "submission.yaml"
RUN = "run"
JUDGE = RUN_SUBDIR
JUDGMENTS = f"{JUDGE}/{JUDGMENTS_FILE}"
JUDGE_CONFIG = f"{JUDGE}/{CONFIG_FILE}"
JUDGE_SUMMARY = f"{JUDGE}/{SUMMARY_FILE}"
JUDGE_FILES = SUBMITTED_FILES
RISK_SUPPLEMENT = "risk_supplement"  # the folder of the entry's risk-supplement run
SAMPLES_DIR = "samples"  # the entry's K sampled runs (generation/sampled.py), each with its judge folder
SEEKER_DIR = "seeker_judge"  # the seeker's view of the run's replies (judging/rubric.py SEEKER_RUBRIC)
SAFE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass
class Submission:
    """What the leaderboard reads from one folder, after validation.

    ``judgments`` holds each item's judgment as a checked ``judgments.jsonl`` record (every
    field in its type); ``generations``
    carry the recomputed text metrics. A build's worker hands back :meth:`without_items`:
    the per-item data stays in the worker, and ``n_items`` and ``replies_digest`` still
    describe it for the checks of the entries against each other.
    """

    id: str
    root: Path
    meta: dict[str, Any]
    manifest: dict[str, Any]
    generations: list[Generation]
    judgments: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge: dict[str, Any] | None = None
    run: RunManifest | None = None
    split_hash: str = ""
    n_items: int | None = None
    replies_digest: str | None = None
    served_models: tuple[str, ...] = ()  # the models that served the judge's requests (judgments' served_model)
    severe_votes: dict[str, Any] = field(default_factory=dict)  # item -> SevereVotes (judge/severe_samples.jsonl)
    risk_supplement: Submission | None = None  # the entry's risk-supplement run (risk_supplement/)
    seeker_judgments: dict[str, dict[str, Any]] = field(default_factory=dict)  # item -> seeker_judge/ record
    samples: list[Submission] = field(default_factory=list)  # the K sampled runs (samples/sample-N/)

    def __post_init__(self) -> None:
        if self.n_items is None:
            self.n_items = len(self.generations)

    @property
    def is_reference(self) -> bool:
        """Whether this entry is the reference row (validation checked its replies against the data)."""
        run = self.run
        return run is not None and (run.prompt_condition == "reference" or run.model.is_reference is True)

    def digest(self) -> str:
        """:func:`replies_digest` of this entry (recorded by :meth:`without_items`)."""
        return self.replies_digest or replies_digest(self.generations)

    def without_items(self) -> Submission:
        """The same entry without its per-item data (what crosses from a build worker)."""
        supplement = self.risk_supplement.without_items() if self.risk_supplement is not None else None
        return replace(
            self,
            generations=[],
            judgments={},
            n_items=self.n_items,
            replies_digest=self.digest(),
            severe_votes={},
            risk_supplement=supplement,
            seeker_judgments={},
            samples=[],
        )


def replies_digest(generations: Sequence[Generation]) -> str:
    """A digest of (item id, reply) over every item: equal for two entries with the same replies."""
    ordered = sorted(generations, key=attrgetter("item_id"))
    text = "".join([f"{len(g.item_id)}:{g.item_id}{len(g.reply)}:{g.reply}" for g in ordered])
    return hashlib.sha256(text.encode()).hexdigest()  # one encode and one update, not one per item


def yaml_line(text: str, field: str) -> int | None:
    """The line of a dotted field in a YAML mapping (best effort; None when not found)."""
    try:
        node = yaml.compose(text, Loader=NoAliasLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in field.split("."):
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        else:
            break
    return line


def parse_meta(raw: bytes, path: Path) -> tuple[Any, str]:
    """The parsed metadata and its text (no anchors or aliases; the limits of :mod:`tide_bench.core.yaml_io`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("not valid UTF-8", path=path) from None
    return load_yaml(text, path=path, error=DataError, aliases=False), text
