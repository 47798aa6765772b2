"""Judge-bias diagnostics (tide_bench/leaderboard/bias.py): the length-controlled score and the
length slope recover known values and are calibrated in seeded simulations with persona
effects; halo is told from between-model differences; every decision rule has a hand-made case
per branch."""

from __future__ import annotations

import numpy as np
import pytest

from tide_bench.leaderboard.bias import (
    MIN_PERSONAS,
    ItemTable,
    halo,
    halo_verdict,
    length_bias,
    length_verdict,
    preference_leakage,
)

SEED = 20251130


def _board(
    rng: np.random.Generator,
    personas: int,
    per: int,
    entries: list[tuple[float, float]],
    *,
    b: float,
    persona_sd: float = 0.3,
    noise: float = 0.5,
    k: int = 3,
) -> list[ItemTable]:
    """Entries (a_j, shift_j) on the same items: reply length = reference length + shift_j + noise;
    overall score ``a_j + b * tanh(length difference / s) + persona effect + noise`` with ``s``
    the board's spread of length differences (the model's own form), over ``k`` factors."""
    n = personas * per
    ids = np.repeat(np.arange(personas), per)
    effect = rng.normal(0, persona_sd, personas)[ids]  # the same personas for every entry
    reference = rng.uniform(40, 120, n)
    replies = [np.maximum(1, reference + shift + rng.normal(0, 25, n)) for _, shift in entries]
    scale = float(np.std(np.concatenate([r - reference for r in replies])))
    out = []
    for (a, _), reply in zip(entries, replies, strict=True):
        y = a + b * np.tanh((reply - reference) / scale) + effect + rng.normal(0, noise, n)
        factors = np.repeat(y[:, None], k, axis=1) + rng.normal(0, 0.05, (n, k))
        out.append(
            ItemTable([f"p{i}" for i in ids], factors, factors.mean(axis=1), np.zeros(n, dtype=bool), reply, reference)
        )
    return out


def test_length_controlled_score_recovers_the_entries_without_the_length_effect() -> None:
    rng = np.random.default_rng(SEED)
    truth = [3.0, 3.3, 3.1]
    tables = _board(rng, 40, 10, list(zip(truth, (-30, 0, 60), strict=True)), b=0.8)
    per_entry, board = length_bias(tables)
    assert board["slope"]["ci_low"] < 0.8 < board["slope"]["ci_high"] and board["slope"]["ci_low"] > 0
    assert board["verdict"] == "rewards length" and board["n_personas"] == 40
    lc = [e["empathy_lc"]["mean"] for e in per_entry]
    raw = [float(np.nanmean(t.counted)) for t in tables]
    assert raw[2] - raw[0] > 0.3  # the long-winded entry looks better on the raw score...
    assert lc[2] - lc[0] == pytest.approx(truth[2] - truth[0], abs=0.12)  # ...not once length is controlled
    assert lc[1] - lc[0] == pytest.approx(truth[1] - truth[0], abs=0.12)
    assert all(e["empathy_lc"]["ci_low"] < e["empathy_lc"]["mean"] < e["empathy_lc"]["ci_high"] for e in per_entry)
    assert all(e["r"]["value"] > 0 for e in per_entry)


def test_a_better_model_that_writes_longer_is_not_read_as_length_bias() -> None:
    """Between entries, longer replies go with higher scores, but within each entry length does
    nothing: the within-entry slope stays at zero."""
    rng = np.random.default_rng(SEED)
    tables = _board(rng, 40, 10, [(2.5, -40), (3.5, 60)], b=0.0)
    _, board = length_bias(tables)
    assert board["slope"]["ci_low"] < 0 < board["slope"]["ci_high"]
    assert board["verdict"] == "no length preference shown"


@pytest.mark.parametrize("b", [0.0, 0.6])
def test_the_slope_interval_is_calibrated(b: float) -> None:
    """Seeded simulation: 200 boards of 2 entries x 30 personas x 8 items with persona effects;
    the 95% interval covers the true slope in 88-99% of them."""
    rng = np.random.default_rng(SEED + int(10 * b))
    covered, rejected = 0, 0
    for _ in range(200):
        _, board = length_bias(_board(rng, 30, 8, [(3.0, -20), (3.0, 30)], b=b, persona_sd=0.4), resamples=400)
        slope = board["slope"]
        covered += slope["ci_low"] <= b <= slope["ci_high"]
        rejected += board["verdict"] != "no length preference shown"
    assert 0.88 <= covered / 200 <= 0.99, covered
    if b == 0:
        assert rejected / 200 <= 0.1  # a judge indifferent to length is rarely accused


