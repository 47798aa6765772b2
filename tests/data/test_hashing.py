"""The fast, float-free hash path writes exactly the bytes of the canonical one."""

from __future__ import annotations

import hashlib

import orjson
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tide_bench.core.hashing import canonical_json, holds_float, sha256_json
from tide_bench.data.schema import TideItem
from tide_bench.data.sources import SPLIT_VERSION, split_content_hash

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)  # control characters, quotes, emoji, U+2028
SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | TEXT
FLOAT_FREE = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)


@seed(20261130)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLOAT_FREE)
def test_the_float_free_path_hashes_as_the_canonical_one(value: object) -> None:
    assert not holds_float(value)
    assert (
        sha256_json(value, floats=False)
        == sha256_json(value)
        == hashlib.sha256(canonical_json(value).encode()).hexdigest()
    )


def test_floats_are_why_the_fast_path_is_not_the_default() -> None:
    assert orjson.dumps([1e-05]).decode() != canonical_json([1e-05])  # 0.00001 against 1e-05
    assert holds_float({"a": [1, {"b": 0.5}]}) and holds_float((1.0,)) and not holds_float({"a": [1, "x", None]})
    assert holds_float({"a": object()})  # not plain JSON: the canonical encoder decides what happens


def test_a_split_with_float_persona_fields_hashes_as_before() -> None:
    def item(k: int, persona: dict) -> TideItem:
        client, reference = "I can't sleep.", "That sounds hard."
        return TideItem(f"p{k}/c1/turn1", f"p{k}", "c1", 1, None, "test", client, reference, [], persona)

    for personas in ([{"age": 34, "score": 1e-05}, {"age": 41}], [{"age": 34}, {"age": 41}]):
        items = [item(k, persona) for k, persona in enumerate(personas)]
        records = [i.content() for i in items]
        whole = {"split_version": SPLIT_VERSION, "split": "test", "items": records}
        assert split_content_hash(items, "test") == hashlib.sha256(canonical_json(whole).encode()).hexdigest()
