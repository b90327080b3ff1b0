"""How each model's errors spread across domains: dispersion strip, heatmap, CV vs macro score.

Every function takes the data and keyword arguments, draws on ``ax`` (or a new figure sized
for the data) and returns the Axes, like seaborn. The inputs are the canonical per-domain
table (:mod:`jagged.table`) and the per-model metrics table (:func:`jagged.jaggedness`);
the plots read ``mean_error`` and ``cv_error`` from the metrics table and never compute a
metric themselves. The error rate drawn for a domain is ``1 - score``.

Large tables
------------
With many models a row per model stops being readable. ``limit`` switches the dispersion
plot and the heatmap to a top/bottom form: the ``ceil(limit / 2)`` most jagged and the
``floor(limit / 2)`` least jagged models (by ``cv_error``), with a dashed rule where the
others were left out. :func:`jagged.overview.model_order` is the one place that choice is
made (the report's error table uses it too).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.overview import domain_order, error_matrix, model_order, per_model

#: Colour of the per-domain points and of the heatmap's scale.
POINT_COLOR = "#3b6ea8"
MEAN_COLOR = "#111111"
HEATMAP_CMAP = "YlOrRd"
#: Heatmaps annotate each cell with its error rate up to this many cells.
ANNOTATE_MAX_CELLS = 300
#: Above this many models, :func:`cv_vs_macro` labels only the extremes.
LABEL_ALL_MAX = 40


def _check_columns(frame: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)}")


def _new_axes(width: float, height: float) -> Axes:
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax


def _separator(ax: Axes, cut: int, hidden: int) -> None:
    """Dashed rule between the most and least jagged models, with the count left out."""
    ax.axhline(cut - 0.5, color="0.4", linestyle="--", linewidth=0.8, gid="cut")
    ax.text(0.99, cut - 0.5, f"{hidden} models not shown", transform=ax.get_yaxis_transform(),
            ha="right", va="bottom", fontsize=7, color="0.3",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0, "alpha": 0.85})


def error_dispersion(scores: pd.DataFrame, metrics: pd.DataFrame, *, limit: int | None = None,
                     jitter: float = 0.22, ax: Axes | None = None) -> Axes:
    """Each model's error rate in every domain, one row per model, most jagged on top.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table (``model``, ``domain``, ``score``).
    metrics : pandas.DataFrame
        Per-model table with ``model``, ``mean_error`` and ``cv_error``.
    limit : int, optional
        Show only the most and least jagged models (see :func:`jagged.overview.model_order`).
    jitter : float
        Vertical spread of a row's points, in row heights; deterministic (by domain), so
        a domain sits at the same height in every row.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure sized for the rows otherwise.

    Returns
    -------
    matplotlib.axes.Axes
        The per-domain points are one collection with gid ``"domain-errors"``; the means
        (``mean_error`` from ``metrics``) another with gid ``"mean-error"``. The y tick
        labels are the model names top to bottom; the right margin gives each ``cv_error``.
    """
    _check_columns(scores, ("model", "domain", "score"), "score table")
    _check_columns(metrics, ("model", "mean_error", "cv_error"), "metrics table")
    models, cut = model_order(metrics, limit=limit)
    if ax is None:
        ax = _new_axes(7.0, 1.0 + 0.26 * len(models))
    row = pd.Series(np.arange(len(models)), index=models)
    shown = scores[scores["model"].astype(str).isin(row.index)]
    domain_codes, _ = pd.factorize(shown["domain"], sort=True)
    n_domains = max(int(domain_codes.max()) + 1 if len(domain_codes) else 1, 1)
    offset = (domain_codes / max(n_domains - 1, 1) - 0.5) * jitter if n_domains > 1 else 0.0
    y = row.loc[shown["model"].astype(str)].to_numpy() + offset
    ax.scatter(1.0 - shown["score"].to_numpy(dtype=float), y, s=14, color=POINT_COLOR, alpha=0.55,
               linewidths=0, label="error in one domain", gid="domain-errors", zorder=2)
    rows = per_model(metrics)
    rows = rows.assign(model=rows["model"].astype(str)).set_index("model").loc[models]
    ax.scatter(rows["mean_error"].to_numpy(dtype=float), row.to_numpy(), marker="|", s=160,
               linewidths=2.0, color=MEAN_COLOR, label="mean error", gid="mean-error", zorder=3)
    ax.set_yticks(row.to_numpy(), labels=models, fontsize=8)
    ax.set_ylim(len(models) - 0.5, -0.5)
    ax.set_xlim(0.0, 1.0)
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    cv_text = [("CV " + f"{v:.2f}") if np.isfinite(v) else "CV n/a" for v in rows["cv_error"].to_numpy(float)]
    for y_pos, text in zip(row.to_numpy(), cv_text):
        ax.text(1.01, y_pos, text, transform=ax.get_yaxis_transform(), va="center", ha="left", fontsize=7,
                color="0.25", gid="cv-label")
    if cut:
        _separator(ax, cut, metrics["model"].nunique() - len(models))
    ax.set_xlabel("error rate in a domain (1 − score)")
    ax.set_title("Error rate per domain, most jagged model first", fontsize=10, loc="left")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.04), ncols=2, fontsize=7, frameon=False,
              borderaxespad=0.0)
    return ax


def error_heatmap(scores: pd.DataFrame, metrics: pd.DataFrame | None = None, *, limit: int | None = None,
                  order: str | Sequence[str] = "error", annotate: bool | None = None,
                  ax: Axes | None = None) -> Axes:
    """Model × domain error rates as a colour grid, models from most to least jagged.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table (``model``, ``domain``, ``score``).
    metrics : pandas.DataFrame, optional
        Per-model table with ``model`` and ``cv_error``, for the row order (and ``limit``);
        without it rows are sorted by name.
    limit : int, optional
        Show only the most and least jagged models (see :func:`jagged.overview.model_order`).
    order : {"error", "name"} or sequence of str
        Column order (see :func:`jagged.overview.domain_order`).
    annotate : bool, optional
        Write each cell's error rate in it; by default when the grid has at most
        ``ANNOTATE_MAX_CELLS`` cells.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure sized for the grid otherwise.

    Returns
    -------
    matplotlib.axes.Axes
        The grid is the Axes' only image (``ax.images[0]``, gid ``"errors"``); its array
        holds ``1 - score`` with missing (model, domain) pairs masked and drawn grey, in
        the rows and columns of :func:`jagged.overview.error_matrix`.
    """
    _check_columns(scores, ("model", "domain", "score"), "score table")
    table = error_matrix(scores, metrics, limit=limit, order=order)
    grid = table.set_index("model")
    models, columns = grid.index.tolist(), grid.columns.tolist()
    cut = model_order(metrics, limit=limit)[1] if metrics is not None else 0
    n_rows, n_cols = grid.shape
    if ax is None:
        ax = _new_axes(min(2.4 + 0.42 * n_cols, 16.0), 1.2 + 0.24 * n_rows)
    import matplotlib as mpl

    cmap = mpl.colormaps[HEATMAP_CMAP].with_extremes(bad="0.85")
    values = np.ma.masked_invalid(grid.to_numpy(dtype=float))
    image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    image.set_gid("errors")
    ax.set_yticks(np.arange(n_rows), labels=models, fontsize=8)
    ax.set_xticks(np.arange(n_cols), labels=columns, fontsize=8, rotation=45, ha="right",
                  rotation_mode="anchor")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    if annotate is None:
        annotate = n_rows * n_cols <= ANNOTATE_MAX_CELLS
    if annotate:
        rows, cols = np.nonzero(~np.ma.getmaskarray(values))
        for r, c in zip(rows, cols):
            value = values.data[r, c]
            ax.text(c, r, f"{value:.2f}", ha="center", va="center",
                    fontsize=6, color="white" if value > 0.6 else "black", gid="cell-label", in_layout=False)
    if cut:
        _separator(ax, cut, metrics["model"].nunique() - len(models))
    colorbar = ax.figure.colorbar(image, ax=ax, shrink=0.6, pad=0.01, aspect=30)
    colorbar.set_label("error rate (1 − score)", fontsize=8)
    colorbar.ax.tick_params(labelsize=7)
    ax.set_title("Error rate by model and domain (grey: no score)", fontsize=10, loc="left")
    return ax


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
    """Jaggedness (``cv_error``) against level (``macro_score``), one labelled point per model.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Per-model table with ``model``, ``macro_score`` and ``cv_error``. Models whose
        ``cv_error`` is undefined are left out and counted in the caption.
    label : bool or int
        ``True`` labels every model when there are at most ``LABEL_ALL_MAX`` of them and
        the 5 most and 5 least jagged otherwise; an int ``k`` labels the ``k`` most and
        ``k`` least jagged; ``False`` labels none.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure otherwise.

    Returns
    -------
    matplotlib.axes.Axes
        The points are one collection with gid ``"models"``; each label is an annotation
        whose text is the model name.
    """
    _check_columns(metrics, ("model", "macro_score", "cv_error"), "metrics table")
    metrics = per_model(metrics)
    defined = metrics[np.isfinite(metrics["cv_error"].to_numpy(dtype=float))]
    if ax is None:
        ax = _new_axes(7.0, 4.6)
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
    names = defined["model"].astype(str).tolist()
    if label is True and len(names) > LABEL_ALL_MAX:
        label = 5
    if label is not False and len(names):
        if label is True:
            chosen = np.arange(len(names))
        else:
            k = int(label)
            ranked = np.argsort(-y, kind="mergesort")
            chosen = np.unique(np.concatenate([ranked[:k], ranked[-k:]])) if k > 0 else np.array([], int)
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
