"""The local EPITOME scorer at use: load a model folder written by ``tide-bench epitome train``
and rate replies, on this machine, with nothing sent anywhere.

Per reply and mechanism it gives the level probabilities, the predicted level (the argmax of
the blend the card records) and the expected level ``0 * p0 + 1 * p1 + 2 * p2``, the per-item
metric ``epitome_er`` / ``epitome_ip`` / ``epitome_ex``: a number in [0, 2] whose mean over a
model's replies is the "empathy communicated" the EPITOME papers compare, and which moves
smoothly where a predicted level would jump.

What the scorer was is part of every result: :meth:`EpitomeScorer.identity` (the card's
sha256, its data hash and cross-validated macro-F1), so numbers from different scorers are
never compared unknowingly.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import read_json
from tide_bench.epitome.baseline import TfidfBaseline
from tide_bench.epitome.encoder import EpitomeEncoder
from tide_bench.epitome.mechanisms import KEYS, LEVELS, metric_name
from tide_bench.epitome.train import CARD_FORMAT, CARD_NAME

MAX_CARD_BYTES = 2_000_000
_LEVELS = np.asarray(LEVELS, dtype=float)


def read_card(folder: str | Path) -> dict[str, Any]:
    """The model card, checked enough that a folder of something else is refused by name."""
    folder = Path(folder).expanduser()
    path = folder / CARD_NAME
    if not folder.is_dir():
        raise ConfigError(
            "EPITOME model folder does not exist", path=folder, hint="train one: tide-bench epitome train"
        )
    if not path.is_file():
        raise ConfigError(
            f"no {CARD_NAME}: not an EPITOME scorer folder", path=folder, hint="train one: tide-bench epitome train"
        )
    card = read_json(path, DataError, max_bytes=MAX_CARD_BYTES)
    if not isinstance(card, dict) or card.get("format") != CARD_FORMAT:
        raise DataError(f"is not a {CARD_FORMAT} card", path=path, field="format")
    blend = (card.get("blend") or {}).get("tfidf_weight")
    if not isinstance(blend, dict) or set(blend) != set(KEYS):
        raise DataError("must give a TF-IDF weight per mechanism (er, ip, ex)", path=path, field="blend.tfidf_weight")
    if not isinstance((card.get("training") or {}).get("max_length"), int):
        raise DataError("must give the encoder's max_length", path=path, field="training.max_length")
    return card


class EpitomeScorer:
    """The fine-tuned encoder and the TF-IDF baseline of one model folder, blended as its card says."""

    def __init__(self, folder: Path, card: dict[str, Any], encoder: EpitomeEncoder, baseline: TfidfBaseline) -> None:
        self.folder = folder
        self.card = card
        self.encoder = encoder
        self.baseline = baseline
        self.weights = {k: float(card["blend"]["tfidf_weight"][k]) for k in KEYS}

    @classmethod
    def load(cls, folder: str | Path, device: str = "auto") -> EpitomeScorer:
        return _load(str(Path(folder).expanduser().resolve()), device)

    def identity(self) -> dict[str, Any]:
        """What produced a score: recorded beside every set of EPITOME scores."""
        cv = self.card.get("cv") or {}
        return {
            "scorer": "tide-bench local EPITOME scorer",
            "model": self.folder.name,
            "card_sha256": sha256_file(self.folder / CARD_NAME),
            "fingerprint": self.card.get("fingerprint"),
            "data_sha256": (self.card.get("data") or {}).get("sha256"),
            "encoder": (self.card.get("encoder") or {}).get("label"),
            "cv_macro_f1": cv.get("macro_f1"),
            "tfidf_weight": self.weights,
        }

    def probabilities(self, texts: Sequence[str], batch_size: int = 64) -> dict[str, np.ndarray]:
        texts = [str(t) for t in texts]
        encoded = self.encoder.predict_proba(texts, batch_size=batch_size)
        tfidf = self.baseline.predict_proba(texts) if any(self.weights.values()) else None
        out = {}
        for key in KEYS:
            w = self.weights[key]
            out[key] = encoded[key] if tfidf is None or w == 0 else (1 - w) * encoded[key] + w * tfidf[key]
        return out

    def score(self, texts: Sequence[str], batch_size: int = 64) -> list[dict[str, Any]]:
        """Per text: ``epitome_<key>`` (expected level, 0-2) and ``epitome_<key>_level`` (predicted)."""
        probs = self.probabilities(texts, batch_size)
        rows: list[dict[str, Any]] = [{} for _ in texts]
        for key in KEYS:
            expected = probs[key] @ _LEVELS
            levels = probs[key].argmax(axis=1)
            for i, row in enumerate(rows):
                row[metric_name(key)] = float(expected[i])
                row[f"{metric_name(key)}_level"] = int(levels[i])
        return rows


@lru_cache(maxsize=2)
def _load(folder: str, device: str) -> EpitomeScorer:
    path = Path(folder)
    card = read_card(path)
    try:
        encoder = EpitomeEncoder.load(path, int(card["training"]["max_length"]), device)
    except Exception as exc:  # a third-party file format: any failure (safetensors', torch's) is a damaged folder
        raise DataError(
            f"the scorer's weights cannot be loaded ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})",
            path=path,
            hint="retrain it: tide-bench epitome train",
        ) from None
    return EpitomeScorer(path, card, encoder, TfidfBaseline.load(path))
