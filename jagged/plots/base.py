"""What every plot module needs: a column check, a new single-panel figure and a seaborn heatmap grid."""

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

        def execute(self, fig: Any) -> Any:
            from jagged.plots.labels import declutter, fit_titles

            result = super().execute(fig)
            get_renderer = getattr(fig.canvas, "get_renderer", None)
            if get_renderer is not None:
                if fit_titles(fig, get_renderer()):
                    result = super().execute(fig)
                declutter(fig, get_renderer())
            return result

    return TitleFittingLayout


def grid_mesh(ax: Axes, values: np.ndarray, *, cmap: Colormap, vmin: float, vmax: float, gid: str) -> QuadMesh:
    """Draw a rows × columns grid with :func:`seaborn.heatmap` and return its mesh.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Axes to draw on.
    values : numpy.ndarray
        The grid; NaN (or masked) cells are left out and show the colour map's "bad" colour.
    cmap : matplotlib.colors.Colormap
        Colour map, with its "bad" colour set for missing cells.
    vmin, vmax : float
        Colour limits.
    gid : str
        Group id of the mesh, so tests and the alt text can find it.

    Returns
    -------
    matplotlib.collections.QuadMesh
        Cell (r, c) spans [c, c + 1] × [r, r + 1], row 0 at the top. The caller sets the
        tick labels (none are drawn here) and the colour bar.
    """
    import seaborn as sns

    grid = np.ma.filled(np.ma.masked_invalid(np.asarray(values, dtype=float)), np.nan)
    before = set(ax.collections)
    sns.heatmap(grid, cmap=cmap, vmin=vmin, vmax=vmax, cbar=False, xticklabels=False, yticklabels=False, ax=ax)
    (mesh,) = [c for c in ax.collections if c not in before and isinstance(c, QuadMesh)]
    mesh.set_gid(gid)
    return mesh
