"""What transfers between two machines: two results tables (or studies) compared per
(model, workload, leg pair), the rows whose speedups differ, and the agreements.

Reading (:mod:`load`, :mod:`grids`, :mod:`columns`, :mod:`results`) produces a frozen
:class:`ResultTable` per side; :func:`compare` is a pure function of two of them;
:mod:`report` serialises the result.
"""

from vllmdiag.jobs.compare.crosscheck import Note
from vllmdiag.jobs.compare.load import load_table
from vllmdiag.jobs.compare.report import CompareReport, report, to_markdown
from vllmdiag.jobs.compare.results import ResultPoint, table_from_results
from vllmdiag.jobs.compare.tables import Measurement, Number, ResultTable, Row
from vllmdiag.jobs.compare.transfer import (
    Compared,
    Comparison,
    Pair,
    Settings,
    compare,
    default_pairs,
    parse_pair,
)

__all__ = [
    "CompareReport",
    "Compared",
    "Comparison",
    "Measurement",
    "Note",
    "Number",
    "Pair",
    "ResultPoint",
    "ResultTable",
    "Row",
    "Settings",
    "compare",
    "default_pairs",
    "load_table",
    "parse_pair",
    "report",
    "table_from_results",
    "to_markdown",
]
