"""One model's domain errors against the field (the per-model report's figure)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import plain

MODEL_COLOR = "#c0504d"
FIELD_COLOR = "#8fa9c8"
MEDIAN_COLOR = "#1d232b"
#: Longest domain label before it is shortened with an ellipsis.
LABEL_MAX = 40


def domain_errors_vs_field(data: pd.DataFrame, *, model: str = "", intervals: bool = True,
                           ax: Axes | None = None) -> Axes:
    """A model's error rate per domain over the other models' range (:func:`jagged.views.model_view.domain_errors`).

    Rows top to bottom in order; ``intervals`` draws ``error_lo`` … ``error_hi`` when present.
    Gids: ``"field-range"`` (min–max), ``"field-iqr"`` (quartiles), ``"field-median"``,
    ``"model-error"`` and ``"model-interval"``.
    """
    check_columns(data, ("domain", "error", "field_min", "field_q25", "field_median", "field_q75",
                          "field_max"), "domain error table")
    n = len(data)
    if ax is None:
        ax = new_axes(7.0, 1.3 + 0.3 * max(n, 1))
    y = np.arange(n, dtype=float)
    col = {c: data[c].to_numpy(dtype=float) for c in ("error", "field_min", "field_q25", "field_median",
                                                      "field_q75", "field_max")}
    ax.hlines(y, col["field_min"], col["field_max"], color=FIELD_COLOR, linewidth=1.2,
              label="other models: range", gid="field-range", zorder=1)
    ax.hlines(y, col["field_q25"], col["field_q75"], color=FIELD_COLOR, linewidth=6.0,
              label="other models: middle half", gid="field-iqr", zorder=1)
    ax.scatter(col["field_median"], y, marker="|", s=140, linewidths=2.0, color=MEDIAN_COLOR,
               label="other models: median", gid="field-median", zorder=2)
    if intervals and {"error_lo", "error_hi"} <= set(data.columns):
        lo = data["error_lo"].to_numpy(dtype=float)
        hi = data["error_hi"].to_numpy(dtype=float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        if ok.any():
            ax.hlines(y[ok], lo[ok], hi[ok], color=MODEL_COLOR, linewidth=2.0, alpha=0.6,
                      label="interval", gid="model-interval", zorder=3)
    who = str(model) if model else "this model"
    ax.scatter(col["error"], y, s=36, color=MODEL_COLOR, zorder=4, label=plain(who, 24), gid="model-error")
    labels = [plain(d, LABEL_MAX) for d in data["domain"]]
    ax.set_yticks(y, labels=labels, fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0.0, 1.0)
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("error rate in the domain (1 − score)")
    ax.set_title("Error rate per domain against the other models", fontsize=10, loc="left")
    # Above the plot across the whole figure, so long domain labels on the left cannot push
    # the legend out of the figure (constrained layout reserves its room).
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside upper left", ncols=3, fontsize=7, frameon=False)
    return ax
