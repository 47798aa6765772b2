"""Judge-bias diagnostics (tide_bench/leaderboard/scoring/bias.py): the length-controlled score and the
length slope recover known values and are calibrated in seeded simulations with persona
effects; halo is told from between-model differences; every decision rule has a hand-made case
per branch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.leaderboard.scoring.bias import (
    MIN_PERSONAS,
    ItemTable,
    halo,
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
    assert board["verdict"] == "scores rise with length" and board["n_personas"] == 40
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
    assert board["verdict"] == "no association with length shown"


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
        rejected += board["verdict"] != "no association with length shown"
    assert 0.88 <= covered / 200 <= 0.99, covered
    if b == 0:
        assert rejected / 200 <= 0.1  # a judge indifferent to length is rarely accused


def test_model_failures_count_at_the_minimum_with_no_length_term() -> None:
    rng = np.random.default_rng(SEED)
    tables = _board(rng, 20, 10, [(3.0, 20), (3.2, -10)], b=0.8)
    table = tables[0]
    failed = np.arange(0, 200, 10)  # one item per persona failed (an empty reply)
    table.failure[failed] = True
    table.factors[failed] = np.nan
    table.counted[failed] = 1.0
    table.reply_tokens[failed] = 0.0
    (entry, _), board = length_bias(tables)
    both = ~table.failure  # the slope uses the items every entry scored, entry and item effects removed
    scale = board["length_scale_tokens"]
    y = np.column_stack([t.counted for t in tables])[both]
    x = np.column_stack([np.tanh((t.reply_tokens - t.reference_tokens) / scale) for t in tables])[both]
    yc, xc = y - y.mean(axis=1, keepdims=True), x - x.mean(axis=1, keepdims=True)
    yc, xc = yc - yc.mean(axis=0), xc - xc.mean(axis=0)
    slope = float((yc * xc).sum() / (xc * xc).sum())
    d = np.where(table.failure, 0.0, np.tanh((table.reply_tokens - table.reference_tokens) / scale))
    assert board["slope"]["value"] == pytest.approx(slope)
    assert board["n_items_in_slope"] == 180
    assert entry["empathy_lc"]["mean"] == pytest.approx(table.counted.mean() - slope * d.mean())
    assert entry["empathy_lc"]["n"] == 200


def test_item_difficulty_that_tracks_reference_length_is_not_read_as_length() -> None:
    """Replies that do not track the reference's length, on items whose difficulty does: the
    within-entry slope of the former estimator read this as length bias on every board (mean
    slope +0.15); with item effects removed the slope is centred on zero."""
    rng = np.random.default_rng(SEED)
    personas, per = 40, 10
    n = personas * per
    ids = np.repeat(np.arange(personas), per)
    slopes, verdicts = [], []
    for _ in range(20):
        reference = rng.uniform(40, 120, n)
        item = -0.4 * (reference - reference.mean()) / reference.std()  # longer references: harder items
        tables = []
        for a, shift in ((3.0, -20), (3.2, 30)):
            reply = np.maximum(1, 80 + shift + rng.normal(0, 25, n))
            y = a + item + rng.normal(0, 0.3, personas)[ids] + rng.normal(0, 0.5, n)
            factors = np.repeat(y[:, None], 3, axis=1) + rng.normal(0, 0.05, (n, 3))
            tables.append(
                ItemTable([f"p{i}" for i in ids], factors, factors.mean(axis=1), np.zeros(n, bool), reply, reference)
            )
        _, board = length_bias(tables, resamples=200)
        slopes.append(board["slope"]["value"])
        verdicts.append(board["verdict"])
    assert abs(np.mean(slopes)) < 0.075, slopes  # 20 boards: se of the mean ~0.017; the former estimator: +0.15
    assert verdicts.count("no association with length shown") >= 17, verdicts


def _one_length(rng: np.random.Generator, entries: int, length: float | str | None) -> list[ItemTable]:
    tables = _board(rng, 30, 8, [(3.0 + 0.2 * j, 0) for j in range(entries)], b=0.0)
    for t in tables:
        t.reply_tokens[:] = t.reference_tokens if length is None else 64.0
        if length == "two shorter":
            t.reply_tokens[:2] = 30.0
    return tables


@pytest.mark.parametrize(
    ("entries", "length", "why"),
    [
        (3, 64.0, "reply lengths do not vary within any entry"),  # every reply cut at the token cap
        (1, 64.0, "one entry"),
        (2, None, "reply lengths do not vary within any entry"),  # replies as long as the references: d = 0
        (3, "two shorter", "reply lengths do not vary within any entry"),  # 2 of 240 replies stopped early
    ],
)
def test_a_degenerate_length_design_is_not_estimated(entries: int, length: float | str | None, why: str) -> None:
    """Issue 34 item 2: "Empathy LC 19.52 [-29.85, 1223.42]" on a 1-5 scale came from a board whose
    replies all had one length. An undefined estimator is n/a with its reason, never a number."""
    per_entry, board = length_bias(_one_length(np.random.default_rng(SEED), entries, length))
    assert board["slope"]["value"] is None and why in board["slope"]["note"]
    assert board["verdict"].startswith("no verdict: ") and why in board["verdict"]
    for e in per_entry:
        lc = e["empathy_lc"]
        assert lc["mean"] is None and lc["ci_low"] is None and lc["ci_high"] is None and why in lc["note"]
    if isinstance(length, float):
        assert all(e["r"]["value"] is None for e in per_entry)


def test_halo_is_descriptive_on_the_board() -> None:
    """The board reports the factors' correlations (within entries) and the share of items with
    identical factor scores; the test of halo is the audit's, against people."""
    rng = np.random.default_rng(SEED)
    one = _board(rng, 30, 10, [(2.0, 0), (4.0, 0)], b=0.0)  # three factors = one impression + tiny noise
    for t in one:
        t.factors = np.clip(np.rint(t.factors), 1, 5)
    result = halo(one, ["A", "B", "C"])
    assert result["identical_share"]["mean"] > 0.9 and "audit" in result["note"]
    assert "halo" not in result
    distinct = []
    for a, t in zip((2.0, 4.0), _board(rng, 30, 10, [(2.0, 0), (4.0, 0)], b=0.0), strict=True):
        t.factors = a + rng.normal(0, 0.7, t.factors.shape)  # big differences between entries, independent factors
        distinct.append(t)
    result = halo(distinct, ["A", "B", "C"])
    assert all(abs(p["r"]["value"]) < 0.2 for p in result["pairs"])  # within entries, not between them
    assert result["identical_share"]["mean"] == 0.0


