"""Settings read from a user's file, checked against the class or function they will feed.

A study file's ``lora:`` section becomes a ``FinetuneConfig``, its ``eval:`` an
``EvalConfig``, its ``judge:`` the arguments of ``load_judge`` and ``JudgeOptions``. A
hand-written second list of allowed keys and types drifts from those classes (a key the
class lacks passes the list and the run dies with a ``TypeError`` hours later; a field the
class gained is refused), so the allowed keys and their types are read from the target itself:
:func:`fields_of` (a dataclass's fields) and :func:`parameters_of` (a function's keyword
parameters). :func:`check_options` then checks every key and value of a mapping against them
and returns the values converted (a ``Path`` field gets a ``Path``, a tuple field a tuple).

Only fields whose annotation is plain data (``str``, ``int``, ``float``, ``bool``, ``None``,
``Path``, ``list``, ``tuple``, ``dict``, ``Literal``, ``Any`` and unions of them) can be set
from a file; a callback or an object field is left out of the allowed keys automatically.

No value is coerced across kinds: ``"four"`` is not an integer, ``true`` is not a number,
``2024`` is not a string (quote it). One exception, because YAML 1.1 (PyYAML) reads ``1e-3``
as text: a number field accepts a string written in exponent notation.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from tide_bench.core.secrets import redact

Fail = Callable[[str, str], Exception]  # (message, field path) -> the error to raise
_EXPONENT = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)[eE][-+]?\d+$")
_SHOWN_CHARS = 40


class Mismatch(Exception):
    """A value that does not fit its annotation; ``where`` is the path inside the value."""

    def __init__(self, expected: str, value: Any, where: str = "") -> None:
        super().__init__(expected)
        self.expected, self.value, self.where = expected, value, where


def _hints(owner: Any) -> dict[str, Any]:
    """Resolved annotations of a dataclass or function; a name that cannot be resolved (an import
    only for type checkers) becomes ``object``, which :func:`settable` refuses."""
    try:
        return typing.get_type_hints(owner)
    except (NameError, TypeError):
        module = sys.modules.get(getattr(owner, "__module__", ""), None)
        namespace = dict(vars(module)) if module else {}
        raw = getattr(owner, "__annotations__", {})
        hints: dict[str, Any] = {}
        for name, text in raw.items():
            try:
                hints[name] = eval(text, namespace) if isinstance(text, str) else text  # our own classes' annotations
            except Exception:
                hints[name] = object
        return hints


def settable(annotation: Any) -> bool:
    """Whether a value of this type can be written in a YAML file."""
    if annotation in (Any, str, int, float, bool, type(None), None, Path):
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(settable(a) for a in get_args(annotation))
    if origin in (list, tuple, dict):
        return all(settable(a) for a in get_args(annotation) if a is not Ellipsis)
    return annotation in (list, tuple, dict)


def fields_of(cls: type, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """The settable fields of a dataclass and their types (``exclude``: those the caller sets)."""
    hints, skip = _hints(cls), set(exclude)
    return {
        f.name: hints.get(f.name, Any)
        for f in dataclasses.fields(cls)
        if f.name not in skip and f.init and settable(hints.get(f.name, Any))
    }


def parameters_of(
    function: Callable[..., Any], *, exclude: Iterable[str] = (), rename: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The settable parameters of a function and their types, ``rename``d (parameter -> key)."""
    hints, skip, rename = _hints(function), set(exclude), dict(rename or {})
    found: dict[str, Any] = {}
    for name, param in inspect.signature(function).parameters.items():
        if name in skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        if settable(annotation):
            found[rename.get(name, name)] = annotation
    return found


def describe(annotation: Any) -> str:
    """``int | None`` -> ``"an integer or null"``: how an error names the type wanted."""
    if annotation is Any:
        return "any value"
    if annotation in (type(None), None):
        return "null"
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer"
    if annotation is float:
        return "a number"
    if annotation in (str, Path):
        return "a string"
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [describe(a) for a in args if a is not type(None)]
        if "a number" in parts and "an integer" in parts:  # an integer is a number
            parts.remove("an integer")
        return _either(parts + (["null"] if type(None) in args else []))
    if annotation is list or origin is list:
        return f"a list of {_plural(args[0])}" if args else "a list"
    if annotation is tuple or origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_plural(args[0])}"
        if args and len(set(args)) == 1:
            return f"a list of {len(args)} values, each {describe(args[0])}"
        return f"a list of {len(args)} values ({', '.join(describe(a) for a in args)})" if args else "a list"
    if annotation is dict or origin is dict:
        return "a mapping" + (f" of {_plural(args[1])}" if len(args) == 2 and args[1] is not Any else "")
    return getattr(annotation, "__name__", str(annotation))


