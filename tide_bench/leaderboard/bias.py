"""Judge-bias diagnostics for a board (or one run): length, halo, preference leakage.

An LLM judge can reward what is not empathy. Three checks, each stated with its rule:

**Length.** Judges tend to prefer longer replies (AlpacaEval's length-controlled win rate was
made for this). Per entry, the Pearson correlation of the overall empathy score with the
reply's length (word tokens), and a *length-controlled* score. The model, fitted on every
scored item of every entry::

    y_ij = a_j + b * d_ij + e_ij,    d_ij = tanh((len_ij - ref_len_i) / s)

``y_ij`` is entry j's overall score on item i, ``len_ij`` its reply length, ``ref_len_i`` the
reference reply's length and ``s`` the standard deviation of the length differences on the
board (AlpacaEval-LC's normalisation: tanh keeps very long replies from dominating). The slope
``b`` is shared (the judge's preference for length is a property of the judge) and estimated
*within* entries (each entry's own means removed, so a better model that also writes longer
replies does not make length look rewarded). The length-controlled score is the entry's
empathy with the length term removed, ``LC_j = empathy_j - b * mean_j(d)``: what the entry
would score if its replies were as long as the references. ``empathy_j`` and ``mean_j(d)`` run
over the items counted in the entry's empathy (a model failure counts at the scale minimum and
with ``d = 0``: the rule fixes its score whatever its length). Unlike AlpacaEval's logistic
model of win rates against a baseline, TIDE scores are absolute 1-5 ratings, hence a linear
model. Reply lengths are the submitted ``length_tokens`` (recomputed by validation).

**Halo.** When the rubric's factors correlate above .9 over items, the judge rates one
impression, not three qualities. Correlations are computed over every scored item, pooled
within entries (between-entry differences removed, since a better model legitimately scores
higher on every factor). The flag is raised when every pair exceeds ``HALO_R``.

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

from tide_bench.core.stats import DEFAULT_SEED, cluster_codes, cluster_totals, percentile_ci, resampled_totals
from tide_bench.data.schema import persona_of_item
from tide_bench.generation.reference import LABEL as REFERENCE_LABEL
from tide_bench.judging.families import family_of
from tide_bench.judging.rubric import Rubric
from tide_bench.judging.summary import counted_values, is_model_failure
from tide_bench.leaderboard.scores import RESAMPLES  # the board's: every interval on it uses the same count
from tide_bench.metrics.reference import tokenize

HALO_R = 0.9
MIN_PERSONAS = 10  # fewer personas: a persona bootstrap is too unstable to support a verdict
CROSS_FAMILY_JUDGES = {"claude": "openai-gpt", "gpt": "claude-sonnet"}  # shipped judges of another family
DEFAULT_CROSS_JUDGE = "openai-gpt"


@dataclass
class ItemTable:
    """One entry's items as the diagnostics read them (one row per item, in one order)."""

    personas: list[str]
    factors: np.ndarray  # (n, k) factor scores of scored items; NaN otherwise
    counted: np.ndarray  # (n,) overall empathy as it counts (failures at the minimum; NaN not counted)
    failure: np.ndarray  # (n,) bool: a model-attributable unscored item
    reply_tokens: np.ndarray  # (n,)
    reference_tokens: np.ndarray  # (n,)


@lru_cache(maxsize=1 << 15)
def reference_tokens(text: str) -> float:
    """The length of a reference reply in word tokens. Cached by text: every entry of a board
    answers the same items, so each reference is tokenized once per process."""
    return float(len(tokenize(text)))


def item_table(generations: Sequence[Any], judgments: Mapping[str, dict[str, Any]], rubric: Rubric) -> ItemTable:
    """The table of one entry from its generations (in item id order) and judgment records
    (``judgments.jsonl`` records by item id; an item without one counts nowhere)."""
    records = [judgments.get(g.item_id) for g in generations]
    present = [i for i, r in enumerate(records) if r is not None]
    n, k = len(generations), len(rubric.factor_keys)
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
        failure=np.array([r is not None and is_model_failure(r) for r in records], dtype=bool),
        reply_tokens=reply,
        reference_tokens=np.array([reference_tokens(g.reference_reply) for g in generations], dtype=float),
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
    upper = np.triu_indices(v)
    s = sums.reshape(sums.shape[0], k, -1)
    n, first, second = s[..., 0], s[..., 1 : 1 + v], s[..., 1 + v :]
    products = np.empty((*n.shape, v, v))
    products[..., upper[0], upper[1]] = second
    products[..., upper[1], upper[0]] = second
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = first / n[..., None]
        cross = products - first[..., :, None] * first[..., None, :] / n[..., None, None]
    return _Moments(n, mean, np.where(n[..., None, None] > 0, cross, 0.0))


def _estimate(point: float, replicates: np.ndarray, n: int) -> dict[str, Any]:
    if not math.isfinite(point):
        return {"value": None, "ci_low": None, "ci_high": None, "n": n}
    low, high = percentile_ci(replicates)
    return {"value": float(point), "ci_low": low, "ci_high": high, "n": n}


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


