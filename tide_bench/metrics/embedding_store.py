"""A content-addressed store of reference-reply embeddings (SQLite, one file in the cache).

Every model evaluated on a split is compared with the same reference replies; encoding them
again for each model would double the embedding work. Keys are sha256(model id, text), so a
changed text or model can never return a stale vector. Failures to open the store (read-only
home, full disk) fall back to an in-memory store: a cache must never break an evaluation.
The store holds vectors and hashes, no text; ``TIDE_BENCH_EMBEDDING_CACHE=0`` keeps it in memory
only, so nothing derived from the data persists outside the run folder (docs/privacy.md).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from tide_bench.core.hashing import sha256_text
from tide_bench.core.paths import cache_dir


class EmbeddingStore:
    def __init__(self, model_id: str, path: Path | None) -> None:
        self.model_id = model_id
        self._memory: dict[str, np.ndarray] = {}
        self._db: sqlite3.Connection | None = None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
            except (OSError, sqlite3.Error):
                self._db = None

    @classmethod
    def for_model(cls, model_id: str) -> EmbeddingStore:
        return _store(model_id)

    def _key(self, text: str) -> str:
        return sha256_text(self.model_id + "\x00" + text)

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = {self._key(t): t for t in set(texts)}
        found = {wanted[k]: v for k, v in self._memory.items() if k in wanted}
        missing = [k for k in wanted if wanted[k] not in found]
        if self._db is not None and missing:
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, vec FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for key, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    self._memory[key] = vec
                    found[wanted[key]] = vec
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [(self._key(t), int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        for key, _, blob in rows:
            self._memory[key] = np.frombuffer(blob, dtype=np.float32)
        if self._db is not None and rows:
            try:
                with self._db:
                    self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
            except sqlite3.Error:
                pass


OFF = ("0", "off", "no", "false")


@lru_cache(maxsize=8)
def _store(model_id: str) -> EmbeddingStore:
    persist = os.environ.get("TIDE_BENCH_EMBEDDING_CACHE", "1").strip().lower() not in OFF
    return EmbeddingStore(model_id, cache_dir() / "embeddings.sqlite" if persist else None)
