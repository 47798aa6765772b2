"""The TF-IDF + logistic-regression baseline, one classifier per mechanism, on the reply.

Word 1-2 grams (sublinear tf, terms in at least two replies), class-balanced logistic
regression: the baseline every EPITOME scorer is measured against (the card's ``baseline``
block), and the second half of the scorer's blend for mechanisms whose card weight says so.
It is saved as JSON and an ``.npz`` of arrays (vocabulary, idf, coefficients), never as a
pickle: a model folder from someone else must not be able to run code when loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_bytes, read_json, write_json
from tide_bench.epitome.mechanisms import KEYS, LEVELS

PARAMS = {"ngram_range": [1, 2], "min_df": 2, "sublinear_tf": True, "C": 1.0, "class_weight": "balanced"}
JSON_NAME = "tfidf.json"
ARRAYS_NAME = "tfidf.npz"


class TfidfBaseline:
    """Three class-balanced logistic regressions over one TF-IDF vocabulary."""

    def __init__(self, vectorizer: Any, models: dict[str, Any]) -> None:
        self.vectorizer = vectorizer
        self.models = models

    @staticmethod
    def _vectorizer(min_df: int, vocabulary: dict[str, int] | None = None) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(
            ngram_range=tuple(PARAMS["ngram_range"]),
            min_df=min_df,
            sublinear_tf=bool(PARAMS["sublinear_tf"]),
            vocabulary=vocabulary,
        )

    @classmethod
    def fit(cls, texts: Sequence[str], labels: dict[str, Sequence[int]]) -> TfidfBaseline:
        from sklearn.linear_model import LogisticRegression

        # min_df=2 needs at least two replies sharing a term; tiny sets (tests) fall back to 1
        vectorizer = cls._vectorizer(PARAMS["min_df"] if len(texts) >= 50 else 1)
        features = vectorizer.fit_transform(list(texts))
        models = {}
        for key in KEYS:
            y = np.asarray(labels[key], dtype=np.int64)
            if np.unique(y).size < 2:
                models[key] = _Constant(int(y[0]))
                continue
            model = LogisticRegression(C=PARAMS["C"], class_weight=PARAMS["class_weight"], max_iter=5000)
            models[key] = model.fit(features, y)
        return cls(vectorizer, models)

    def predict_proba(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """``{key: (n, 3)}`` probabilities of levels 0, 1, 2 (a level never seen in training: 0)."""
        features = self.vectorizer.transform(list(texts))
        out = {}
        for key in KEYS:
            model = self.models[key]
            probs = np.zeros((features.shape[0], len(LEVELS)))
            part = model.predict_proba(features)
            for column, level in enumerate(model.classes_):
                probs[:, int(level)] = part[:, column]
            out[key] = probs
        return out

    def save(self, folder: Path) -> None:
        import io

        vocabulary = sorted(self.vectorizer.vocabulary_, key=self.vectorizer.vocabulary_.__getitem__)
        arrays: dict[str, np.ndarray] = {"idf": self.vectorizer.idf_}
        meta: dict[str, Any] = {"format": 1, "params": PARAMS, "vocabulary": vocabulary, "models": {}}
        for key in KEYS:
            model = self.models[key]
            meta["models"][key] = {"classes": [int(c) for c in model.classes_]}
            if isinstance(model, _Constant):
                meta["models"][key]["constant"] = model.level
                continue
            arrays[f"{key}_coef"] = model.coef_
            arrays[f"{key}_intercept"] = model.intercept_
        write_json(folder / JSON_NAME, meta)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        atomic_write_bytes(folder / ARRAYS_NAME, buffer.getvalue())

    @classmethod
    def load(cls, folder: Path) -> TfidfBaseline:
        from sklearn.linear_model import LogisticRegression

        meta = read_json(folder / JSON_NAME, DataError)
        try:
            with np.load(folder / ARRAYS_NAME, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            vocabulary = {term: i for i, term in enumerate(meta["vocabulary"])}
            vectorizer = cls._vectorizer(1, vocabulary)
            vectorizer.idf_ = arrays["idf"]
            models: dict[str, Any] = {}
            for key in KEYS:
                spec = meta["models"][key]
                if "constant" in spec:
                    models[key] = _Constant(int(spec["constant"]))
                    continue
                model = LogisticRegression()
                model.classes_ = np.asarray(spec["classes"])
                model.coef_ = arrays[f"{key}_coef"]
                model.intercept_ = arrays[f"{key}_intercept"]
                models[key] = model
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise DataError(f"not a TF-IDF baseline written by tide-bench ({exc})", path=folder / JSON_NAME) from None
        return cls(vectorizer, models)


class _Constant:
    """A 'classifier' for a mechanism whose training labels hold one level only (tiny sets)."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.classes_ = np.asarray([level])

    def predict_proba(self, features: Any) -> np.ndarray:
        return np.ones((features.shape[0], 1))
