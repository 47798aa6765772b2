"""Safety agreement: the judge's safety flag against people's, as a binary (nominal) dimension.

A safety flag is a yes/no judgement, so it is not audited like the 1-5 factors (ordinal and
interval alpha, weighted kappa, the alt-test). Instead:

* **Krippendorff's alpha, nominal**, among the human raters and with the judge in the pool,
  with the paired difference (the same item resamples), CIs from the item bootstrap shared
  with :mod:`.alpha`;
* the judge against the **human majority** on each item (ties are left out and counted):
  *sensitivity* (the share of items people flagged that the judge flagged too) and
  *specificity* (the share of items people did not flag that the judge left unflagged), with
  Wilson intervals over items, and how often each flags.

Flags are rare, so alpha often rests on a handful of flagged items: the counts are reported
next to it and an alpha over no flagged item is undefined, never 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tide_bench.agreement.alpha import alpha_replicates
from tide_bench.agreement.ratings import SAFETY, RatingsTable
from tide_bench.core.stats import Estimate, bootstrap_weights, proportion_ci

DOMAIN = [0.0, 1.0]
LEVEL = "nominal"


def _majority(data: np.ndarray) -> np.ndarray:
    """Per item: 1 when most humans flagged, 0 when most did not, NaN for a tie or no rating."""
    rated = (~np.isnan(data)).sum(axis=0)
    flags = np.nansum(data, axis=0)
    out = np.full(data.shape[1], np.nan)
    out[(rated > 0) & (2 * flags > rated)] = 1.0
    out[(rated > 0) & (2 * flags < rated)] = 0.0
    return out


def _rate(values: np.ndarray) -> dict[str, Any]:
    return proportion_ci(values[np.isfinite(values)]).as_dict()


def _judge(
    judge_row: np.ndarray, data: np.ndarray, human_alpha: tuple[Estimate, np.ndarray], weights: np.ndarray
) -> dict[str, Any]:
    with_judge, with_rep = alpha_replicates(np.vstack([data, judge_row[None, :]]), LEVEL, DOMAIN, weights=weights)
    before = human_alpha[0].value
    difference = (
        Estimate.from_replicates(with_judge.value - before, with_rep - human_alpha[1])
        if before is not None and with_judge.value is not None
        else Estimate.undefined("alpha undefined with or without the judge")
    )
    consensus = _majority(data)
    both = np.isfinite(consensus) & np.isfinite(judge_row)
    flagged_by_people = both & (consensus == 1)
    not_flagged_by_people = both & (consensus == 0)
    return {
        "n_items_rated": int(np.isfinite(judge_row).sum()),
        "flag_rate": _rate(judge_row),
        "alpha_with_judge": with_judge.as_dict(),
        "alpha_difference": difference.as_dict(),
        "vs_majority": {
            "n": int(both.sum()),
            "n_flagged_by_majority": int(flagged_by_people.sum()),
            "sensitivity": proportion_ci(judge_row[flagged_by_people]).as_dict(),
            "specificity": proportion_ci(1.0 - judge_row[not_flagged_by_people]).as_dict(),
            "agreement": proportion_ci((judge_row[both] == consensus[both]).astype(float)).as_dict(),
        },
    }


def audit_safety(table: RatingsTable, resamples: int, seed: int) -> dict[str, Any] | None:
    """The safety block of ``agreement.json``; None when no human answered the safety question."""
    humans = [r for r in sorted({r.rater for r in table.rows if r.dimension == SAFETY}) if r not in table.judges]
    if not humans:
        return None
    items, data = table.matrix(SAFETY, humans)
    weights = bootstrap_weights(len(items), resamples, seed) if items else np.zeros((resamples, 0))
    human_alpha = (
        alpha_replicates(data, LEVEL, DOMAIN, weights=weights)
        if len(humans) >= 2
        else (Estimate.undefined("fewer than two human raters"), np.full(resamples, np.nan))
    )
    consensus = _majority(data)
    judges = sorted({r.rater for r in table.rows if r.dimension == SAFETY and r.rater in table.judges})
    return {
        "level": "nominal (flagged yes/no)",
        "n_items": len(items),
        "raters": humans,
        "n_ratings": int(np.isfinite(data).sum()),
        "human_flag_rate": _rate(data.ravel()),
        "n_items_flagged_by_majority": int((consensus == 1).sum()),
        "n_items_tied": int(((~np.isnan(data)).sum(axis=0) > 0).sum() - np.isfinite(consensus).sum()),
        "alpha": human_alpha[0].as_dict(),
        "judges": {j: _judge(table.matrix(SAFETY, [j], items)[1][0], data, human_alpha, weights) for j in judges},
    }
