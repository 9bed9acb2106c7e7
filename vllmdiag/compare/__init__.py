"""What transfers between two machines: two results tables (or studies) compared per
(model, workload, leg pair), the rows whose speedups differ, and the agreements.

Reading (:mod:`load`, :mod:`grids`, :mod:`columns`, :mod:`results`) produces a frozen
:class:`ResultTable` per side.
"""

from vllmdiag.compare.load import load_table
from vllmdiag.compare.model import Measurement, Number, ResultTable, Row
from vllmdiag.compare.results import ResultPoint, table_from_results

__all__ = [
    "Measurement",
    "Number",
    "ResultPoint",
    "ResultTable",
    "Row",
    "load_table",
    "table_from_results",
]
