"""Figures of the compare report, from ``Comparison.models`` (``<stat>_a``, ``_b``, ``_delta``, ``_delta_lo``/``_hi``).

Profile rows of the same model are collapsed; nothing is computed here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from jagged.plots.base import check_columns, new_axes
from jagged.plots.labels import distinct_labels

BEYOND_COLOR = "#c0504d"
WITHIN_COLOR = "#3b6ea8"
NO_INTERVAL_COLOR = "0.45"


def _rows(models: pd.DataFrame, stat: str) -> pd.DataFrame:
    check_columns(models, ("model", f"{stat}_a", f"{stat}_b", f"{stat}_delta"), "comparison table")
    return _with_interval(models.drop_duplicates("model"), f"{stat}_delta")


def _with_interval(rows: pd.DataFrame, value: str) -> pd.DataFrame:
    rows = rows[rows[value].notna()].reset_index(drop=True)
    for end in ("lo", "hi"):
        if f"{value}_{end}" not in rows.columns:
            rows[f"{value}_{end}"] = np.nan
    return rows


def _colors(lo: np.ndarray, hi: np.ndarray) -> list[str]:
    has = np.isfinite(lo) & np.isfinite(hi)
    beyond = has & ((lo > 0) | (hi < 0))
    return [BEYOND_COLOR if b else (WITHIN_COLOR if h else NO_INTERVAL_COLOR) for b, h in zip(beyond, has)]


def change_forest(table: pd.DataFrame, *, value: str, label: str = "model", limit: int | None = None,
                  xlabel: str | None = None, title: str | None = None, ax: Axes | None = None) -> Axes:
    """Forest plot of a change per row (``label``, ``value``, optional ``<value>_lo`` / ``_hi``), sorted by it.

    ``limit`` keeps the ``limit`` largest |changes| (the title says so). Red: the interval
    excludes 0 (beyond noise); blue: it includes 0; grey: no interval.
    """
    check_columns(table, (label, value), "table")
    rows = _with_interval(table, value)
    total = len(rows)
    if limit is not None and total > limit:
        rows = rows.loc[rows[value].abs().sort_values(ascending=False, kind="mergesort").index[:limit]]
    rows = rows.sort_values([value, label], kind="mergesort").reset_index(drop=True)
    if ax is None:
        ax = new_axes(7.0, max(2.2, 0.28 * len(rows) + 1.2))
    y = np.arange(len(rows))
    delta = rows[value].to_numpy(dtype=float)
    lo, hi = rows[f"{value}_lo"].to_numpy(dtype=float), rows[f"{value}_hi"].to_numpy(dtype=float)
    colors = _colors(lo, hi)
    has = np.isfinite(lo) & np.isfinite(hi)
    ax.hlines(y[has], lo[has], hi[has], colors=[c for c, h in zip(colors, has) if h], linewidth=2)
    ax.scatter(delta, y, c=colors, s=24, zorder=3)
    ax.axvline(0.0, color="0.3", linewidth=0.8, linestyle="--")
    ax.set_yticks(y, distinct_labels(rows[label].astype(str).tolist()))
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(xlabel or value)
    cut = f" (the {len(rows)} largest of {total})" if limit is not None and total > limit else ""
    ax.set_title((title or value) + cut)
    return ax


def delta_forest(models: pd.DataFrame, *, stat: str = "macro_score", limit: int | None = None,
                 ax: Axes | None = None) -> Axes:
    """Forest plot of B − A per model (:func:`change_forest` of ``<stat>_delta``).

    ``stat`` is ``macro_score``, ``cv_error``, ``dep_score`` or ``wedge`` (for the last two,
    pass one profile's rows). With item-level data the intervals are paired.
    """
    return change_forest(_rows(models, stat), value=f"{stat}_delta", limit=limit, ax=ax,
                         xlabel=f"{stat} change, B − A (like for like)", title=f"Change in {stat} per model")


def field_forest(models: pd.DataFrame, *, limit: int | None = None, ax: Axes | None = None) -> Axes:
    """Forest plot of each model's macro-score change relative to the field (``macro_delta_vs_field``)."""
    return change_forest(models.drop_duplicates("model"), value="macro_delta_vs_field", limit=limit, ax=ax,
                         xlabel="macro-score change relative to the field", title="Change relative to the field")


def domain_shifts(domains: pd.DataFrame, *, limit: int | None = None, ax: Axes | None = None) -> Axes:
    """Forest plot of the field's shift per domain (``Comparison.domains``: ``domain``, ``shift``, ``_lo``, ``_hi``)."""
    return change_forest(domains, value="shift", label="domain", limit=limit, ax=ax,
                         xlabel="the field's shift, B − A (mean change over the models)",
                         title="Shift of each domain for every model")


def a_against_b(models: pd.DataFrame, *, stat: str = "macro_score", ax: Axes | None = None) -> Axes:
    """Each model's value in B against A on what both share, with the line B = A.

    A model's vertical bar spans ``<stat>_a + <stat>_delta_lo`` to ``<stat>_a + <stat>_delta_hi``:
    where B would lie if only noise separated the sides; one that misses the line is red.
    """
    rows = _rows(models, stat)
    if ax is None:
        ax = new_axes(5.2, 5.0)
    a = rows[f"{stat}_a"].to_numpy(dtype=float)
    b = rows[f"{stat}_b"].to_numpy(dtype=float)
    lo = rows[f"{stat}_delta_lo"].to_numpy(dtype=float)
    hi = rows[f"{stat}_delta_hi"].to_numpy(dtype=float)
    colors = _colors(lo, hi)
    has = np.isfinite(lo) & np.isfinite(hi)
    ax.vlines(a[has], (a + lo)[has], (a + hi)[has], colors=[c for c, h in zip(colors, has) if h], linewidth=1.5)
    ax.scatter(a, b, c=colors, s=22, zorder=3)
    values = np.concatenate([a, b, (a + lo)[has], (a + hi)[has]])
    values = values[np.isfinite(values)]
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    pad = max((high - low) * 0.05, 1e-3)
    ax.plot([low - pad, high + pad], [low - pad, high + pad], color="0.3", linewidth=0.8, linestyle="--")
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(low - pad, high + pad)
    ax.set_xlabel(f"{stat} in A")
    ax.set_ylabel(f"{stat} in B")
    ax.set_title(f"{stat}: B against A on what both share")
    return ax
