"""What every plot module needs: a column check, a new single-panel figure and a labelled seaborn heatmap."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import Colormap


def check_columns(frame: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    """Raise ValueError naming the columns of ``needed`` that ``frame`` lacks."""
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}")


def new_axes(width: float, height: float) -> Axes:
    """One Axes on a new figure of this size (inches), with constrained layout that fits its titles.

    Constrained layout measures the drawn texts (tick labels, titles, legends outside the
    axes, colour bars) and sizes the margins to them, so nothing is cut off whatever the
    names; the figure keeps the size asked for. A title wider than the room right of its
    axes' left edge is wrapped onto more lines (:func:`title_fitting_layout`).
    """
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(width, height))
    figure.set_layout_engine(title_fitting_layout()())
    return ax


@lru_cache(maxsize=None)
def title_fitting_layout() -> type:
    """The layout engine class of :func:`new_axes` (made on first use: matplotlib is imported lazily)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    class TitleFittingLayout(ConstrainedLayoutEngine):
        """Constrained layout; then a title running past the figure's edge is wrapped (and the layout
        redone), and point labels that would overlap an earlier one are hidden
        (:func:`jagged.plots.labels.declutter`).

        Layout engines are matplotlib's public extension point for this
        (:class:`matplotlib.layout_engine.LayoutEngine`); the second pass runs only when a
        title was wrapped (:func:`jagged.plots.labels.fit_titles`).
        """

        #: Set while seaborn draws the figure only to measure its tick labels (:func:`labelled_heatmap`):
        #: the layout runs when the figure is drawn for real.
        paused = False

        def execute(self, fig: Any) -> Any:
            from jagged.plots.labels import declutter, fit_titles

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
    """Draw a labelled grid with :func:`seaborn.heatmap`: its tick labels, annotations and colour bar.

    Parameters
    ----------
    grid : pandas.DataFrame
        Rows × columns of values; its index and columns are the labels as drawn (already
        made plain text, :func:`jagged.plots.labels.plain`). Missing and infinite values
        are left out and show the colour map's "bad" colour.
    ax : matplotlib.axes.Axes
        Axes to draw on.
    cmap : matplotlib.colors.Colormap
        Colour map, with its "bad" colour set for missing cells.
    vmin, vmax : float
        Colour limits.
    gid : str
        Group id of the mesh, so tests and the alt text can find it.
    col_step : int
        Label every ``col_step``-th column (seaborn's integer ``xticklabels``); every row is labelled.
    row_pt, col_pt, rotation : float
        Font sizes of the row and column labels, and the column labels' angle (45: slanted,
        anchored at their right end; 90: upright).
    annotate : str, optional
        Format of the value written in each cell (seaborn's ``fmt``, e.g. ``".2f"``); the
        texts have gid ``"cell-label"``. None: no values written.
    colorbar : str
        Label of the colour bar.
    shrink : float
        Its length as a share of the axes' height.

    Returns
    -------
    matplotlib.collections.QuadMesh
        Cell (r, c) spans [c, c + 1] × [r, r + 1], row 0 at the top.
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