@pytest.mark.parametrize(
    ("slope", "personas", "verdict"),
    [
        ({"value": 0.2, "ci_low": 0.1, "ci_high": 0.4}, 50, "scores rise with length"),
        ({"value": -0.2, "ci_low": -0.4, "ci_high": -0.1}, 50, "scores fall with length"),
        ({"value": 0.1, "ci_low": -0.1, "ci_high": 0.4}, 50, "no association with length shown"),
        ({"value": 0.2, "ci_low": 0.1, "ci_high": 0.4}, MIN_PERSONAS - 1, "no verdict: 9 personas are too few"),
        ({"value": None, "note": "one entry: ..."}, 50, "no verdict: one entry"),
    ],
)
def test_length_verdict_branches(slope: dict, personas: int, verdict: str) -> None:
    assert length_verdict(slope, personas).startswith(verdict)


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


@settings(max_examples=40, derandomize=True, deadline=None)
@given(reply=st.text(max_size=300), extra=st.integers(min_value=0, max_value=120))
def test_padding_keeps_the_reply_and_adds_only_neutral_length(reply: str, extra: int) -> None:
    from tide_bench.leaderboard.scoring.padding import NEUTRAL_PADDING, pad_reply
    from tide_bench.metrics.reference import tokenize

    padded = pad_reply(reply, extra)
    assert padded.startswith(reply.rstrip())
    added = padded[len(reply.rstrip()) :]
    assert len(tokenize(padded)) - len(tokenize(reply)) >= extra if extra else padded == reply
    assert all(part in NEUTRAL_PADDING for part in (added.strip().replace(". ", ".|").split("|") if extra else []))


