"""Persona-swap minimal pairs: the same client message under two personas that differ in one attribute.

Why: a model never sees TIDE's persona metadata (the tasks show the conversation only), so the
equity report (:mod:`tide_bench.judging.equity`) says how a model answers the messages different
clients write, not whether it treats a *stated* identity differently. A minimal pair does: the
client says one sentence about themselves before the same message ("I'm a woman." / "I'm a
man."), and everything else about the item stays the same. ``persona_swaps.yaml`` (beside this
module) declares the attributes, the two values of each and the sentence each side says.

The pairs come from the data's own items, deterministically: for every persona and attribute,
``per_persona`` of the persona's first-turn items (no history, so the sentence opens the
conversation), chosen by a hash of the seed, the persona and the attribute, so a persona's
choice does not change when other personas are added. Each swap item carries its provenance in
its persona metadata (``persona_swap``: the attribute, its side and value, the other side's
value, the source item, the swaps file's version and hash) and its id says the same,
``swap/<attribute>/<side>/<source item id>``, so the persona (the unit every CI resamples) is
still the id's third field from the end.

Nothing is dropped silently: a persona that cannot be swapped on an attribute (its metadata
lack the field the attribute ``reads``, or give a value on neither side) and a persona with no
first-turn item are listed in :attr:`SwapSet.not_estimable` with the reason, and counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.yaml_io import read_yaml
from tide_bench.data.personas import persona_value
from tide_bench.data.schema import TideItem

SWAPS_FILE = Path(__file__).resolve().parent / "persona_swaps.yaml"
SWAP_PREFIX = "swap"
SIDES = ("a", "b")
PROVENANCE_KEY = "persona_swap"  # the key of a swap item's persona metadata that says what it is
DEFAULT_PER_PERSONA = 1
DEFAULT_SWAP_SEED = 49
MAX_SAYS = 300  # characters of one side's sentence


@dataclass(frozen=True)
class Side:
    value: str
    says: str
    matches: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attribute:
    """One swappable attribute: its two sides and the persona field it reads (None: a frame)."""

    name: str
    label: str
    reads: str | None
    a: Side
    b: Side

    def side(self, key: str) -> Side:
        return self.a if key == "a" else self.b


@dataclass(frozen=True)
class SwapSpec:
    version: int
    render: str
    attributes: tuple[Attribute, ...]
    sha256: str
    path: str

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise ConfigError(f"no attribute {name!r} in the swaps file", path=self.path)


@dataclass
class SwapSet:
    """The swap items (two per pair), each pair's provenance, and what could not be swapped."""

    items: list[TideItem]
    pairs: list[dict[str, Any]]
    not_estimable: list[dict[str, str]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)


def _text(raw: Any, path: Path, where: str, limit: int = MAX_SAYS) -> str:
    if not isinstance(raw, str) or not raw.strip() or len(raw) > limit:
        raise ConfigError(f"a non-empty text of at most {limit} characters", path=path, field=where)
    return " ".join(raw.split())


def _side(raw: Any, path: Path, where: str, reads: str | None) -> Side:
    if not isinstance(raw, dict):
        raise ConfigError("a side is a mapping with 'value' and 'says'", path=path, field=where)
    matches = raw.get("matches") or []
    if not isinstance(matches, list) or not all(isinstance(m, str | int) and str(m).strip() for m in matches):
        raise ConfigError("'matches' is a list of persona values", path=path, field=f"{where}.matches")
    if reads and not matches:
        raise ConfigError(
            "an attribute that reads a persona field needs 'matches' on each side", path=path, field=where
        )
    return Side(
        _text(raw.get("value"), path, f"{where}.value", 80),
        _text(raw.get("says"), path, f"{where}.says"),
        tuple(" ".join(str(m).split()).lower() for m in matches),
    )


def _attribute(name: Any, raw: Any, path: Path) -> Attribute:
    where = f"attributes.{name}"
    if not isinstance(name, str) or not name.isidentifier() or not isinstance(raw, dict):
        raise ConfigError("an attribute is a name (letters, digits, _) with a mapping", path=path, field=where)
    reads = raw.get("reads")
    if reads is not None and (not isinstance(reads, str) or not reads.strip()):
        raise ConfigError("'reads' names a persona metadata field", path=path, field=f"{where}.reads")
    sides = raw.get("sides")
    if not isinstance(sides, dict) or set(sides) != set(SIDES):
        raise ConfigError("'sides' has exactly the keys a and b", path=path, field=f"{where}.sides")
    a, b = (_side(sides[k], path, f"{where}.sides.{k}", reads) for k in SIDES)
    if a.value == b.value or a.says == b.says:
        raise ConfigError("the two sides must differ in value and sentence", path=path, field=f"{where}.sides")
    if set(a.matches) & set(b.matches):
        raise ConfigError("a persona value matches both sides", path=path, field=f"{where}.sides")
    return Attribute(name, _text(raw.get("label") or name, path, f"{where}.label", 80), reads, a, b)


def read_swap_spec(path: str | Path | None = None) -> SwapSpec:
    """The swaps file (default: the shipped ``persona_swaps.yaml``), every field checked; a bad file
    is refused with its path and the field."""
    path = Path(path) if path else SWAPS_FILE
    try:
        spec = read_yaml(path)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML ({type(exc).__name__})", path=path) from None
    if not isinstance(spec, dict) or not isinstance(spec.get("attributes"), dict) or not spec["attributes"]:
        raise ConfigError("a swaps file is a mapping with a non-empty 'attributes' mapping", path=path)
    version = spec.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError("'version' is a positive integer", path=path, field="version")
    render = _text(spec.get("render"), path, "render", 200)
    if render.count("{says}") != 1 or render.count("{message}") != 1 or render.count("{") != 2:
        raise ConfigError(
            "'render' holds {says} and {message} once each, and no other field", path=path, field="render"
        )
    attributes = tuple(_attribute(name, raw, path) for name, raw in spec["attributes"].items())
    return SwapSpec(version, render, attributes, sha256_json(spec), str(path))


