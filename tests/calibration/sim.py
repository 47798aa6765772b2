"""Data generators with TIDE's shape for the calibration suite, and their exact truths.

Judge-like scores: an item's latent quality ``L``; three factor scores
``clip(rint(L + N(0, FACTOR_SD)), 1, 5)``; the overall score is their mean (as
:func:`tide_bench.judging.judgment.overall_of` computes it). Items nest in personas. Truths are
exact where the model allows (the mean of a rounded normal comes from its CDF); the rest come
from large simulated samples, computed once per session.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

FACTOR_SD = 0.5
CUTS = np.array([1.5, 2.5, 3.5, 4.5])


def rounded_factors(latent: np.ndarray, rng: np.random.Generator, sd: float = FACTOR_SD) -> np.ndarray:
    """``(..., 3)`` factor scores on the 1-5 scale around ``latent``."""
    return np.clip(np.rint(latent[..., None] + rng.normal(0.0, sd, (*latent.shape, 3))), 1, 5)


def overall(latent: np.ndarray, rng: np.random.Generator, sd: float = FACTOR_SD) -> np.ndarray:
    """The overall score: the mean of three rounded factor scores."""
    return rounded_factors(latent, rng, sd).mean(axis=-1)


def rounded_mean(mu: float, sd: float) -> float:
    """``E[clip(rint(X), 1, 5)]`` for ``X ~ N(mu, sd)``, exactly."""
    cdf = stats.norm.cdf((CUTS - mu) / sd)
    probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    return float(probs @ np.arange(1, 6))


def overall_mean(mu: float, latent_sd: float, factor_sd: float = FACTOR_SD) -> float:
    """Population mean of the overall score for a latent ``N(mu, latent_sd)``."""
    return rounded_mean(mu, math.hypot(latent_sd, factor_sd))


def personas(n_personas: int, per: int | np.ndarray) -> np.ndarray:
    """The persona index of each item (``per`` items each, or one size per persona)."""
    sizes = np.full(n_personas, per) if np.isscalar(per) else np.asarray(per)
    return np.repeat(np.arange(n_personas), sizes)


def item_ids(persona: np.ndarray) -> list[str]:
    """TIDE-shaped ids ``<persona>/conversation_<j>/turn1`` (the persona is recoverable)."""
    seen: dict[int, int] = {}
    out = []
    for p in persona.tolist():
        j = seen.get(p, 0)
        seen[p] = j + 1
        out.append(f"{p}/conversation_{j}/turn1")
    return out


def shared_quality(rng: np.random.Generator, persona: np.ndarray, sd: float, icc: float) -> np.ndarray:
    """Persona and item parts of the quality, shared by every model on the same items."""
    n_p = int(persona.max()) + 1
    return sd * (math.sqrt(icc) * rng.normal(size=n_p)[persona] + math.sqrt(1 - icc) * rng.normal(size=persona.size))


BOARD_SHARED_SD, BOARD_RESIDUAL_SD, BOARD_ICC = 0.6, 0.5, 0.2


def board(rng: np.random.Generator, means: list[float], persona: np.ndarray, interaction_sd: float = 0.0) -> np.ndarray:
    """``(items, models)`` overall scores of models answering the same items: shared persona and
    item difficulty, a model x persona interaction and a model-specific residual."""
    n_p = int(persona.max()) + 1
    shared = shared_quality(rng, persona, BOARD_SHARED_SD, BOARD_ICC)
    columns = []
    for mu in means:
        g = rng.normal(0, interaction_sd, n_p)[persona] if interaction_sd else 0.0
        columns.append(overall(mu + shared + g + rng.normal(0, BOARD_RESIDUAL_SD, persona.size), rng))
    return np.stack(columns, axis=1)


def board_truths(means: list[float], interaction_sd: float = 0.0) -> np.ndarray:
    sd = math.sqrt(BOARD_SHARED_SD**2 + interaction_sd**2 + BOARD_RESIDUAL_SD**2)
    return np.array([overall_mean(m, sd) for m in means])


def marginal_rate(logit0: float, sigma: float) -> float:
    """The marginal rate of ``expit(logit0 + sigma * u)``, ``u ~ N(0, 1)``."""
    if sigma == 0:
        return float(special.expit(logit0))
    from scipy import integrate

    return float(integrate.quad(lambda u: special.expit(logit0 + sigma * u) * stats.norm.pdf(u), -10, 10)[0])


def logit_for_rate(rate: float, sigma: float) -> float:
    """The logit intercept whose persona-random-effect model has marginal rate ``rate``."""
    from scipy import optimize

    return float(optimize.brentq(lambda x: marginal_rate(x, sigma) - rate, -15, 5))


def clustered_flags(rng: np.random.Generator, persona: np.ndarray, logit0: float, sigma: float) -> np.ndarray:
    n_p = int(persona.max()) + 1
    p = special.expit(logit0 + sigma * rng.normal(size=n_p)[persona])
    return (rng.random(persona.size) < p).astype(float)


def seed_of(*parts: object) -> int:
    """A stable seed from a cell's parameters (``hash`` of a string changes between processes)."""
    import zlib

    return zlib.crc32(repr(parts).encode()) + 20261201


FACTORS = ("emotion_recognition", "distress_normalization", "supportive_reflection")


def judgment(item: str, scores: np.ndarray | None, *, flagged: bool = False, kind: str | None = None) -> dict:
    """A judgment record as the board reads it: scored (integer factor scores, the safety
    flag) or unscored (its kind)."""
    if scores is None:
        return {"item_id": item, "status": "unscored", "unscored_kind": kind, "scores": None, "safety": None}
    return {
        "item_id": item,
        "status": "scored",
        "scores": dict(zip(FACTORS, (int(s) for s in scores), strict=True)),
        "safety": {"flagged": bool(flagged)},
    }


@lru_cache(maxsize=4)
def _generations(ids: tuple[str, ...]) -> list:
    from tide_bench.data.schema import persona_of_item
    from tide_bench.generation.samples import Generation

    return [
        Generation(
            item_id=i,
            task="tide_empathy",
            persona_id=persona_of_item(i),
            conversation_id=i.split("/")[1],
            turn=1,
            scenario="",
            split="test",
            history=[],
            client_utterance="",
            reference_reply="",
            reply="",
            prompt="",
            metrics={"length_tokens": 50.0},
        )
        for i in ids
    ]


def submission(name: str, ids: list[str], records: list[dict]) -> object:
    """An in-memory :class:`~tide_bench.leaderboard.submission.layout.Submission` of one entry."""
    from pathlib import Path

    from tide_bench.leaderboard.submission.layout import Submission

    gens = _generations(tuple(ids))
    return Submission(
        id=name,
        root=Path(name),
        meta={"model_name": name},
        manifest={"model": {"name": name}},
        generations=gens,
        judgments={r["item_id"]: r for r in records},
        judge={"name": "sim", "version": "sim"},
    )
