"""The Alternative Annotator Test: can this judge replace a human rater?

Calderon, Reichart & Dror (ACL 2025), "The Alternative Annotator Test for LLM-as-a-Judge".
Leave one human rater out at a time. On each item that rater scored (and the judge, and at
least one other human), score how well the held-out human and the judge each represent the
*remaining* humans: ``-RMSE`` of their score against the others' scores. The judge "wins" an
item when its alignment is at least the human's, the human when it is at least the judge's.

For each held-out rater ``j`` with at least ``min_items`` such items, a one-sided paired
t-test of ``d_i = human_wins_i - judge_wins_i`` against the margin ``epsilon``:
``H0: mean d >= epsilon`` (the human is better by more than the margin) versus
``H1: mean d < epsilon``. ``epsilon`` prices the judge's advantages (cost, speed): 0.2 for
expert raters, 0.15 for skilled ones (the default), 0.1 for crowd workers. The p-values of
all held-out raters are corrected with Benjamini-Yekutieli (FDR ``q``); the *winning rate*
``omega`` is the share of raters whose null is rejected, and the judge passes when
``omega >= 0.5``. The *advantage probability* ``rho`` (mean over raters of the share of items
the judge wins) compares judges: a bounded, interpretable number.

Why this test and not "the judge agrees with people at least as well as they do with each
other, CI >= 1": that is a superiority test (a judge exactly as good as a person passes it in
only 4-14 % of studies), and it ignores which raters happened to be recruited.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tide_bench.core.stats import benjamini_yekutieli

DEFAULT_EPSILON = 0.15
DEFAULT_Q = 0.05
MIN_ITEMS_PER_RATER = 30  # the t-test's normal approximation needs about 30 items (the authors' advice)
MIN_RATERS = 3  # with two raters the "others" are one person: the authors advise three or more


def _neg_rmse(pred: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Per item, ``-sqrt(mean over the other raters of (pred - other)^2)`` (NaN = not rated)."""
    with np.errstate(invalid="ignore"):
        return -np.sqrt(np.nanmean((pred[None, :] - others) ** 2, axis=0))


def _one_sided_p(d: np.ndarray, epsilon: float) -> float:
    """p-value of ``H0: mean(d) >= epsilon`` against ``mean(d) < epsilon`` (one-sample t)."""
    if d.std(ddof=1) == 0:  # no variation: the t statistic is infinite (or undefined at equality)
        return 0.0 if d.mean() < epsilon else 1.0
    return float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)


one_sided_p = _one_sided_p  # the public name (the validation packs' Wilcoxon fallback keeps the t-test for n >= 30)


def held_out_wins(humans: np.ndarray, judge: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """For held-out rater ``j``: on each item that ``j``, the judge and another human rated,
    whether the judge's and the human's alignment with the other humans is at least the
    other's (``(judge_wins, human_wins)``, 0/1 floats; ties count for both)."""
    others = np.delete(humans, j, axis=0)
    usable = ~np.isnan(humans[j]) & ~np.isnan(judge) & (~np.isnan(others)).any(axis=0)
    rest = others[:, usable]
    judge_score = _neg_rmse(judge[usable], rest)
    human_score = _neg_rmse(humans[j, usable], rest)
    return (judge_score >= human_score).astype(float), (human_score >= judge_score).astype(float)


def decide(result: dict[str, Any]) -> dict[str, Any]:
    """Benjamini-Yekutieli over ``result["per_rater"]``'s p-values at ``result["q"]``: each rater's
    ``judge_wins``, the winning rate, the advantage probability and ``passed`` (winning rate >= 0.5)."""
    per_rater = result["per_rater"]
    rejected = benjamini_yekutieli([r["p"] for r in per_rater], result["q"])
    for r, rej in zip(per_rater, rejected, strict=True):
        r["judge_wins"] = bool(rej)
    result["winning_rate"] = float(np.mean(rejected))
    result["advantage_probability"] = float(np.mean([r["judge_advantage"] for r in per_rater]))
    result["passed"] = result["winning_rate"] >= 0.5
    return result


def undecided(method: str, per_rater: list[dict[str, Any]], skipped: dict[str, int], **settings: Any) -> dict[str, Any]:
    """An alt-test result before :func:`decide` fills in the verdict: the method, its settings
    (in the order given), the per-rater tests and the raters left out."""
    return {
        "method": method,
        **settings,
        "per_rater": per_rater,
        "skipped_raters": skipped,
        "winning_rate": None,
        "advantage_probability": None,
        "passed": None,
        "note": None,
    }


def alt_test(
    humans: np.ndarray,
    judge: np.ndarray,
    raters: list[str],
    *,
    epsilon: float = DEFAULT_EPSILON,
    q: float = DEFAULT_Q,
    min_items: int = MIN_ITEMS_PER_RATER,
) -> dict[str, Any]:
    """Run the alt-test on a humans x items matrix and the judge's row (NaN = not rated)."""
    per_rater: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for j, rater in enumerate(raters):
        judge_wins, human_wins = held_out_wins(humans, judge, j)
        n = len(judge_wins)
        if n < min_items:
            skipped[rater] = n
            continue
        per_rater.append(
            {
                "rater": rater,
                "n": n,
                "judge_advantage": float(judge_wins.mean()),
                "human_advantage": float(human_wins.mean()),
                "p": _one_sided_p(human_wins - judge_wins, epsilon),
            }
        )
    result = undecided(
        "alternative annotator test (Calderon, Reichart & Dror 2025): leave-one-rater-out, -RMSE alignment, "
        "one-sided paired t-test with margin epsilon, Benjamini-Yekutieli across raters, pass if winning rate >= 0.5",
        per_rater,
        skipped,
        epsilon=epsilon,
        q=q,
        min_items_per_rater=min_items,
    )
    if not per_rater:
        result["note"] = (
            f"no human rater shares {min_items} or more items with the judge and another human "
            f"(the alt-test needs at least {min_items} per rater)"
        )
        return result
    decide(result)
    if len(per_rater) < MIN_RATERS:
        result["note"] = (
            f"only {len(per_rater)} held-out rater(s) could be tested; the test's authors advise at least "
            f"{MIN_RATERS} raters: with two, 'the others' is one person"
        )
    return result
