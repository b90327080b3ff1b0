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

    Constrained layout measures the drawn texts (tick labels, titles, legends outside the
    axes, colour bars) and sizes the margins to them, so nothing is cut off whatever the
    names; the figure keeps the size asked for.
    """
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax
