"""Who the reference is, for the run whose replies are the dataset's own references.

Kept apart from :mod:`.reference_model` (the lm-eval backend) so that code which only needs to
recognise a reference run (the manifest, the leaderboard) does not import lm-eval.

The reference row is named after the data it comes from, never after what a run or a
submission says (:func:`reference_label`): TIDE's references were written by Claude 3.5
Sonnet (the paper), the built-in sample's were written for tide-bench, EmpatheticDialogues'
replies are its human listeners' (the human row of the LLMs-vs-people comparison), and any
other snapshot's are that snapshot's.
"""

from __future__ import annotations

import re

BACKEND = "tide-reference"
ALIASES = ("reference", BACKEND)
TIDE_REPO = "yenopoya/TIDE"
LABEL = "TIDE reference (Claude 3.5 Sonnet)"
SAMPLE_LABEL = "sample reference (written for tide-bench)"
HUMAN_LABEL = "EmpatheticDialogues listeners (human)"  # the reference row of a run on ED data
NOT_APPLICABLE = (
    "not applicable: the replies are the data's reference replies, so similarity to the reference is 1 by construction"
)
_LAST_COMPONENT = re.compile(r"[^/\\]+$")


def is_reference(backend: str) -> bool:
    """Whether ``--model`` names the reference backend."""
    return backend in ALIASES


def reference_label(source: str | None, *, is_sample: bool | None = None, release: str | None = None) -> str:
    """The reference row's name, from the data source: ``release`` (a board's
    ``dataset_release``) when given, else the run's ``data.source`` label.

    ``hub:yenopoya/TIDE@...`` is TIDE (:data:`LABEL`); the built-in sample is
    :data:`SAMPLE_LABEL`; an EmpatheticDialogues release (``ed:PATH``) is its human listeners
    (:data:`HUMAN_LABEL`); anything else is named after the snapshot itself (a hub repository's
    name, a local folder's last component), never a local path."""
    name = (release or source or "").strip()
    if (is_sample and not release) or name.startswith("sample"):
        return SAMPLE_LABEL
    if name.startswith("ed:") or name == "ed":
        return HUMAN_LABEL
    if name.startswith("hub:") or name == "hub":
        repo = name[4:].partition("@")[0] or TIDE_REPO
        if repo.lower() == TIDE_REPO.lower():
            return LABEL
        return f"reference replies of {repo}"
    snapshot = name[6:] if name.startswith("local:") else name
    match = _LAST_COMPONENT.search(snapshot.rstrip("/\\"))
    return f"reference replies of {match.group(0) if match else 'an unnamed snapshot'}"
