"""Compose the per-model metrics table from a loaded Dataset and the user's options.

This is the one place where the metric modules meet; the CLI, the notebooks and the
batch runner all call :func:`metrics_table`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from jagged.loaders import Dataset
from jagged.metrics import jaggedness


@dataclass(frozen=True)
class AnalysisOptions:
    """What to compute beyond the jaggedness penalty.

    Attributes
    ----------
    weights : str or None
        Path of a weights file (CSV or YAML) with exposure profiles.
    profiles : tuple of str
        Profile names to keep (empty: all, plus built-ins).
    missing_weight : {"error", "zero"}
        What a score domain absent from a profile means.
    bootstrap : int
        Bootstrap replicates for intervals (0: none).
    seed : int
        Random seed for the bootstrap.
    ci : float
        Interval level.
    """

    weights: str | None = None
    profiles: tuple[str, ...] = ()
    missing_weight: str = "error"
    bootstrap: int = 0
    seed: int = 0
    ci: float = 0.95


def add_notes(table: pd.DataFrame, model_notes: dict[str, str]) -> pd.DataFrame:
    """Append per-model remarks to the ``note`` column ("; "-separated)."""
    if not model_notes:
        return table
    extra = table["model"].map(model_notes).fillna("")
    joined = [n if not e else (e if not n else f"{n}; {e}") for n, e in zip(table["note"], extra)]
    return table.assign(note=joined)


def metrics_table(dataset: Dataset, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The full per-model metrics table for a dataset.

    Parameters
    ----------
    dataset : Dataset
        Output of :func:`jagged.load`.
    options : AnalysisOptions, optional
        Defaults compute the jaggedness table only.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`jagged.jaggedness`, plus those the options add.
    """
    options = options or AnalysisOptions()
    table = jaggedness(dataset.scores)
    return add_notes(table, dataset.model_notes)
