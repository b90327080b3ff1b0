"""What every plot module needs: a column check, a new single-panel figure, a labelled seaborn heatmap."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import Colormap

from jagged.plots.labels import declutter, fit_titles


def check_columns(frame: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    """Raise ValueError naming the columns of ``needed`` that ``frame`` lacks."""
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}")


def new_axes(width: float, height: float) -> Axes:
    """One Axes on a new figure of this size (inches), laid out by :func:`title_fitting_layout`."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(width, height))
    figure.set_layout_engine(title_fitting_layout()())
    return ax


@lru_cache(maxsize=None)
def title_fitting_layout() -> type:
    """Constrained layout (margins sized to the drawn texts, figure size kept), then titles running past
    the figure's edge wrapped (:func:`~jagged.plots.labels.fit_titles`, the layout redone) and overlapping
    point labels hidden (:func:`~jagged.plots.labels.declutter`). Made on first use: matplotlib is
    imported lazily."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    class TitleFittingLayout(ConstrainedLayoutEngine):
        #: Set while seaborn draws the figure only to measure its tick labels (:func:`labelled_heatmap`).
        paused = False

        def execute(self, fig: Any) -> Any:
            if self.paused:
                return None
            result = super().execute(fig)
            get_renderer = getattr(fig.canvas, "get_renderer", None)
            if get_renderer is not None:
                if fit_titles(fig, get_renderer()):
                    result = super().execute(fig)
                declutter(fig, get_renderer())
            return result

    return TitleFittingLayout


def labelled_heatmap(grid: pd.DataFrame, *, ax: Axes, cmap: Colormap, vmin: float, vmax: float, gid: str,
                     col_step: int = 1, row_pt: float = 8.0, col_pt: float = 8.0, rotation: float = 45.0,
                     annotate: str | None = None, colorbar: str = "", shrink: float = 0.9) -> QuadMesh:
    """Draw ``grid`` with :func:`seaborn.heatmap`, its labels, annotations and colour bar seaborn's.

    ``grid``'s index and columns are the labels as drawn (plain text); missing and infinite
    values show the colour map's "bad" colour. Every ``col_step``-th column is labelled
    (seaborn's integer ``xticklabels``), every row; ``rotation`` 45 slants the column labels,
    90 stands them upright. ``annotate`` is seaborn's ``fmt`` for the values written in the
    cells (gid ``"cell-label"``), None for none. Returns the mesh (gid ``gid``): cell (r, c)
    spans [c, c + 1] × [r, r + 1], row 0 at the top.
    """
    import seaborn as sns

    values = grid.to_numpy(dtype=float)
    frame = pd.DataFrame(np.where(np.isfinite(values), values, np.nan), index=grid.index, columns=grid.columns)
    before, texts = set(ax.collections), len(ax.texts)
    engine = ax.figure.get_layout_engine()
    pause = isinstance(engine, title_fitting_layout())
    if pause:  # seaborn draws the figure once to see whether its labels overlap; no layout needed for that
        engine.paused = True
    try:
        sns.heatmap(frame, cmap=cmap, vmin=vmin, vmax=vmax, xticklabels=col_step, yticklabels=True,
                    annot=annotate is not None, fmt=annotate or "", annot_kws={"fontsize": 6}, ax=ax,
                    cbar_kws={"shrink": shrink, "pad": 0.01, "aspect": 30})
    finally:
        if pause:
            engine.paused = False
    (mesh,) = [c for c in ax.collections if c not in before and isinstance(c, QuadMesh)]
    mesh.set_gid(gid)
    for text in ax.texts[texts:]:
        text.set_gid("cell-label")
        text.set_in_layout(False)
    ax.tick_params(length=0)
    ax.tick_params(axis="y", labelsize=row_pt, labelrotation=0)
    ax.tick_params(axis="x", labelsize=col_pt, labelrotation=rotation)
    slanted = rotation < 90
    for label in ax.get_xticklabels():
        label.set(ha="right" if slanted else "center", rotation_mode="anchor" if slanted else "default")
    mesh.colorbar.set_label(colorbar, fontsize=8)
    mesh.colorbar.ax.tick_params(labelsize=7)
    return mesh


def mark_cut(ax: Axes, cut: int, *, rules: bool = False) -> None:
    """Set the summary row's y label (at ``cut``, 0: none) in grey italics; ``rules``: white lines around its row."""
    if not cut:
        return
    label = ax.get_yticklabels()[cut]
    label.set_fontstyle("italic")
    label.set_color("0.3")
    if rules:
        for edge in (cut, cut + 1):
            ax.axhline(edge, color="white", linewidth=2.5, gid="others")
