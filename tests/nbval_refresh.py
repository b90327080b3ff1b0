"""Refresh the stored outputs that nbval checks, and strip every other output.

Usage (from the repository root)::

    .venv/bin/python tests/nbval_refresh.py [notebooks/NAME.ipynb ...]

Writes each notebook's parameters cell from ``jagged.options.parameters_cell``, runs the
notebook (default: every notebook in ``notebooks/``) with its default parameters, then rewrites
it with outputs only in the cells marked ``# NBVAL_CHECK_OUTPUT``, taken from that run; all other
outputs and execution counts are cleared (nbval needs an execution count on the checked cells
only). Run it after a change to an option or to a checked output (e.g. a new column in the
summary table) and review the diff before committing.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
MARKER = "# NBVAL_CHECK_OUTPUT"


def refresh(path: Path) -> int:
    """Rewrite one notebook; return the number of checked cells refreshed."""
    from jagged.options import parameters_cell
    from jagged.report import execute

    source = nbformat.read(path, as_version=4)
    params = next(c for c in source.cells if "parameters" in c.metadata.get("tags", []))
    params.source = parameters_cell(path.stem)  # generated from jagged/options.py
    nbformat.write(source, path)
    with tempfile.TemporaryDirectory() as tmp:
        executed = execute(path, Path(tmp) / path.name, cwd=path.parent)
    by_id = {cell.get("id"): cell for cell in executed.cells}
    refreshed = 0
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        cell.execution_count = None
        cell.outputs = []
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if MARKER in cell.source:
            ran = by_id.get(cell.get("id"))
            if ran is None:
                raise SystemExit(f"{path.name}: checked cell {cell.get('id')!r} not found in the run")
            for output in ran.outputs:
                output.pop("execution_count", None)
                if output.get("output_type") == "execute_result":
                    output["execution_count"] = None
            cell.outputs = ran.outputs
            cell.execution_count = ran.execution_count  # nbval skips cells that never ran
            refreshed += 1
    nbformat.validate(source)
    nbformat.write(source, path)
    return refreshed


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        print(f"{path}: {refresh(path.resolve())} checked cell(s) refreshed")


if __name__ == "__main__":
    main(sys.argv[1:])