def test_model_failures_count_at_the_minimum_with_no_length_term() -> None:
    rng = np.random.default_rng(SEED)
    (table,) = _board(rng, 20, 10, [(3.0, 20)], b=0.8)
    failed = np.arange(0, 200, 10)  # one item per persona failed (an empty reply)
    table.failure[failed] = True
    table.factors[failed] = np.nan
    table.counted[failed] = 1.0
    table.reply_tokens[failed] = 0.0
    (entry,), board = length_bias([table])
    scored = ~table.failure
    x, y = np.tanh((table.reply_tokens - table.reference_tokens) / board["length_scale_tokens"]), table.counted
    slope = np.polyfit(x[scored], y[scored], 1)[0]
    d = np.where(table.failure, 0.0, x)
    assert board["slope"]["value"] == pytest.approx(slope)
    assert entry["empathy_lc"]["mean"] == pytest.approx(y.mean() - slope * d.mean())
    assert entry["empathy_lc"]["n"] == 200


def test_halo_is_a_within_entry_correlation() -> None:
    rng = np.random.default_rng(SEED)
    one = _board(rng, 30, 10, [(2.0, 0), (4.0, 0)], b=0.0)  # three factors = one impression + tiny noise
    assert halo(one, ["A", "B", "C"])["halo"] is True
    distinct = []
    for a, t in zip((2.0, 4.0), _board(rng, 30, 10, [(2.0, 0), (4.0, 0)], b=0.0), strict=True):
        t.factors = a + rng.normal(0, 0.7, t.factors.shape)  # big differences between entries, independent factors
        distinct.append(t)
    result = halo(distinct, ["A", "B", "C"])
    assert result["halo"] is False and all(abs(p["r"]["value"]) < 0.2 for p in result["pairs"])
    few = _board(rng, MIN_PERSONAS - 1, 10, [(3.0, 0)], b=0.0)
    assert halo(few, ["A", "B", "C"])["halo"] is None  # no verdict from a handful of personas


@pytest.mark.parametrize(
    ("slope", "personas", "verdict"),
    [
        ({"ci_low": 0.1, "ci_high": 0.4}, 50, "rewards length"),
        ({"ci_low": -0.4, "ci_high": -0.1}, 50, "penalises length"),
        ({"ci_low": -0.1, "ci_high": 0.4}, 50, "no length preference shown"),
        ({"ci_low": 0.1, "ci_high": 0.4}, MIN_PERSONAS - 1, "too few personas"),
        ({"ci_low": None, "ci_high": None}, 50, "too few personas"),
    ],
)
def test_length_verdict_branches(slope: dict, personas: int, verdict: str) -> None:
    assert length_verdict(slope, personas) == verdict


@pytest.mark.parametrize(
    ("values", "personas", "verdict"),
    [
        ((0.95, 0.92, 0.91), 50, True),
        ((0.95, 0.85, 0.97), 50, False),
        ((0.95, 0.95, 0.95), 5, None),
        ((0.95, None, 0.95), 50, None),
        ((), 50, None),
    ],
)
def test_halo_verdict_branches(values: tuple, personas: int, verdict: bool | None) -> None:
    pairs = [{"a": "x", "b": "y", "r": {"value": v}} for v in values]
    assert halo_verdict(pairs, personas) is verdict


TIDE_CARD = {
    "model": {"adapter": {"path": "a", "card": {"data": {"source": "hub:yenopoya/TIDE", "is_synthetic_sample": False}}}}
}
SAMPLE_CARD = {"model": {"adapter": {"path": "a", "card": {"data": {"source": "sample", "is_synthetic_sample": True}}}}}
CLAUDE = {"judge": {"family": "claude", "model": "claude-sonnet-4-5"}}
GPT = {"judge": {"family": "gpt", "model": "gpt-4.1"}}


@pytest.mark.parametrize(
    ("row", "manifest", "meta", "risk", "command"),
    [
        ({"condition": "zero-shot", **CLAUDE}, {"model": {}}, {}, "n/a", None),
        ({"condition": "fine-tuned", "judge": None}, TIDE_CARD, {}, "n/a", None),
        ({"condition": "fine-tuned", **CLAUDE}, TIDE_CARD, {}, True, "--judge openai-gpt"),
        (
            {"condition": "zero-shot", **CLAUDE},
            TIDE_CARD,
            {},
            True,
            "--judge openai-gpt",
        ),  # the adapter says fine-tuned
        (
            {"condition": "fine-tuned", **CLAUDE},
            {"model": {}},
            {"adapter": TIDE_CARD["model"]["adapter"]},
            True,
            "openai-gpt",
        ),
        ({"condition": "fine-tuned", **CLAUDE}, SAMPLE_CARD, {}, False, None),
        ({"condition": "fine-tuned", **CLAUDE}, {"model": {}}, {}, None, "--judge openai-gpt"),  # unknown data
        ({"condition": "fine-tuned", **GPT}, TIDE_CARD, {}, False, None),
        ({"condition": "fine-tuned", **GPT}, {"model": {}}, {}, False, None),
    ],
)
def test_preference_leakage_branches(row: dict, manifest: dict, meta: dict, risk: object, command: str | None) -> None:
    result = preference_leakage(row, manifest, meta, "runs/x")
    if risk == "n/a":
        assert result is None
        return
    assert result is not None and result["risk"] is risk
    if command:
        assert command in result["rejudge_command"] and result["rejudge_command"].startswith("tide-bench judge runs/x ")
        assert result["rejudge_command"] in result["note"]
    else:
        assert result["rejudge_command"] is None
