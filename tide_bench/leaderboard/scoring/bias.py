"""Judge-bias diagnostics for a board (or one run): length, halo, preference leakage.

An LLM judge can reward what is not empathy. Three checks, each stated with its rule:

**Length.** Judges tend to prefer longer replies (AlpacaEval's length-controlled win rate was
made for this). Per entry, the Pearson correlation of the overall empathy score with the
reply's length (word tokens), and a *length-controlled* score. The model, fitted on the items
every entry of the board scored::

    y_ij = a_j + c_i + b * d_ij + e_ij,    d_ij = tanh((len_ij - ref_len_i) / s)

``y_ij`` is entry j's overall score on item i, ``c_i`` the item's effect (its difficulty, the
same for every entry), ``len_ij`` the reply's length, ``ref_len_i`` the reference reply's length
and ``s`` the standard deviation of the length differences on the board (AlpacaEval-LC's
normalisation: tanh keeps very long replies from dominating). The slope ``b`` is shared and
estimated *within* entries and *within* items (two-way fixed effects, as AlpacaEval-LC's GLM
conditions on the instruction): a better model that also writes longer, or items whose
difficulty goes with the reference's length, do not enter it. Without item effects the slope
was wrong in 100 % of simulated boards whose item difficulty correlated 0.3 with the reference
length; with them, 2-6 % (docs/statistics.md). The length-controlled score is
``LC_j = empathy_j - b * mean_j(d)``, over the items counted in the entry's empathy (an item
counted at the scale minimum without a score has ``d = 0``: the rule fixes its score whatever
its length). Reply lengths are the submitted ``length_tokens`` (recomputed by validation).

What the slope can and cannot say: it is an **association** ("scores rise with length, within
entries and items"). Observational scores cannot tell "the judge rewards length" from "longer
replies are better here" (a judge that scores only quality, on a board where a model's longer
replies truly are better, gives the same slope). The causal question is answered by the
*padding probe* (:mod:`tide_bench.leaderboard.scoring.padding`): the same replies with content-neutral
padding, judged again, compared item by item.

Undefined is said, never estimated: with one entry (item effects cannot be separated from the
length term), or when no entry's reply lengths vary (every reply of an entry has one length,
e.g. cut at the token cap, or an entry that is the reference itself), the slope and every
length-controlled score are ``None`` with a ``note`` saying why (shown as "n/a").

**Halo.** Halo is a property *relative to people*: a judge with halo rates its factors more
alike than human raters of the same replies do (Thorndike 1920; Cooper 1981). The board has no
human ratings, so it reports what it can measure: the correlations of the factors over scored
items (pooled within entries) and the share of items given three identical factor scores; the
test of halo is the audit's (:mod:`tide_bench.agreement.halo`).

**Preference leakage.** A fine-tuned entry trained on TIDE's references, which Claude 3.5
Sonnet wrote, learned that family's style; a judge of the same family may favour it (Li et al.
2025, "Preference leakage"). The adapter card in ``run.json`` (``model.adapter.card.data``) says
what it was trained on; an entry is flagged when the references' family is the judge's, and
the cross-family re-judge command is given.

Every interval is a 95 % percentile persona-cluster bootstrap with the board's resamples and
seed (:data:`~tide_bench.core.stats.DEFAULT_SEED`): the slope is re-estimated in every resample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from tide_bench.core.stats import (
    DEFAULT_SEED,
    cluster_codes,
    cluster_totals,
    clustered_means,
    column_intervals,
    percentile_ci,
    resampled_totals,
)
from tide_bench.data.schema import persona_of_item
from tide_bench.generation.reference import LABEL as REFERENCE_LABEL
from tide_bench.judging.families import family_of
from tide_bench.judging.rubric import Rubric
from tide_bench.judging.summary import counted_values
from tide_bench.leaderboard.scoring.scores import RESAMPLES  # the board's: every interval on it uses the same count
from tide_bench.metrics.reference import tokenize

MIN_PERSONAS = 10  # fewer personas: a persona bootstrap is too unstable to support a verdict
MIN_LENGTH_SD = 1.0  # word tokens: a reply within this of its entry's median length has the entry's "one length"
MIN_VARYING_ITEMS = 10  # fewer items off their entry's usual length: the length term rests on a handful of replies
CROSS_FAMILY_JUDGES = {"claude": "openai-gpt", "gpt": "claude-sonnet"}  # shipped judges of another family
DEFAULT_CROSS_JUDGE = "openai-gpt"


@dataclass
class ItemTable:
    """One entry's items as the diagnostics read them (one row per item, in one order)."""

    personas: list[str]
    factors: np.ndarray  # (n, k) factor scores of scored items; NaN otherwise
    counted: np.ndarray  # (n,) overall empathy as it counts (failures at the minimum; NaN not counted)
    failure: np.ndarray  # (n,) bool: an unscored item counted at the scale minimum
    reply_tokens: np.ndarray  # (n,)
    reference_tokens: np.ndarray  # (n,)
    item_ids: list[str] | None = None  # aligns entries item by item; None: every table has the same items in order


