"""Tables that describe a dataset and its per-model results for a reader: they reshape and count."""

from __future__ import annotations

from typing import Sequence, TypeVar

import numpy as np
import pandas as pd

from jagged.readers.dataset import Dataset
from jagged.stats.metrics import METRIC_COLUMNS


def per_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model (its first profile row) with the :data:`~jagged.stats.metrics.METRIC_COLUMNS` present."""
    columns = [c for c in METRIC_COLUMNS if c in table.columns]
    if "profile" not in table.columns:
        return table.loc[:, columns].reset_index(drop=True)
    return table.drop_duplicates("model", keep="first").loc[:, columns].reset_index(drop=True)


def ranked(table: pd.DataFrame, by: str = "cv_error") -> pd.DataFrame:
    """Per-model rows sorted by ``by``, highest first, undefined values last, ties by name."""
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

    Every plot and table that shows only the extremes of many models cuts with this.
    ``limit`` (at least 2) None keeps all. Returns the items kept, in order, and the position
    in them after which items were left out (0 when none were).
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
    """Models by ``by`` (default ``cv_error``), highest first, cut by :func:`ends` to ``limit``.

    Models whose ``by`` is undefined come last; ties are broken by name, so the order is
    deterministic. Returns the names and the cut (0: none left out).
    """
    if not {"model", by} <= set(metrics.columns):
        raise ValueError(f"metrics table needs columns model and {by}")
    rows = metrics.drop_duplicates("model").loc[:, ["model", by]]
    rows = rows.assign(**{by: pd.to_numeric(rows[by], errors="coerce")})
    ordered = rows.sort_values([by, "model"], ascending=[False, True], na_position="last", kind="mergesort")
    return ends(ordered["model"].astype(str).tolist(), limit)


def left_out(metrics: pd.DataFrame, *, limit: int | None = None, by: str = "cv_error") -> list[str]:
    """The models :func:`model_order` leaves out of a top/bottom cut, most jagged first."""
    shown, cut = model_order(metrics, limit=limit, by=by)
    if not cut:
        return []
    everyone = model_order(metrics, by=by)[0]
    kept = set(shown)
    return [m for m in everyone if m not in kept]


def median_errors(scores: pd.DataFrame, models: Sequence[str]) -> pd.Series:
    """Per-domain median error rate ``1 - score`` over ``models`` (the summary row of a cut), indexed by domain name."""
    chosen = scores[scores["model"].astype(str).isin([str(m) for m in models])]
    errors = 1.0 - chosen["score"].astype(float)
    out = errors.groupby(chosen["domain"].astype(str)).median().sort_index()
    out.index.name = "domain"
    return out.rename("median_error")


def domain_order(errors: pd.DataFrame, order: str | Sequence[str] = "error") -> list[str]:
    """Heatmap columns: ``"error"`` lowest median error first, ``"name"`` by name, or a sequence as given."""
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
    """Error rates ``1 - score`` as a ``model`` column and a float column per domain, in the heatmap's order.

    Rows by :func:`model_order` of ``metrics`` (cut to ``limit``), by name without it; columns
    by :func:`domain_order`; NaN where a model has no score.
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
    """What was read, as a ``fact``, ``value`` table of :func:`jagged.views.summary.read_facts`."""
    from jagged.views.summary import read_facts

    rows = [(f.label, f.value) for f in read_facts(dataset, limit=8)]
    return pd.DataFrame(rows, columns=["fact", "value"])


def domain_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per domain: ``category`` (if known), ``models`` with a score, ``n_items`` (the median over models)."""
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
