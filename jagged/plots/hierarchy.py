"""Leaves within categories: where a model's errors sit at both levels of a hierarchy."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import plain

LEAF_COLOR = "#3b6ea8"
CATEGORY_COLOR = "#111111"
OVERALL_COLOR = "#b03a2e"


def _one_model(frame: pd.DataFrame, model: str | None, what: str) -> pd.DataFrame:
    models = list(dict.fromkeys(frame["model"]))
    if model is None:
        if len(models) != 1:
            raise ValueError(f"{what} holds {len(models)} models; choose one with model=")
        return frame
    if model not in models:
        raise ValueError(f"{what} has no model {model!r}")
    return frame[frame["model"] == model]


def category_strip(leaves: pd.DataFrame, *, categories: pd.DataFrame | None = None, model: str | None = None,
                   overall: float | None = None, label_leaves: int = 0, ax: Axes | None = None) -> Axes:
    """Leaf error rates as dots (:func:`jagged.stats.hierarchy.leaf_errors`), a row per category.

    ``categories`` (:func:`jagged.stats.hierarchy.category_table`) adds each category's mean
    error as a bar and orders the rows by it, highest on top (by name without it). ``model``
    is required when the tables hold several; ``overall`` draws the mean leaf error dashed;
    ``label_leaves`` names that many highest-error leaves per category.
    """
    check_columns(leaves, ("model", "category", "domain", "error"), "leaves")
    data = _one_model(leaves, model, "leaves")
    name = model if model is not None else (data["model"].iloc[0] if len(data) else "")
    if categories is not None:
        check_columns(categories, ("model", "category", "mean_error"), "categories")
        cats = _one_model(categories, model, "categories") if model is not None or categories["model"].nunique() == 1 \
            else categories[categories["model"] == name]
        order = cats.sort_values("mean_error", kind="stable")["category"].tolist()
        order += sorted(set(data["category"]) - set(order))
        means = dict(zip(cats["category"], cats["mean_error"]))
    else:
        order = sorted(set(data["category"]), reverse=True)
        means = {}
    if ax is None:
        ax = new_axes(7.5, 1.2 + 0.45 * max(len(order), 2))
    position = {c: i for i, c in enumerate(order)}
    y = data["category"].map(position).to_numpy(dtype=float)
    # spread neighbouring leaves of a category over three lanes, deterministically
    rank = data.groupby("category")["error"].rank(method="first").to_numpy()
    offset = ((rank % 3) - 1) * 0.17
    ax.scatter(data["error"].to_numpy(dtype=float), y + offset, s=18, color=LEAF_COLOR, alpha=0.8,
               linewidths=0, label="leaf (domain)", zorder=3)
    for cat, mean in means.items():
        if cat in position:
            ax.plot([mean, mean], [position[cat] - 0.35, position[cat] + 0.35], color=CATEGORY_COLOR, lw=2.5,
                    zorder=4, solid_capstyle="butt")
    if means:
        ax.plot([], [], color=CATEGORY_COLOR, lw=2.5, label="category mean error")
    if overall is not None and np.isfinite(overall):
        ax.axvline(overall, color=OVERALL_COLOR, ls="--", lw=1.2, label="mean error over leaves", zorder=2)
    if label_leaves > 0:
        top = data.assign(ypos=y + offset).sort_values("error", ascending=False).groupby("category").head(label_leaves)
        for row in top.itertuples():
            ax.annotate(plain(row.domain), (row.error, row.ypos), xytext=(4, 0), textcoords="offset points",
                        fontsize=7, va="center")
    ax.set_yticks(range(len(order)), [plain(c) for c in order])
    ax.set_ylim(-0.6, len(order) - 0.4)
    ax.set_xlim(0, 1)
    ax.set_xlabel("error rate (1 - score)")
    ax.set_title(plain(name))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.1 / max(len(order), 1)), ncol=3, fontsize=8,
              frameon=False)
    return ax

