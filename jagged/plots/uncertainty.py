"""How sure are the jaggedness figures: a forest plot of cv_error with intervals, from the metrics table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import distinct_labels
from jagged.views.overview import ends

RAW_COLOR = "#3b6ea8"
CORRECTED_COLOR = "#c0504d"
FLAGGED_COLOR = "0.55"


def cv_forest(table: pd.DataFrame, *, sort: bool = True, limit: int | None = None,
              ax: Axes | None = None) -> Axes:
    """Forest plot: per model, the interval for the noise-free CV, the raw and the corrected CV.

    Optional ``cv_error_lo`` / ``_hi`` are drawn as a line, models with ``noise_flag`` in grey
    with "*". ``sort`` puts the largest corrected CV on top; ``limit`` keeps the
    ``ceil(limit / 2)`` highest and ``floor(limit / 2)`` lowest (the title says so). The
    interval is for the noise-free CV, so it is centred on the corrected value (diamond) and
    can lie left of the raw one (circle); reaching 0, equal error in every domain cannot be
    excluded.
    """
    check_columns(table, ("model", "cv_error", "cv_error_corrected"), "metrics table")
    data = table.drop_duplicates("model")
    left_out = 0
    if limit is not None and len(data) > limit:
        by = data.sort_values(["cv_error_corrected", "cv_error"], ascending=False, na_position="last")
        keep = ends(by.index, limit)[0]
        left_out = len(data) - len(keep)
        data = data.loc[data.index.isin(keep)]
    if sort:
        data = data.sort_values(["cv_error_corrected", "cv_error"], ascending=True, na_position="first")
    n = len(data)
    if ax is None:
        ax = new_axes(6.8, max(2.2, 0.26 * n + 1.3))
    y = np.arange(n)
    flagged = (data["noise_flag"].fillna(False).astype(bool).to_numpy() if "noise_flag" in data.columns
               else np.zeros(n, dtype=bool))
    has_interval = {"cv_error_lo", "cv_error_hi"} <= set(data.columns)
    if has_interval:
        lo = data["cv_error_lo"].to_numpy(dtype=float)
        hi = data["cv_error_hi"].to_numpy(dtype=float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        colors = np.where(flagged, FLAGGED_COLOR, RAW_COLOR)
        ax.hlines(y[ok], lo[ok], hi[ok], colors=colors[ok], lw=2.2, alpha=0.55, zorder=2,
                  label="interval for the noise-free CV", gid="interval")
    raw = data["cv_error"].to_numpy(dtype=float)
    corrected = data["cv_error_corrected"].to_numpy(dtype=float)
    ax.scatter(raw, y, s=26, facecolor="white", edgecolor=np.where(flagged, FLAGGED_COLOR, RAW_COLOR), lw=1.2,
               zorder=3, label="cv_error (raw)", gid="raw")
    ax.scatter(corrected, y, s=30, marker="D", color=np.where(flagged, FLAGGED_COLOR, CORRECTED_COLOR),
               zorder=4, label="cv_error_corrected (noise removed)", gid="corrected")
    names = [f"{label} *" if f else label for label, f in zip(distinct_labels(data["model"].astype(str)), flagged)]
    ax.set_yticks(y, names, fontsize=7.5)
    for tick, f in zip(ax.get_yticklabels(), flagged):
        if f:
            tick.set_color(FLAGGED_COLOR)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlim(left=0)
    ax.set_xlabel("jaggedness CV of domain error rates", fontsize=9)
    title = "Jaggedness with sampling noise removed"
    if left_out:
        title += f"\n({left_out} middle models not shown)"
    if flagged.any():
        title += "\n(* grey: indistinguishable from sampling noise)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    ax.grid(axis="x", alpha=0.25)
    return ax
