"""TIDE data: one record schema, explicit sources, persona-disjoint splits, validation.

Imports only :mod:`tide_bench.core`. Public API::

    from tide_bench.data import load_dataset, TideItem
    ds = load_dataset("sample")            # or "hub", or "/path/to/TIDE"
    test_items = ds.items_for("test")
"""

from tide_bench.data.schema import SPLIT_CHOICES, SPLITS, TideItem
from tide_bench.data.sources import DataSource, LoadedDataset, choose_spec, load_dataset, resolve
from tide_bench.data.splits import split_of
from tide_bench.data.validate import format_report, validate

__all__ = [
    "SPLITS",
    "SPLIT_CHOICES",
    "DataSource",
    "LoadedDataset",
    "TideItem",
    "choose_spec",
    "format_report",
    "load_dataset",
    "resolve",
    "split_of",
    "validate",
]
