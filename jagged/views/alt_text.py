"""Text alternatives for the report's figures: what each figure shows, for this data.

Each says what kind of chart it is, its rows and axes, which models it leaves out, and the
extremes a sighted reader would see first. Names go in as they are; the report template
escapes the attribute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from jagged.text import plural
from jagged.views.overview import (
    LABEL_ALL_MAX,
    LABEL_ENDS,
    by_jaggedness,
    error_matrix,
    left_out,
    model_order,
    per_model,
)


def _fmt(value: float) -> str:
    return f"{value:.2f}" if np.isfinite(value) else "undefined"


def cut_note(metrics: pd.DataFrame, limit: int | None) -> str:
    """How many models a top/bottom cut shows, as a clause ("" when it shows them all).

    E.g. ``"40 of 300 models are shown: the 20 most and the 20 least jagged; the other 260 are
    summarised in one shaded row (their median error per domain)"``.
    """
    shown, cut = model_order(metrics, limit=limit)
    if not cut:
        return ""
    hidden = len(left_out(metrics, limit=limit))
    return (f"{len(shown)} of {len(shown) + hidden} models are shown: the {cut} most and the "
            f"{len(shown) - cut} least jagged; the other {hidden} are summarised in one shaded row "
            "(their median error per domain)")


def _as_sentence(clause: str) -> str:
    """A clause as a sentence to append (leading space, capital, full stop); "" stays ""."""
    return f" {clause[0].upper()}{clause[1:]}." if clause else ""


def _extremes(metrics: pd.DataFrame) -> str:
    rows = by_jaggedness(metrics)
    if rows.empty:
        return ""
    top, low = rows.iloc[0], rows.iloc[-1]
    if len(rows) == 1:
        return f" The only model with a defined cv_error is {top['model']} ({_fmt(top['cv_error'])})."
    return (f" Most jagged: {top['model']} (cv_error {_fmt(top['cv_error'])}); least jagged: "
            f"{low['model']} (cv_error {_fmt(low['cv_error'])}).")


def dispersion_alt(scores: pd.DataFrame, metrics: pd.DataFrame, *, limit: int | None = None) -> str:
    """Alt text of :func:`jagged.plots.dispersion.error_dispersion`."""
    n_models = per_model(metrics)["model"].nunique()
    n_domains = scores["domain"].nunique()
    text = (f"Dot plot of error rates (1 − score), one row per model ({plural(n_models, 'model')}), most "
            f"jagged at the top; each row has one dot per domain ({plural(n_domains, 'domain')}) at its "
            "error rate, a bar at the model's mean error, and its cv_error at the right.")
    return text + _as_sentence(cut_note(metrics, limit)) + _extremes(metrics)


def heatmap_alt(scores: pd.DataFrame, metrics: pd.DataFrame, *, limit: int | None = None) -> str:
    """Alt text of :func:`jagged.plots.dispersion.error_heatmap` (domains ordered by median error)."""
    order = error_matrix(scores, order="error").columns[1:].tolist()
    n_models = per_model(metrics)["model"].nunique()
    text = (f"Heatmap of error rates (1 − score): {plural(n_models, 'model')} in rows, most jagged at the "
            f"top; {plural(len(order), 'domain')} in columns")
    if len(order) > 1:
        text += f", from the lowest median error ({order[0]}) on the left to the highest ({order[-1]}) on the right"
    text += "; darker cells are more errors, grey cells have no score."
    return text + _as_sentence(cut_note(metrics, limit)) + " The numbers are in the table below the figure."


def scatter_alt(metrics: pd.DataFrame) -> str:
    """Alt text of :func:`jagged.plots.dispersion.cv_vs_macro` with its default labels."""
    rows = per_model(metrics)
    defined = rows[np.isfinite(rows["cv_error"].to_numpy(dtype=float))]
    text = (f"Scatter plot of cv_error (up) against macro score (across), one point per model "
            f"({plural(len(defined), 'model')} with a defined cv_error")
    text += (", each labelled)." if len(defined) <= LABEL_ALL_MAX
             else f"; the {LABEL_ENDS} most and {LABEL_ENDS} least jagged labelled).")
    if len(defined):
        best = defined.sort_values(["macro_score", "model"], ascending=[False, True], kind="mergesort").iloc[0]
        text += f" Highest macro score: {best['model']} ({_fmt(best['macro_score'])})."
    return text + _extremes(metrics)


def subset_note(metrics: pd.DataFrame, limit: int | None, which: str) -> str:
    """`` Of the 300 models, only the 40 at either end by wedge are drawn.`` ("" when all are), to append.

    ``which`` says which models the plot keeps, with ``{limit}`` for the number.
    """
    n_models = per_model(metrics)["model"].nunique()
    if limit is None or n_models <= limit:
        return ""
    return f" Of the {n_models} models, only {which.format(limit=limit)} are drawn."


def forest_alt(metrics: pd.DataFrame, limit: int | None) -> str:
    """Alt text of :func:`jagged.plots.uncertainty.cv_forest`."""
    return ("Forest plot: for each model, the raw cv_error (circle), the cv_error with sampling noise removed "
            "(diamond) and its bootstrap interval (line); models whose jaggedness is indistinguishable from "
            "noise in grey and marked with a star."
            + subset_note(metrics, limit, "the {limit} at either end by corrected cv_error"))


def strip_alt(model: str) -> str:
    """Alt text of :func:`jagged.plots.hierarchy.category_strip` for one model."""
    return (f"Dot plot for {model}: one row per category, a dot per domain at its error rate, a bar at the "
            "category's mean error and a dashed line at the model's mean error.")


MACRO_VS_DEP_ALT = ("Scatter plot of deployment-weighted score against macro score, one point per model and "
                    "profile, with the line y = x.")


def wedge_alt(metrics: pd.DataFrame, limit: int | None) -> str:
    """Alt text of :func:`jagged.plots.deployment.wedge_dots`."""
    return ("Dot chart of the wedge (macro score minus deployment-weighted score) per model, one dot per "
            "profile, models sorted by their mean wedge."
            + subset_note(metrics, limit, "the {limit} at either end by mean wedge"))


def slope_alt(metrics: pd.DataFrame, profile: str, limit: int | None) -> str:
    """Alt text of :func:`jagged.plots.deployment.rank_slope`."""
    return (f"Slope chart of rank change from the macro ranking to the ranking under profile {profile}."
            + subset_note(metrics, limit, "those ranked in the top {limit} by either ranking"))


def exposure_alt(model: str) -> str:
    """Alt text of :func:`jagged.plots.deployment.exposure_dots`."""
    return (f"Dot chart for {model}: domains in rows from highest to lowest error rate, with each profile's "
            "exposure weight as a dot and the uniform weight as a dashed line.")


def drift_alt(model: str) -> str:
    """Alt text of :func:`jagged.plots.deployment.drift_bound`."""
    return (f"Line chart of the largest possible |wedge| against the spread of the weights for {model}, with "
            "each profile's actual wedge and bound marked.")
