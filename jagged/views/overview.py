"""Tables that describe a dataset and its per-model results for a reader (report helpers).

These only reshape and count; the metrics come from :mod:`jagged.stats.metrics` and
:mod:`jagged.analysis`.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

import numpy as np
import pandas as pd

from jagged.readers.dataset import Dataset
from jagged.stats.metrics import METRIC_COLUMNS


def per_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model with the jaggedness columns of a metrics table.

    :func:`jagged.analysis.metrics_table` returns one row per profile × model when
    deployment profiles are asked for; the jaggedness columns repeat across profiles, so
    the first row of each model is kept.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.analysis.metrics_table` or :func:`jagged.jaggedness`.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`jagged.stats.metrics.METRIC_COLUMNS` present in ``table``, one
        row per model, in the table's order.
    """
    columns = [c for c in METRIC_COLUMNS if c in table.columns]
    if "profile" not in table.columns:
        return table.loc[:, columns].reset_index(drop=True)
    return table.drop_duplicates("model", keep="first").loc[:, columns].reset_index(drop=True)


def ranked(table: pd.DataFrame, by: str = "cv_error") -> pd.DataFrame:
    """Per-model rows sorted by a column, highest first, undefined values last, ties by name.

    Parameters
    ----------
    table : pandas.DataFrame
        A metrics table (see :func:`per_model`).
    by : str
        Column to sort by.

    Returns
    -------
    pandas.DataFrame
    """
    rows = per_model(table)
    return rows.sort_values([by, "model"], ascending=[False, True], na_position="last",
                            kind="mergesort").reset_index(drop=True)


T = TypeVar("T")

#: Above this many models a scatter plot labels only the extremes (and its alt text says so).
LABEL_ALL_MAX = 40
#: How many of the most and of the least jagged models a crowded scatter plot labels.
LABEL_ENDS = 5
#: Most domains a figure tells apart by a legend; beyond, it draws a panel per domain (small multiples).
LEGEND_MAX = 12


def ends(items: Sequence[T], limit: int | None) -> tuple[list[T], int]:
    """The top/bottom cut of an ordered sequence: its first ``ceil(limit / 2)`` and last ``floor(limit / 2)`` items.

    Every plot and table that shows only the extremes of many models cuts with this
    (:func:`model_order` by cv_error, the forest plot by corrected CV, the wedge plots by
    wedge).

    Parameters
    ----------
    items : sequence
        In display order (e.g. most jagged first).
    limit : int, optional
        Keep at most this many (at least 2); ``None`` keeps all.

    Returns
    -------
    kept : list
        The items kept, in order.
    cut : int
        Position in ``kept`` after which items were left out (0 when none were).
    """
    items = list(items)
    if limit is None or len(items) <= limit:
        return items, 0
    if limit < 2:
        raise ValueError(f"limit must be at least 2, not {limit}")
    head = (limit + 1) // 2
    return items[:head] + items[len(items) - (limit - head):], head


