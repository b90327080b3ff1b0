"""Figures of the item response model (tables of :mod:`jagged.stats.irt` and :mod:`jagged.stats.information`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.dispersion import PAGE_WIDTH
from jagged.plots.labels import distinct_labels, plain
from jagged.views.overview import LEGEND_MAX

if TYPE_CHECKING:  # pragma: no cover
    from seaborn import FacetGrid

SOUND_COLOR = "#9aa9bd"
FLAGGED_COLOR = "#c0504d"
LINE_COLOR = "0.35"
#: Difficulties beyond this are drawn at the edge (the title counts them).
DIFFICULTY_LIMIT = 6.0
#: Size (inches) of one panel of the information curves' small multiples.
PANEL_WIDTH, PANEL_HEIGHT = 1.7, 1.25
THETA_LABEL = "ability θ (each domain's own N(0, 1) scale)"
INFORMATION_LABEL = "test information Σ a²P(1 − P)"


def information_plot(data: pd.DataFrame, *, abilities: pd.DataFrame | None = None,
                     ax: Axes | None = None) -> Axes | FacetGrid:
    """Test information against ability, one curve per group (gid ``"info:<group>"``), the models as a rug.

    ``abilities`` (``model, group, theta``) draws each model as a tick under the curves, one
    rug row per group in its colour (gid ``"rug:<group>"``). With more than
    :data:`~jagged.views.overview.LEGEND_MAX` groups and no ``ax``, a legend would not fit:
    small multiples instead, a :class:`seaborn.FacetGrid` of a panel per group on the same
    axes, its models a :func:`seaborn.rugplot` at the foot. Given an ``ax``, that many groups
    are drawn without a legend (the title says so).
    """
    import seaborn as sns

    check_columns(data, ("group", "theta", "information"), "information curves")
    if abilities is not None:
        check_columns(abilities, ("group", "theta"), "abilities")
    groups = list(pd.unique(data["group"]))
    top = float(np.nanmax(data["information"].to_numpy(float))) if len(data) else 1.0
    top = top if np.isfinite(top) and top > 0 else 1.0
    if ax is None and len(groups) > LEGEND_MAX:
        return _information_panels(data, groups, abilities, top)
    if ax is None:
        ax = new_axes(7.2, 4.4)
    palette = sns.color_palette("husl" if len(groups) > 10 else "tab10", len(groups))
    for k, (g, colour) in enumerate(zip(groups, palette)):
        part = data[data["group"] == g]
        line, = ax.plot(part["theta"], part["information"], color=colour, lw=1.6, label=plain(str(g)))
        line.set_gid(f"info:{g}")
        if abilities is not None:
            th = abilities.loc[abilities["group"] == g, "theta"].to_numpy(float)
            y = np.full(len(th), -0.04 * top * (k + 1))
            rug, = ax.plot(th, y, ls="none", marker="|", ms=7, color=colour, alpha=0.8)
            rug.set_gid(f"rug:{g}")
    if abilities is not None:
        ax.axhline(0.0, color=LINE_COLOR, lw=0.8)
        ax.set_ylim(-0.04 * top * (len(groups) + 1.5), top * 1.05)
        ticks = [t for t in ax.get_yticks() if 0 <= t <= top * 1.05]
        ax.set_yticks(ticks)  # no negative information on the axis: below 0 are the models
    ax.set_xlabel(THETA_LABEL, fontsize=9)
    ax.set_ylabel(INFORMATION_LABEL, fontsize=9)
    title = "Where each domain measures"
    if abilities is not None:
        title += " (ticks below: the models)"
    if len(groups) > LEGEND_MAX:
        title += f"; {len(groups)} domains, no legend"
    else:
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(alpha=0.25)
    return ax


def _information_panels(data: pd.DataFrame, groups: list, abilities: pd.DataFrame | None, top: float) -> FacetGrid:
    """:func:`information_plot` as small multiples: a panel per group, a page wide (a seaborn FacetGrid)."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import MaxNLocator

    names = dict(zip(groups, distinct_labels([str(g) for g in groups], limit=26)))
    columns = int(PAGE_WIDTH // PANEL_WIDTH)
    low, high = float(data["theta"].min()), float(data["theta"].max())
    # The panels get the same limits and a few fixed ticks, set here: matplotlib's shared axes cost time
    # quadratic in the panels. Seaborn lays the grid out twice; the ticks, measured at each layout, come
    # after the first (of the empty grid), so that they are measured once, as grid.map lays the panels out.
    grid = sns.FacetGrid(data.assign(panel=data["group"].map(names)), col="panel", col_order=list(names.values()),
                         col_wrap=columns, height=PANEL_HEIGHT, aspect=PANEL_WIDTH / PANEL_HEIGHT, sharex=False,
                         sharey=False, subplot_kws={"xticks": [], "yticks": []})
    limits = {"xticks": MaxNLocator(4).tick_values(low, high), "yticks": MaxNLocator(3).tick_values(0, top),
              "xlim": (low, high), "ylim": (-0.02 * top, 1.05 * top)}  # the limits after the ticks, which widen them
    for k, panel in enumerate(grid.axes.flat):  # tick labels on the outer panels only, as shared axes have them
        panel.set(**limits)
        panel.tick_params(labelbottom=k >= len(groups) - columns, labelleft=k % columns == 0, labelsize=7)
        panel.grid(alpha=0.25)
    grid.map(plt.plot, "theta", "information", color=SOUND_COLOR, linewidth=1.4)
    for group, label in names.items():
        panel = grid.axes_dict[label]
        panel.lines[0].set_gid(f"info:{group}")
        if abilities is not None:
            th = abilities.loc[abilities["group"] == group, "theta"].to_numpy(float)
            sns.rugplot(x=th, ax=panel, height=0.1, color=LINE_COLOR, alpha=0.8, linewidth=0.8)
            panel.collections[-1].set_gid(f"rug:{group}")
    grid.set_titles("{col_name}", size=7.5)
    grid.set_axis_labels("θ", "information", fontsize=8)
    title = f"Where each domain measures: test information against ability θ, {len(groups)} domains"
    if abilities is not None:
        title += " (ticks at the foot: the models)"
    figure = grid.figure
    figure.suptitle(title, x=0.01, ha="left", fontsize=10)
    figure.subplots_adjust(top=figure.subplotpars.top - 0.3 / figure.get_size_inches()[1])  # room for the title
    return grid


def loading_difficulty_plot(data: pd.DataFrame, *, flagged: Sequence[bool] | str | None = None,
                            ax: Axes | None = None) -> Axes:
    """Standardised loading against difficulty, a dot per item (gid ``"items"``), flagged ones marked (``"flagged"``).

    ``flagged`` is a boolean per row or the name of a boolean column (None: none); items set
    aside (NaN) are not drawn. Lines: loading 0 and 0.3 (the weak-loading rule of thumb),
    difficulty ±5 (PISA's extreme-difficulty flag); difficulties beyond ±6 are drawn at ±6,
    the title counts them.
    """
    check_columns(data, ("loading", "difficulty"), "item parameters")
    if ax is None:
        ax = new_axes(6.8, 4.2)
    lam = data["loading"].to_numpy(float)
    b = data["difficulty"].to_numpy(float)
    if flagged is None:
        mark = np.zeros(len(data), dtype=bool)
    elif isinstance(flagged, str):
        check_columns(data, (flagged,), "item parameters")
        mark = data[flagged].fillna(False).to_numpy(dtype=bool)
    else:
        mark = np.asarray(flagged, dtype=bool)
        if len(mark) != len(data):
            raise ValueError(f"flagged has {len(mark)} values for {len(data)} items")
    shown = np.isfinite(lam) & np.isfinite(b)
    clipped = shown & (np.abs(b) > DIFFICULTY_LIMIT)
    bx = np.clip(b, -DIFFICULTY_LIMIT, DIFFICULTY_LIMIT)
    size = 6 if shown.sum() > 2000 else 14
    ax.scatter(bx[shown & ~mark], lam[shown & ~mark], s=size, color=SOUND_COLOR, alpha=0.55, lw=0,
               label="items", rasterized=True, gid="items")
    ax.scatter(bx[shown & mark], lam[shown & mark], s=size, color=FLAGGED_COLOR, alpha=0.75, lw=0,
               label="flagged", rasterized=True, gid="flagged")
    ax.axhline(0.0, color=LINE_COLOR, lw=0.9)
    ax.axhline(0.3, color=LINE_COLOR, lw=0.9, ls="--")
    for edge in (-5.0, 5.0):
        ax.axvline(edge, color=LINE_COLOR, lw=0.8, ls=":")
    ax.set_xlim(-DIFFICULTY_LIMIT - 0.3, DIFFICULTY_LIMIT + 0.3)
    ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel("difficulty b = −c/a (ability at P = ½)", fontsize=9)
    ax.set_ylabel("standardised loading λ", fontsize=9)
    title = "Loadings against difficulties"
    if clipped.any():
        title += f" ({int(clipped.sum()):,} beyond ±{DIFFICULTY_LIMIT:g} drawn at the edge)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7.5, frameon=False, loc="lower left")
    ax.grid(alpha=0.25)
    return ax


def position_plot(data: pd.DataFrame, *, model: str = "", ax: Axes | None = None) -> Axes:
    """One model on every domain's measuring range: a bar per domain (gid ``"ranges"``), its ability ± SD a dot.

    ``data`` (:func:`jagged.views.irt.position_data`) has a row per domain, drawn top to
    bottom; ``lower`` / ``upper`` NaN reach the edge. Dots beyond a range are red (gid
    ``"beyond"``), the others grey-blue (``"within"``).
    """
    check_columns(data, ("domain", "theta", "theta_sd", "lower", "upper", "position"), "model positions")
    if ax is None:
        ax = new_axes(6.4, 0.5 + 0.28 * max(len(data), 1))
    edge = 4.0
    y = np.arange(len(data))[::-1]
    lower = np.nan_to_num(data["lower"].to_numpy(float), nan=-edge)
    upper = np.nan_to_num(data["upper"].to_numpy(float), nan=edge)
    ax.hlines(y, lower, upper, color=SOUND_COLOR, lw=6, alpha=0.6, gid="ranges", label="measuring range")
    theta = np.clip(data["theta"].to_numpy(float), -edge - 0.4, edge + 0.4)
    sd = data["theta_sd"].to_numpy(float)
    beyond = (data["position"] != "within").to_numpy()
    for mask, colour, gid, label in ((~beyond, LINE_COLOR, "within", "within the range"),
                                     (beyond, FLAGGED_COLOR, "beyond", "beyond the range")):
        if mask.any():
            bars = ax.errorbar(theta[mask], y[mask], xerr=sd[mask], fmt="o", ms=4.5, color=colour, lw=1.2,
                               capsize=0, label=label)
            bars.lines[0].set_gid(gid)
    ax.set_yticks(y, [str(d) for d in data["domain"]], fontsize=8)
    ax.set_xlim(-edge - 0.6, edge + 0.6)
    ax.set_ylim(-0.7, len(data) - 0.3)
    ax.set_xlabel("ability θ (each domain's own N(0, 1) scale), ± its SD", fontsize=9)
    ax.set_title(f"Where {model} sits on each domain's measuring range" if model else
                 "Where the model sits on each domain's measuring range", fontsize=10, loc="left")
    ax.legend(fontsize=7.5, frameon=False, loc="lower left", bbox_to_anchor=(0.0, 1.06), ncol=3)
    ax.grid(axis="x", alpha=0.25)
    return ax
