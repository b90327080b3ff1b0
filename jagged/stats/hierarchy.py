"""Two-level jaggedness: leaves (domains) grouped into categories.

The hierarchy comes from the ``category`` column of the canonical table: given in a
CSV, or set by :mod:`jagged.readers.lmeval` from the lm-eval group structure (mmlu →
mmlu_stem → mmlu_abstract_algebra gives category ``mmlu_stem``).

Three views, all per model, all computed on the error rates e_d = 1 - s_d:

* :func:`category_table` -- one row per (model, category): the category score is the
  **unweighted mean of its leaves** (each leaf counts once, whatever its item count,
  the same convention as the macro score), and the spread of the leaves inside it;
* :func:`variance_decomposition` -- the population variance of e_d over leaves split
  into a between-category and a within-category part that add up to it exactly;
* :func:`hierarchy_metrics` -- the CV across leaves next to the CV across categories,
  and the decomposition.

Leaves without a category, when others have one, are pooled into the category
:data:`UNCATEGORISED` (with a warning).
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
    """Per-(model, category) scores and within-category spread.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical table with at least two categories.

    Returns
    -------
    pandas.DataFrame
        Columns ``model``, ``category``, ``n_leaves``, ``score`` (unweighted mean of the
        leaf scores), ``mean_error`` (1 - score), ``sd_error`` (population sd of the leaf
        errors inside the category), ``cv_error`` (sd_error / mean_error; NaN for a
        single leaf or no errors); sorted by model and category.

    Raises
    ------
    JaggedInputError
        Fewer than two categories.
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

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical table with at least two categories.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``n_leaves`` (D), ``n_categories``, ``mean_error``
        (ē), ``var_total``, ``var_between``, ``var_within`` and ``share_between``
        (var_between / var_total; NaN when var_total is 0).

    Notes
    -----
    With D leaves, category c holding n_c of them with mean error ē_c,

    .. math::

        \\underbrace{\\tfrac1D \\sum_d (e_d - \\bar e)^2}_{\\text{var\\_total}}
        = \\underbrace{\\sum_c \\tfrac{n_c}{D} (\\bar e_c - \\bar e)^2}_{\\text{var\\_between}}
        + \\underbrace{\\sum_c \\tfrac{n_c}{D} \\cdot \\tfrac1{n_c}\\sum_{d \\in c} (e_d - \\bar e_c)^2}
          _{\\text{var\\_within}}

    exactly (the cross term vanishes inside each category). Population variances
    (ddof=0) throughout, the same as ``cv_error``, so that
    ``cv_error**2 * mean_error**2 == var_total``. Categories are weighted by their
    number of leaves here, because the total is a mean over leaves; the CV across
    categories in :func:`hierarchy_metrics` weights them equally.
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
    """Jaggedness at both levels, per model.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical table with at least two categories.

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted) with ``n_leaves``, ``n_categories``,
        ``cv_leaves`` (CV of e_d across leaves: the ``cv_error`` of
        :func:`jagged.jaggedness`), ``cv_categories`` (CV across the category errors
        1 - category score, each category counted once), and ``var_total``,
        ``var_between``, ``var_within``, ``share_between`` from
        :func:`variance_decomposition`.

    Notes
    -----
    Population standard deviations (ddof=0). A CV is NaN when the mean error is 0 or
    there are fewer than two leaves (categories).
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
    """Leaves with their category and error rate, for plotting (missing categories pooled).

    Returns
    -------
    pandas.DataFrame
        ``model``, ``category``, ``domain``, ``error``; sorted by model, category, domain.
    """
    data = _with_categories(scores)
    return data[["model", "category", "domain", "error"]].sort_values(
        ["model", "category", "domain"], kind="stable").reset_index(drop=True)


__all__ = [
    "CATEGORY_COLUMNS", "DECOMPOSITION_COLUMNS", "HIERARCHY_COLUMNS", "UNCATEGORISED", "category_table",
    "has_categories", "hierarchy_metrics", "leaf_errors", "variance_decomposition",
]