def _either(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _plural(annotation: Any) -> str:
    text = describe(annotation)
    for single, many in (("an integer", "integers"), ("a number", "numbers"), ("a string", "strings")):
        text = text.replace(single, many)
    return text.replace("true or false", "booleans")


def convert(value: Any, annotation: Any) -> Any:
    """``value`` as ``annotation`` wants it (a ``Path``, a tuple), or :class:`Mismatch`."""
    if annotation is Any:
        return value
    if annotation in (type(None), None):
        if value is None:
            return None
        raise Mismatch("null", value)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return convert(value, option)
            except Mismatch as exc:
                if exc.where:  # the container fitted, an element inside it did not: report that element
                    raise
        raise Mismatch(describe(annotation), value)
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in args):
            return value
        raise Mismatch(describe(annotation), value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise Mismatch("true or false", value)
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise Mismatch("an integer", value)
    if annotation is float:
        return _number(value)
    if annotation in (str, Path):
        if isinstance(value, str):
            return Path(value) if annotation is Path else value
        raise Mismatch("a string", value)
    if annotation in (list, tuple) or origin in (list, tuple):
        return _sequence(value, annotation, origin or annotation, args)
    if annotation is dict or origin is dict:
        if not isinstance(value, dict):
            raise Mismatch(describe(annotation), value)
        key_type, value_type = args if len(args) == 2 else (Any, Any)
        out = {}
        for key, item in value.items():
            try:
                out[convert(key, key_type)] = convert(item, value_type)
            except Mismatch as exc:
                raise Mismatch(exc.expected, exc.value, f".{key}{exc.where}") from None
        return out
    raise Mismatch(f"{describe(annotation)} (which cannot be written in a file)", value)


def _number(value: Any) -> float:
    if isinstance(value, str) and _EXPONENT.match(value.strip()):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Mismatch("a number", value)
    if not math.isfinite(value):
        raise Mismatch("a finite number", value)
    return value


def _sequence(value: Any, annotation: Any, kind: Any, args: tuple[Any, ...]) -> Any:
    if not isinstance(value, list):
        raise Mismatch(describe(annotation), value)
    if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise Mismatch(describe(annotation), value)
        element_types: list[Any] = list(args)
    else:
        element_types = [args[0] if args else Any] * len(value)
    items = []
    for index, (item, item_type) in enumerate(zip(value, element_types, strict=True)):
        try:
            items.append(convert(item, item_type))
        except Mismatch as exc:
            raise Mismatch(exc.expected, exc.value, f"[{index}]{exc.where}") from None
    return tuple(items) if kind is tuple else items


def shown(value: Any) -> str:
    """A short quotation of a wrong value for an error message (long text is not repeated)."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value) if not isinstance(value, str) else repr(redact(value))
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def did_you_mean(value: Any, known: Iterable[str]) -> str:
    """`` (did you mean 'max_steps'?)`` for the closest of ``known`` to a misspelt ``value``, or ``""``."""
    close = difflib.get_close_matches(str(value), sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_message(key: Any, known: Iterable[str]) -> str:
    """``unknown key 'max_step' (did you mean 'max_steps'?); known: ...``."""
    known = sorted(known)
    return f"unknown key {str(key)!r}{did_you_mean(key, known)}; known: {', '.join(known) or 'none'}"


def check_options(raw: Mapping[Any, Any], options: Mapping[str, Any], *, where: str, fail: Fail) -> dict[str, Any]:
    """Every key of ``raw`` must be one of ``options`` and its value of that option's type.

    Returns the converted values. ``fail(message, field)`` builds the error (so the caller adds
    the file and line); ``where`` is the mapping's own field path (``conditions.fine-tuned.lora``).
    """
    out: dict[str, Any] = {}
    for key, value in raw.items():
        spot = f"{where}.{key}" if where else str(key)
        if key not in options:
            raise fail(unknown_key_message(key, options), spot)
        try:
            out[key] = convert(value, options[key])
        except Mismatch as exc:
            inner = f"{spot}{exc.where}"
            raise fail(f"must be {exc.expected}, got {shown(exc.value)}", inner) from None
    return out
