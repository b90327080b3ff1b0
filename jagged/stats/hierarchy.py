"""Two-level jaggedness: leaves (domains) grouped into categories (the ``category`` column).

Categories come from a CSV or from the lm-eval group structure (mmlu → mmlu_stem →
mmlu_abstract_algebra gives ``mmlu_stem``). Per model, on the error rates e_d = 1 − s_d: the
category table (a category's score is the unweighted mean of its leaves, like the macro
score), the between/within split of the variance over leaves, and the CV at both levels.
Leaves without a category, when others have one, are pooled into :data:`UNCATEGORISED`
(with a warning).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.stats.metrics import cv_from_moments

UNCATEGORISED = "(none)"

CATEGORY_COLUMNS: tuple[str, ...] = (
    "model", "category", "n_leaves", "score", "mean_error", "sd_error", "cv_error",
)
DECOMPOSITION_COLUMNS: tuple[str, ...] = (
    "model", "n_leaves", "n_categories", "mean_error", "var_total", "var_between", "var_within",
    "share_between",
)
HIERARCHY_COLUMNS: tuple[str, ...] = (
    "model", "n_leaves", "n_categories", "cv_leaves", "cv_categories", "var_total", "var_between",
    "var_within", "share_between",
)


def has_categories(scores: pd.DataFrame) -> bool:
    """True when the table has at least two distinct categories (a hierarchy to show)."""
    if "category" not in scores.columns:
        return False
    return scores["category"].dropna().nunique() >= 2


def _with_categories(scores: pd.DataFrame) -> pd.DataFrame:
    """``model, domain, category, error`` with missing categories pooled (or an error)."""
    if not has_categories(scores):
        found = scores["category"].dropna().nunique() if "category" in scores.columns else 0
        raise JaggedInputError(f"a hierarchy needs at least 2 categories; the scores have {found}")
    category = scores["category"].astype(object)
    missing = category.isna()
    if missing.any():
        names = scores.loc[missing.to_numpy(), "domain"].astype(object).drop_duplicates().tolist()
        shown = ", ".join(map(str, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        warnings.warn(f"{len(names)} domain(s) without a category pooled into {UNCATEGORISED!r}: {shown}",
                      JaggedWarning, stacklevel=3)
        category = category.where(~missing, UNCATEGORISED)
    return pd.DataFrame({"model": scores["model"].to_numpy(dtype=object),
                         "domain": scores["domain"].to_numpy(dtype=object),
                         "category": category.astype(str).to_numpy(dtype=object),
                         "error": 1.0 - scores["score"].to_numpy(dtype=float)})


def category_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (model, category) scores and within-category spread.

    ``n_leaves``, ``score`` (unweighted mean of the leaves), ``mean_error``, ``sd_error``
    (population sd of the leaf errors), ``cv_error`` (NaN for a single leaf or no errors).
    JaggedInputError with fewer than two categories.
    """
    data = _with_categories(scores)
    grouped = data.groupby(["model", "category"], sort=True)["error"]
    mean = grouped.mean()
    sd = grouped.std(ddof=0)
    n = grouped.size()
    out = pd.DataFrame({"n_leaves": n.astype(np.int64), "mean_error": mean, "sd_error": sd}).reset_index()
    out["score"] = 1.0 - out["mean_error"]
    out["cv_error"] = cv_from_moments(out["mean_error"].to_numpy(), out["sd_error"].to_numpy(),
                                      out["n_leaves"].to_numpy())
    return out[list(CATEGORY_COLUMNS)]


def variance_decomposition(scores: pd.DataFrame) -> pd.DataFrame:
    """Split each model's variance of e_d into between- and within-category parts.

    One row per model: ``n_leaves`` D, ``n_categories``, ``mean_error`` ē, ``var_total``,
    ``var_between``, ``var_within``, ``share_between`` (NaN when var_total is 0).

    Notes
    -----
    With category c holding n_c leaves of mean error ē_c, exactly (ddof 0, so
    ``cv_error**2 * mean_error**2 == var_total``)::

        (1/D) Σ_d (e_d − ē)² = Σ_c (n_c/D)(ē_c − ē)² + Σ_c (n_c/D)(1/n_c) Σ_{d∈c} (e_d − ē_c)²

    Categories weigh by their leaves here; the CV across categories weighs them equally.
    """
    data = _with_categories(scores)
    model_mean = data.groupby("model")["error"].transform("mean").to_numpy()
    cat_mean = data.groupby(["model", "category"])["error"].transform("mean").to_numpy()
    error = data["error"].to_numpy()
    parts = pd.DataFrame({
        "model": data["model"],
        "error": error,
        "total": (error - model_mean) ** 2,
        "between": (cat_mean - model_mean) ** 2,
        "within": (error - cat_mean) ** 2,
        "category": data["category"],
    })
    grouped = parts.groupby("model", sort=True)
    out = pd.DataFrame({
        "n_leaves": grouped.size().astype(np.int64),
        "n_categories": grouped["category"].nunique().astype(np.int64),
        "mean_error": grouped["error"].mean(),
        "var_total": grouped["total"].mean(),
        "var_between": grouped["between"].mean(),
        "var_within": grouped["within"].mean(),
    }).reset_index()
    total = out["var_total"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["share_between"] = np.where(total > 0, out["var_between"].to_numpy() / np.where(total > 0, total, 1),
                                        np.nan)
    return out[list(DECOMPOSITION_COLUMNS)]


def hierarchy_metrics(scores: pd.DataFrame) -> pd.DataFrame:
    """Jaggedness at both levels per model, with :func:`variance_decomposition`'s columns.

    ``cv_leaves`` (the ``cv_error`` across leaves), ``cv_categories`` (each category counted
    once); population sds; a CV is NaN when the mean error is 0 or there are fewer than two
    leaves (categories).
    """
    decomposition = variance_decomposition(scores)
    cats = category_table(scores)
    per_cat = cats.groupby("model", sort=True)["mean_error"]
    cv_cat = pd.DataFrame({"mean": per_cat.mean(), "sd": per_cat.std(ddof=0), "n": per_cat.size()})
    decomposition = decomposition.merge(
        cv_cat.assign(cv_categories=cv_from_moments(cv_cat["mean"].to_numpy(), cv_cat["sd"].to_numpy(),
                                                     cv_cat["n"].to_numpy()))[["cv_categories"]].reset_index(),
        on="model", how="left")
    decomposition["cv_leaves"] = cv_from_moments(decomposition["mean_error"].to_numpy(),
                                                 np.sqrt(decomposition["var_total"].to_numpy()),
                                                 decomposition["n_leaves"].to_numpy())
    return decomposition[list(HIERARCHY_COLUMNS)]


def leaf_errors(scores: pd.DataFrame) -> pd.DataFrame:
    """``model, category, domain, error`` of every leaf (missing categories pooled), sorted, for plotting."""
    data = _with_categories(scores)
    return data[["model", "category", "domain", "error"]].sort_values(
        ["model", "category", "domain"], kind="stable").reset_index(drop=True)


__all__ = [
    "CATEGORY_COLUMNS", "DECOMPOSITION_COLUMNS", "HIERARCHY_COLUMNS", "UNCATEGORISED", "category_table",
    "has_categories", "hierarchy_metrics", "leaf_errors", "variance_decomposition",
]
