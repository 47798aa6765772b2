"""Halo against people: does the judge rate its factors more alike than human raters do?

Halo is a property *relative to people* (Thorndike 1920; Cooper 1981; Murphy, Jako & Anhalt
1993): a rater with halo lets one general impression drive every factor. Correlated factor
scores alone prove nothing (the factors may truly correlate), and a fixed threshold on them
(the board's former "every pair above r = .9") never fired for a one-impression judge on a 1-5
scale: rounding caps the observed correlation well below .9.

Two comparisons on the same items, both as judge minus people with a persona-cluster interval:

* **the inter-factor correlations** (what the issue of halo is usually read from): the judge's
  correlation between factors a and b over items, against the humans' pooled within-rater
  correlation (each rater's ratings centred at the rater's own means, so leniency does not
  count as halo). Descriptive: a single rating's noise lowers a correlation, so a judge that
  is merely *less noisy* than a person shows higher correlations with no halo at all;
* **the discrimination ratio** (the verdict), the multitrait-multimethod logic of Campbell &
  Fiske (1959): for a rater X, ``R_X = mean_{a != b} r(X_a, H_b) / mean_a r(X_a, H_a)``, where
  ``H`` is the mean rating of the *other* humans on the item. A rater who tells the factors
  apart tracks the others' factor a more closely than their factor b (R well below 1); a
  one-impression rater tracks both alike (R near 1). X's own noise lowers numerator and
  denominator alike, so R does not reward a quieter judge. The humans' R is pooled over the
  raters, each against the other humans (leave one out). Halo is flagged when the interval of
  ``R_judge - R_humans`` lies above 0 (one-sided 2.5 %).

Its power depends on the design (docs/statistics.md, "Halo"); with few items or raters the
verdict is "not shown", never "no halo".
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from tide_bench.agreement.ratings import RatingsTable
from tide_bench.core.stats import Estimate

MIN_ITEMS = 30  # items with the judge's and another rater's scores on every factor


def _centred(x: np.ndarray) -> np.ndarray:
    """Each row (a rater) centred at its own mean over the items it rated (NaN kept)."""
    with np.errstate(invalid="ignore"):
        return x - np.nanmean(x, axis=-1, keepdims=True)


def _pair_columns(x: np.ndarray, y: np.ndarray, v: int) -> np.ndarray:
    """``(items, 3 * v * v)`` per-item sums over raters of x_a * y_b, x_a^2 and y_b^2 on the
    cells where both are present, for every ordered factor pair (a, b); ``x`` and ``y`` are
    ``(raters, v, items)`` (already centred)."""
    out = []
    for a in range(v):
        for b in range(v):
            both = np.isfinite(x[:, a]) & np.isfinite(y[:, b])
            xa, yb = np.where(both, x[:, a], 0.0), np.where(both, y[:, b], 0.0)
            out += [(xa * yb).sum(axis=0), (xa * xa).sum(axis=0), (yb * yb).sum(axis=0)]
    return np.stack(out, axis=1)


def _correlations(sums: np.ndarray, v: int) -> np.ndarray:
    """``(..., v, v)`` correlations r(X_a, Y_b) from summed :func:`_pair_columns`."""
    s = sums.reshape(*sums.shape[:-1], v, v, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s[..., 0] / np.sqrt(s[..., 1] * s[..., 2])


def _ratio(r: np.ndarray, v: int) -> np.ndarray:
    off = ~np.eye(v, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        return r[..., off].mean(axis=-1) / np.diagonal(r, axis1=-2, axis2=-1).mean(axis=-1)


def _leave_one_out_means(data: np.ndarray) -> np.ndarray:
    """``(raters, v, items)``: for each rater, the mean rating of the *other* humans."""
    present = np.isfinite(data)
    total, count = np.where(present, data, 0.0).sum(axis=0), present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total[None] - np.where(present, data, 0.0)) / (count[None] - present)


def halo_comparison(
    table: RatingsTable,
    judge: str,
    factors: list[str],
    items: list[str],
    weights: np.ndarray,
    *,
    n_units: int | None = None,
) -> dict[str, Any]:
    """The judge against the human raters on ``factors`` over ``items`` (see the module
    docstring); ``weights`` (resamples x items) are the audit's persona-cluster resamples."""
    v = len(factors)
    if v < 2:
        return {"verdict": "undefined: fewer than two factors", "pairs": []}
    humans = sorted(set().union(*(table.human_raters(f) for f in factors)))
    data = np.stack([table.matrix(f, humans, items)[1] for f in factors], axis=1)  # raters x v x items
    judge_scores = np.stack([table.matrix(f, [judge], items)[1] for f in factors], axis=1)  # 1 x v x items
    others = _leave_one_out_means(data)
    present = np.isfinite(data)
    with np.errstate(invalid="ignore", divide="ignore"):  # the judge against all the humans
        everyone = (np.where(present, data, 0.0).sum(axis=0) / present.sum(axis=0))[None]
    usable = np.isfinite(judge_scores[0]).all(axis=0) & np.isfinite(everyone[0]).all(axis=0)
    n_items = int(usable.sum())
    if len(humans) < 2 or n_items < MIN_ITEMS:
        note = f"needs two or more human raters and {MIN_ITEMS} items rated on every factor by the judge and a person"
        return {"verdict": f"undefined: {note}", "n_items": n_items, "pairs": [], "note": note}
    keep = np.where(usable, 1.0, np.nan)
    j_cross = _pair_columns(_centred(judge_scores * keep), _centred(everyone * keep), v)
    h_cross = _pair_columns(_centred(data * keep), _centred(others * keep), v)
    j_self = _pair_columns(_centred(judge_scores * keep), _centred(judge_scores * keep), v)
    h_self = _pair_columns(_centred(data * keep), _centred(data * keep), v)
    contributions = np.hstack([j_cross, h_cross, j_self, h_self])
    point = contributions.sum(axis=0)[None, :]
    boot = weights @ contributions
    width = 3 * v * v

    def split(x: np.ndarray) -> list[np.ndarray]:
        return [_correlations(x[:, k * width : (k + 1) * width], v) for k in range(4)]

    (jc, hc, js, hs), (jcb, hcb, jsb, hsb) = split(point), split(boot)
    ratio_j, ratio_h = _ratio(jc, v), _ratio(hc, v)
    ratio_jb, ratio_hb = _ratio(jcb, v), _ratio(hcb, v)
    difference = Estimate.from_replicates(float((ratio_j - ratio_h)[0]), ratio_jb - ratio_hb, n_items, n_units=n_units)
    if difference.value is None or difference.ci_low is None:
        verdict = f"undefined: {difference.note or 'no interval'}"
    elif difference.ci_low > 0:
        verdict = "halo: the judge tells the factors apart less than people do"
    else:
        verdict = "not shown: the judge tells the factors apart no less than people do, within the interval"
    pairs = []
    for a, b in combinations(range(v), 2):
        rj, rh = float(js[0, a, b]), float(hs[0, a, b])
        pairs.append(
            {
                "a": factors[a],
                "b": factors[b],
                "judge_r": Estimate.from_replicates(rj, jsb[:, a, b], n_items, n_units=n_units).as_dict(),
                "human_r": Estimate.from_replicates(rh, hsb[:, a, b], n_items, n_units=n_units).as_dict(),
                "difference": Estimate.from_replicates(
                    rj - rh, jsb[:, a, b] - hsb[:, a, b], n_items, n_units=n_units
                ).as_dict(),
            }
        )
    return {
        "n_items": n_items,
        "n_raters": len(humans),
        "discrimination_ratio": {
            "judge": Estimate.from_replicates(float(ratio_j[0]), ratio_jb, n_items, n_units=n_units).as_dict(),
            "humans": Estimate.from_replicates(float(ratio_h[0]), ratio_hb, n_items, n_units=n_units).as_dict(),
            "difference": difference.as_dict(),
        },
        "verdict": verdict,
        "pairs": pairs,
        "pairs_note": "inter-factor correlations, judge and people (pooled within rater): descriptive; a less noisy "
        "rater shows higher correlations without any halo",
        "method": "discrimination ratio R = mean_{a!=b} r(X_a, others_b) / mean_a r(X_a, others_a) (Campbell & Fiske "
        "1959), judge minus humans (each human against the other humans); halo when the 95% interval lies above 0; "
        "persona-cluster bootstrap (expanded percentile)",
    }
