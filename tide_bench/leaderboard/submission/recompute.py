"""The reference metrics of a submission, recomputed rather than believed.

* ROUGE-L, within-reply distinct-1/2 and length need no model: they are recomputed from the reply and
  reference text on **every** item (about 0.2 ms an item), and the recomputed values are
  the ones the board uses. A stored value that disagrees is evidence of editing: refused.
* Cosine similarity needs the embedding model. The board's own model (``embedding_model``
  in the board file, never the one a submission's ``run.json`` names) re-embeds a random
  sample of items. The sample is drawn at validation time from a fresh seed that is
  reported, so a maintainer can repeat the check with the same seed, while a submitter
  cannot know in advance which items will be checked. If the model cannot be loaded the
  check fails loudly: a skipped check must never read as a passed one.
"""

from __future__ import annotations

import math
import random
import secrets
import time
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path

from tide_bench.core.errors import ConfigError
from tide_bench.generation.samples import Generation
from tide_bench.leaderboard.submission.problems import Problem, relative
from tide_bench.metrics.reference import ReferenceScorer, text_metrics

TEXT_METRICS = ("rouge_l", "within_reply_distinct_1", "within_reply_distinct_2", "length_tokens")
TEXT_TOLERANCE = 1e-6
COSINE = "cosine_sim"
COSINE_TOLERANCE = 0.02  # bf16 vs fp32 encoders differ by < 0.003 (tests/metrics/test_reference_metrics.py)
MAX_LISTED = 5


@dataclass
class SpotCheck:
    """What the embedding spot check did, so that it can be repeated (``--spot-check-seed``)."""

    seed: int
    embedding_model: str
    items: list[str] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "embedding_model": self.embedding_model,
            "n_items": len(self.items),
            "seconds": round(self.seconds, 3),
            "note": self.note,
        }


def _close(stored: float, fresh: float, tolerance: float) -> bool:
    if math.isnan(stored) or math.isnan(fresh):
        return math.isnan(stored) and math.isnan(fresh)
    return abs(stored - fresh) <= tolerance


def _listed(problems: list[Problem], what: str) -> list[Problem]:
    if len(problems) <= MAX_LISTED:
        return problems
    return [
        *problems[:MAX_LISTED],
        Problem(f"{len(problems) - MAX_LISTED} more {what} (first {MAX_LISTED} listed above)"),
    ]


def recompute_text_metrics(gens: list[Generation], root: Path) -> tuple[list[Generation], list[Problem]]:
    """Generations carrying recomputed text metrics, and one problem per stored value that disagrees."""
    out, bad = [], []
    for g in gens:
        fresh = text_metrics(g.reply, g.reference_reply)
        for name in TEXT_METRICS:
            stored = g.metrics.get(name)
            if stored is None:
                bad.append(
                    Problem(
                        "is missing: a run stores every reference metric of every item",
                        relative(g.file, root),
                        g.line,
                        name,
                    )
                )
            elif not _close(stored, fresh[name], TEXT_TOLERANCE):
                bad.append(
                    Problem(
                        f"stored {stored:.4g}, recomputed from the reply {fresh[name]:.4g}: submit the samples "
                        "`tide-bench eval` wrote, unedited",
                        relative(g.file, root),
                        g.line,
                        name,
                    )
                )
        out.append(replace(g, metrics={**g.metrics, **fresh}))
    return out, _listed(bad, "metric mismatches")


def has_cosine(gens: list[Generation]) -> bool:
    """Whether any item carries a computed cosine similarity."""
    return any(not math.isnan(g.metrics.get(COSINE, math.nan)) for g in gens)


def cosine_problems(gens: list[Generation], root: Path) -> list[Problem]:
    """Stored cosine values must be similarities, and present on every item or on none."""
    bad = [
        Problem("must lie in -1..1", relative(g.file, root), g.line, COSINE)
        for g in gens
        if COSINE in g.metrics and not math.isnan(g.metrics[COSINE]) and abs(g.metrics[COSINE]) > 1 + 1e-6
    ]
    missing = [g for g in gens if math.isnan(g.metrics.get(COSINE, math.nan))]
    if missing and len(missing) < len(gens):
        g = missing[0]
        bad.append(
            Problem(
                f"missing on {len(missing)} of {len(gens)} items (a run computes it on all items or, without an "
                "embedding model, on none)",
                relative(g.file, root),
                g.line,
                COSINE,
            )
        )
    return _listed(bad, "cosine problems")


def embedding_spot_check(
    gens: list[Generation], k: int, embedding_model: str, root: Path, seed: int | None = None
) -> tuple[SpotCheck, list[Problem]]:
    """Re-embed ``k`` items drawn with ``seed`` (a fresh random one when None) and compare cosines."""
    check = SpotCheck(seed if seed is not None else secrets.randbits(63), embedding_model)
    stored = sorted((g for g in gens if not math.isnan(g.metrics.get(COSINE, math.nan))), key=attrgetter("item_id"))
    if not stored or k <= 0:
        check.note = (
            "no stored cosine similarity to check"
            if not stored
            else "embedding spot check disabled (spot_check_items: 0)"
        )
        return check, []
    chosen = random.Random(check.seed).sample(stored, min(k, len(stored)))
    t0 = time.perf_counter()
    # fp32: the board's numbers must not depend on the maintainer's CPU (bf16 moves cosines by up to 0.003)
    scorer = ReferenceScorer(embedding_model, precision="fp32")
    if scorer.load_embedder() is None:
        raise ConfigError(
            f"the board's embedding model {embedding_model!r} could not be loaded, so the embedding spot check "
            "cannot run",
            hint=f"{scorer.notes.get(COSINE, '')}; install it, or pass --no-embedding-check to skip this check "
            "knowingly",
        )
    fresh = scorer.cosine([g.reply for g in chosen], [g.reference_reply for g in chosen])
    check.seconds = time.perf_counter() - t0
    check.items = [g.item_id for g in chosen]
    bad = [
        Problem(
            f"stored {g.metrics[COSINE]:.4f}, re-embedded with {embedding_model} {value:.4f}: submit the samples "
            "`tide-bench eval` wrote, unedited",
            relative(g.file, root),
            g.line,
            COSINE,
        )
        for g, value in zip(chosen, fresh, strict=True)
        if not _close(g.metrics[COSINE], float(value), COSINE_TOLERANCE)
    ]
    return check, _listed(bad, "cosine mismatches")