@lru_cache(maxsize=1 << 15)
def reference_tokens(text: str) -> float:
    """The length of a reference reply in word tokens. Cached by text: every entry of a board
    answers the same items, so each reference is tokenized once per process."""
    return float(len(tokenize(text)))


def item_table(
    generations: Sequence[Any],
    judgments: Mapping[str, dict[str, Any]],
    rubric: Rubric,
    counted: np.ndarray | None = None,
) -> ItemTable:
    """The table of one entry from its generations (in item id order) and judgment records
    (``judgments.jsonl`` records by item id; an item without one counts nowhere). ``counted``:
    the ``(n, factors + 1)`` values as they count (:func:`~tide_bench.judging.summary.counted_values`,
    NaN for an item without a judgment), when the caller has them."""
    records = [judgments.get(g.item_id) for g in generations]
    n, k = len(generations), len(rubric.factor_keys)
    if counted is None:
        present = [i for i, r in enumerate(records) if r is not None]
        counted = np.full((n, k + 1), np.nan)
        if present:
            counted[present] = counted_values([records[i] for i in present], rubric.factor_keys, rubric.scale_min)
    scored = np.array([r is not None and r["status"] == "scored" for r in records], dtype=bool)
    factors = np.where(scored[:, None], counted[:, :k], np.nan)
    reply = np.array([g.metrics.get("length_tokens", math.nan) for g in generations], dtype=float)
    missing = ~np.isfinite(reply)
    if missing.any():
        reply[missing] = [len(tokenize(generations[i].reply)) for i in np.flatnonzero(missing)]
    return ItemTable(
        personas=[str(g.persona_id or persona_of_item(g.item_id)) for g in generations],
        factors=factors,
        counted=counted[:, k],
        failure=np.array([r is not None and r["status"] != "scored" for r in records], dtype=bool)
        & np.isfinite(counted[:, k]),
        reply_tokens=reply,
        reference_tokens=np.array([reference_tokens(g.reference_reply) for g in generations], dtype=float),
        item_ids=[g.item_id for g in generations],
    )


@dataclass
class _Moments:
    """Per entry and per resample: n, means and within-entry centred cross-products of v variables."""

    n: np.ndarray  # (R, K)
    mean: np.ndarray  # (R, K, v)
    cross: np.ndarray  # (R, K, v, v)


def _moments(
    samples: Sequence[tuple[np.ndarray, np.ndarray]], n_clusters: int, resamples: int, seed: int
) -> tuple[_Moments, _Moments]:
    """The point moments and the bootstrap moments of each entry's variables ``(codes, X)``; a
    row of X with a non-finite value is left out. Cluster totals make every resample one matrix
    product (the same resamples as the board's other intervals)."""
    v = samples[0][1].shape[1]
    upper = np.triu_indices(v)
    blocks = []
    for codes, x in samples:
        ok = np.isfinite(x).all(axis=1)
        z = np.where(ok[:, None], x, 0.0)
        columns = np.hstack([ok[:, None].astype(float), z, z[:, upper[0]] * z[:, upper[1]]])
        blocks.append(cluster_totals(codes, n_clusters, columns))
    totals = np.hstack(blocks)
    k = len(samples)
    return _unpack(totals.sum(axis=0)[None, :], k, v), _unpack(resampled_totals(totals, resamples, seed), k, v)