@lru_cache(maxsize=1)
def shipped_spec() -> SwapSpec:
    return read_swap_spec(SWAPS_FILE)


def persona_side(attribute: Attribute, meta: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """``(side, None)``: the side that is the persona as written (None for a frame); ``(None, why)``
    when the persona cannot be swapped on ``attribute``."""
    if attribute.reads is None:
        return None, None
    value, why = persona_value(meta or {}, attribute.reads)
    if value is None:
        return None, f"persona metadata {why}"
    for key in SIDES:
        if value in attribute.side(key).matches:
            return key, None
    return None, f"its {attribute.reads} {value!r} is on neither side ({attribute.a.value} / {attribute.b.value})"


def _pick(items: list[TideItem], seed: int, persona: str, attribute: str, k: int) -> list[TideItem]:
    """``k`` of a persona's items, in an order fixed by a hash of (seed, persona, attribute, item)."""

    def rank(item: TideItem) -> str:
        return hashlib.sha256(f"{seed}/{persona}/{attribute}/{item.item_id}".encode()).hexdigest()

    return sorted(items, key=rank)[:k]


def swap_item(spec: SwapSpec, attribute: Attribute, side: str, source: TideItem, original: str | None) -> TideItem:
    """The source item with the side's sentence before its message, its provenance in the persona."""
    chosen, other = attribute.side(side), attribute.side("b" if side == "a" else "a")
    message = spec.render.replace("{says}", chosen.says).replace("{message}", source.client_utterance)
    provenance = {
        "attribute": attribute.name,
        "side": side,
        "value": chosen.value,
        "other_value": other.value,
        "says": chosen.says,
        "source_item": source.item_id,
        "as_written": original == side if original else None,
        "swaps_version": spec.version,
        "swaps_sha256": spec.sha256,
    }
    return replace(
        source,
        item_id=f"{SWAP_PREFIX}/{attribute.name}/{side}/{source.item_id}",
        client_utterance=message,
        persona=dict(source.persona) | {PROVENANCE_KEY: provenance},
    )


def _by_persona(items: Iterable[TideItem]) -> dict[str, list[TideItem]]:
    out: dict[str, list[TideItem]] = {}
    for item in items:
        out.setdefault(item.persona_id, [])
        if item.turn == 1 and not item.history:
            out[item.persona_id].append(item)
    return dict(sorted(out.items()))


def build_swap_set(
    items: Iterable[TideItem],
    *,
    spec: SwapSpec | None = None,
    attributes: Iterable[str] | None = None,
    per_persona: int = DEFAULT_PER_PERSONA,
    seed: int = DEFAULT_SWAP_SEED,
) -> SwapSet:
    """The minimal pairs of ``items`` (one split of a dataset): ``per_persona`` first-turn items per
    persona and attribute, each rendered on both sides; every persona that cannot take part is listed."""
    spec = spec or shipped_spec()
    if isinstance(per_persona, bool) or not isinstance(per_persona, int) or per_persona < 1:
        raise ConfigError(f"per_persona is a positive integer, not {per_persona!r}")
    chosen = [spec.attribute(a) for a in attributes] if attributes is not None else list(spec.attributes)
    out = SwapSet([], [], [], {})
    for persona, first_turns in _by_persona(items).items():
        for attribute in chosen:
            if not first_turns:
                out.not_estimable.append(_skip(persona, attribute, "the persona has no first-turn item"))
                continue
            meta = first_turns[0].persona
            original, why = persona_side(attribute, meta)
            if why:
                out.not_estimable.append(_skip(persona, attribute, why))
                continue
            for source in _pick(first_turns, seed, persona, attribute.name, per_persona):
                a, b = (swap_item(spec, attribute, s, source, original) for s in SIDES)
                out.items += [a, b]
                out.pairs.append(_pair(attribute, source, original, a, b))
    out.provenance = {
        "swaps_file": Path(spec.path).name,
        "swaps_version": spec.version,
        "swaps_sha256": spec.sha256,
        "attributes": [a.name for a in chosen],
        "per_persona": per_persona,
        "seed": seed,
        "n_pairs": len(out.pairs),
        "n_not_estimable": len(out.not_estimable),
    }
    return out


def _skip(persona: str, attribute: Attribute, why: str) -> dict[str, str]:
    return {"persona": persona, "attribute": attribute.name, "reason": why}


def _pair(attribute: Attribute, source: TideItem, original: str | None, a: TideItem, b: TideItem) -> dict[str, Any]:
    return {
        "pair": f"{attribute.name}/{source.item_id}",
        "attribute": attribute.name,
        "persona": source.persona_id,
        "source_item": source.item_id,
        "values": {"a": attribute.a.value, "b": attribute.b.value},
        "as_written": original,
        "items": {"a": a.item_id, "b": b.item_id},
    }


def parse_swap_id(item_id: str) -> tuple[str, str, str] | None:
    """``(attribute, side, source item id)`` of a swap item id, or None for any other id."""
    parts = str(item_id).split("/", 3)
    if len(parts) == 4 and parts[0] == SWAP_PREFIX and parts[2] in SIDES and parts[1] and parts[3]:
        return parts[1], parts[2], parts[3]
    return None
