"""Frozen dataclass records built from fields a reader has already checked.

Why: a frozen dataclass's ``__init__`` sets every field through ``object.__setattr__`` (the
price of freezing it), about 3-4 microseconds for a record of 20-odd fields. A board build reads
200,000 such records (every reply and every judgment of 50 entries), so that was 0.7 s of
CPU spent on assignments the readers' checks had already made safe. :func:`from_checked`
fills the instance's ``__dict__`` in one step. It is for readers only: the values are taken as
they are, so the caller must have checked them (the readers' slow paths, and
``tests/test_reader_fast_paths.py``, hold the two ways of building equal).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


_SHAPES: dict[type, tuple[dict[str, Any], frozenset[str], frozenset[str]]] = {}


def _defaults(cls: type) -> tuple[dict[str, Any], frozenset[str], frozenset[str]]:
    """The plain defaults of ``cls``'s fields, the names of all its fields and of those without a
    plain default (once per class)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        fields = dataclasses.fields(cls)
        defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
        names = frozenset(f.name for f in fields)
        shape = _SHAPES[cls] = (defaults, names, names - defaults.keys())
    return shape


def from_checked(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` (without ``__slots__``) holding ``values``,
    the fields left out taking their plain defaults; equal to ``cls(**values)``. A field that is
    unknown, or missing without a plain default (a ``default_factory`` one, say), is a TypeError,
    as it would be for ``cls(**values)``."""
    defaults, names, required = _defaults(cls)
    record = object.__new__(cls)
    state = record.__dict__
    if len(values) == len(names):  # every field given
        if values.keys() == names:
            state.update(values)
            return record
    else:
        # the defaults, then the values over them (no merged copy): an unknown field makes more
        # fields than the class has, and only a field without a default can be missing
        state.update(defaults)
        state.update(values)
        if len(state) == len(names) and required <= state.keys():
            return record
    unknown, missing = sorted(values.keys() - names), sorted(required - values.keys())
    raise TypeError(f"{cls.__name__}: unknown fields {unknown}, missing fields {missing}")
