"""What every plot module needs: a column check and a new single-panel figure."""

from __future__ import annotations

from typing import Sequence

import pandas as pd
from matplotlib.axes import Axes


def check_columns(frame: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    """Raise ValueError naming the columns of ``needed`` that ``frame`` lacks."""
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}")


def new_axes(width: float, height: float) -> Axes:
    """One Axes on a new figure of this size (inches), with constrained layout.

    When the figure is rendered for a report, :func:`jagged.plots.layout.estimated_margins`
    replaces the layout engine by cheaper estimated margins where it can.
    """
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax
