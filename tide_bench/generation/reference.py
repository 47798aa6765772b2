"""Who the TIDE reference is, for the run whose replies are the dataset's own references.

Kept apart from :mod:`.reference_model` (the lm-eval backend) so that code which only needs to
recognise a reference run (the manifest, the leaderboard) does not import lm-eval.
"""

from __future__ import annotations

BACKEND = "tide-reference"
ALIASES = ("reference", BACKEND)
LABEL = "TIDE reference (Claude 3.5 Sonnet)"
NOT_APPLICABLE = (
    "not applicable: the replies are TIDE's reference replies, so similarity to the reference is 1 by construction"
)


def is_reference(backend: str) -> bool:
    """Whether ``--model`` names the reference backend."""
    return backend in ALIASES
