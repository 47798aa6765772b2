"""The one loader of YAML written by users: study files, submissions, boards, judge configurations.

YAML aliases (``&a`` ... ``*a``) share one node, so a few hundred bytes can describe a document
of billions of values (the "billion laughs"): PyYAML builds it quickly, as shared objects, and
the first code that walks it (a type check, ``json.dumps``, a hash) never returns. So every
user YAML is read here, with three limits checked on the composed node graph *before* any
value is built: the file's size, the number of values the document holds once its aliases
are expanded, and its nesting depth. Each is a :class:`~tide_bench.core.errors.ConfigError`
(or the caller's error class) naming the file and, where it has one, the line; an alias bomb
is refused in milliseconds. ``aliases=False`` refuses anchors and aliases outright (a
submission's metadata needs none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.core.jsonio import read_bytes

MAX_YAML_BYTES = 2_000_000
MAX_VALUES = 200_000  # scalars, sequences and mappings once aliases are expanded
MAX_DEPTH = 100


def _mark_line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


class NoAliasLoader(yaml.SafeLoader):
    """A safe loader that refuses anchors and aliases where a document needs none."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves the parser untyped
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&, *) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)


def _flow_depth(text: str) -> int:
    """The deepest nesting of flow collections (``[`` / ``{``) outside quotes: checked before
    parsing, since the parser recurses once per level."""
    depth = deepest = 0
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "\n":
            quote = ""
    return deepest


def _expanded_size(node: yaml.Node, error: type[TideBenchError], path: Path | None, max_values: int) -> int:
    """How many values ``node`` stands for with every alias expanded (each shared node is
    measured once, so this is linear in the text), refusing too deep a nesting."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(node, 0, False)]
    while stack:
        current, depth, children_done = stack.pop()
        if id(current) in sizes:
            continue
        if depth > MAX_DEPTH:
            raise error(f"nested more than {MAX_DEPTH} levels deep", path=path, line=_mark_line(current.start_mark))
        if isinstance(current, yaml.ScalarNode):
            sizes[id(current)] = 1
            continue
        children = (
            [n for pair in current.value for n in pair] if isinstance(current, yaml.MappingNode) else current.value
        )
        if children_done:
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > max_values:
                raise error(
                    f"expands to more than {max_values} values once its aliases (&, *) are expanded: a YAML alias "
                    "bomb, or a document far larger than tide-bench reads",
                    path=path,
                    line=_mark_line(current.start_mark),
                )
            sizes[id(current)] = total
            continue
        stack.append((current, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)
    return sizes[id(node)]


def load_yaml(
    text: str | bytes,
    *,
    path: str | Path | None = None,
    error: type[TideBenchError] = ConfigError,
    max_bytes: int = MAX_YAML_BYTES,
    max_values: int = MAX_VALUES,
    aliases: bool = True,
) -> Any:
    """Parse one YAML document with the limits above (``yaml.safe_load`` otherwise)."""
    where = Path(path) if path is not None else None
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise error(f"is {len(text)} bytes; at most {max_bytes} are read", path=where)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise error("not valid UTF-8", path=where) from None
    if len(text) > max_bytes:
        raise error(f"is {len(text)} characters (bytes); at most {max_bytes} are read", path=where)
    if _flow_depth(text) > MAX_DEPTH:
        raise error(f"nested more than {MAX_DEPTH} levels deep", path=where)
    loader: yaml.SafeLoader | None = None
    try:
        loader = (yaml.SafeLoader if aliases else NoAliasLoader)(text)
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, error, where, max_values)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise error(
            f"malformed YAML: {getattr(exc, 'problem', None) or exc}", path=where, line=_mark_line(mark)
        ) from None
    except RecursionError:
        raise error(f"malformed YAML: nested more than {MAX_DEPTH} levels deep", path=where) from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml(
    path: str | Path,
    *,
    error: type[TideBenchError] = ConfigError,
    max_bytes: int = MAX_YAML_BYTES,
    max_values: int = MAX_VALUES,
    aliases: bool = True,
) -> Any:
    """Read and parse a user's YAML file (a regular file of at most ``max_bytes``)."""
    path = Path(path)
    raw = read_bytes(path, error, max_bytes=max_bytes)
    return load_yaml(raw, path=path, error=error, max_bytes=max_bytes, max_values=max_values, aliases=aliases)


def load_shipped_yaml(text: str) -> Any:
    """A YAML file that ships with tide-bench (a rubric of ``judges/``), by libyaml's parser
    where PyYAML has it: the same values as :func:`load_yaml`, eight times faster (the 14 KB
    rubric took a build 48 ms in pure Python, 6 ms here). Never for a file a user wrote:
    libyaml's composer recurses once per nesting level without a limit, which
    :func:`load_yaml` guards against."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
