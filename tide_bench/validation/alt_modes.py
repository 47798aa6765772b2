"""The alternative annotator test on public packs: the authors' workarounds and the baselines.

:func:`tide_bench.agreement.alt_test.alt_test` is the test itself (Calderon, Reichart & Dror,
ACL 2025). Public packs add three situations its authors' FAQ answers, each labelled as their
workaround wherever it decides a verdict:

* **combined annotators** (raters who each rated fewer than ``min_items`` items): raters whose
  item sets are disjoint are joined into pseudo-raters of at least ``min_items`` items; the test
  runs on each of ``pairings`` random joinings and the winning rate is averaged over them;
* **Wilcoxon fallback**: a rater with fewer than ``min_items`` items is tested with a one-sided
  Wilcoxon signed-rank test of ``d - epsilon`` instead of the t-test (the authors' advice for
  small samples); raters with enough items keep the t-test; Benjamini-Yekutieli over all;
* **several packs** (domains): Benjamini-Yekutieli over *all* per-rater p-values of all packs,
  and "passes in X of Y packs" (:func:`across_packs`).

The **human baseline** answers "what does passing look like here?": each human rater in turn
plays the judge against the others (leave one expert out), and a negative control, a rater
whose codes are flipped at random (or, on a rating scale, shuffled), must fail.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tide_bench.agreement.alt_test import DEFAULT_Q, alt_test, decide, held_out_wins, one_sided_p, undecided
from tide_bench.core.stats import DEFAULT_SEED, benjamini_yekutieli

MIN_WILCOXON_ITEMS = 5  # the smallest n whose exact one-sided p can fall below 0.05 (1/32)
DEFAULT_PAIRINGS = 20
WORKAROUND = "the alt-test authors' workaround for raters with fewer than {n} items"


def _wilcoxon_p(d: np.ndarray, epsilon: float) -> float:
    shifted = d - epsilon
    if np.all(shifted == 0):
        return 1.0
    if np.all(shifted == shifted[0]):  # constant: the test is degenerate; decided by the sign, as the t-test's rule
        return 0.0 if shifted[0] < 0 else 1.0
    return float(stats.wilcoxon(shifted, alternative="less", method="approx").pvalue)  # ties: normal approximation


def wilcoxon_fallback(
    humans: np.ndarray,
    judge: np.ndarray,
    raters: list[str],
    *,
    epsilon: float,
    min_items: int = 30,
    q: float = DEFAULT_Q,
) -> dict[str, Any]:
    """Per held-out rater: the t-test with ``min_items`` or more items, else Wilcoxon (>= 5 items)."""
    per_rater, skipped = [], {}
    for j, rater in enumerate(raters):
        judge_wins, human_wins = held_out_wins(humans, judge, j)
        n = len(judge_wins)
        if n < MIN_WILCOXON_ITEMS:
            skipped[rater] = n
            continue
        d = human_wins - judge_wins
        test = "t" if n >= min_items else "wilcoxon"
        p = one_sided_p(d, epsilon) if test == "t" else _wilcoxon_p(d, epsilon)
        per_rater.append({"rater": rater, "n": n, "test": test, "judge_advantage": float(judge_wins.mean()), "p": p})
    return _decide(
        per_rater,
        skipped,
        epsilon,
        q,
        method=f"alt-test, Wilcoxon signed-rank for raters with fewer than {min_items} items ("
        + WORKAROUND.format(n=min_items)
        + ")",
    )


def _decide(per_rater: list[dict[str, Any]], skipped: dict[str, int], epsilon: float, q: float, method: str):
    out = undecided(method, per_rater, skipped, epsilon=epsilon, q=q)
    if not per_rater:
        out["note"] = "no rater could be tested"
        return out
    return decide(out)


def _combine(humans: np.ndarray, min_items: int, rng: np.random.Generator) -> tuple[np.ndarray, list[list[int]]]:
    """Pseudo-raters: raters with ``min_items`` or more items alone; the others joined, in a random
    order, into rows of disjoint items until each holds ``min_items``; a last incomplete row is dropped."""
    rated = ~np.isnan(humans)
    counts = rated.sum(axis=1)
    groups: list[list[int]] = [[i] for i in range(len(humans)) if counts[i] >= min_items]
    pending = [int(i) for i in rng.permutation(np.flatnonzero((counts < min_items) & (counts > 0)))]
    while pending:
        group = [pending.pop(0)]
        covered = rated[group[0]].copy()
        rest = []
        for i in pending:
            if covered.sum() < min_items and not (covered & rated[i]).any():
                group.append(i)
                covered |= rated[i]
            else:
                rest.append(i)
        pending = rest
        if covered.sum() >= min_items:
            groups.append(group)
    rows = np.full((len(groups), humans.shape[1]), np.nan)
    for g, members in enumerate(groups):
        for i in members:
            rows[g, rated[i]] = humans[i, rated[i]]
    return rows, groups


def combined_annotators(
    humans: np.ndarray,
    judge: np.ndarray,
    raters: list[str],
    *,
    epsilon: float,
    min_items: int = 30,
    pairings: int = DEFAULT_PAIRINGS,
    seed: int = DEFAULT_SEED,
    q: float = DEFAULT_Q,
) -> dict[str, Any]:
    """The alt-test on pseudo-raters, averaged over ``pairings`` random joinings."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(pairings):
        rows, groups = _combine(humans, min_items, rng)
        names = ["+".join(raters[i] for i in g) for g in groups]
        result = alt_test(rows, judge, names, epsilon=epsilon, q=q, min_items=min_items) if groups else None
        runs.append((result, len(groups)))
    tested = [r for r, _ in runs if r is not None and r["winning_rate"] is not None]
    out: dict[str, Any] = {
        "method": f"alt-test on combined annotators, mean over {pairings} random joinings ("
        + WORKAROUND.format(n=min_items)
        + ")",
        "epsilon": epsilon,
        "q": q,
        "pairings": pairings,
        "pseudo_raters": float(np.mean([k for _, k in runs])) if runs else 0.0,
        "winning_rate": None,
        "advantage_probability": None,
        "passed": None,
        "note": None,
    }
    if not tested:
        out["note"] = f"no joining produced a pseudo-rater with {min_items} items shared with the judge"
        return out
    omegas = [r["winning_rate"] for r in tested]
    out["winning_rate"] = float(np.mean(omegas))
    out["winning_rate_range"] = [float(min(omegas)), float(max(omegas))]
    out["advantage_probability"] = float(np.mean([r["advantage_probability"] for r in tested]))
    out["passed"] = out["winning_rate"] >= 0.5
    out["p_values"] = [p["p"] for p in tested[0]["per_rater"]]  # one joining's, for the cross-pack FDR
    return out


