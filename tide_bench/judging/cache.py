"""A persistent, content-addressed judgment cache (SQLite in WAL mode).

Key = sha256(judge version, item id, context, reply): any change to the judge configuration,
the conversation or the reply is a different key, so a stale judgment can never be served.
Each completed judgment is committed on its own, so ``kill -9`` mid-run loses nothing that
finished; a rerun makes exactly the missing calls.

Only final outcomes are stored: scores, and the judge's own non-answers (refusal, content
filter, malformed or out-of-schema output after the schema retries). Transport failures,
rejected requests and budget stops are never cached, so the next run simply tries again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.generation.run_dir import Generation
from tide_bench.judging.judgment import within_limits

CACHEABLE_UNSCORED = {"refusal", "content_filtered", "malformed_output", "schema_violation"}


def judgment_key(judge_version: str, gen: Generation) -> str:
    """Every part is a string (the samples reader checks each, and the history's roles and
    contents), so the hash takes the float-free path."""
    context = {"history": gen.history, "client": gen.client_utterance, "reference": gen.reference_reply}
    key = {"judge": judge_version, "item": gen.item_id, "context": context, "reply": gen.reply}
    return sha256_json(key, floats=False)


def is_cacheable(record: dict[str, Any]) -> bool:
    return record["status"] == "scored" or record.get("unscored_kind") in CACHEABLE_UNSCORED


class JudgmentCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, judge_version TEXT, item_id TEXT, "
                "status TEXT, record TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP)"
            )
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot open the judgment cache: {exc}", path=self.path) from None

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        keys = list(keys)
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, record FROM judgments WHERE key IN ({','.join('?' * len(chunk))})", chunk
                )
                found.update({key: json.loads(record) for key, record in rows})
        return {k: r for k, r in found.items() if within_limits(r)}  # one its readers refuse is judged again

    def put(self, key: str, record: dict[str, Any]) -> None:
        if not is_cacheable(record):
            raise ValueError(f"not a cacheable outcome: {record.get('unscored_kind')}")
        if not within_limits(record):  # never keep a record the judgments' readers refuse
            return
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgments (key, judge_version, item_id, status, record) VALUES (?, ?, ?, ?, ?)",
                (
                    key,
                    record["judge"]["version"],
                    record["item_id"],
                    record["status"],
                    json.dumps(record, ensure_ascii=False),
                ),
            )

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