def by_jaggedness(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model (every column of ``table``) with a defined cv_error, most jagged first, ties by name."""
    rows = table.drop_duplicates("model")
    rows = rows[np.isfinite(rows["cv_error"].to_numpy(dtype=float))]
    return rows.sort_values(["cv_error", "model"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def model_order(metrics: pd.DataFrame, *, limit: int | None = None, by: str = "cv_error") -> tuple[list[str], int]:
    """Models from most to least jagged, cut to a top/bottom form when there are many.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Per-model table with ``model`` and ``cv_error`` (and ``by``).
    limit : int, optional
        Keep at most this many models: the ``ceil(limit / 2)`` most and the
        ``floor(limit / 2)`` least jagged. ``None`` keeps all.
    by : str
        The column that says how jagged (default ``cv_error``; the residual heatmap uses
        the relative jaggedness, :func:`jagged.views.structure.relative_column`).

    Returns
    -------
    models : list of str
        Model names, highest ``by`` first; models whose ``by`` is undefined come last, by
        name.
    cut : int
        Position in ``models`` after which models were left out (0 when none were).

    Notes
    -----
    Ties are broken by model name, so the order is deterministic.
    """
    if not {"model", by} <= set(metrics.columns):
        raise ValueError(f"metrics table needs columns model and {by}")
    rows = metrics.drop_duplicates("model").loc[:, ["model", by]]
    rows = rows.assign(**{by: pd.to_numeric(rows[by], errors="coerce")})
    ordered = rows.sort_values([by, "model"], ascending=[False, True], na_position="last", kind="mergesort")
    return ends(ordered["model"].astype(str).tolist(), limit)


def left_out(metrics: pd.DataFrame, *, limit: int | None = None, by: str = "cv_error") -> list[str]:
    """The models :func:`model_order` leaves out of a top/bottom cut, most jagged first.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Per-model table with ``model`` and ``cv_error`` (and ``by``).
    limit : int, optional
        As in :func:`model_order`; ``None`` leaves out nobody.
    by : str
        As in :func:`model_order`.

    Returns
    -------
    list of str
    """
    shown, cut = model_order(metrics, limit=limit, by=by)
    if not cut:
        return []
    everyone = model_order(metrics, by=by)[0]
    kept = set(shown)
    return [m for m in everyone if m not in kept]


def median_errors(scores: pd.DataFrame, models: Sequence[str]) -> pd.Series:
    """Per-domain median error rate ``1 - score`` over some models (the summary row of a cut).

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    models : sequence of str
        The models to summarise.

    Returns
    -------
    pandas.Series
        Indexed by domain name (str), sorted by name; a domain none of the models has a
        score in is absent. Empty when ``models`` is.
    """
    chosen = scores[scores["model"].astype(str).isin([str(m) for m in models])]
    errors = 1.0 - chosen["score"].astype(float)
    out = errors.groupby(chosen["domain"].astype(str)).median().sort_index()
    out.index.name = "domain"
    return out.rename("median_error")


def domain_order(errors: pd.DataFrame, order: str | Sequence[str] = "error") -> list[str]:
    """Column order of the heatmap.

    Parameters
    ----------
    errors : pandas.DataFrame
        Models × domains error rates.
    order : {"error", "name"} or sequence of str
        ``"error"`` puts the domains with the lowest median error on the left, ``"name"``
        sorts by name; a sequence is used as given.

    Returns
    -------
    list of str
    """
    if not isinstance(order, str):
        return [str(d) for d in order]
    if order == "name":
        return sorted(errors.columns.astype(str))
    if order == "error":
        median = errors.median(axis=0, skipna=True)
        ranked = pd.DataFrame({"domain": errors.columns.astype(str), "median": median.to_numpy()})
        return ranked.sort_values(["median", "domain"], kind="mergesort")["domain"].tolist()
    raise ValueError(f"order must be 'error', 'name' or a list of domains, not {order!r}")


def error_matrix(scores: pd.DataFrame, metrics: pd.DataFrame | None = None, *, limit: int | None = None,
                 order: str | Sequence[str] = "error") -> pd.DataFrame:
    """Error rates ``1 - score`` as a models × domains table, in the heatmap's order.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    metrics : pandas.DataFrame, optional
        Per-model table for the row order (most jagged first, see :func:`model_order`);
        rows by name without it.
    limit : int, optional
        Keep only the most and least jagged models (see :func:`model_order`).
    order : {"error", "name"} or sequence of str
        Column order (see :func:`domain_order`).

    Returns
    -------
    pandas.DataFrame
        A ``model`` column, then one float column per domain; NaN where a model has no
        score.
    """
    errors = 1.0 - scores.pivot_table(index="model", columns="domain", values="score", aggfunc="first",
                                      observed=True)
    errors.index = errors.index.astype(str)
    errors.columns = errors.columns.astype(str)
    if metrics is not None:
        models = [m for m in model_order(metrics, limit=limit)[0] if m in errors.index]
    else:
        models = sorted(errors.index)
    grid = errors.reindex(index=models, columns=domain_order(errors, order))
    grid.columns.name = None
    return grid.rename_axis("model").reset_index()


def others_label(n: int) -> str:
    """The row label of the summary of ``n`` left-out models (heatmap, dispersion, table)."""
    return f"median of {n} other model{'s' if n != 1 else ''}"


def dataset_facts(dataset: Dataset) -> pd.DataFrame:
    """What was read, as a two-column table (``fact``, ``value``) of display strings.

    The facts are :func:`jagged.views.summary.read_facts`, labelled as it labels them.

    Parameters
    ----------
    dataset : Dataset
        A loaded dataset.

    Returns
    -------
    pandas.DataFrame
        Rows: input, format, scores, models, domains, complete models, score range,
        item counts, and the loader's details.
    """
    from jagged.views.summary import read_facts

    rows = [(f.label, f.value) for f in read_facts(dataset, limit=8)]
    return pd.DataFrame(rows, columns=["fact", "value"])


def domain_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per domain: how many models have a score and how many items stand behind it.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.

    Returns
    -------
    pandas.DataFrame
        Columns ``domain``, ``category`` (when any is known), ``models`` (models with a
        score) and ``n_items`` (the median over models; missing when unknown), sorted by
        domain name.
    """
    grouped = scores.groupby("domain", sort=True, observed=True)
    out = pd.DataFrame({
        "models": grouped["model"].nunique(),
        "n_items": grouped["n_items"].median(),
    })
    if scores["category"].notna().any():
        out.insert(0, "category", grouped["category"].first())
    out = out.reset_index()
    out["domain"] = out["domain"].astype(str)
    out["n_items"] = out["n_items"].round().astype("Int64")
    return out