def _unpack(sums: np.ndarray, k: int, v: int) -> _Moments:
    """The moments from the totals. The centred cross-products are computed once per pair
    (the upper triangle) and then placed in both halves of each symmetric matrix with one
    ``take``: the same values as computing every cell (``a * b == b * a``), without writing
    the (resamples x entries x v x v) products through fancy indexing first (0.4 s of a
    50-entry build for v = 4, against 12 ms now)."""
    upper = np.triu_indices(v)
    s = sums.reshape(sums.shape[0], k, -1)
    n, first, second = s[..., 0], s[..., 1 : 1 + v], s[..., 1 + v :]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = first / n[..., None]
        centred = second - first[..., upper[0]] * first[..., upper[1]] / n[..., None]
    centred = np.where(n[..., None] > 0, centred, 0.0)
    position = np.empty((v, v), dtype=np.intp)  # cell (i, j) -> its pair's place in the upper triangle
    position[upper] = position[upper[1], upper[0]] = np.arange(len(upper[0]))
    return _Moments(n, mean, np.take(centred, position.ravel(), axis=-1).reshape(*n.shape, v, v))


def _estimate(
    point: float,
    replicates: np.ndarray,
    n: int,
    *,
    n_units: int | None = None,
    note: str | None = None,
    interval: tuple[float | None, float | None] | None = None,
) -> dict[str, Any]:
    """``{value, ci_low, ci_high, n}`` (expanded percentile interval over ``n_units`` personas);
    ``value`` None with a ``note`` when the point is undefined or ``note`` says it is.
    ``interval``: that interval when the caller has cut it already (:func:`_intervals`)."""
    if note is not None or not math.isfinite(point):
        return {"value": None, "ci_low": None, "ci_high": None, "n": n, "note": note or "undefined (no variation)"}
    low, high = interval if interval is not None else percentile_ci(replicates, n_units=n_units)
    return {"value": float(point), "ci_low": low, "ci_high": high, "n": n}


def _intervals(replicates: np.ndarray, units: list[int]) -> list[tuple[float | None, float | None]]:
    """:func:`percentile_ci` of every column of ``(resamples, entries)`` replicates, column ``j``
    over ``units[j]`` personas: the columns over two or more cut in one call
    (:func:`~tide_bench.core.stats.column_intervals`, the same numbers bit for bit; one
    ``np.quantile`` call per entry and estimate was a fifth of the diagnostics)."""
    cut = column_intervals(replicates, np.asarray(units, dtype=np.int64))
    return [
        percentile_ci(replicates[:, j], n_units=u) if u < 2 else ci
        for j, (u, ci) in enumerate(zip(units, cut, strict=True))
    ]


def _correlation(cross: np.ndarray, a: int, b: int) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return cross[..., a, b] / np.sqrt(cross[..., a, a] * cross[..., b, b])


def _codes(tables: Sequence[ItemTable]) -> tuple[list[np.ndarray], int]:
    """Cluster codes of every entry's items over the personas of all entries (one resampling unit)."""
    labels = [p for t in tables for p in t.personas]
    codes, n_clusters = cluster_codes(labels)
    out, start = [], 0
    for t in tables:
        out.append(codes[start : start + len(t.personas)])
        start += len(t.personas)
    return out, n_clusters


def _aligned(tables: Sequence[ItemTable]) -> tuple[list[np.ndarray], int]:
    """Each table's row positions in one item index over all tables (by item id, or by position
    when the tables carry no ids and have the same length), and the number of items."""
    if all(t.item_ids is not None for t in tables):
        ids = sorted({i for t in tables for i in t.item_ids or ()})
        index = {item: j for j, item in enumerate(ids)}
        return [np.array([index[i] for i in t.item_ids or ()], dtype=np.intp) for t in tables], len(ids)
    sizes = {len(t.personas) for t in tables}
    if len(sizes) > 1:
        raise ValueError("tables without item ids must have the same items in the same order")
    n = sizes.pop() if sizes else 0
    return [np.arange(n) for _ in tables], n


