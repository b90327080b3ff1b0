"""How each model's errors spread across domains: dispersion strip, heatmap, CV vs macro score.

The inputs are the canonical per-domain table and the metrics table (``mean_error``,
``cv_error`` read, never computed); a domain's error rate is ``1 - score``. With ``limit``
the dispersion plot and the heatmap keep the ``ceil(limit / 2)`` most and ``floor(limit / 2)``
least jagged models with one shaded row between them, the per-domain median error of the
others (:func:`jagged.views.overview.model_order` makes the cut). With many domains the
heatmap keeps to ``PAGE_WIDTH`` inches: the domain labels turn upright and shrink to the
column pitch, never below ``MIN_LABEL_PT`` (beyond that every k-th domain is labelled).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, labelled_heatmap, mark_cut, new_axes
from jagged.plots.labels import distinct_labels, plain
from jagged.views.overview import (
    LABEL_ALL_MAX,
    LABEL_ENDS,
    ends,
    error_matrix,
    left_out,
    median_errors,
    model_order,
    others_label,
    per_model,
)

#: Colour of the per-domain points and of the heatmap's scale.
POINT_COLOR = "#3b6ea8"
MEAN_COLOR = "#111111"
HEATMAP_CMAP = "YlOrRd"
#: Heatmaps annotate each cell with its error rate up to this many cells.
ANNOTATE_MAX_CELLS = 300
#: Widest figure, in inches, that a report page shows at its natural size (at 90 dpi).
PAGE_WIDTH = 10.4
#: Smallest font size of the heatmap's domain labels, in points.
MIN_LABEL_PT = 6.0
#: Background of the summary row of the left-out models.
OTHERS_COLOR = "#e8ecf1"


def _rows(n_shown: int, cut: int) -> np.ndarray:
    """Row positions of the shown models: a gap at ``cut`` for the summary row, if any."""
    rows = np.arange(n_shown, dtype=float)
    if cut:
        rows[cut:] += 1.0
    return rows


def _tick_labels(models: Sequence[str], cut: int, hidden: int) -> tuple[np.ndarray, list[str]]:
    """Positions and texts of the row labels, the summary row included."""
    rows = _rows(len(models), cut)
    labels = distinct_labels(models)
    if cut:
        rows = np.insert(rows, cut, float(cut))
        labels.insert(cut, others_label(hidden))
    return rows, labels


def error_dispersion(scores: pd.DataFrame, metrics: pd.DataFrame, *, limit: int | None = None,
                     jitter: float = 0.22, ax: Axes | None = None) -> Axes:
    """Each model's error rate in every domain, one row per model, most jagged on top.

    ``jitter`` spreads a row's points vertically (in row heights) by domain, so a domain sits
    at the same height in every row. Points: gid ``"domain-errors"``; ``mean_error``:
    ``"mean-error"``; the right margin gives each ``cv_error``. With a cut, the summary row
    (:func:`jagged.views.overview.others_label`) has the points ``"others-median"`` on the
    band ``"others"``.
    """
    check_columns(scores, ("model", "domain", "score"), "score table")
    check_columns(metrics, ("model", "mean_error", "cv_error"), "metrics table")
    models, cut = model_order(metrics, limit=limit)
    hidden = left_out(metrics, limit=limit)
    n_rows = len(models) + (1 if cut else 0)
    if ax is None:
        ax = new_axes(7.0, 1.0 + 0.26 * n_rows)
    row = pd.Series(_rows(len(models), cut), index=models)
    shown = scores[scores["model"].astype(str).isin(row.index)]
    domain_names = sorted(scores["domain"].astype(str).unique())
    n_domains = max(len(domain_names), 1)
    code = pd.Series(np.arange(len(domain_names)), index=domain_names)

    def offsets(domains: pd.Series) -> np.ndarray | float:
        if n_domains < 2:
            return 0.0
        return (code.loc[domains.astype(str)].to_numpy() / (n_domains - 1) - 0.5) * jitter

    y = row.loc[shown["model"].astype(str)].to_numpy() + offsets(shown["domain"])
    ax.scatter(1.0 - shown["score"].to_numpy(dtype=float), y, s=14, color=POINT_COLOR, alpha=0.55,
               linewidths=0, label="error in one domain", gid="domain-errors", zorder=2)
    rows = per_model(metrics)
    rows = rows.assign(model=rows["model"].astype(str)).set_index("model")
    hidden_rows = rows.loc[hidden]
    rows = rows.loc[models]
    ax.scatter(rows["mean_error"].to_numpy(dtype=float), row.to_numpy(), marker="|", s=160,
               linewidths=2.0, color=MEAN_COLOR, label="mean error", gid="mean-error", zorder=3)
    ticks, labels = _tick_labels(models, cut, len(hidden))
    ax.set_yticks(ticks, labels=labels, fontsize=8)
    mark_cut(ax, cut)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_xlim(0.0, 1.0)
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    cv_text = [("CV " + f"{v:.2f}") if np.isfinite(v) else "CV n/a" for v in rows["cv_error"].to_numpy(float)]
    for y_pos, text in zip(row.to_numpy(), cv_text):
        ax.text(1.01, y_pos, text, transform=ax.get_yaxis_transform(), va="center", ha="left", fontsize=7,
                color="0.25", gid="cv-label")
    if cut:
        summary = median_errors(scores, hidden)
        ax.axhspan(cut - 0.5, cut + 0.5, color=OTHERS_COLOR, zorder=0, gid="others")
        ax.scatter(summary.to_numpy(dtype=float), cut + offsets(pd.Series(summary.index)), s=14, marker="D",
                   color="0.45", alpha=0.7, linewidths=0, label=f"median over the {len(hidden)} models left out",
                   gid="others-median", zorder=2)
        finite = hidden_rows["cv_error"].to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        if len(finite):
            ax.text(1.01, cut, f"CV {finite.min():.2f}–{finite.max():.2f}", transform=ax.get_yaxis_transform(),
                    va="center", ha="left", fontsize=7, color="0.25", fontstyle="italic", gid="others-cv")
    ax.set_xlabel("error rate in a domain (1 − score)")
    title = "Error rate per domain, most jagged model first"
    if cut:
        title += f" ({len(models)} of {len(models) + len(hidden)} models)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.04), ncols=3, fontsize=7, frameon=False,
              borderaxespad=0.0)
    return ax


def error_heatmap(scores: pd.DataFrame, metrics: pd.DataFrame | None = None, *, limit: int | None = None,
                  order: str | Sequence[str] = "error", annotate: bool | None = None,
                  ax: Axes | None = None) -> Axes:
    """Model × domain error rates as a seaborn heatmap, models from most to least jagged.

    Rows and columns are :func:`jagged.views.overview.error_matrix`'s (``metrics`` orders the
    rows, by name without it; ``order`` the columns, :func:`~jagged.views.overview.domain_order`);
    with a cut, the row at the cut is the left-out models' median error per domain. The mesh
    has gid ``"errors"``, missing pairs masked (grey). ``annotate`` writes each cell's value,
    by default up to ``ANNOTATE_MAX_CELLS`` cells. Sized by :func:`heatmap_layout`.
    """
    check_columns(scores, ("model", "domain", "score"), "score table")
    table = error_matrix(scores, metrics, limit=limit, order=order)
    grid = table.set_index("model")
    models, columns = grid.index.tolist(), grid.columns.tolist()
    cut = model_order(metrics, limit=limit)[1] if metrics is not None else 0
    values = grid.to_numpy(dtype=float)
    hidden: list[str] = []
    if cut:
        hidden = left_out(metrics, limit=limit)
        summary = median_errors(scores, hidden).reindex(columns).to_numpy(dtype=float)
        values = np.insert(values, cut, summary, axis=0)
    _, row_labels = _tick_labels(models, cut, len(hidden))
    col_labels = [plain(c) for c in columns]
    layout = heatmap_layout(row_labels, col_labels)
    n_rows, n_cols = values.shape
    if ax is None:
        ax = new_axes(layout.width, layout.height)
    if annotate is None:
        annotate = n_rows * n_cols <= ANNOTATE_MAX_CELLS
    labelled_heatmap(pd.DataFrame(values, index=row_labels, columns=col_labels), ax=ax,
                     cmap=mpl.colormaps[HEATMAP_CMAP].with_extremes(bad="0.85"), vmin=0.0, vmax=1.0, gid="errors",
                     col_step=layout.col_step, row_pt=layout.row_pt, col_pt=layout.col_pt, rotation=layout.rotation,
                     annotate=".2f" if annotate else None, colorbar="error rate (1 − score)",
                     shrink=0.6 if n_rows > 8 else 0.9)
    mark_cut(ax, cut, rules=True)
    title = "Error rate by model and domain (grey: no score)"
    if cut:
        title += f"; {len(models)} of {len(models) + len(hidden)} models"
    if layout.col_step > 1:
        title += f"; every {layout.col_step}th domain labelled"
    ax.set_title(title, fontsize=10, loc="left")
    return ax


class HeatmapLayout(NamedTuple):
    """Figure size (inches), label sizes (points), and which domain labels to draw."""

    width: float
    height: float
    row_pt: float
    col_pt: float
    rotation: float
    col_step: int


def heatmap_layout(row_labels: Sequence[str], col_labels: Sequence[str]) -> HeatmapLayout:
    """Size a heatmap to fit a report page with legible labels (as drawn, already shortened).

    Up to about 15 domains: 0.42 in per column, labels at 8 pt, slanted. Beyond, the figure
    is :data:`PAGE_WIDTH` wide, the columns share what the row labels and colour bar leave,
    and the domain labels stand upright at the largest size (up to 8 pt) the pitch allows;
    below :data:`MIN_LABEL_PT` only every ``col_step``-th is labelled. Rows: 0.2 in at 8 pt.
    Text widths are estimated at 0.6 em per character (DejaVu Sans averages about 0.55).
    """
    n_rows, n_cols = max(len(row_labels), 1), max(len(col_labels), 1)
    row_pt = 8.0
    label_in = max((len(t) for t in row_labels), default=0) * 0.6 * row_pt / 72
    chrome_in = label_in + 1.1  # row labels, colour bar with its labels, margins
    height_base = 1.2
    natural = chrome_in + 0.42 * n_cols
    if natural <= PAGE_WIDTH:
        longest = max((len(t) for t in col_labels), default=0) * 0.6 * 8.0 / 72 * 0.71
        return HeatmapLayout(width=max(natural, 4.0), height=height_base + longest + 0.2 * n_rows, row_pt=row_pt,
                             col_pt=8.0, rotation=45.0, col_step=1)
    pitch_pt = (PAGE_WIDTH - chrome_in) / n_cols * 72
    col_pt = min(8.0, pitch_pt / 1.3)
    step = 1
    if col_pt < MIN_LABEL_PT:
        step = int(np.ceil(MIN_LABEL_PT / col_pt))
        col_pt = MIN_LABEL_PT
    longest = max((len(t) for t in col_labels), default=0) * 0.6 * col_pt / 72
    return HeatmapLayout(width=PAGE_WIDTH, height=height_base + longest + 0.2 * n_rows, row_pt=row_pt,
                         col_pt=round(col_pt, 1), rotation=90.0, col_step=step)


def _label_positions(points: np.ndarray, labels: Sequence[str], fontsize: float, dpi: float,
                     bounds: tuple[float, float, float, float]) -> list[tuple[float, float, str]]:
    """Greedy label placement in display pixels.

    Each label takes the first of a few candidate offsets whose box stays inside
    ``bounds`` (x0, y0, x1, y1) and touches no earlier label and no point; when none is
    free, the one with the least overlap. Returns one (dx, dy, ha) offset in points per label.
    """
    pt = dpi / 72.0
    char_px = 0.6 * fontsize * pt
    height_px = 1.15 * fontsize * pt
    candidates = [(4, 0, "left"), (-4, 0, "right"), (3, 7, "left"), (-3, 7, "right"), (3, -7, "left"),
                  (-3, -7, "right"), (0, 9, "center"), (0, -9, "center"), (4, 14, "left"), (-4, 14, "right"),
                  (4, -14, "left"), (-4, -14, "right"), (8, 21, "left"), (-8, 21, "right"), (8, -21, "left"),
                  (-8, -21, "right")]
    radius = 2.5 * pt
    boxes = np.empty((0, 4))
    dots = np.column_stack([points[:, 0] - radius, points[:, 1] - radius,
                            points[:, 0] + radius, points[:, 1] + radius]) if len(points) else boxes
    out: list[tuple[float, float, str]] = []
    for (x, y), text in zip(points, labels):
        width = char_px * len(text)
        best, best_cost = None, np.inf
        for dx, dy, ha in candidates:
            left = x + dx * pt - (width if ha == "right" else width / 2 if ha == "center" else 0.0)
            bottom = y + dy * pt - 0.5 * height_px
            box = np.array([left, bottom, left + width, bottom + height_px])
            others = np.vstack([boxes, dots])
            w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
            h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
            outside = (max(bounds[0] - box[0], 0) + max(box[2] - bounds[2], 0)) * height_px \
                + (max(bounds[1] - box[1], 0) + max(box[3] - bounds[3], 0)) * width
            cost = float((w * h).sum()) + outside
            if cost < best_cost:
                best, best_cost = (dx, dy, ha, box), cost
            if cost == 0:
                break
        dx, dy, ha, box = best
        boxes = np.vstack([boxes, box])
        out.append((dx, dy, ha))
    return out


def cv_vs_macro(metrics: pd.DataFrame, *, label: bool | int = True, ax: Axes | None = None) -> Axes:
    """Jaggedness (``cv_error``) against level (``macro_score``), one labelled point per model (gid ``"models"``).

    Models without a defined ``cv_error`` are left out and counted in the title. ``label``:
    True labels every model up to :data:`~jagged.views.overview.LABEL_ALL_MAX` of them, else
    the :data:`~jagged.views.overview.LABEL_ENDS` most and least jagged; an int ``k`` the ``k``
    most and least jagged; False none. Labels are annotations placed by :func:`_label_positions`.
    """
    check_columns(metrics, ("model", "macro_score", "cv_error"), "metrics table")
    metrics = per_model(metrics)
    defined = metrics[np.isfinite(metrics["cv_error"].to_numpy(dtype=float))]
    if ax is None:
        ax = new_axes(7.0, 4.6)
    x = defined["macro_score"].to_numpy(dtype=float)
    y = defined["cv_error"].to_numpy(dtype=float)
    ax.scatter(x, y, s=22, color=POINT_COLOR, edgecolors="white", linewidths=0.5, gid="models", zorder=3)
    ax.set_xlabel("macro score (mean of domain scores)")
    ax.set_ylabel("cv_error (jaggedness)")
    ax.grid(color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    if len(defined):
        pad_x = max(0.04, 0.08 * float(np.ptp(x)))
        pad_y = max(0.02, 0.08 * float(np.ptp(y)))
        ax.set_xlim(max(0.0, x.min() - pad_x), min(1.0, x.max() + pad_x))
        ax.set_ylim(max(0.0, y.min() - pad_y), y.max() + pad_y)
    names = distinct_labels(defined["model"].astype(str))
    if label is True and len(names) > LABEL_ALL_MAX:
        label = LABEL_ENDS
    if label is not False and len(names):
        if label is True:
            chosen = np.arange(len(names))
        else:
            k = int(label)
            ranked = np.argsort(-y, kind="mergesort")
            chosen = np.unique(ends(ranked, 2 * k)[0]) if k > 0 else np.array([], int)
        fontsize = 6.5
        engine = ax.figure.get_layout_engine()
        if engine is not None:  # settle the axes' final size before measuring in pixels
            engine.execute(ax.figure)
        display = ax.transData.transform(np.column_stack([x[chosen], y[chosen]]))
        offsets = _label_positions(display, [names[i] for i in chosen], fontsize, ax.figure.dpi,
                                   tuple(ax.bbox.extents))
        for i, (dx, dy, ha) in zip(chosen, offsets):
            far = abs(dy) > 10  # a leader line tells which point a distant label belongs to
            ax.annotate(names[i], (x[i], y[i]), xytext=(dx, dy), textcoords="offset points", ha=ha,
                        va="center", fontsize=fontsize, color="0.2", gid="model-label",
                        arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.5,
                                    "shrinkA": 0, "shrinkB": 2} if far else None)
    dropped = len(metrics) - len(defined)
    title = "Jaggedness against overall level"
    if dropped:
        title += f" ({dropped} model{'s' if dropped != 1 else ''} without a defined CV left out)"
    ax.set_title(title, fontsize=10, loc="left")
    return ax
