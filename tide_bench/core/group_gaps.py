"""Gaps between groups of personas (equity), with simultaneous intervals and a family-wise verdict.

Why this method. A model's score per persona group (age group, gender, trauma type, education)
is a mean over the items of the group's personas, so the unit of analysis is the persona: items
of one persona share a client and are not independent. Groups are disjoint sets of personas, so
a gap between two groups is a difference of two independent persona-cluster means. Each gap is
studentised by its persona-robust (CR1) standard error, ``t = (m_a - m_b) / sqrt(se_a^2 +
se_b^2)`` (with equal items per persona this is Welch's t on the persona means). For a 0/1 rate
(the safety-flag rate) each group gets one pseudo-persona of two items, one of them an event, in
the statistic (Agresti & Caffo 2000 in spirit): a group with no flag otherwise has no variance,
and a gap to it an interval of width 0.

A board reports many gaps per entry (every pair of groups of every attribute, for the score and
for the safety-flag rate), so a verdict on "the largest gap" must control the family-wise
error. The family is every gap of one entry, and its critical value is the 95 % quantile of the
*maximum* |t| over the family under random reassignment of the personas' attributes (the
Westfall & Young 1993 max-T permutation test; every persona's data keep their items, only
*which persona's demographics go with which data* is shuffled, all attributes together, so the
correlation between attributes and between the two measures is kept). Under the null that the
data do not depend on any attribute the test is exact whatever the number of personas; with
studentised statistics it stays valid when groups differ in variance (Chung & Romano 2013).
Every gap's interval is ``gap +- c * se`` with that one critical value ``c``: simultaneous
intervals, so the interval of the largest gap (which is selected) still covers its truth.

A group is *estimable* when it has at least ``min_personas`` (10) personas with a counted value.
With fewer, the t of a skewed score (a flagged reply counts 1) has heavier tails than the
permutation's: with 5 the simultaneous intervals covered 91 % of simulated TIDE-shaped boards
(100 personas, twelve trauma types), with 10 they cover 95 %, and the family is smaller, so the
test is also more powerful (``tests/calibration/test_equity.py``). A smaller group (one persona:
no variance at all) and the personas whose metadata lack the attribute are reported with their
counts, their means without an interval and a note, never silently dropped, and take part in no
gap. Each estimable group's own interval is the board's: the persona-cluster bootstrap for a
score, Clopper-Pearson on the design-adjusted n for a rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide_bench.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_codes, clustered_means, proportion_ci

MIN_PERSONAS = 10  # a group with fewer personas is reported, not compared (calibration: module docstring)
NOT_GIVEN = "(not given)"  # the group of personas whose metadata lack the attribute
_CHUNK = 256
# persona-level quantities per measure: value sum, count, squared sum, squared count, count x sum, has values
_Q = 6
PSEUDO_RATE = (1.0, 2.0, 1.0, 4.0, 2.0, 1.0)  # one pseudo-persona of two items, one an event, per group of a rate


@dataclass(frozen=True)
class Comparison:
    """One gap of the family: groups ``a`` and ``b`` of ``attribute`` on measure ``metric``."""

    attribute: str
    metric: int
    a: int  # level index within the attribute
    b: int


def _persona_totals(values: np.ndarray, codes: np.ndarray, n_personas: int) -> np.ndarray:
    """``(P, m, _Q)``: per persona and measure, the sums the group statistics are built from."""
    counted = np.isfinite(values)
    filled = np.where(counted, values, 0.0)
    m = values.shape[1]
    sums = np.zeros((n_personas, m))
    counts = np.zeros((n_personas, m))
    np.add.at(sums, codes, filled)
    np.add.at(counts, codes, counted.astype(float))
    return np.stack([sums, counts, sums * sums, counts * counts, counts * sums, (counts > 0).astype(float)], axis=2)


def _group_stats(aggregate: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, CR1 variance and persona count from ``(..., _Q)`` group aggregates (NaN where undefined)."""
    s, n, ss, nn, ns, g = (aggregate[..., q] for q in range(_Q))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        squares = np.maximum(ss - 2 * mean * ns + mean * mean * nn, 0.0)
        var = g / (g - 1.0) * squares / (n * n)
    var = np.where(g >= 2, var, np.nan)
    return mean, var, g


