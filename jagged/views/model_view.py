"""One model against the field: the tables behind ``notebooks/model_report.ipynb``.

Pure functions on the canonical per-domain table and the metrics table of
:func:`jagged.analysis.metrics_table`; the notebook only calls them and shows the results.
Everything is vectorised over models and domains (a models × domains error matrix).
"""

from __future__ import annotations

import difflib
import warnings
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.deployment import score_matrix
from jagged.stats.intervals import wilson_interval
from jagged.stats.uncertainty import NOT_TESTED
from jagged.views.overview import per_model

DOMAIN_COLUMNS: tuple[str, ...] = (
    "domain", "error", "error_lo", "error_hi", "n_items", "field_n", "field_min", "field_q25",
    "field_median", "field_q75", "field_max", "vs_median", "rank", "ranked",
)
#: Columns of :mod:`jagged.stats.uncertainty` that :func:`jaggedness_rank` keeps when present.
NOISE_COLUMNS: tuple[str, ...] = ("cv_error_corrected", "noise_share", "p_equal_error", "noise_flag")
WEDGE_COLUMNS: tuple[str, ...] = (
    "profile", "macro_score", "dep_score", "wedge", "wedge_bound", "exposure_error_corr", "rank_macro",
    "rank_dep",
)


def _model_names(scores: pd.DataFrame) -> list[str]:
    return sorted(str(m) for m in pd.unique(scores["model"]))