def length_bias(
    tables: Sequence[ItemTable], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per entry: ``r`` (empathy vs reply length), ``empathy_lc`` (a mean block) and mean lengths;
    and the board block (slope, pooled within-entry r, the scale ``s``). See the module docstring."""
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

    def slope(m: _Moments) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return m.cross[..., 0, 1].sum(axis=-1) / m.cross[..., 1, 1].sum(axis=-1)

    b_point, b_boot = slope(f_point), slope(f_boot)
    lc_point = c_point.mean[..., 0] - b_point[:, None] * c_point.mean[..., 1]
    lc_boot = c_boot.mean[..., 0] - b_boot[:, None] * c_boot.mean[..., 1]
    r_point, r_boot = _correlation(f_point.cross, 0, 2), _correlation(f_boot.cross, 0, 2)
    per_entry = []
    for j, t in enumerate(tables):
        n_fit, n_counted = int(f_point.n[0, j]), int(c_point.n[0, j])
        lc = (
            _estimate(float(lc_point[0, j]), lc_boot[:, j], n_counted)
            if n_fit >= 2
            else _estimate(math.nan, lc_boot[:, j], 0)
        )
        per_entry.append(
            {
                "n_scored": n_fit,
                "mean_reply_tokens": float(np.nanmean(t.reply_tokens)) if len(t.personas) else None,
                "mean_reference_tokens": float(np.mean(t.reference_tokens)) if len(t.personas) else None,
                "r": _estimate(float(r_point[0, j]), r_boot[:, j], n_fit),
                "empathy_lc": {
                    "mean": lc["value"],
                    "ci_low": lc["ci_low"],
                    "ci_high": lc["ci_high"],
                    "n": lc["n"],
                    "n_clusters": int(np.unique(codes[j][np.isfinite(counted[j]).all(axis=1)]).size),
                },
            }
        )
    pooled = f_point.cross.sum(axis=1)
    pooled_boot = f_boot.cross.sum(axis=1)
    n_total = int(f_point.n.sum())
    personas = _personas(codes, fit)
    slope = _estimate(float(b_point[0]), b_boot, n_total)
    board = {
        "n_scored": n_total,
        "n_personas": personas,
        "length_scale_tokens": scale,
        "slope": slope,
        "verdict": length_verdict(slope, personas),
        "r_within": _estimate(float(_correlation(pooled, 0, 2)[0]), _correlation(pooled_boot, 0, 2), n_total),
        "model": "y_ij = a_j + b * tanh((len_ij - ref_len_i) / s) + e_ij over scored items (b shared, within "
        "entries); LC_j = empathy_j - b * mean_j(tanh(...)); r: Pearson r of overall empathy with reply length "
        "(word tokens) within entries; 95% persona-cluster bootstrap",
    }
    return per_entry, board


def _personas(codes: Sequence[np.ndarray], variables: Sequence[np.ndarray]) -> int:
    """How many personas have at least one usable item (a row of ``variables`` all finite)."""
    used = [c[np.isfinite(x).all(axis=1)] for c, x in zip(codes, variables, strict=True)]
    return int(np.unique(np.concatenate(used)).size) if used else 0


def length_verdict(slope: Mapping[str, Any], n_personas: int) -> str:
    """``rewards length`` when the slope's 95 % interval lies above zero, ``penalises length``
    when below, ``no length preference shown`` otherwise; ``too few personas`` below
    :data:`MIN_PERSONAS` or when the slope is undefined (no verdict then)."""
    if n_personas < MIN_PERSONAS or slope.get("ci_low") is None or slope.get("ci_high") is None:
        return "too few personas"
    if slope["ci_low"] > 0:
        return "rewards length"
    if slope["ci_high"] < 0:
        return "penalises length"
    return "no length preference shown"


def halo_verdict(pairs: Sequence[Mapping[str, Any]], n_personas: int, threshold: float = HALO_R) -> bool | None:
    """True (halo) when every factor pair's correlation exceeds ``threshold``; None (no verdict)
    below :data:`MIN_PERSONAS` or when a correlation is undefined."""
    values = [p["r"]["value"] for p in pairs]
    if not pairs or n_personas < MIN_PERSONAS or any(v is None for v in values):
        return None
    return all(v > threshold for v in values)


def halo(
    tables: Sequence[ItemTable], factor_names: Sequence[str], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Correlations between the rubric's factors over scored items, pooled within entries; the
    halo flag when every pair exceeds :data:`HALO_R`."""
    k = len(factor_names)
    codes, n_clusters = _codes(tables)
    point, boot = _moments([(c, t.factors) for c, t in zip(codes, tables, strict=True)], n_clusters, resamples, seed)
    pooled, pooled_boot = point.cross.sum(axis=1), boot.cross.sum(axis=1)
    n = int(point.n.sum())
    pairs = []
    for a in range(k):
        for b in range(a + 1, k):
            estimate = _estimate(float(_correlation(pooled, a, b)[0]), _correlation(pooled_boot, a, b), n)
            pairs.append({"a": factor_names[a], "b": factor_names[b], "r": estimate})
    personas = _personas(codes, [t.factors for t in tables])
    return {
        "n_scored": n,
        "n_personas": personas,
        "pairs": pairs,
        "threshold": HALO_R,
        "halo": halo_verdict(pairs, personas),
        "rule": f"halo when every pair of factors correlates above r = {HALO_R} over scored items (pooled within "
        "entries): the judge then rates one impression, not separate factors",
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
        "method": "see tide_bench/leaderboard/bias.py and docs/leaderboard.md (judge-bias diagnostics)",
    }