def _slope_note(tables: Sequence[ItemTable], fit_rows: Sequence[np.ndarray], d: Sequence[np.ndarray]) -> str | None:
    """Why the length slope is not identified (``None`` when it is): one entry, or no entry
    whose own reply lengths vary."""
    if len(tables) < 2:
        return (
            "one entry: item effects cannot be separated from the length term (needs two or more entries on the "
            "same items; the padding probe tests one entry)"
        )
    varying = [
        int((np.abs(t.reply_tokens[m] - np.median(t.reply_tokens[m])) >= MIN_LENGTH_SD).sum())
        if m.sum() >= 2 and np.std(dj[m]) > 1e-9
        else 0
        for t, m, dj in zip(tables, fit_rows, d, strict=True)
    ]
    if sum(varying) < MIN_VARYING_ITEMS:
        return (
            f"reply lengths do not vary within any entry (each entry's replies have one length, within "
            f"{MIN_LENGTH_SD:g} token, e.g. cut at the token cap, or are the references themselves; "
            f"{sum(varying)} items differ from their entry's usual length, fewer than {MIN_VARYING_ITEMS}): "
            "the length term is not identified"
        )
    return None


def _two_way_slope(
    tables: Sequence[ItemTable],
    codes: list[np.ndarray],
    scored: list[np.ndarray],
    d: list[np.ndarray],
    n_clusters: int,
    resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, str | None, int, int]:
    """The shared length slope ``b`` (point, bootstrap), why it is not identified (or None), and
    the items and personas it was fitted on: the two-way within estimator on the items every
    entry scored (item-centred score and length term per entry)."""
    positions, n_items = _aligned(tables)
    y_all = np.full((n_items, len(tables)), np.nan)
    d_all = np.full((n_items, len(tables)), np.nan)
    item_codes = np.zeros(n_items, dtype=np.int64)
    for j, (t, pos, m, dj) in enumerate(zip(tables, positions, scored, d, strict=True)):
        y_all[pos[m], j] = t.counted[m]
        d_all[pos[m], j] = dj[m]
        item_codes[pos] = codes[j]
    complete = np.isfinite(y_all).all(axis=1) & np.isfinite(d_all).all(axis=1) if len(tables) else np.zeros(0, bool)
    fit_rows = [complete[pos] & m for pos, m in zip(positions, scored, strict=True)]
    note = _slope_note(tables, fit_rows, d)
    within = [
        (
            item_codes[complete],
            np.column_stack(
                [
                    (y_all - y_all.mean(axis=1, keepdims=True))[complete, j],
                    (d_all - d_all.mean(axis=1, keepdims=True))[complete, j],
                ]
            ),
        )
        for j in range(len(tables))
    ]
    w_point, w_boot = _moments(within, n_clusters, resamples, seed) if tables else (None, None)

    def slope(m: _Moments) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return m.cross[..., 0, 1].sum(axis=-1) / m.cross[..., 1, 1].sum(axis=-1)

    n_fit_items = int(complete.sum())
    personas = int(np.unique(item_codes[complete]).size)
    b_point = slope(w_point) if w_point is not None else np.full(1, np.nan)
    b_boot = slope(w_boot) if w_boot is not None else np.full(resamples, np.nan)
    if note is None and not (np.isfinite(b_point[0]) and w_point.cross[..., 1, 1].sum() > 1e-12):
        note = "the length term does not vary within entries and items: not identified"
    return b_point, b_boot, note, n_fit_items, personas


