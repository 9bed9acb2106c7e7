"""What a matrix run returns: every cell's result, the legs and the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.model.outcome import CellResult
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import Verdict


@dataclass(frozen=True)
class MatrixReport:
    """A matrix run: every cell's result, the legs, the verdict. ``stopped_by``: the
    signal that interrupted it, if one did."""

    recipe: str
    question: str
    source: str | None
    workloads: tuple[str, ...]
    run_dir: Path
    cells: tuple[CellResult, ...]
    envs: dict[str, EnvRecord]
    verdict: Verdict
    interrupted: bool = False
    stopped_by: str | None = None

    @property
    def cells_run(self) -> int:
        """Cells that produced a result (pass, fail or timeout), this run or reused."""
        return sum(r.outcome.is_result for r in self.cells)