def resolve_model(scores: pd.DataFrame, model: str = "") -> str:
    """The model a report is about.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    model : str
        A model name; ``""`` means the first model in sorted order.

    Returns
    -------
    str
        The model name as it appears in ``scores``.

    Raises
    ------
    JaggedInputError
        No such model (the message suggests close names).
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


def domain_errors(scores: pd.DataFrame, model: str, *, ci: float = 0.95) -> pd.DataFrame:
    """A model's error rate in each of its domains, against the other models'.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical per-domain table.
    model : str
        The model (see :func:`resolve_model`).
    ci : float
        Level of the per-domain interval.

    Returns
    -------
    pandas.DataFrame
        One row per domain the model has a score in, worst (highest error) first, ties
        by domain name; columns

        ``domain``, ``error``
            the domain and e_d = 1 − s_d;
        ``error_lo``, ``error_hi``
            Wilson interval of e_d from ``n_items`` (NaN when unknown), see
            :func:`jagged.stats.intervals.wilson_interval`;
        ``n_items``
            items behind the score (NaN when unknown);
        ``field_n``
            how many *other* models have a score in the domain;
        ``field_min`` … ``field_max``
            minimum, quartiles, median and maximum of their error rates (NaN when
            ``field_n`` is 0);
        ``vs_median``
            ``error − field_median`` (positive: worse than the typical model);
        ``rank``, ``ranked``
            the model's place among all ``ranked`` models with a score in the domain,
            by error, lowest first (1 = fewest errors; ties share the best place).

    Raises
    ------
    JaggedInputError
        When the model has no scores.
    """
    wide = score_matrix(scores)
    if model not in wide.index:
        raise JaggedInputError(f"no scores for model {model!r}")
    errors = 1.0 - wide.to_numpy(dtype=float)            # M × D
    row = wide.index.get_loc(model)
    own = errors[row]
    others = np.delete(errors, row, axis=0)
    has = ~np.isnan(own)
    field_n = (~np.isnan(others)).sum(axis=0)
    if len(others):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, as documented
            q = np.nanquantile(others, [0.0, 0.25, 0.5, 0.75, 1.0], axis=0)
    else:
        q = np.full((5, errors.shape[1]), np.nan)
    with np.errstate(invalid="ignore"):
        better = (others < own[None, :]).sum(axis=0)
    n_items = _model_items(scores, model, wide.columns)
    lo, hi = wilson_interval(own, n_items, ci)
    out = pd.DataFrame({
        "domain": wide.columns.to_numpy(dtype=object),
        "error": own, "error_lo": lo, "error_hi": hi, "n_items": n_items,
        "field_n": field_n.astype(np.int64),
        "field_min": q[0], "field_q25": q[1], "field_median": q[2], "field_q75": q[3], "field_max": q[4],
        "vs_median": own - q[2],
        "rank": (better + 1).astype(np.int64), "ranked": (field_n + 1).astype(np.int64),
    })[has]
    return out.sort_values(["error", "domain"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def _model_items(scores: pd.DataFrame, model: str, domains: pd.Index) -> np.ndarray:
    sub = scores.loc[scores["model"] == model, ["domain", "n_items"]]
    items = pd.Series(sub["n_items"].to_numpy(dtype=float), index=sub["domain"].astype(object).to_numpy())
    return items.reindex(list(domains)).to_numpy(dtype=float)


def extremes(errors: pd.DataFrame, n: int = 3) -> pd.DataFrame:
    """The model's best and worst domains.

    Parameters
    ----------
    errors : pandas.DataFrame
        Output of :func:`domain_errors`.
    n : int
        How many of each; with fewer than ``2 n`` domains, each side gets half of them
        (rounded down, at least 1), so no domain shows twice.

    Returns
    -------
    pandas.DataFrame
        ``which`` ("best" or "worst"), then ``domain``, ``error``, ``field_median``,
        ``vs_median``, ``rank``, ``ranked``; best first (lowest error first), then worst
        (highest error first).
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

    ``cv_error_lo`` / ``cv_error_hi`` contain ``cv_error_corrected``, not the raw ``cv_error``
    (:data:`jagged.stats.intervals.ESTIMATE_OF`).
    """
    from jagged.stats.intervals import ESTIMATE_OF

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


def jaggedness_rank(table: pd.DataFrame, model: str) -> pd.DataFrame:
    """A model's jaggedness and level, with its place among the models.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.analysis.metrics_table` (profile rows are reduced to
        one row per model).
    model : str
        The model.

    Returns
    -------
    pandas.DataFrame
        One row: ``model``, ``n_domains``, ``complete``, ``macro_score``,
        ``macro_rank`` (1 = highest macro score), ``mean_error``, ``sd_error``,
        ``cv_error``, ``cv_rank`` (1 = most jagged), ``ranked`` (models with a defined
        ``cv_error``), ``field_median_cv`` (median ``cv_error`` of the other models),
        the :data:`NOISE_COLUMNS` the table has, then any ``*_lo`` / ``*_hi`` interval
        columns the table carries next to the value each contains (``cv_error_lo`` after
        ``cv_error_corrected``). Ranks are competition ranks
        (ties share the best place); a model whose ``cv_error`` is undefined has
        ``cv_rank`` missing.
    """
    keep = [c for c in table.columns if c not in ("profile",)]
    rows = table[keep].drop_duplicates("model", keep="first").reset_index(drop=True) \
        if "profile" in table.columns else table.reset_index(drop=True)
    base = per_model(rows)
    if model not in set(base["model"]):
        raise JaggedInputError(f"no metrics for model {model!r}")
    cv = base["cv_error"].to_numpy(dtype=float)
    macro = base["macro_score"].to_numpy(dtype=float)
    mine = int(np.flatnonzero(base["model"].to_numpy(dtype=object) == model)[0])
    finite = np.isfinite(cv)
    others = finite.copy()
    others[mine] = False
    out = rows.iloc[[mine]].reset_index(drop=True)
    cv_rank = pd.array([int((cv[finite] > cv[mine]).sum() + 1)] if finite[mine] else [pd.NA], dtype="Int64")
    macro_rank = int((macro[np.isfinite(macro)] > macro[mine]).sum() + 1)
    out["macro_rank"] = np.int64(macro_rank)
    out["cv_rank"] = cv_rank
    out["ranked"] = np.int64(finite.sum())
    out["field_median_cv"] = float(np.median(cv[others])) if others.any() else np.nan
    order = ["model", "n_domains", "complete", "macro_score", "macro_rank", "mean_error", "sd_error", "cv_error",
             "cv_rank", "ranked", "field_median_cv"]
    order += [c for c in NOISE_COLUMNS if c in out.columns]
    return out[_with_intervals(order, out)]


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
    """:func:`jaggedness_rank`'s one row turned into a readable column of facts.

    Parameters
    ----------
    rank : pandas.DataFrame
        Output of :func:`jaggedness_rank`.

    Returns
    -------
    pandas.DataFrame
        ``measure`` (a label from :data:`CARD_LABELS`), ``column`` (the metrics-table
        column), ``value`` (the value as it is; a ``noise_flag`` that could not be tested
        reads "not tested (…)" with the reason, :func:`untested_reason`), and ``lo`` and
        ``hi`` (the interval that contains the value, :func:`interval_of`: the raw
        ``cv_error`` has none) only when at least one interval exists: a card whose every
        interval cell would be empty has no interval columns. One row per column of
        ``rank`` except ``model`` and the interval columns.
    """
    row = rank.iloc[0]
    names = [c for c in rank.columns if c != "model" and not (c.endswith(("_lo", "_hi")) and c[:-3] in rank.columns)]
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
    """The model's deployment-weighted score and wedge under each profile.

    Parameters
    ----------
    table : pandas.DataFrame
        Output of :func:`jagged.analysis.metrics_table` with weights or profiles (one row
        per profile × model); without a ``profile`` column the result is empty.
    model : str
        The model.

    Returns
    -------
    pandas.DataFrame
        One row per profile, in the table's order: :data:`WEDGE_COLUMNS` (and the
        ``dep_score`` / ``wedge`` interval columns next to them, when present), ``note``. ``wedge = macro_score −
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
    """One sentence on a model's jaggedness and level (from :func:`jaggedness_rank`)."""
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

#: Formats of :func:`jaggedness_rank`'s table (intervals inherit their metric's format).
RANK_FORMATS: dict[str, str] = {
    "macro_score": _F4, "mean_error": _F4, "sd_error": _F4, "cv_error": _F4, "field_median_cv": _F4,
    "cv_error_corrected": _F4, "noise_share": "{:.0%}", "p_equal_error": "{:.2g}",
    **{f"{c}_{s}": _F4 for c in ("macro_score", "mean_error", "sd_error", "cv_error") for s in ("lo", "hi")},
}
def _card_value(value: Any) -> str:
    """Display text of a :func:`rank_card` value (its column mixes counts, flags and numbers)."""
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and np.isnan(value)):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}" if 0 < abs(value) < 1e-3 else f"{value:.4f}"
    return str(value)


#: Formats of :func:`rank_card`.
CARD_FORMATS: dict[str, Any] = {"value": _card_value, "lo": _F4, "hi": _F4}
#: Formats of :func:`domain_errors` and :func:`extremes`.
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

    When the table carries the noise columns of :mod:`jagged.stats.uncertainty` and the model is
    flagged as noise-dominated, that module's sentence for it is added.
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
        from jagged.views.uncertainty_text import noise_sentences

        text = " ".join([text, *noise_sentences(table[table["model"] == model])])
    return text
