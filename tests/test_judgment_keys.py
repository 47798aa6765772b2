"""``judging.cache.JudgmentKeys``: the board build's way of checking 100,000 judgment keys keeps
each item's hash state before the reply. Its keys are :func:`judgment_key`'s for any text, for
many replies to one item, and after an item's context changed under the same id."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.core.records import from_checked
from tide_bench.generation.samples import Generation
from tide_bench.judging.cache import JudgmentKeys, judgment_key

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(['"', "\\", "\u2028", "<", ""])


def _gen(item_id: str, history: list[dict[str, str]], client: str, reference: str, reply: str) -> Generation:
    return from_checked(
        Generation,
        {
            "item_id": item_id,
            "task": "tide_empathy",
            "persona_id": "1",
            "conversation_id": "c",
            "turn": 1 + len(history) // 2,
            "scenario": "",
            "split": "test",
            "history": history,
            "client_utterance": client,
            "reference_reply": reference,
            "reply": reply,
            "prompt": "",
            "persona": {},
            "metrics": {},
            "split_sha256": "",
            "tide_source": "",
            "file": "",
            "line": 1,
        },
    )


MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": TEXT})


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c/1"]), st.lists(MESSAGE, max_size=3), TEXT, TEXT, TEXT), max_size=12
    ),
    versions=st.lists(st.sampled_from(["v1", "judge-2", "\u00e9"]), min_size=1, max_size=2),
)
def test_kept_states_give_the_keys_judgment_key_gives(
    items: list[tuple[str, list[dict[str, str]], str, str, str]], versions: list[str]
) -> None:
    """Items seen again (the next entry's replies), items whose context changed under the same id,
    and any text: the same key as hashing the whole item again."""
    keys = JudgmentKeys(limit=4)  # small: the store is also emptied on the way
    for version in versions:
        for item_id, history, client, reference, reply in items:
            gen = _gen(item_id, history, client, reference, reply)
            assert keys.key(version, gen) == judgment_key(version, gen)
            other = dataclasses.replace(gen, reply=reply + "!")  # the next entry's reply to the same item
            assert keys.key(version, other) == judgment_key(version, other)


def test_a_changed_context_is_not_hashed_with_the_kept_state() -> None:
    keys = JudgmentKeys()
    first = _gen("a", [], "I cannot sleep.", "That sounds hard.", "reply")
    changed = dataclasses.replace(first, client_utterance="I sleep well.")
    assert keys.key("v1", first) == judgment_key("v1", first)
    assert keys.key("v1", changed) == judgment_key("v1", changed) != judgment_key("v1", first)
    earlier = dataclasses.replace(first, history=[{"role": "user", "content": "hello"}])
    assert keys.key("v1", earlier) == judgment_key("v1", earlier)