def _t_statistics(mean: np.ndarray, var: np.ndarray, pairs: Sequence[Comparison], index: dict[str, int]) -> np.ndarray:
    """``(..., len(pairs))`` |t| of each comparison from ``(..., levels_total, m)`` group statistics;
    0 where undefined (a permuted group too small), inf for a gap with no variance at all."""
    if not pairs:
        return np.zeros((*mean.shape[:-2], 0))
    a = np.array([index[p.attribute] + p.a for p in pairs])
    b = np.array([index[p.attribute] + p.b for p in pairs])
    j = np.array([p.metric for p in pairs])
    gap = mean[..., a, j] - mean[..., b, j]
    se = np.sqrt(var[..., a, j] + var[..., b, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(gap) / se
    t = np.where(se == 0, np.where(gap == 0, 0.0, np.inf), t)
    return np.where(np.isnan(t), 0.0, t)


def _max_t_null(
    totals: np.ndarray,
    membership: np.ndarray,
    pairs: Sequence[Comparison],
    index: dict[str, int],
    resamples: int,
    seed: int,
    pseudo: np.ndarray,
) -> np.ndarray:
    """``(resamples,)`` maximum |t| over the family when the personas' attributes are shuffled."""
    n_personas = totals.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    flat = totals.reshape(n_personas, -1)
    for start in range(0, resamples, _CHUNK):
        stop = min(start + _CHUNK, resamples)
        order = np.argsort(rng.random((stop - start, n_personas)), axis=1)
        drawn = flat[order].transpose(1, 0, 2).reshape(n_personas, -1)  # (P, b * q): one matrix product
        aggregate = (membership @ drawn).reshape(membership.shape[0], stop - start, -1, _Q).transpose(1, 0, 2, 3)
        mean, var, _ = _group_stats(aggregate + pseudo)
        t = _t_statistics(mean, var, pairs, index)
        out[start:stop] = t.max(axis=1) if t.shape[1] else 0.0
    return out


def _levels(attributes: Mapping[str, Mapping[str, Any]], persona_ids: list[str]) -> dict[str, list[str]]:
    """Each attribute's levels in sorted order; personas without a value are the last level."""
    out = {}
    for name, of_persona in attributes.items():
        given = sorted({str(v) for p in persona_ids if (v := of_persona.get(p)) is not None})
        missing = any(of_persona.get(p) is None for p in persona_ids)
        out[name] = given + ([NOT_GIVEN] if missing else [])
    return out


def _membership(
    attributes: Mapping[str, Mapping[str, Any]], persona_ids: list[str], levels: dict[str, list[str]]
) -> tuple[np.ndarray, dict[str, int]]:
    """``(levels_total, P)`` 0/1 membership of every persona in every level of every attribute, and
    each attribute's first row."""
    rows: list[list[float]] = []
    index: dict[str, int] = {}
    for name, of_persona in attributes.items():
        index[name] = len(rows)
        for level in levels[name]:
            want = None if level == NOT_GIVEN else level
            rows.append([float((None if (v := of_persona.get(p)) is None else str(v)) == want) for p in persona_ids])
    return np.array(rows, dtype=float).reshape(len(rows), len(persona_ids)), index


def group_gaps(
    values: np.ndarray,
    personas: Sequence[str],
    attributes: Mapping[str, Mapping[str, Any]],
    *,
    min_personas: int = MIN_PERSONAS,
    alpha: float = 0.05,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    rates: Sequence[int] = (),
) -> dict[str, Any]:
    """Per attribute and level: the persona count, the item count and each measure's mean (with its
    persona-cluster 95 % CI when the group is estimable); per attribute and measure: every gap
    between two estimable groups with its simultaneous interval and adjusted p-value, the family
    being every gap of every attribute and measure (see the module docstring).

    ``values``: ``(items, m)``, NaN where an item does not count for a measure; ``personas``: each
    item's persona; ``attributes``: attribute -> persona -> value (None: the persona's metadata
    lack it); ``rates``: the measures that are 0/1 rates, whose gaps are studentised with one
    pseudo-persona of two items, one of them an event, added to each group (Agresti & Caffo 2000 in
    spirit: a group with no event otherwise has no variance, and its interval none)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # small matrix products: threads only compete (3x slower)
        return _group_gaps(values, personas, attributes, min_personas, alpha, resamples, seed, rates)


def _group_gaps(
    values: np.ndarray,
    personas: Sequence[str],
    attributes: Mapping[str, Mapping[str, Any]],
    min_personas: int,
    alpha: float,
    resamples: int,
    seed: int,
    rates: Sequence[int],
) -> dict[str, Any]:
    values = np.asarray(values, dtype=float).reshape(len(personas), -1)
    pseudo = np.zeros((values.shape[1], _Q))
    pseudo[list(rates)] = PSEUDO_RATE
    codes, n_personas = cluster_codes(list(personas))
    persona_ids = sorted(dict.fromkeys(str(p) for p in personas))
    totals = _persona_totals(values, codes, n_personas)
    levels = _levels(attributes, persona_ids)
    membership, index = _membership(attributes, persona_ids, levels)
    observed = (membership @ totals.reshape(n_personas, -1)).reshape(membership.shape[0], values.shape[1], _Q)
    counts = observed[..., 5]
    raw = _group_stats(observed)[0]
    mean, var, _ = _group_stats(observed + pseudo)
    pairs = [
        Comparison(name, j, a, b)
        for name, names in levels.items()
        for j in range(values.shape[1])
        for a in range(len(names))
        for b in range(a + 1, len(names))
        if NOT_GIVEN not in (names[a], names[b])
        and min(counts[index[name] + a, j], counts[index[name] + b, j]) >= min_personas
    ]
    null = _max_t_null(totals, membership, pairs, index, resamples, seed, pseudo) if pairs else np.zeros(0)
    critical = float(np.quantile(null, 1 - alpha, method="higher")) if pairs else None
    t_obs = _t_statistics(mean, var, pairs, index)
    gaps = []
    for p, t in zip(pairs, t_obs, strict=True):
        a, b = index[p.attribute] + p.a, index[p.attribute] + p.b
        centre, se = float(mean[a, p.metric] - mean[b, p.metric]), float(np.sqrt(var[a, p.metric] + var[b, p.metric]))
        gap, half = float(raw[a, p.metric] - raw[b, p.metric]), (critical or 0.0) * se
        gaps.append(
            {
                "attribute": p.attribute,
                "metric": p.metric,
                "a": levels[p.attribute][p.a],
                "b": levels[p.attribute][p.b],
                "gap": gap,
                "se": se,
                "ci_low": centre - half,
                "ci_high": centre + half,
                "t": float(t),
                "p_adjusted": float((1 + np.sum(null >= t)) / (null.size + 1)),
                "shown": bool(centre - half > 0 or centre + half < 0),
            }
        )
    design = _Design(values, codes, n_personas, levels, membership, index, counts)
    groups = _groups(design, min_personas, rates, resamples, seed)
    return {
        "groups": groups,
        "gaps": gaps,
        "critical_t": critical,
        "n_comparisons": len(pairs),
        "min_personas": min_personas,
        "alpha": alpha,
        "resamples": resamples,
        "seed": seed,
    }


@dataclass(frozen=True)
class _Design:
    """The items, their personas and the groups, as the group summaries read them."""

    values: np.ndarray  # (items, m)
    codes: np.ndarray  # each item's persona index
    n_personas: int
    levels: dict[str, list[str]]
    membership: np.ndarray  # (levels_total, P)
    index: dict[str, int]
    counts: np.ndarray  # (levels_total, m) personas with a counted value


Blocks = list[list[dict[str, Any] | None]]


def _group_blocks(design: _Design, rates: Sequence[int], resamples: int, seed: int) -> Blocks:
    """``[level][measure]``: each group's mean with its 95 % CI: a persona-cluster bootstrap (one
    pass over every group's cells) for a score, Clopper-Pearson on the design-adjusted n for a rate
    (as the board's safety-flag rate)."""
    values, codes = design.values, design.codes
    m = values.shape[1]
    items_in = design.membership[:, codes] > 0  # (levels_total, items)
    cells = np.where(items_in[:, :, None], values[None, :, :], np.nan).transpose(1, 0, 2).reshape(len(codes), -1)
    blocks, _ = clustered_means(cells, codes, design.n_personas, resamples=resamples, seed=seed)
    out = []
    for r in range(design.membership.shape[0]):
        row: list[dict[str, Any] | None] = []
        for j in range(m):
            block = blocks[r * m + j]
            if block.mean is not None and j in rates:
                kept = items_in[r]
                block = proportion_ci(values[kept, j], clusters=codes[kept], method="clopper-pearson")
            row.append(None if block.mean is None else block.as_dict())
        out.append(row)
    return out


def _groups(
    design: _Design, min_personas: int, rates: Sequence[int], resamples: int, seed: int
) -> dict[str, list[dict[str, Any]]]:
    """Each attribute's levels: persona and item counts, whether each measure is estimable, and each
    measure's mean (with its CI only where estimable)."""
    blocks = _group_blocks(design, rates, resamples, seed)
    m = design.values.shape[1]
    out: dict[str, list[dict[str, Any]]] = {}
    for name, names in design.levels.items():
        rows = []
        for k, level in enumerate(names):
            r = design.index[name] + k
            estimable = [bool(level != NOT_GIVEN and design.counts[r, j] >= min_personas) for j in range(m)]
            rows.append(
                {
                    "value": level,
                    "n_personas": int(design.membership[r].sum()),
                    "n_items": int((design.membership[r, design.codes] > 0).sum()),
                    "estimable": estimable,
                    "means": [
                        None if b is None else (b if ok else b | {"ci_low": None, "ci_high": None})
                        for b, ok in zip(blocks[r], estimable, strict=True)
                    ],
                }
            )
        out[name] = rows
    return out