def test_padding_effect_reads_a_judge_that_rewards_length() -> None:
    from tide_bench.leaderboard.scoring.padding import padding_effect

    rng = np.random.default_rng(SEED)
    (table,) = _board(rng, 30, 8, [(3.0, 0)], b=0.0)
    same = ItemTable(
        table.personas,
        table.factors,
        table.counted + rng.normal(0, 0.3, 240),
        table.failure,
        table.reply_tokens + 40,
        table.reference_tokens,
    )
    raised = ItemTable(
        table.personas,
        table.factors,
        table.counted + 0.3 + rng.normal(0, 0.3, 240),
        table.failure,
        table.reply_tokens + 40,
        table.reference_tokens,
    )
    assert padding_effect(table, same)["verdict"] == "no effect of padding shown"
    result = padding_effect(table, raised)
    assert result["verdict"] == "the judge rewards padding" and result["mean_tokens_added"] == 40
    assert result["difference"]["ci_low"] > 0 and result["p"] < 0.001 and result["n_personas"] == 30
    few = _board(rng, MIN_PERSONAS - 1, 8, [(3.0, 0)], b=0.0)[0]
    assert padding_effect(few, few)["verdict"].startswith("no verdict")


def _fail(table: ItemTable, failed: np.ndarray) -> None:
    """Make ``failed`` items model failures (an empty reply): unscored, counted at the minimum."""
    table.failure[failed] = True
    table.factors[failed] = np.nan
    table.counted[failed] = 1.0
    table.reply_tokens[failed] = 0.0


def test_an_entry_that_failed_every_item_does_not_break_the_board() -> None:
    """30 Nov kit, lb/one_reply_wins.sh: an honest entry whose replies are all empty (every
    item unscored, counted at the minimum) left no item scored by every entry, and the length
    diagnostic's cluster sums crashed `leaderboard build` for the whole board (ValueError)."""
    tables = _board(np.random.default_rng(SEED), 20, 10, [(3.0, 20), (3.2, -10)], b=0.8)
    _fail(tables[1], np.arange(200))
    per_entry, board = length_bias(tables)
    assert board["n_items_in_slope"] == 0
    assert board["slope"]["value"] is None and board["slope"]["note"]
    assert board["verdict"].startswith("no verdict")
    assert all(e["empathy_lc"]["mean"] is None for e in per_entry)


@settings(max_examples=30, derandomize=True, deadline=None)
@given(
    masks=st.lists(st.lists(st.booleans(), min_size=24, max_size=24), min_size=1, max_size=3),
    all_failed=st.integers(min_value=-1, max_value=2),
)
def test_length_bias_takes_any_pattern_of_failed_items(masks: list[list[bool]], all_failed: int) -> None:
    """Any set of failed items per entry (none, some, every one; items shared by no entry): a
    number with finite bounds or n/a with a reason, never an exception."""
    tables = _board(np.random.default_rng(SEED), 6, 4, [(3.0, 10 * j) for j in range(len(masks))], b=0.5)
    for j, (table, mask) in enumerate(zip(tables, masks, strict=True)):
        _fail(table, np.ones(24, bool) if j == all_failed else np.asarray(mask))
    per_entry, board = length_bias(tables, resamples=50)
    slope = board["slope"]
    assert (slope["value"] is None and slope["note"]) or np.isfinite(slope["value"])
    for e in per_entry:
        lc = e["empathy_lc"]
        assert (lc["mean"] is None and lc["note"]) or np.isfinite(lc["mean"])
