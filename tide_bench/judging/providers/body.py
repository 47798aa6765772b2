"""Request bodies serialized once per configuration: only the item's message is encoded per call.

Every judge request repeats the same ~15 KB (the system block with the rubric, the rating tool
or JSON schema, model and decoding settings); only the user message differs. Passing the
whole request as a dict made the SDK deep-copy, transform and JSON-encode all of it on every
call (about 1 ms of CPU per call, measured: docs/benchmarks.md, "Judging"). A
:class:`RequestBody` encodes the fixed part once and splices the encoded user message into
it, so a call costs one string encoding; the bytes are exactly a JSON object with the same
members (a test decodes and compares them).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["RequestBody", "dump_json"]


def dump_json(value: Any) -> bytes:
    """``value`` as JSON bytes. orjson refuses lone surrogates (text decoded from JSON may hold
    ``"\\ud800"``) and integers beyond 64 bits; the standard encoder writes both, as the SDKs did."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


class RequestBody:
    """``fixed`` plus ``"messages": [*before, {"role": "user", "content": USER}]``, as JSON bytes."""

    def __init__(self, fixed: dict[str, Any], before: list[dict[str, Any]] | None = None) -> None:
        if not fixed or "messages" in fixed:
            raise ValueError("the fixed part needs at least one member and no 'messages'")
        head = dump_json(fixed)
        earlier = b"".join(dump_json(message) + b"," for message in before or [])
        self._head = head[:-1] + b',"messages":[' + earlier + b'{"role":"user","content":'

    def render(self, user: str) -> bytes:
        return self._head + dump_json(user) + b"}]}"
