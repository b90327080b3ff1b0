"""Figures of "Is it the model or the benchmark?" from the tables of :mod:`jagged.views.structure`.

Variance shares, residual heatmap, relative jaggedness against cv_error, scree plot with the
parallel-analysis threshold, one model's residual profile; none computes a statistic.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, labelled_heatmap, mark_cut, new_axes
from jagged.plots.dispersion import ANNOTATE_MAX_CELLS, heatmap_layout
from jagged.plots.labels import plain
from jagged.views.overview import LABEL_ENDS
from jagged.views.structure import SCREE_LIMIT, relative_column, scree_shown

#: Diverging colour map of the residual heatmap: red = more errors than predicted, blue = fewer.
RESIDUAL_CMAP = "RdBu_r"
POINT_COLOR = "#3b6ea8"
FLAGGED_COLOR = "0.6"
THRESHOLD_COLOR = "#c0504d"
SHARE_COLORS = {"domain": "#8c6bb1", "model": "#3b6ea8", "residual": "#c0504d", "noise": "0.6",
                "residual_beyond_noise": "#e08a6b", "cross": "0.8"}


def variance_bars(shares: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Horizontal bars: the share of the variance of the logit error rates each part explains.

    ``shares`` is :func:`jagged.stats.structure.variance_shares`; one bar per component in
    table order (gid ``"share-<component>"``) with its percentage.
    """
    check_columns(shares, ("component", "label", "share"), "variance shares")
    rows = shares[np.isfinite(shares["share"].to_numpy(dtype=float))]
    if ax is None:
        ax = new_axes(7.0, 0.9 + 0.36 * max(len(rows), 1))
    y = np.arange(len(rows))
    for pos, row in zip(y, rows.itertuples()):
        bar = ax.barh(pos, row.share, color=SHARE_COLORS.get(row.component, POINT_COLOR), height=0.62)
        bar.patches[0].set_gid(f"share-{row.component}")
        ax.text(max(row.share, 0) + 0.01, pos, f"{row.share:.1%}", va="center", ha="left", fontsize=8)
    ax.set_yticks(y, labels=[str(label) for label in rows["label"]], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    top = float(np.nanmax(rows["share"].to_numpy(dtype=float))) if len(rows) else 1.0
    ax.set_xlim(min(0.0, float(rows["share"].min()) if len(rows) else 0.0) - 0.01, min(1.0, top + 0.12))
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_xlabel("share of the variance of logit(error rate)")
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title("What the error rates are made of", fontsize=10, loc="left")
    return ax


def residual_heatmap(grid: pd.DataFrame, *, cut: int = 0, annotate: bool | None = None, vmax: float | None = None,
                     ax: Axes | None = None) -> Axes:
    """Model × domain residuals (:func:`jagged.views.structure.residual_grid`) as a seaborn heatmap centred at 0.

    ``cut`` is the summary row's position (0: none); ``annotate`` writes each residual (default
    up to ``ANNOTATE_MAX_CELLS`` cells); the colours run from −``vmax`` (blue) to +``vmax``
    (red), by default the largest |residual|, at least 0.1. The mesh has gid ``"residuals"``.
    """
    values = grid.to_numpy(dtype=float)
    row_labels = [plain(str(m)) for m in grid.index]
    col_labels = [plain(str(d)) for d in grid.columns]
    layout = heatmap_layout(row_labels, col_labels)
    if ax is None:
        ax = new_axes(layout.width, layout.height)
    finite = values[np.isfinite(values)]
    limit = vmax if vmax is not None else max(0.1, float(np.abs(finite).max()) if finite.size else 0.1)
    if annotate is None:
        annotate = values.size <= ANNOTATE_MAX_CELLS
    labelled_heatmap(pd.DataFrame(values, index=row_labels, columns=col_labels), ax=ax,
                     cmap=mpl.colormaps[RESIDUAL_CMAP].with_extremes(bad="0.85"), vmin=-limit, vmax=limit,
                     gid="residuals", col_step=layout.col_step, row_pt=layout.row_pt, col_pt=layout.col_pt,
                     rotation=layout.rotation, annotate="+.2f" if annotate else None,
                     colorbar="residual (logit of error): + more errors than predicted",
                     shrink=0.6 if len(row_labels) > 8 else 0.9)
    mark_cut(ax, cut, rules=True)
    ax.set_title("Where each model departs from its level and the domain's difficulty (grey: no score)",
                 fontsize=10, loc="left")
    return ax


def relative_vs_cv(table: pd.DataFrame, *, corrected: bool | None = None, label: bool | int = True,
                   ax: Axes | None = None) -> Axes:
    """Relative jaggedness (up) against cv_error (across), one point per model (gid ``"models"``).

    ``corrected``: the noise-corrected (True) or raw (False) relative jaggedness; None takes
    :func:`jagged.views.structure.relative_column`, the axis label saying which. Optional
    ``relative_jaggedness_lo`` / ``_hi`` are drawn as vertical lines, models with
    ``relative_noise_flag`` grey. ``label``: True every model up to 12, else the
    :data:`~jagged.views.overview.LABEL_ENDS` highest on either axis; an int k the k highest
    on each; False none.
    """
    if corrected is None:
        corrected = relative_column(table) == "relative_jaggedness_corrected"
    column = "relative_jaggedness_corrected" if corrected else "relative_jaggedness"
    check_columns(table, ("model", "cv_error", column), "metrics table")
    rows = table.drop_duplicates("model")
    x = rows["cv_error"].to_numpy(dtype=float)
    y = rows[column].to_numpy(dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    rows, x, y = rows[keep], x[keep], y[keep]
    if ax is None:
        ax = new_axes(7.0, 4.6)
    flagged = rows["relative_noise_flag"].astype("boolean").fillna(False).to_numpy(dtype=bool) \
        if "relative_noise_flag" in rows else np.zeros(len(rows), dtype=bool)
    if {"relative_jaggedness_lo", "relative_jaggedness_hi"} <= set(rows.columns) and corrected:
        lo = rows["relative_jaggedness_lo"].to_numpy(dtype=float)
        hi = rows["relative_jaggedness_hi"].to_numpy(dtype=float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.vlines(x[ok], lo[ok], hi[ok], color="0.7", linewidth=1.0, gid="intervals", zorder=1)
    colors = np.where(flagged, FLAGGED_COLOR, POINT_COLOR)
    ax.scatter(x, y, s=24, c=list(colors), edgecolors="white", linewidths=0.5, gid="models", zorder=3)
    names = [plain(m) for m in rows["model"].astype(str)]
    if label is True and len(names) > 12:
        label = LABEL_ENDS
    if label is not False and len(names):
        k = len(names) if label is True else int(label)
        chosen = np.unique(np.concatenate([np.argsort(-y, kind="mergesort")[:k], np.argsort(-x, kind="mergesort")[:k]]))
        for i in chosen:
            ax.annotate(names[i], (x[i], y[i]), xytext=(4, 2), textcoords="offset points", fontsize=6.5,
                        color="0.25")
    ax.set_xlabel("cv_error (jaggedness relative to the model's mean error)")
    ax.set_ylabel(("relative jaggedness, noise removed" if corrected else "relative jaggedness, raw") + " (logits)")
    ax.set_ylim(bottom=0.0)
    ax.grid(color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    title = "Unevenness beyond level and difficulty, against cv_error"
    if not corrected:
        title += "\n(raw relative jaggedness: no item counts to remove the noise)"
    elif flagged.any():
        title += "\n(grey: indistinguishable from sampling noise)"
    ax.set_title(title, fontsize=10, loc="left")
    return ax


def scree(dimensions: pd.DataFrame, *, ax: Axes | None = None, percentile: float = 0.95,
          limit: int | None = SCREE_LIMIT) -> Axes:
    """Scree plot: the eigenvalues of the domains' correlation matrix against the parallel-analysis threshold.

    ``dimensions`` is :meth:`jagged.stats.structure.Dimensions.table`; at most ``limit``
    dimensions and none with eigenvalue 0 are drawn (:func:`jagged.views.structure.scree_shown`,
    the title counts them). Lines: gids ``"eigenvalues"`` and ``"threshold"``; retained
    dimensions filled (``"retained"``).
    """
    check_columns(dimensions, ("dimension", "eigenvalue", "threshold", "retained"), "dimension table")
    total = len(dimensions)
    dimensions = dimensions.iloc[:scree_shown(dimensions["eigenvalue"].to_numpy(dtype=float), limit)]
    if ax is None:
        ax = new_axes(6.4, 3.8)
    k = dimensions["dimension"].to_numpy(dtype=float)
    eig = dimensions["eigenvalue"].to_numpy(dtype=float)
    thr = dimensions["threshold"].to_numpy(dtype=float)
    kept = dimensions["retained"].astype(str).isin(["True", "yes"]).to_numpy()
    (line,) = ax.plot(k, eig, marker="o", markersize=4, color=POINT_COLOR, label="observed eigenvalue")
    line.set_gid("eigenvalues")
    (limit,) = ax.plot(k, thr, linestyle="--", color=THRESHOLD_COLOR,
                       label=f"{percentile:.0%} percentile of permuted data")
    limit.set_gid("threshold")
    ax.scatter(k[kept], eig[kept], s=46, color=POINT_COLOR, zorder=3, gid="retained",
               label=f"retained ({int(kept.sum())})")
    ax.set_xlabel("dimension")
    ax.set_ylabel("eigenvalue")
    ax.set_xticks(k[:: max(1, len(k) // 15)])
    ax.grid(color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(fontsize=7, frameon=False)
    title = "Dimensions behind the domains (parallel analysis)"
    if len(dimensions) < total:
        title += f"; first {len(dimensions)} of {total}"
    ax.set_title(title, fontsize=10, loc="left")
    return ax


def residual_profile_plot(profile: pd.DataFrame, *, model: str = "", ax: Axes | None = None) -> Axes:
    """One model's residual per domain with its sampling interval, in ``profile``'s order, top to bottom.

    ``profile`` is :func:`jagged.views.structure.profile_table`. Points: gid ``"residuals"``
    (red: more errors than expected beyond noise, blue: fewer, grey: within noise);
    intervals: ``"intervals"``.
    """
    check_columns(profile, ("domain", "residual", "residual_lo", "residual_hi", "departs"), "residual profile")
    if ax is None:
        ax = new_axes(6.4, 1.0 + 0.26 * max(len(profile), 1))
    y = np.arange(len(profile))
    r = profile["residual"].to_numpy(dtype=float)
    lo, hi = profile["residual_lo"].to_numpy(dtype=float), profile["residual_hi"].to_numpy(dtype=float)
    ok = np.isfinite(lo) & np.isfinite(hi)
    ax.hlines(y[ok], lo[ok], hi[ok], color="0.7", linewidth=1.2, gid="intervals")
    kind = profile["departs"].astype(str).to_numpy()
    colors = np.where(kind == "weaker than expected", "#c0504d",
                      np.where(kind == "stronger than expected", POINT_COLOR, FLAGGED_COLOR))
    ax.scatter(r, y, s=28, c=list(colors), zorder=3, gid="residuals")
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_yticks(y, labels=[plain(str(d)) for d in profile["domain"]], fontsize=8)
    ax.set_ylim(len(profile) - 0.5, -0.5)
    ax.set_xlabel("residual (logits): + more errors than expected")
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    title = "Where the model departs from the field"
    ax.set_title(f"{plain(model)}: {title.lower()}" if model else title, fontsize=10, loc="left")
    return ax
