"""CSV cells that a spreadsheet shows as written.

Why: Excel, LibreOffice and Google Sheets evaluate a cell that starts with ``=``, ``+``, ``-``
or ``@`` (or a tab or carriage return) as a formula, the "CSV injection" of OWASP: a model name
or a reply written as ``=HYPERLINK(...)`` would turn into a live link, or worse, on the machine
of whoever opens the download. Such text gets a leading ``'``, which spreadsheets hide and read
as "this is text". Numbers are left alone (a negative number is a number, not a formula), and
the JSON beside every CSV keeps the exact text.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")  # and full-width forms


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell: a string that would start a formula (also after leading spaces)
    gets a leading ``'``; numbers stay numbers."""
    if isinstance(value, str) and value.lstrip(" ").startswith(FORMULA_START):
        return "'" + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    """Every cell of a CSV row through :func:`spreadsheet_safe`: what every CSV writer writes.
    (The same test inline: a board build writes 100,000 rows, and a call per cell was a third of
    the time of its items.csv files.)"""
    return [("'" + v if v.lstrip(" ").startswith(FORMULA_START) else v) if isinstance(v, str) else v for v in values]


class _Unusual(Exception):
    """A cell :func:`_cell` does not write the way ``csv.writer`` would."""


def _cell(value: Any) -> str:
    """One safe cell as the ``excel`` dialect writes it (``QUOTE_MINIMAL``)."""
    kind = type(value)
    if kind is str:
        text: str = value
        if text.lstrip(" ").startswith(FORMULA_START):
            text = "'" + text
        if "," in text or '"' in text or "\r" in text or "\n" in text:
            return '"' + text.replace('"', '""') + '"'
        return text
    if value is None:
        return ""
    if kind is int or kind is float or kind is bool:  # str(float) is repr(float), what csv.writer writes
        return str(value)
    raise _Unusual


_PLAIN = frozenset({int, float, bool, type(None)})
_QUOTED = (",", '"', "\r", "\n")  # a cell holding one is quoted
# A formula start (after spaces) at the start of a cell, searched in a column's cells joined by NUL
# (the first cell apart). A NUL inside a cell can only add matches, and a match only sends the
# column to the cell-by-cell path. The pattern starts with a literal, which the regex engine finds fast.
_FORMULA_AFTER_NUL = re.compile("\x00 *[" + re.escape("".join(FORMULA_START)) + "]")


def _column(values: Sequence[Any]) -> list[str]:
    """One column's cells as :func:`_cell` writes them, a whole column at a time where it can:
    numbers and blanks by ``str``, plain text as it is when none of it needs quoting or a ``'``."""
    kinds = set(map(type, values))
    if kinds <= _PLAIN:
        if len(kinds) == 1 and len(values) > 64:
            # a column of one type, as a rule of few values (scores, turns, means of scores): each
            # distinct value written once. 0.0 and -0.0 (equal keys, two texts) keep the plain way;
            # a NaN is found by its identity.
            distinct = dict.fromkeys(values)
            if 2 * len(distinct) <= len(values) and (float not in kinds or 0.0 not in distinct):
                text = {v: "" if v is None else str(v) for v in distinct}
                return list(map(text.__getitem__, values))
        return list(map(str, values)) if type(None) not in kinds else ["" if v is None else str(v) for v in values]
    if kinds == {str}:
        joined = "\x00".join(values)
        if (
            not any(mark in joined for mark in _QUOTED)
            and _FORMULA_AFTER_NUL.search(joined) is None
            and not values[0].lstrip(" ").startswith(FORMULA_START)
        ):
            return list(values)
    return [_cell(v) for v in values]


def _fast_table(header: Sequence[Any], columns: Sequence[Sequence[Any]]) -> str:
    """:func:`csv_table`, raising :class:`_Unusual` on a cell it does not write as ``csv.writer``
    would. The header apart: its text would mix each column's kinds."""
    lines = [",".join([_cell(v) for v in header]), *map(",".join, zip(*map(_column, columns), strict=True))]
    return "\r\n".join(lines) + "\r\n"


def _writer_text(rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(safe_row(row) for row in rows)
    return buffer.getvalue()


def csv_table(header: Sequence[Any], columns: Sequence[Sequence[Any]]) -> str:
    """:func:`csv_text` of a header row and the table's columns (each as long as the others,
    one per header cell), written a column at a time without making its rows first."""
    if len(columns) != len(header) or len({len(c) for c in columns}) > 1:
        raise ValueError(f"a table of {len(header)} header cells and columns of lengths {[len(c) for c in columns]}")
    if len(header) >= 2:
        try:
            return _fast_table(header, columns)
        except _Unusual:
            pass
    return _writer_text([header, *zip(*columns, strict=True)])


def csv_text(rows: Sequence[Sequence[Any]]) -> str:
    """``rows`` as the text ``csv.writer`` (the ``excel`` dialect) writes from :func:`safe_row`
    of each row, byte for byte (``tests/test_csv_exports.py`` holds the two equal).

    Why not ``csv.writer`` itself: it tests every character of every text cell in a Python-level
    state machine, and a board's ``items.csv`` files (100,000 rows of replies) took a tenth of a
    build's CPU that way. Here rows of one length are written a column at a time (a column of
    numbers, or of text with nothing to quote, costs a few calls in C; :func:`csv_table`); a text
    cell that needs quoting costs four substring searches. Rows holding another type of cell (a
    numpy number, say), or a row of fewer than two cells, go to ``csv.writer``."""
    if not rows:
        return ""
    widths = set(map(len, rows))
    if min(widths) >= 2:
        try:
            if len(widths) == 1:
                return _fast_table(rows[0], list(zip(*rows[1:], strict=True)))
            return "".join([",".join([_cell(v) for v in row]) + "\r\n" for row in rows])
        except _Unusual:
            pass
    return _writer_text(rows)
