"""Tables that describe a dataset and its per-model results for a reader (report helpers).

These only reshape and count; the metrics come from :mod:`jagged.metrics` and
:mod:`jagged.analysis`.
"""

from __future__ import annotations

import pandas as pd

from jagged.loaders import Dataset
from jagged.metrics import METRIC_COLUMNS
from jagged.table import summarize


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
        The columns of :data:`jagged.metrics.METRIC_COLUMNS` present in ``table``, one
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


def dataset_facts(dataset: Dataset) -> pd.DataFrame:
    """What was read, as a two-column table (``fact``, ``value``) of display strings.

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
    facts = summarize(dataset.scores)
    incomplete = facts["incomplete"]
    complete = f"{facts['complete_models']} of {facts['models']}"
    if incomplete:
        listed = ", ".join(incomplete[:8]) + (f" and {len(incomplete) - 8} more" if len(incomplete) > 8 else "")
        complete += f" (incomplete: {listed})"
    rows = [
        ("input", dataset.source),
        ("format", dataset.format),
        ("scores (model × domain pairs)", str(facts["rows"])),
        ("models", str(facts["models"])),
        ("domains", str(facts["domains"])),
        ("models with every domain", complete),
        ("score range", f"{facts['score_min']:.4f} to {facts['score_max']:.4f}"),
        ("item counts (n_items)", "present" if facts["has_n_items"] else "not given"),
    ]
    if facts["categories"]:
        rows.append(("categories", str(facts["categories"])))
    rows.extend((str(key), str(value)) for key, value in dataset.details.items())
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
