"""One model against the field: the tables and sentences of ``notebooks/model_report.ipynb``."""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.intervals import ESTIMATE_OF
from jagged.text import NOT_TESTED
from jagged.views.display import cell_text
from jagged.views.uncertainty_text import noise_sentences

#: Columns of :mod:`jagged.stats.uncertainty` that :func:`rank_card` shows when present.
NOISE_COLUMNS: tuple[str, ...] = ("cv_error_corrected", "noise_share", "p_equal_error", "noise_flag")
WEDGE_COLUMNS: tuple[str, ...] = (
    "profile", "macro_score", "dep_score", "wedge", "wedge_bound", "exposure_error_corr", "rank_macro",
    "rank_dep",
)


def _model_names(scores: pd.DataFrame) -> list[str]:
    return sorted(str(m) for m in pd.unique(scores["model"]))


def resolve_model(scores: pd.DataFrame, model: str = "") -> str:
    """The model a report is about, as ``scores`` spells it (``""``: the first by name).

    An unknown name raises :class:`JaggedInputError` suggesting close names.
    """
    names = _model_names(scores)
    if not names:
        raise JaggedInputError("the score table has no models")
    chosen = names[0] if model == "" else str(model)
    if chosen not in set(names):
        close = difflib.get_close_matches(chosen, names, n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise JaggedInputError(f"no model {chosen!r} in the scores ({len(names)} models){hint}")
    return chosen


def extremes(errors: pd.DataFrame, n: int = 3) -> pd.DataFrame:
    """The model's ``n`` best and worst domains (:func:`jagged.stats.metrics.domain_errors` rows), best first.

    With fewer than ``2 n`` domains each side gets half of them (at least 1), so no domain
    shows twice. Columns ``which`` ("best" / "worst"), ``domain``, ``error``,
    ``field_median``, ``vs_median``, ``rank``, ``ranked``.
    """
    if n < 1:
        raise JaggedInputError(f"the number of best and worst domains must be at least 1, not {n}")
    k = min(n, max(len(errors) // 2, 1))
    cols = ["domain", "error", "field_median", "vs_median", "rank", "ranked"]
    best = errors.iloc[::-1].head(k)[cols]
    worst = errors.head(k)[cols] if len(errors) > 1 else errors.iloc[0:0][cols]
    out = pd.concat([best.assign(which="best"), worst.assign(which="worst")], ignore_index=True)
    return out[["which"] + cols]


def interval_columns(table: pd.DataFrame) -> list[str]:
    """Base names ``x`` for which a table has both ``x_lo`` and ``x_hi`` columns, in order."""
    names = [str(c) for c in table.columns]
    present = set(names)
    return [c[:-3] for c in names if c.endswith("_lo") and f"{c[:-3]}_hi" in present]


def interval_of(column: str, table: pd.DataFrame) -> str | None:
    """The base name ``x`` of the ``x_lo`` / ``x_hi`` interval that contains ``column`` (None: no interval).

    ``cv_error_lo`` / ``_hi`` contain ``cv_error_corrected``, not the raw ``cv_error``
    (:data:`jagged.stats.intervals.ESTIMATE_OF`).
    """
    for stat in interval_columns(table):
        if ESTIMATE_OF.get(stat, stat) == column:
            return stat
    return None


def _with_intervals(columns: list[str], table: pd.DataFrame) -> list[str]:
    out: list[str] = []
    for c in columns:
        out.append(c)
        stat = interval_of(c, table)
        if stat is not None:
            out += [f"{stat}_lo", f"{stat}_hi"]
    return out


#: The rows of :func:`rank_card`, in order (those :func:`jagged.stats.metrics.jaggedness_rank` has).
RANK_COLUMNS: tuple[str, ...] = ("n_domains", "complete", "macro_score", "macro_rank", "mean_error", "sd_error",
                                 "cv_error", "cv_rank", "ranked", "field_median_cv", *NOISE_COLUMNS)
#: Labels of :func:`rank_card` rows.
CARD_LABELS: dict[str, str] = {
    "n_domains": "domains scored", "complete": "has every domain", "macro_score": "macro score",
    "macro_rank": "place by macro score (1 = highest)", "mean_error": "mean error", "sd_error": "sd of errors",
    "cv_error": "cv_error (jaggedness)", "cv_rank": "place by cv_error (1 = most jagged)",
    "ranked": "models with a cv_error", "field_median_cv": "other models' median cv_error",
    "cv_error_corrected": "cv_error with expected sampling noise removed",
    "noise_share": "share of the spread expected from sampling noise",
    "p_equal_error": "p-value of 'equal error in every domain'", "noise_flag": "indistinguishable from noise",
}


def rank_card(rank: pd.DataFrame) -> pd.DataFrame:
    """:func:`jagged.stats.metrics.jaggedness_rank`'s row as a column of facts, one per :data:`RANK_COLUMNS` entry.

    ``measure`` (:data:`CARD_LABELS`), ``column``, ``value`` (a ``noise_flag`` that could not be
    tested reads "not tested (…)", :func:`untested_reason`), and ``lo`` / ``hi`` of the interval
    that contains the value (:func:`interval_of`), only when at least one interval exists.
    """
    row = rank.iloc[0]
    names = [c for c in RANK_COLUMNS if c in rank.columns]
    of = [interval_of(c, rank) for c in names]
    lo = pd.to_numeric(pd.Series([row.get(f"{i}_lo", np.nan) if i else np.nan for i in of], dtype=object),
                       errors="coerce")
    hi = pd.to_numeric(pd.Series([row.get(f"{i}_hi", np.nan) if i else np.nan for i in of], dtype=object),
                       errors="coerce")
    values = [row[c] for c in names]
    if "noise_flag" in names and pd.isna(row["noise_flag"]):
        values[names.index("noise_flag")] = f"{NOT_TESTED} ({untested_reason(row)})"
    out = pd.DataFrame({
        "measure": [CARD_LABELS.get(c, c) for c in names], "column": names,
        "value": pd.Series(values, dtype=object), "lo": lo, "hi": hi,
    })
    if not (lo.notna() | hi.notna()).any():
        out = out.drop(columns=["lo", "hi"])
    return out


def untested_reason(row: pd.Series) -> str:
    """Why a model's ``noise_flag`` is missing: no defined cv_error, or no item counts."""
    if not np.isfinite(float(pd.to_numeric(row.get("cv_error", np.nan), errors="coerce"))):
        return "cv_error undefined"
    return "no item counts"


def model_wedges(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """The model's deployment-weighted score and wedge under each profile, in the table's order.

    :data:`WEDGE_COLUMNS` (with the ``dep_score`` / ``wedge`` interval columns beside them when
    present) and ``note``; empty without a ``profile`` column. ``wedge = macro_score −
    dep_score``: positive when the profile leans on the model's weaker domains.
    """
    if "profile" not in table.columns:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "profile" else float) for c in WEDGE_COLUMNS})
    rows = table[table["model"] == model]
    cols = [c for c in WEDGE_COLUMNS if c in rows.columns]
    cols = [x for c in cols for x in (_with_intervals([c], rows) if c in ("dep_score", "wedge") else [c])]
    if "note" in rows.columns:
        cols.append("note")
    return rows[cols].reset_index(drop=True)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def describe_rank(rank: pd.DataFrame) -> str:
    """One sentence on a model's jaggedness and level (from :func:`jagged.stats.metrics.jaggedness_rank`)."""
    r = rank.iloc[0]
    level = f"macro score {r['macro_score']:.3f}, {_ordinal(int(r['macro_rank']))} highest"
    if pd.isna(r["cv_rank"]):
        return f"{r['model']} has no defined cv_error ({level})."
    place = "the most jagged" if int(r["cv_rank"]) == 1 else f"the {_ordinal(int(r['cv_rank']))} most jagged"
    field = "" if pd.isna(r["field_median_cv"]) else f"; the other models' median is {r['field_median_cv']:.3f}"
    return (f"{r['model']} has cv_error {r['cv_error']:.3f}, {place} of {int(r['ranked'])} models "
            f"({level}){field}.")


def describe_extremes(ext: pd.DataFrame) -> str:
    """One sentence naming the best and the worst domain (from :func:`extremes`)."""
    best = ext[ext["which"] == "best"]
    worst = ext[ext["which"] == "worst"]
    if best.empty or worst.empty:
        return "Only one domain: no best or worst to compare."
    b, w = best.iloc[0], worst.iloc[0]
    text = (f"Best domain: {b['domain']} (error {b['error']:.3f}, field median {b['field_median']:.3f}). "
            f"Worst domain: {w['domain']} (error {w['error']:.3f}, field median {w['field_median']:.3f})")
    if b["error"] > 0:
        return text + f"; its error rate is {w['error'] / b['error']:.1f}× the best domain's."
    return text + "."


# ---------------------------------------------------------------------------------------
# Display text and formats for the notebook (no numbers are computed below)

_F3 = "{:.3f}"
_F4 = "{:.4f}"
_COUNT = "{:.0f}"


def _card_value(value: Any) -> str:
    """Display text of a :func:`rank_card` value (counts, flags, numbers; 4 significant digits below 0.001)."""
    tiny = isinstance(value, (float, np.floating)) and 0 < abs(value) < 1e-3
    return f"{value:.4g}" if tiny else cell_text(value)


#: Formats of :func:`rank_card`.
CARD_FORMATS: dict[str, Any] = {"value": _card_value, "lo": _F4, "hi": _F4}
#: Formats of :func:`jagged.stats.metrics.domain_errors` and :func:`extremes`.
DOMAIN_FORMATS: dict[str, str] = {
    "n_items": _COUNT,
    **{c: _F3 for c in ("error", "error_lo", "error_hi", "field_min", "field_q25", "field_median",
                        "field_q75", "field_max")},
    "vs_median": "{:+.3f}",
}
#: Formats of :func:`model_wedges`.
WEDGE_FORMATS: dict[str, str] = {
    **{c: _F4 for c in ("macro_score", "dep_score", "wedge_bound")},
    "wedge": "{:+.4f}", "exposure_error_corr": "{:+.3f}",
    **{f"{c}_{s}": _F4 for c in ("dep_score", "wedge") for s in ("lo", "hi")},
}
NO_PROFILES_TEXT = ("No deployment profiles were given (parameters weights and profiles), so there is no "
                    "wedge to show. Pass a weights file, or the built-in profile 'items'.")


def field_alt_text(errors: pd.DataFrame, model: str) -> str:
    """Alt text of the field plot: what it shows, and the worst and best domain."""
    text = (f"Dot plot of {model}'s error rate in each of {len(errors)} domains, worst first, over the "
            f"range, middle half and median of the other models' error rates.")
    if len(errors):
        worst, best = errors.iloc[0], errors.iloc[-1]
        text += (f" Worst: {worst['domain']} at {worst['error']:.3f}; best: {best['domain']} at "
                 f"{best['error']:.3f}.")
    return text


def describe_intervals(table: pd.DataFrame, errors: pd.DataFrame, model: str, ci: float) -> str:
    """Say which intervals this report has (per-domain Wilson, bootstrap metric intervals).

    With the noise columns of :mod:`jagged.stats.uncertainty`, their sentences for the model
    (:func:`jagged.views.uncertainty_text.noise_sentences`) are added.
    """
    known = int(np.isfinite(errors["error_lo"].to_numpy(dtype=float)).sum()) if len(errors) else 0
    if known == len(errors) and known:
        domain = f"Every domain's error rate has a {ci:.0%} Wilson interval from its item count."
    elif known:
        domain = (f"{known} of {len(errors)} domains have a {ci:.0%} Wilson interval; the others have no "
                  f"item count.")
    else:
        domain = "The input gives no item counts, so the domain error rates have no interval."
    mine = table[table["model"] == model]
    asked = interval_columns(table)
    metrics = [c for c in asked
               if (np.isfinite(pd.to_numeric(mine[f"{c}_lo"], errors="coerce").to_numpy(dtype=float))
                   & np.isfinite(pd.to_numeric(mine[f"{c}_hi"], errors="coerce").to_numpy(dtype=float))).any()]
    if metrics:
        text = domain + f" Bootstrap intervals ({ci:.0%}) are shown for: {', '.join(metrics)}."
    elif asked:
        given = mine["interval_note"].tolist() if "interval_note" in mine.columns else []
        notes = [n for n in given if isinstance(n, str) and n]
        why = (notes[0].removeprefix("no interval: ") if notes else
               "the scores carry no item counts, so their sampling noise is unknown" if not known else
               "the bootstrap gave no interval for this model")
        text = domain + f" There are no bootstrap intervals for this model's metrics: {why}."
    else:
        text = domain + (" No bootstrap intervals for the model-level metrics (parameter bootstrap is 0, or "
                         "the data do not allow them).")
    if {"noise_flag", "noise_share", "cv_error_corrected", "p_equal_error"} <= set(table.columns):
        text = " ".join([text, *noise_sentences(table[table["model"] == model])])
    return text
