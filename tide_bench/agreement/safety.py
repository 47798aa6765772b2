"""Safety agreement: the judge's safety flag against people's, as a binary (nominal) dimension.

A safety flag is a yes/no judgement, so it is not audited like the 1-5 factors (ordinal and
interval alpha, weighted kappa, the alt-test). Instead:

* **Krippendorff's alpha, nominal**, among the human raters and with the judge in the pool,
  with the paired difference (the same item resamples), CIs from the item bootstrap shared
  with :mod:`.alpha`;
* the judge against the **human majority** on each item (ties are left out and counted):
  *sensitivity* (the share of items people flagged that the judge flagged too) and
  *specificity* (the share of items people did not flag that the judge left unflagged), with
  Wilson intervals on the design-adjusted n, and how often each flags.

Every interval resamples the personas of the items (as the audit does): the people's flag rate
counts every answer, but the answers of several people to one item are not independent (a
Wilson interval over the answers covered 88-89 %), so its design effect is that of items within
personas.

Flags are rare, so alpha often rests on a handful of flagged items: the counts are reported
next to it and an alpha over no flagged item is undefined, never 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tide_bench.agreement.alpha import alpha_replicates
from tide_bench.agreement.ratings import SAFETY, RatingsTable
from tide_bench.core.stats import Estimate, cluster_bootstrap_weights, cluster_codes, proportion_ci
from tide_bench.data.schema import persona_of_item

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


def _rate(values: np.ndarray, clusters: np.ndarray) -> dict[str, Any]:
    """A rate over the finite ``values`` with its persona-clustered Wilson interval."""
    keep = np.isfinite(values)
    return proportion_ci(values[keep], clusters=clusters[keep]).as_dict()


def _judge(
    judge_row: np.ndarray,
    data: np.ndarray,
    human_alpha: tuple[Estimate, np.ndarray],
    weights: np.ndarray,
    personas: np.ndarray,
    n_units: int,
    codes: np.ndarray,
) -> dict[str, Any]:
    with_judge, with_rep = alpha_replicates(
        np.vstack([data, judge_row[None, :]]), LEVEL, DOMAIN, weights=weights, n_units=n_units, clusters=codes
    )
    before = human_alpha[0].value
    difference = (
        Estimate.from_replicates(with_judge.value - before, with_rep - human_alpha[1], n_units=n_units)
        if before is not None and with_judge.value is not None
        else Estimate.undefined("alpha undefined with or without the judge")
    )
    consensus = _majority(data)
    both = np.isfinite(consensus) & np.isfinite(judge_row)
    flagged_by_people = both & (consensus == 1)
    not_flagged_by_people = both & (consensus == 0)
    return {
        "n_items_rated": int(np.isfinite(judge_row).sum()),
        "flag_rate": _rate(judge_row, personas),
        "alpha_with_judge": with_judge.as_dict(),
        "alpha_difference": difference.as_dict(),
        "vs_majority": {
            "n": int(both.sum()),
            "n_flagged_by_majority": int(flagged_by_people.sum()),
            "sensitivity": _rate(judge_row[flagged_by_people], personas[flagged_by_people]),
            "specificity": _rate(1.0 - judge_row[not_flagged_by_people], personas[not_flagged_by_people]),
            "agreement": _rate((judge_row[both] == consensus[both]).astype(float), personas[both]),
        },
    }


def audit_safety(table: RatingsTable, resamples: int, seed: int) -> dict[str, Any] | None:
    """The safety block of ``agreement.json``; None when no human answered the safety question."""
    humans = [r for r in sorted({r.rater for r in table.rows if r.dimension == SAFETY}) if r not in table.judges]
    if not humans:
        return None
    items, data = table.matrix(SAFETY, humans)
    personas = np.array([persona_of_item(i) for i in items], dtype=object)
    codes, n_units = cluster_codes(personas.tolist())
    weights = cluster_bootstrap_weights(codes, n_units, resamples, seed)
    human_alpha = (
        alpha_replicates(data, LEVEL, DOMAIN, weights=weights, n_units=n_units, clusters=codes)
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
        "human_flag_rate": _rate(data.ravel(), np.tile(personas, data.shape[0])),
        "n_items_flagged_by_majority": int((consensus == 1).sum()),
        "n_items_tied": int(((~np.isnan(data)).sum(axis=0) > 0).sum() - np.isfinite(consensus).sum()),
        "alpha": human_alpha[0].as_dict(),
        "judges": {
            j: _judge(table.matrix(SAFETY, [j], items)[1][0], data, human_alpha, weights, personas, n_units, codes)
            for j in judges
        },
    }
