"""Figures of the compare report: the like-for-like change per model, and the field's shift per domain.

The input is the per-model table of a comparison (:func:`jagged.stats.compare.compare_models`,
``Comparison.models``), which carries ``<stat>_a``, ``<stat>_b``, ``<stat>_delta`` and,
with a bootstrap, ``<stat>_delta_lo`` / ``<stat>_delta_hi``. Profile rows of the same model
are collapsed (macro_score and cv_error do not depend on the profile). The plots never
compute a statistic themselves.
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
    """Forest plot of a change per row: the value and its interval, rows sorted by the value.

    Parameters
    ----------
    table : pandas.DataFrame
        ``label``, ``value`` and optional ``<value>_lo`` / ``<value>_hi`` (one row per label).
    value, label : str
        The columns of the change and of the row names.
    limit : int, optional
        With more rows, draw only the ``limit`` largest changes in absolute value (the title
        says so).
    xlabel, title : str, optional
        Axis label and title (default: the column names).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new figure sized for the number of rows).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    An interval that excludes 0 (red) is a change beyond noise; blue intervals include 0;
    grey points have no interval.
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

    ``models`` is ``Comparison.models`` (``model``, ``<stat>_a``, ``<stat>_b``,
    ``<stat>_delta``; optional ``<stat>_delta_lo`` / ``_hi``); ``stat`` is ``macro_score``,
    ``cv_error``, ``dep_score`` or ``wedge`` (for the last two, pass the rows of one
    profile). With item-level data the intervals are paired (the same resample of the
    common items on both sides).
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
    """Scatter of each model's value in B against A on what both share, with the line B = A.

    Parameters
    ----------
    models : pandas.DataFrame
        ``Comparison.models`` (see :func:`delta_forest`).
    stat : str
        The statistic (default ``macro_score``).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: a new square figure).

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    The vertical bar of a model spans A's value plus the interval of the change,
    ``<stat>_a + <stat>_delta_lo`` to ``<stat>_a + <stat>_delta_hi``: where B would lie
    if only noise separated the sides. A bar that misses the line B = A is a change beyond
    noise (red).
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
