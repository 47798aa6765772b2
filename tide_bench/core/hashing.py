"""Stable content hashes.

Results record *what* produced them; a content hash of canonical JSON is the same on every
machine and Python version, unlike ``hash()`` or pickles.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form that gets hashed. (One encoder
    for every call: ``json.dumps`` with these options builds the same encoder each time, and a
    leaderboard build hashes 100,000 judgment keys.)"""
    return _CANONICAL.encode(value)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(canonical_json(value))


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bucket(key: str, salt: str, buckets: int = 100) -> int:
    """Map ``key`` to ``0..buckets-1`` deterministically (used for persona splits)."""
    digest = hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()
    return int(digest[:8], 16) % buckets
