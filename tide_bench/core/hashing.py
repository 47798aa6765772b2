"""Stable content hashes.

Results record *what* produced them; a content hash of canonical JSON is the same on every
machine and Python version, unlike ``hash()`` or pickles.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the byte form that gets hashed. (One encoder
    for every call: ``json.dumps`` with these options builds the same encoder each time, and a
    leaderboard build hashes 100,000 judgment keys.)"""
    return _CANONICAL.encode(value)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any, *, floats: bool = True) -> str:
    """The hash of ``canonical_json(value)``. ``floats=False`` promises that ``value`` holds no
    float anywhere (:func:`holds_float` checks): then orjson writes the same bytes about twelve
    times faster, which the leaderboard's per-item hashes (200,000 a build) use. Floats are why
    it is not the default: orjson writes 1e-05 as 0.00001. Anything else orjson does not write
    as Python does (integers beyond 64 bits, keys that are not strings) it refuses, and then
    Python's encoder writes it; ``tests/data/test_hashing.py`` checks the two agree."""
    if not floats:
        try:
            return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
        except orjson.JSONEncodeError:
            pass
    return sha256_text(canonical_json(value))


def holds_float(value: Any) -> bool:
    """Whether a JSON-like value holds a float (or anything that is not plain JSON) anywhere."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return False
    if kind is dict:
        return any(holds_float(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(holds_float(v) for v in value)
    return True


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