def _entry_block(t: ItemTable, n_fit: int, r: dict[str, Any], lc: dict[str, Any], personas: int) -> dict[str, Any]:
    """One entry's length block: ``r``, the length-controlled score as a mean block, mean lengths."""
    return {
        "n_scored": n_fit,
        "mean_reply_tokens": float(np.nanmean(t.reply_tokens)) if len(t.personas) else None,
        "mean_reference_tokens": float(np.mean(t.reference_tokens)) if len(t.personas) else None,
        "r": r,
        "empathy_lc": {
            "mean": lc["value"],
            "ci_low": lc["ci_low"],
            "ci_high": lc["ci_high"],
            "n": lc["n"],
            "n_clusters": personas,
            **({"note": lc["note"]} if lc.get("note") else {}),
        },
    }


def length_bias(
    tables: Sequence[ItemTable], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per entry: ``r`` (empathy vs reply length), ``empathy_lc`` (a mean block) and mean lengths;
    and the board block (two-way slope, pooled within-entry r, the scale ``s``, the verdict).
    See the module docstring."""
    codes, n_clusters = _codes(tables)
    scored = [np.isfinite(t.factors).all(axis=1) & np.isfinite(t.reply_tokens) for t in tables]
    differences = np.concatenate(
        [(t.reply_tokens - t.reference_tokens)[m] for t, m in zip(tables, scored, strict=True)]
    )
    scale = float(np.std(differences)) if differences.size > 1 else 0.0
    d = [
        np.tanh((t.reply_tokens - t.reference_tokens) / scale) if scale > 0 else np.zeros(len(t.personas))
        for t in tables
    ]
    fit = [
        np.column_stack([np.where(m, t.counted, np.nan), dj, t.reply_tokens])
        for t, m, dj in zip(tables, scored, d, strict=True)
    ]
    counted = [np.column_stack([t.counted, np.where(t.failure, 0.0, dj)]) for t, dj in zip(tables, d, strict=True)]
    f_point, f_boot = _moments(list(zip(codes, fit, strict=True)), n_clusters, resamples, seed)
    c_point, c_boot = _moments(list(zip(codes, counted, strict=True)), n_clusters, resamples, seed)

    b_point, b_boot, note, n_fit_items, personas = _two_way_slope(tables, codes, scored, d, n_clusters, resamples, seed)
    lc_point = c_point.mean[..., 0] - b_point[:, None] * c_point.mean[..., 1]
    lc_boot = c_boot.mean[..., 0] - b_boot[:, None] * c_boot.mean[..., 1]
    r_point, r_boot = _correlation(f_point.cross, 0, 2), _correlation(f_boot.cross, 0, 2)
    per_entry = []
    units = [int(np.unique(codes[j][np.isfinite(counted[j]).all(axis=1)]).size) for j in range(len(tables))]
    lc_cis, r_cis = _intervals(lc_boot, units), _intervals(r_boot, units)
    for j, t in enumerate(tables):
        n_fit, n_counted = int(f_point.n[0, j]), int(c_point.n[0, j])
        entry_personas = units[j]
        lc_note = note or (None if n_fit >= 2 else "fewer than two scored items")
        lc = _estimate(
            float(lc_point[0, j]), lc_boot[:, j], n_counted, n_units=entry_personas, note=lc_note, interval=lc_cis[j]
        )
        constant = n_fit >= 2 and np.std(t.reply_tokens[scored[j]]) < MIN_LENGTH_SD
        r = _estimate(
            float(r_point[0, j]),
            r_boot[:, j],
            n_fit,
            n_units=entry_personas,
            note="the entry's reply lengths do not vary" if constant else None,
            interval=r_cis[j],
        )
        per_entry.append(_entry_block(t, n_fit, r, lc, entry_personas))
    pooled = f_point.cross.sum(axis=1)
    pooled_boot = f_boot.cross.sum(axis=1)
    n_total = int(f_point.n.sum())
    all_personas = _personas(codes, fit)
    slope_block = _estimate(float(b_point[0]), b_boot, n_fit_items, n_units=personas, note=note)
    board = {
        "n_scored": n_total,
        "n_personas": all_personas,
        "n_items_in_slope": n_fit_items,
        "n_personas_in_slope": personas,
        "length_scale_tokens": scale,
        "slope": slope_block,
        "verdict": length_verdict(slope_block, personas),
        "r_within": _estimate(
            float(_correlation(pooled, 0, 2)[0]), _correlation(pooled_boot, 0, 2), n_total, n_units=all_personas
        ),
        "reads_as": "an association (scores and length within entries and items), not the judge's preference: "
        "longer replies may truly be better here. The padding probe (the same replies with neutral padding, "
        "judged again) tests the judge.",
        "model": "y_ij = a_j + c_i + b * tanh((len_ij - ref_len_i) / s) + e_ij over the items every entry scored "
        "(b shared; entry and item effects removed); LC_j = empathy_j - b * mean_j(tanh(...)); r: Pearson r of overall "
        "empathy with reply length (word tokens) within entries; 95% expanded percentile persona-cluster bootstrap",
    }
    return per_entry, board


def _personas(codes: Sequence[np.ndarray], variables: Sequence[np.ndarray]) -> int:
    """How many personas have at least one usable item (a row of ``variables`` all finite)."""
    used = [c[np.isfinite(x).all(axis=1)] for c, x in zip(codes, variables, strict=True)]
    return int(np.unique(np.concatenate(used)).size) if used else 0


ASSOCIATION_VERDICTS = ("scores rise with length", "scores fall with length", "no association with length shown")


def length_verdict(slope: Mapping[str, Any], n_personas: int) -> str:
    """What the slope's 95 % interval says, as an association: ``scores rise with length``
    (above zero), ``scores fall with length`` (below), ``no association with length shown``;
    ``no verdict: ...`` below :data:`MIN_PERSONAS` or when the slope is undefined (its note)."""
    if slope.get("value") is None:
        return f"no verdict: {slope.get('note') or 'the slope is undefined'}"
    if n_personas < MIN_PERSONAS or slope.get("ci_low") is None or slope.get("ci_high") is None:
        return f"no verdict: {n_personas} personas are too few (at least {MIN_PERSONAS})"
    if slope["ci_low"] > 0:
        return ASSOCIATION_VERDICTS[0]
    if slope["ci_high"] < 0:
        return ASSOCIATION_VERDICTS[1]
    return ASSOCIATION_VERDICTS[2]


HALO_NOTE = (
    "halo is judged against people: a judge with halo rates its factors more alike than human raters of the same "
    "replies do. The board has no human ratings; `tide-bench audit` compares the judge's inter-factor correlations "
    "with the raters' on the same items (agreement.json halo). Shown here: the factors' correlations (they may "
    "truly correlate) and the share of items given identical scores on every factor"
)


def halo(
    tables: Sequence[ItemTable], factor_names: Sequence[str], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Correlations between the rubric's factors over scored items, pooled within entries, and
    the share of scored items with identical scores on every factor (persona-cluster CIs).
    Descriptive: the test of halo needs human ratings (:data:`HALO_NOTE`)."""
    k = len(factor_names)
    codes, n_clusters = _codes(tables)
    point, boot = _moments([(c, t.factors) for c, t in zip(codes, tables, strict=True)], n_clusters, resamples, seed)
    pooled, pooled_boot = point.cross.sum(axis=1), boot.cross.sum(axis=1)
    n = int(point.n.sum())
    personas = _personas(codes, [t.factors for t in tables])
    pairs = []
    for a in range(k):
        for b in range(a + 1, k):
            estimate = _estimate(
                float(_correlation(pooled, a, b)[0]), _correlation(pooled_boot, a, b), n, n_units=personas
            )
            pairs.append({"a": factor_names[a], "b": factor_names[b], "r": estimate})
    labels = np.concatenate([c for c in codes]) if codes else np.zeros(0, dtype=np.int64)
    factors = np.vstack([t.factors for t in tables]) if tables else np.zeros((0, k))
    scored = np.isfinite(factors).all(axis=1)
    identical = np.where(scored, (np.ptp(np.where(scored[:, None], factors, 0.0), axis=1) == 0).astype(float), np.nan)
    (share,), _ = clustered_means(identical, labels, n_clusters, resamples=resamples, seed=seed)
    return {
        "n_scored": n,
        "n_personas": personas,
        "pairs": pairs,
        "identical_share": share.as_dict(),
        "note": HALO_NOTE,
    }


def _card(manifest: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any] | None:
    for adapter in ((manifest.get("model") or {}).get("adapter"), meta.get("adapter")):
        if isinstance(adapter, dict) and isinstance(adapter.get("card"), dict):
            return adapter["card"]
    return None


def preference_leakage(
    row: Mapping[str, Any], manifest: Mapping[str, Any], meta: Mapping[str, Any], run_hint: str = "RUN_DIR"
) -> dict[str, Any] | None:
    """For a fine-tuned entry: whether it was trained on references written by the judge's own
    model family (None for an entry that is not fine-tuned or not judged)."""
    adapter = (manifest.get("model") or {}).get("adapter")
    judge = row.get("judge") or {}
    if not judge or (row.get("condition") != "fine-tuned" and not adapter):
        return None
    judge_family = judge.get("family") or family_of(str(judge.get("model") or ""))
    reference_family = family_of(REFERENCE_LABEL)
    card = _card(manifest, meta)
    data = card.get("data") if card else None
    other = CROSS_FAMILY_JUDGES.get(str(judge_family), DEFAULT_CROSS_JUDGE)
    command = f"tide-bench judge {run_hint} --judge {other} --out {run_hint}/judge-{other}"
    if not isinstance(data, dict):
        risk: bool | None = None if judge_family == reference_family else False
        trained_on = "not recorded (no adapter card with a data block)"
    elif data.get("is_synthetic_sample"):
        risk, trained_on = False, "tide-bench's synthetic sample (references not written by a frontier model)"
    else:
        risk = judge_family == reference_family
        trained_on = f"TIDE references ({REFERENCE_LABEL}), data {data.get('source') or 'unnamed'}"
    note = {
        True: f"trained on references from the judge's own family ({judge_family}): the judge may favour it. "
        f"Re-judge with a judge of another family and compare: {command}",
        None: f"the training data is not recorded; if it was TIDE's references ({reference_family} family, like the "
        f"judge), the judge may favour this entry. Re-judge with a judge of another family: {command}",
        False: "the training references do not come from the judge's family",
    }[risk]
    return {
        "risk": risk,
        "judge_family": judge_family,
        "reference_family": reference_family
        if isinstance(data, dict) and not data.get("is_synthetic_sample")
        else None,
        "trained_on": trained_on,
        "rejudge_command": command if risk is not False else None,
        "note": note,
    }


def diagnose(
    rows: Sequence[dict[str, Any]],
    tables: Mapping[str, ItemTable],
    provenance: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any]]],
    rubric: Rubric,
    run_hints: Mapping[str, str] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any] | None:
    """Add ``preference_leakage``, ``length_bias`` and ``empathy_lc`` to each row (in place) and
    return the board's ``judge_bias`` block (None when nothing is judged). ``tables`` maps each
    judged entry's id to its :func:`item_table`, ``provenance`` every entry's id to its
    (run.json, submission metadata)."""
    hints = run_hints or {}
    for row in rows:
        manifest, meta = provenance[row["id"]]
        row["preference_leakage"] = preference_leakage(row, manifest, meta, hints.get(row["id"], "RUN_DIR"))
    judged = [r for r in rows if r.get("judged")]
    if not judged:
        return None
    entry_tables = [tables[r["id"]] for r in judged]
    per_entry, length = length_bias(entry_tables, resamples=resamples, seed=seed)
    for row, block in zip(judged, per_entry, strict=True):
        row["empathy_lc"] = block.pop("empathy_lc")
        row["length_bias"] = block
    return {
        "length": length,
        "halo": halo(
            [tables[r["id"]] for r in judged], [f.name for f in rubric.factors], resamples=resamples, seed=seed
        ),
        "method": "see tide_bench/leaderboard/scoring/bias.py and docs/leaderboard.md (judge-bias diagnostics)",
    }
