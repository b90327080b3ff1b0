"""Compose the per-model metrics table from a loaded Dataset and the user's options.

This is the one place where the metric modules meet; the CLI, the notebooks and the
batch runner all call :func:`metrics_table`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from jagged.loaders import Dataset
from jagged.metrics import jaggedness


@dataclass(frozen=True)
class AnalysisOptions:
    """What to compute beyond the jaggedness penalty.

    Attributes
    ----------
    weights : str or None
        Path of a weights file (CSV or YAML) with exposure profiles.
    profiles : tuple of str
        Profile names to compute, in order: names from the weights file or the
        built-ins ``uniform`` and ``items`` (empty: every profile in the weights file).
    missing_weight : {"error", "zero"}
        What a score domain absent from a profile means.
    bootstrap : int
        Bootstrap replicates for intervals (0: none). The Python default is 0, so a
        library call is fast, deterministic and adds no columns unless asked; the CLI
        (``--bootstrap``) and the report notebook default to 2000.
    seed : int
        Random seed for the bootstrap (``numpy.random.default_rng(seed)``).
    ci : float
        Interval level; 1 − ci is also the level of the equal-error test behind
        ``noise_flag`` (see :func:`jagged.uncertainty.sampling_noise`).
    """

    weights: str | None = None
    profiles: tuple[str, ...] = ()
    missing_weight: str = "error"
    bootstrap: int = 0
    seed: int = 0
    ci: float = 0.95


def add_notes(table: pd.DataFrame, model_notes: dict[str, str]) -> pd.DataFrame:
    """Append per-model remarks to the ``note`` column ("; "-separated)."""
    if not model_notes:
        return table
    extra = table["model"].map(model_notes).fillna("")
    joined = [n if not e else (e if not n else f"{n}; {e}") for n, e in zip(table["note"], extra)]
    return table.assign(note=joined)


def metrics_table(dataset: Dataset, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The full per-model metrics table for a dataset.

    Parameters
    ----------
    dataset : Dataset
        Output of :func:`jagged.load`.
    options : AnalysisOptions, optional
        Defaults compute the jaggedness table only.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`jagged.jaggedness`, plus those the options add. With
        ``weights`` or ``profiles`` there is one row per profile × model, with a
        ``profile`` column after ``model`` and the columns of
        :func:`jagged.deployment.deployment_metrics` (``dep_score``, ``wedge``,
        ``wedge_bound``, ``sigma_w``, ``exposure_error_corr``, ``rank_macro``,
        ``rank_dep``) before ``note``; :func:`rank_table` gives the per-profile Kendall τ.
        Always after ``cv_error``: ``cv_error_corrected``, ``noise_share``,
        ``p_equal_error``, ``noise_flag`` (:func:`jagged.uncertainty.add_noise`; flagged
        models say so in ``note``). With at least two domain categories:
        ``cv_error_categories`` and ``share_between`` (:func:`add_hierarchy`). With ``bootstrap > 0``: ``<stat>_lo`` / ``<stat>_hi``
        after ``cv_error``, ``macro_score``, ``dep_score`` and ``wedge``, plus
        ``interval_method`` and ``interval_note`` (:func:`jagged.uncertainty.add_intervals`).
    """
    from jagged.uncertainty import add_intervals, add_noise

    options = options or AnalysisOptions()
    table = add_noise(jaggedness(dataset.scores), dataset.scores, dataset.items, alpha=1.0 - options.ci)
    table = add_hierarchy(table, dataset.scores)
    weights = profile_weights(dataset, options)
    if len(weights):
        table = add_deployment(table, dataset.scores, weights)
    if options.bootstrap > 0:
        table = add_intervals(table, dataset.scores, dataset.items, weights=weights, n_boot=options.bootstrap,
                              seed=options.seed, ci=options.ci)
    return add_notes(table, dataset.model_notes)


def add_hierarchy(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Add the category level when the domains have at least two categories.

    Adds ``cv_error_categories`` (CV of the category error rates, each category the plain
    mean of its domains) and ``share_between`` (the share of the variance of e_d that
    lies between categories; see :func:`jagged.hierarchy.variance_decomposition`)
    before ``note``. Without categories the table is returned unchanged.
    """
    from jagged.hierarchy import has_categories, hierarchy_metrics

    if not has_categories(scores):
        return table
    levels = hierarchy_metrics(scores)[["model", "cv_categories", "share_between"]].rename(
        columns={"cv_categories": "cv_error_categories"})
    merged = table.merge(levels, on="model", how="left", validate="one_to_one")
    return merged[[c for c in merged.columns if c != "note"] + ["note"]]


def profile_weights(dataset: Dataset, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """The profiles × domains weight matrix the options ask for (zero rows: none).

    See :func:`jagged.weights.resolve_profiles`.
    """
    from jagged.weights import resolve_profiles

    options = options or AnalysisOptions()
    return resolve_profiles(dataset.scores, options.weights, options.profiles, options.missing_weight)


def add_deployment(table: pd.DataFrame, scores: pd.DataFrame, weights: pd.DataFrame) -> pd.DataFrame:
    """Expand a per-model jaggedness table to profile × model rows with deployment metrics.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.jaggedness` (one row per model).
    scores : pandas.DataFrame
        The canonical per-domain table behind it.
    weights : pandas.DataFrame
        Profiles × domains weight matrix.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``profile``, the jaggedness columns, the deployment columns, ``note``
        (both notes, "; "-separated); profiles in matrix order, models sorted.
    """
    from jagged.deployment import deployment_metrics
    from jagged.weights import items_coverage

    dep = deployment_metrics(scores, weights)
    if "items" in set(weights.index) and scores["n_items"].notna().any():
        coverage = dep["model"].map(items_coverage(scores)).to_numpy(dtype=float)
        partial = (dep["profile"] == "items").to_numpy() & (coverage < 1)
        extra = [f"items profile weights by full domain sizes; this model's n_items cover {c:.1%} of them"
                 for c in coverage[partial]]
        notes = dep["note"].to_numpy(dtype=object).copy()
        notes[partial] = [e if not n else f"{n}; {e}" for n, e in zip(notes[partial], extra)]
        dep = dep.assign(note=notes)
    base = table.drop(columns="note")
    merged = dep.drop(columns="note").merge(base, on="model", how="left", validate="many_to_one")
    first = ["model", "profile"] + [c for c in base.columns if c != "model"]
    merged = merged[first + [c for c in dep.columns if c not in first and c != "note"]]
    own = table.set_index("model")["note"].reindex(dep["model"]).fillna("").to_numpy(dtype=object)
    notes = [a if not b else (b if not a else f"{a}; {b}") for a, b in zip(own, dep["note"])]
    return merged.assign(note=notes)


def rank_table(dataset: Dataset, options: AnalysisOptions | None = None) -> pd.DataFrame:
    """Per-profile agreement of macro and deployment rankings (Kendall τ, rank changes).

    See :func:`jagged.deployment.rank_agreement`; empty without weights or profiles.
    """
    from jagged.deployment import RANK_COLUMNS, rank_agreement

    table = metrics_table(dataset, options)
    if "profile" not in table.columns:
        return pd.DataFrame(columns=list(RANK_COLUMNS))
    return rank_agreement(table)