def verdicts(
    humans: np.ndarray,
    judge: np.ndarray,
    raters: list[str],
    *,
    epsilon: float,
    min_items: int = 30,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The standard test, and the workarounds where raters have fewer than ``min_items`` items;
    ``primary`` names the one that decides (standard when it could test anyone)."""
    standard = alt_test(humans, judge, raters, epsilon=epsilon, min_items=min_items)
    out: dict[str, Any] = {"standard": standard, "primary": "standard"}
    if standard["skipped_raters"]:
        out["combined"] = combined_annotators(humans, judge, raters, epsilon=epsilon, min_items=min_items, seed=seed)
        out["wilcoxon"] = wilcoxon_fallback(humans, judge, raters, epsilon=epsilon, min_items=min_items)
        if standard["passed"] is None or len(standard["per_rater"]) < len(standard["skipped_raters"]):
            out["primary"] = "combined"
    out["result"] = out[out["primary"]]
    return out


def _random_rater(row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The negative control: a binary rater's codes flipped at random (each with probability 1/2),
    another rater's scores shuffled across its items: the marginal is kept, agreement is destroyed."""
    out = row.copy()
    rated = ~np.isnan(row)
    values = set(np.unique(row[rated]).tolist())
    if values <= {0.0, 1.0}:
        flip = rng.random(row.shape) < 0.5
        out[rated & flip] = 1.0 - out[rated & flip]
    else:
        out[rated] = rng.permutation(row[rated])
    return out


def human_baseline(
    humans: np.ndarray, raters: list[str], *, epsilon: float, min_items: int = 30, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Leave one expert out: each rater as the 'judge' against the others; and the negative control."""
    rng = np.random.default_rng(seed)
    rows = []
    for j, rater in enumerate(raters):
        others = np.delete(humans, j, axis=0)
        names = [r for k, r in enumerate(raters) if k != j]
        real = verdicts(others, humans[j], names, epsilon=epsilon, min_items=min_items, seed=seed)["result"]
        fake = verdicts(others, _random_rater(humans[j], rng), names, epsilon=epsilon, min_items=min_items, seed=seed)
        rows.append(
            {
                "rater": rater,
                "passed": real["passed"],
                "winning_rate": real["winning_rate"],
                "advantage_probability": real["advantage_probability"],
                "randomised_passed": fake["result"]["passed"],
                "randomised_winning_rate": fake["result"]["winning_rate"],
            }
        )
    return {
        "method": "each expert as the judge against the others (leave one expert out); the control is the same "
        "expert with codes flipped at random (a rating scale: shuffled)",
        "epsilon": epsilon,
        "raters": rows,
        "n_passed": sum(bool(r["passed"]) for r in rows),
        "n_randomised_passed": sum(bool(r["randomised_passed"]) for r in rows),
        "n": len(rows),
    }


def across_packs(results: dict[str, dict[str, Any]], q: float = DEFAULT_Q) -> dict[str, Any]:
    """One judge's alt-tests in several packs: Benjamini-Yekutieli over all their per-rater
    p-values; a pack passes when at least half of its raters' nulls are rejected."""
    keys, pvalues = [], []
    for pack, result in results.items():
        ps = [r["p"] for r in result.get("per_rater") or []] or result.get("p_values") or []
        keys += [pack] * len(ps)
        pvalues += ps
    if not pvalues:
        return {"packs": {}, "passes": 0, "tested": 0, "summary": "no pack could run the alt-test"}
    rejected = benjamini_yekutieli(pvalues, q)
    packs = {}
    for pack in results:
        mine = [r for k, r in zip(keys, rejected, strict=True) if k == pack]
        if mine:
            omega = float(np.mean(mine))
            packs[pack] = {"winning_rate": omega, "passed": omega >= 0.5, "n_tests": len(mine)}
    passes = sum(p["passed"] for p in packs.values())
    return {
        "method": f"Benjamini-Yekutieli at q={q} over all per-rater p-values of {len(packs)} pack(s)",
        "packs": packs,
        "passes": passes,
        "tested": len(packs),
        "summary": f"passes in {passes} of {len(packs)} pack(s)",
    }
