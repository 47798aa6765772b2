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
    """Every cell of a CSV row through :func:`spreadsheet_safe`: what every CSV writer writes."""
    return [spreadsheet_safe(v) for v in values]


def csv_text(rows: Iterable[Sequence[Any]]) -> str:
    """``rows`` as ``csv.writer`` (the ``excel`` dialect) writes them, every cell through
    :func:`spreadsheet_safe`."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows(map(safe_row, rows))
    return buffer.getvalue()


def csv_table(header: Sequence[Any], columns: Sequence[Sequence[Any]]) -> str:
    """:func:`csv_text` of a header row and the table's columns (each as long as the others,
    one per header cell)."""
    if len(columns) != len(header) or len({len(c) for c in columns}) > 1:
        raise ValueError(f"a table of {len(header)} header cells and columns of lengths {[len(c) for c in columns]}")
    return csv_text([header, *zip(*columns, strict=True)])
