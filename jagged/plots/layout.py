"""Margins estimated from label lengths: a cheap stand-in for constrained layout when rendering.

matplotlib's constrained layout measures every text on the figure with the renderer before
drawing it, which is about 40 % of the time to render a report figure. Report figures are
single panels whose margins are set by tick labels, axis labels, a title and sometimes a
legend above or below the axes, so those margins can be estimated from the character
counts and font sizes instead. :func:`estimated_margins` does that for the figures it
understands (one panel, optionally with a vertical colour bar) and leaves every other
figure (several panels, fixed aspect ratios, legends beside the axes) to constrained
layout.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.text import Text

#: Average advance of a DejaVu Sans character in em, rounded up for capitals and padding.
CHAR_EM = 0.62
#: Line height in em.
LINE_EM = 1.3
PAD_IN = 0.08
CBAR_PAD_IN = 0.1
CBAR_WIDTH_IN = 0.14


def _text_extent(text: Text) -> tuple[float, float]:
    """(width, height) in inches of a text, from its characters and font size."""
    lines = text.get_text().split("\n") if text.get_visible() and text.get_text() else []
    if not lines:
        return 0.0, 0.0
    size = text.get_fontsize() / 72.0
    width = max(len(line) for line in lines) * size * CHAR_EM
    height = len(lines) * size * LINE_EM
    angle = math.radians(text.get_rotation())
    cos, sin = abs(math.cos(angle)), abs(math.sin(angle))
    return width * cos + height * sin, width * sin + height * cos


def _legend_rows(legend) -> tuple[str, float]:
    """Where a legend sits outside the axes ("top", "bottom" or "") and its height in inches."""
    anchor = legend.get_bbox_to_anchor()
    axes_box = legend.axes.bbox
    if anchor is None or anchor.bounds == axes_box.bounds:
        return "", 0.0
    ncols = max(1, getattr(legend, "_ncols", 1))
    entries = len(legend.get_texts())
    rows = math.ceil(entries / ncols)
    size = legend.get_texts()[0].get_fontsize() / 72.0 if entries else 0.1
    height = rows * size * 1.7 + 0.12
    # anchor in display units; compare with the axes box
    if anchor.y0 >= axes_box.y1 - 1:
        return "top", height
    if anchor.y1 <= axes_box.y0 + 1:
        return "bottom", height
    return "?", height


def estimated_margins(fig: Figure) -> bool:
    """Replace a single-panel figure's constrained layout by estimated margins.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure about to be rendered.

    Returns
    -------
    bool
        True when the margins were set; False when the figure was left to its layout
        engine (not constrained, several visible axes, a fixed aspect ratio, a legend
        outside the axes at the side, a figure-level legend or title, or margins that
        would not fit).
    """
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        return False
    if fig.legends or fig.texts or getattr(fig, "_suptitle", None) is not None:
        return False  # figure-level legends and titles: left to constrained layout
    axes = [ax for ax in fig.axes if ax.get_visible()]
    bars = [ax for ax in axes if getattr(ax, "_colorbar", None) is not None]
    axes = [ax for ax in axes if ax not in bars]
    if len(axes) != 1 or len(bars) > 1 or axes[0].get_aspect() != "auto":
        return False
    ax = axes[0]
    cax = bars[0] if bars else None
    width_in, height_in = fig.get_size_inches()
    ytick = max((_text_extent(t)[0] for t in ax.get_yticklabels()), default=0.0)
    xtick = max((_text_extent(t)[1] for t in ax.get_xticklabels()), default=0.0)
    ytick_right = ax.yaxis.get_label_position() == "right" or ax.yaxis.get_ticks_position() == "right"
    ylabel = _text_extent(ax.yaxis.label)[0]
    xlabel = _text_extent(ax.xaxis.label)[1]
    title = max(_text_extent(t)[1] for t in (ax.title, ax._left_title, ax._right_title))
    left = ytick + ylabel + 0.12 + PAD_IN
    bottom = xtick + xlabel + 0.15 + PAD_IN
    top = title + 0.08 + PAD_IN
    right = PAD_IN + 0.1
    if ytick_right:
        left, right = right + ylabel, left
    if cax is not None:  # a vertical colour bar at the right: bar, tick labels, label
        if cax._colorbar.orientation != "vertical":
            return False
        bar_ticks = max((_text_extent(t)[0] for t in cax.get_yticklabels()), default=0.2)
        right += CBAR_PAD_IN + CBAR_WIDTH_IN + bar_ticks + _text_extent(cax.yaxis.label)[0] + 0.12
    side_transforms = (ax.transAxes, ax.get_yaxis_transform())
    for text in ax.texts:
        if text.get_transform() not in side_transforms:
            continue
        x = text.get_position()[0]
        extent = _text_extent(text)[0] + 0.05
        if x >= 1.0 and text.get_horizontalalignment() == "left":
            right = max(right, extent + PAD_IN)
        elif x <= 0.0 and text.get_horizontalalignment() == "right":
            left = max(left, extent + PAD_IN)
    legend = ax.get_legend()
    where = ""
    if legend is not None and legend.get_visible():
        where, height = _legend_rows(legend)
        if where == "top":
            top += height
        elif where == "bottom":
            bottom += height
        elif where:
            return False
    if left + right > 0.7 * width_in or top + bottom > 0.7 * height_in:
        return False
    fig.set_layout_engine("none")
    box = [left / width_in, bottom / height_in, 1 - (left + right) / width_in, 1 - (top + bottom) / height_in]
    ax.set_position(box)
    if cax is not None:
        share = 0.6 if box[3] * height_in > 3 else 0.9
        cax.set_position([box[0] + box[2] + CBAR_PAD_IN / width_in, box[1] + box[3] * (1 - share) / 2,
                          CBAR_WIDTH_IN / width_in, box[3] * share])
    if where == "top":  # a row above the title, at the top edge of the figure
        legend.set_loc("upper left")
        legend.set_bbox_to_anchor((left / width_in, 1 - PAD_IN / height_in), transform=fig.transFigure)
    elif where == "bottom":
        legend.set_loc("lower left")
        legend.set_bbox_to_anchor((left / width_in, PAD_IN / height_in), transform=fig.transFigure)
    return True
