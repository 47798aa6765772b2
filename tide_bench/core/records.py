"""Records declared once, and the one adapter from pydantic's errors to the project's.

Each record that a file holds (``run.json``, a samples line, a judgments line, ``judge_summary.json``)
is declared once, as a pydantic model or a dataclass whose fields carry their constraints, and that
one declaration both reads the file and says what is written (Inspect's ``EvalSample`` is the
model). A value of the wrong type is never coerced: the scalar types below are pydantic's strict
ones (``true`` is not an integer, ``"0.5B"`` not a parameter count), and a number is finite unless a
field says otherwise.

What tide-bench adds is the message. :func:`load` turns the first of pydantic's errors (its ``loc``
is the field's path, its ``type`` what is wrong) into a :class:`~tide_bench.core.errors.TideBenchError`
that says where, as ``judgments.jsonl:LINE, field 'scores.emotion_recognition': must be an integer,
got a string``. A rule that a type cannot state (a rubric's factor set, a flag that needs a reason)
is a validator raising :func:`refusal`, which may name a field below the one it checks (``at``).
For a JSON file that spans many lines (``run.json``), :func:`line_locator` finds the line of a
field from the file's text, so those errors carry a line too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from annotated_types import Ge
from pydantic import (
    AfterValidator,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Strict,
    TypeAdapter,
    ValidationError,
)
from pydantic.types import AllowInfNan
from pydantic_core import PydanticCustomError

from tide_bench.core.errors import DataError, TideBenchError

T = TypeVar("T")
LineLocator = Callable[[str], int | None]

Str = Annotated[str, Strict()]
Int = Annotated[int, Strict()]
Bool = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Ge(0)]
Number = Annotated[float, Strict(), AllowInfNan(False)]  # an integer is a number too; NaN and infinities are not


class Record(BaseModel):
    """A record read from a file: frozen once checked; keys it does not declare are ignored."""

    model_config = ConfigDict(frozen=True)


def refusal(message: str, at: str | None = None) -> PydanticCustomError:
    """The error a validator raises for a rule of its own: ``message`` as it is shown, ``at`` the
    field below the validated one that it concerns (dotted, e.g. ``"safety.category"``)."""
    return PydanticCustomError("tide_bench", "{message}", {"message": message, "at": at or ""})


def null_as(default: Callable[[], Any]) -> BeforeValidator:
    """A field a file may leave null: null reads as ``default()`` (and messages say "or null")."""

    def replace(value: Any) -> Any:
        return default() if value is None else value

    replace.null_ok = True  # type: ignore[attr-defined]  # read by the messages (_nullable)
    return BeforeValidator(replace)


def _nonblank(value: str) -> str:
    if not value.strip():
        raise refusal("must not be empty")
    return value


NonBlank = Annotated[str, Strict(), AfterValidator(_nonblank)]


def type_name(value: Any) -> str:
    """A JSON-ish name for the type of ``value`` (never the value itself: messages may be public)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def line_locator(text: str) -> LineLocator:
    """A function from a dotted field path to its line in a JSON text (best effort).

    The keys of the path are searched in order, each after the previous one, so a nested
    key is found inside its parent rather than anywhere in the file.
    """

    def locate(field: str) -> int | None:
        pos, found = 0, None
        for part in field.split("."):
            key = part.split("[", 1)[0]
            if not key:
                continue
            hit = text.find(json.dumps(key) + ":", pos)
            if hit < 0:
                hit = text.find(json.dumps(key), pos)
            if hit < 0:
                break
            pos, found = hit, text.count("\n", 0, hit) + 1
        return found

    return locate


def load(
    adapter: TypeAdapter[T] | type[T],
    obj: Any,
    *,
    path: Any,
    line: int | None = None,
    locate: LineLocator | None = None,
    error: type[TideBenchError] = DataError,
    context: dict[str, Any] | None = None,
    relocate: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None,
) -> T:
    """``obj`` validated as the record (a pydantic model, or a :class:`~pydantic.TypeAdapter` of
    a dataclass), or ``error`` naming the file, the line and the field of the first problem.
    ``relocate`` maps a field's path in the record to its path in the file where they differ."""
    try:
        if isinstance(adapter, TypeAdapter):
            return adapter.validate_python(obj, context=context)
        return adapter.model_validate(obj, context=context)  # type: ignore[attr-defined, no-any-return]
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        record = adapter._type if isinstance(adapter, TypeAdapter) else adapter
        field, message = describe(record, first, relocate, obj)
        found = line if line is not None else locate(field) if locate is not None and field else None
        raise error(message, path=path, line=found, field=field or "(top level)") from None


_KINDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "float_type": "a number",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "dataclass_exact_type": "an object",
    "list_type": "a list",
    "tuple_type": "a list",
}


def describe(
    record: Any,
    error: Any,
    relocate: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None,
    given: Any = None,
) -> tuple[str, str]:
    """The dotted field path and the message of one pydantic error (as ``errors()`` lists it).
    A record may say whether a field takes null in ``given`` (the object read) by a classmethod
    ``null_allowed(field, given)`` (None: as its annotation says)."""
    loc = tuple(error["loc"])
    allowed = getattr(record, "null_allowed", None)
    said = allowed(_dotted(loc), given) if allowed is not None else None
    nullable = " or null" if (said if said is not None else _nullable(record, loc)) else ""
    loc = relocate(loc) if relocate is not None else loc
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "tide_bench":
        at = tuple(ctx["at"].split(".")) if ctx.get("at") else ()
        return _dotted(loc + at), str(ctx["message"])
    field = _dotted(loc)
    if kind == "missing":
        return field, "is missing"
    if kind in _KINDS:
        return field, f"must be {_KINDS[kind]}{nullable}, got {type_name(value)}"
    if kind in ("string_too_long", "too_long") and isinstance(value, str):  # too_long: a limit after a validator
        return field, f"is {len(value)} characters long; at most {ctx['max_length']} are allowed"
    if kind in ("greater_than_equal", "less_than_equal"):
        low, high = ctx.get("ge", "-inf"), ctx.get("le", "inf")
        return field, f"must lie in {low}..{high}"
    if kind == "finite_number":
        return field, "must be a finite number"
    if kind == "literal_error":
        return field, f"must be {ctx['expected']}"
    return field, str(error["msg"])


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _optional(annotation: Any) -> tuple[Any, bool]:
    """The annotation without ``| None`` and ``Annotated``, and whether it takes null (``| None``,
    or a :func:`null_as` default)."""
    nullable = False
    if get_origin(annotation) is Annotated:
        nullable = any(getattr(getattr(m, "func", None), "null_ok", False) for m in annotation.__metadata__)
        annotation = get_args(annotation)[0]
    args = get_args(annotation)
    if get_origin(annotation) in (Union, type(int | None)) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return _optional(rest[0])[0] if len(rest) == 1 else annotation, True
    if get_origin(annotation) is Annotated:
        inner, marked = _optional(annotation)
        return inner, nullable or marked
    return annotation, nullable


def _members(record: Any) -> dict[tuple[Any, ...], Any]:
    """A record's fields by every path its input may give them under: name, alias, alias path
    (each as its annotation, with its metadata)."""
    if isinstance(record, type) and issubclass(record, BaseModel):
        infos = {
            name: (
                Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation,
                info.validation_alias,
            )
            for name, info in record.model_fields.items()
        }
    elif is_dataclass(record) and isinstance(record, type):
        hints = get_type_hints(record, include_extras=True)
        infos = {f.name: (hints[f.name], _alias(hints[f.name])) for f in fields(record)}
    else:
        return {}
    out: dict[tuple[Any, ...], Any] = {}
    for name, (annotation, alias) in infos.items():
        out[(name,)] = annotation
        if isinstance(alias, AliasPath):
            out[tuple(alias.path)] = annotation
        elif isinstance(alias, str):
            out[(alias,)] = annotation
    return out


def _alias(annotation: Any) -> Any:
    for meta in annotation.__metadata__ if get_origin(annotation) is Annotated else ():
        alias = getattr(meta, "validation_alias", None)
        if alias is not None:
            return alias
    return None


def _nullable(record: Any, loc: tuple[Any, ...]) -> bool:
    """Whether the field at ``loc`` of ``record`` takes null (best effort: False when not found)."""
    annotation, rest = record, loc
    while rest:
        annotation = _optional(annotation)[0]
        members = _members(annotation)
        if members:
            match = next((p for p in sorted(members, key=len, reverse=True) if rest[: len(p)] == p), None)
            if match is None:
                return False
            annotation, rest = members[match], rest[len(match) :]
        elif get_origin(annotation) is dict:
            annotation, rest = get_args(annotation)[1], rest[1:]
        elif get_origin(annotation) in (list, tuple):
            annotation, rest = get_args(annotation)[0], rest[1:]
        else:
            return False
    return _optional(annotation)[1] if loc else False
