"""The label is given, not re-decided: a labelled item's fixed risk label in the judge's message.

Why (clinical re-check of rubric v3, V5): the data carries item-level risk labels
(:mod:`tide_bench.data.risk_labels`), but the v3 judge re-decided each message's severity while
reading a soothing reply, and "a conditional route is mishandling from plan or means up" was read
against the judge's own guess. Under rubric v4 the prompt's ``label_block`` carries the item's
label (kind, severity, expected handling, must-not) into the user message as "What this message
calls for". A label describes the client's messages alone, decided before any reply existed, so
showing it leaks nothing about the reply being rated.

Where the labels come from, for one judge run (:func:`with_item_labels`): a label set passed
explicitly (``JudgeOptions.risk_labels``: a file, or a :class:`RiskLabels` such as the probes'),
else the labels that ship with the run's data (the sample, the risk supplement). Either must have
been made for the run's data (``dataset_sha256``), or the run is refused with the file and field.
They ride on the configuration as a run-scoped attachment (``JudgeConfig.item_labels``), which is
not part of the judge's version: the same judge judges every data set.

What each judgment records (:func:`label_record`): the label's kind and severity and the sha256 of
the text the judge was shown, so a cached judgment is reused only for the same label
(``plan.make_plan``) and a board can check that an entry was judged against its labels.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tide_bench.core.errors import ConfigError
from tide_bench.data.risk_labels import RiskLabel, RiskLabels, read_risk_labels
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.prompt import given_label, label_text
from tide_bench.judging.risk_handling import builtin_labels

if TYPE_CHECKING:
    from tide_bench.generation.run_dir import Generation, RunDirectory

RISK_LABEL_KEYS = ("kind", "severity", "sha256")  # a judgment's ``risk_label`` block


@dataclass(frozen=True)
class ItemLabels:
    """The labels shown to the judge in one run, and where they came from."""

    labels: RiskLabels
    source: str  # "explicit" (a file or object passed in) or "builtin" (shipped with the data)

    def get(self, item_id: str) -> RiskLabel | None:
        return self.labels.get(item_id)

    def provenance(self) -> dict[str, Any]:
        """What the configuration snapshot records about the labels (judge_config.json)."""
        return {
            "source": self.source,
            "file": self.labels.path.name if self.labels.path else None,
            "labels_sha256": self.labels.sha256 or None,
            "dataset_sha256": self.labels.dataset_sha256,
            "labelled_by": self.labels.labelled_by.get("kind"),
            "review": self.labels.review.status,
            "n_labelled": len(self.labels.labels),
        }


def label_record(config: JudgeConfig, gen: Generation) -> dict[str, str] | None:
    """A judgment's ``risk_label``: the kind, the severity and the sha256 of the text shown (or None)."""
    label = given_label(config, gen)
    if label is None:
        return None
    digest = hashlib.sha256(label_text(label).encode("utf-8")).hexdigest()
    return {"kind": label.kind, "severity": label.severity, "sha256": digest}


def _explicit(given: RiskLabels | str | Path) -> RiskLabels:
    if isinstance(given, RiskLabels):
        return given
    return read_risk_labels(given)


def resolve_labels(run: RunDirectory, given: RiskLabels | str | Path | None) -> ItemLabels | None:
    """The labels for ``run``'s items (see the module docstring), checked against its data hash."""
    data = run.manifest.get("data") if isinstance(run.manifest.get("data"), dict) else {}
    labels = _explicit(given) if given is not None else builtin_labels(data)
    if labels is None:
        return None
    digest = data.get("dataset_sha256")
    if not isinstance(digest, str):
        if given is None:
            return None  # a run from before data hashes were recorded: its shipped labels cannot be matched
        raise ConfigError(
            "the run does not record the hash of its data (run.json data.dataset_sha256): its risk labels "
            "cannot be checked against it",
            path=labels.path,
            field="dataset_sha256",
        )
    if labels.dataset_sha256 != digest:
        raise ConfigError(
            f"the risk labels were made for data {labels.dataset_sha256[:12]}, but this run was made on {digest[:12]}",
            path=labels.path,
            field="dataset_sha256",
            hint="generate the run again on the labelled data, or label this data (`tide-bench data label-risk`)",
        )
    return ItemLabels(labels, "explicit" if given is not None else "builtin")


def with_item_labels(config: JudgeConfig, run: RunDirectory, given: RiskLabels | str | Path | None) -> JudgeConfig:
    """``config`` with the run's labels attached when its prompt shows them (rubric v4), else itself."""
    if not config.prompt.label_block:
        if given is not None:
            raise ConfigError(
                f"risk labels were given, but the judge's prompt ({config.identity()['rubric']}) does not show them",
                hint="use rubric v4 (the default), or leave the labels out",
                field="risk_labels",
            )
        return config
    return dataclasses.replace(config, item_labels=resolve_labels(run, given))
