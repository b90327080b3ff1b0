"""The canonical per-domain score table and its validation.

Every input format converges to this one table:

========== ========== =====================================================
column     dtype      meaning
========== ========== =====================================================
model      category   model name (non-empty, stripped)
domain     category   domain name (non-empty, stripped)
score      float64    s_d(m), a fraction in [0, 1]
n_items    float64    items behind the score; NaN when unknown
category   category   coarser group of the domain; NaN when unknown
========== ========== =====================================================

Names are sorted pandas Categoricals, hashed once here; metrics work on the codes.
Validation happens once, in :func:`validate_scores`, and raises
:class:`~jagged.errors.JaggedInputError` naming the source, the column and the value.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.files import read_csv
from jagged.text import listing, plural

CANONICAL_COLUMNS: tuple[str, ...] = ("model", "domain", "score", "n_items", "category")
SCORE_SCALES: tuple[str, ...] = ("fraction", "percent")


def row_location(index_label: object, line_offset: int | None) -> str:
    """Describe where a row is: a file line when the offset is known, else a row label."""
    if line_offset is not None and isinstance(index_label, (int, np.integer)):
        return f"line {int(index_label) + line_offset}"
    return f"row {index_label!r}"


def cell_repr(value: object, width: int = 60) -> str:
    """Show a cell value for a message: strings quoted, numbers plain, long ones cut."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= width else text[: width - 3] + "...'"


def name_categories(raw: pd.Series, column: str, source: str, line_offset: int | None) -> pd.Categorical:
    """A name column as a sorted Categorical of stripped strings (distinct values only); empty names are an error."""
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    names = pd.Index(uniques).astype("string").str.strip()
    empty_unique = np.asarray((names == "").fillna(True), dtype=bool)
    bad = codes < 0
    if empty_unique.any():
        bad = bad | empty_unique[np.maximum(codes, 0)] & (codes >= 0)
    if bad.any():
        where = row_location(raw.index[int(np.argmax(bad))], line_offset)
        raise JaggedInputError(f"{source}: column '{column}' has an empty {column} name ({where})")
    values = np.asarray(names.astype(object))
    merged, remap = np.unique(values.astype(str), return_inverse=True)  # sorted; merges names equal after strip
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index(merged, dtype=object))


def check_percent_scale(largest: float, source: str) -> None:
    """Refuse ``--score-scale percent`` when every score as read is at most 1: they are fractions.

    Read as percentages they would give scores near 0.007 and silently wrong numbers.
    """
    if largest <= 1.0:
        raise JaggedInputError(f"{source}: every score is at most 1 (the largest is {largest:g}), so the scores are "
                               "fractions, not percentages; drop --score-scale percent")


def to_fraction(raw: pd.Series, column: str, source: str, *, score_scale: str = "fraction",
                line_offset: int | None = 2, whole: bool = True) -> pd.Series:
    """Convert a score column to float fractions in [0, 1], or raise a one-line error.

    ``"percent"`` divides by 100 before the range check. ``line_offset`` turns an integer row
    label into a file line. With ``whole`` the column holds every score of the table, so
    ``"percent"`` with every value at most 1 is refused (:func:`check_percent_scale`); False
    for one column of a wide table, checked as a whole by the caller.
    """
    if score_scale not in SCORE_SCALES:
        raise JaggedInputError(f"score scale must be one of {', '.join(SCORE_SCALES)}, not {score_scale!r}")
    if pd.api.types.is_numeric_dtype(raw.dtype):  # booleans too
        values = raw.astype("float64")
    else:
        values = pd.to_numeric(raw, errors="coerce").astype("float64")
        text = raw.astype("string").str.strip()
        nan_literal = text.str.lower().isin(["nan", "+nan", "-nan"]).fillna(False)
        bad = values.isna() & raw.notna() & (text != "") & ~nan_literal
        if bad.any():
            pos = int(np.argmax(bad.to_numpy()))
            raise JaggedInputError(
                f"{source}: column '{column}' has non-numeric value {cell_repr(raw.iloc[pos])} "
                f"({row_location(raw.index[pos], line_offset)})")
    arr = values.to_numpy()
    nan = np.isnan(arr)
    if nan.any():
        first = values.index[int(np.argmax(nan))]
        raise JaggedInputError(
            f"{source}: column '{column}' has a missing or NaN value ({row_location(first, line_offset)})")
    inf = np.isinf(arr)
    if inf.any():
        first = values.index[int(np.argmax(inf))]
        raise JaggedInputError(
            f"{source}: column '{column}' has an infinite value {arr[inf][0]} ({row_location(first, line_offset)})")
    if score_scale == "percent":
        if whole and len(arr):
            check_percent_scale(float(arr.max()), source)
        arr = arr / 100.0
        values = pd.Series(arr, index=values.index)
    out = (arr < 0) | (arr > 1)
    if out.any():
        first = values.index[int(np.argmax(out))]
        shown = raw.iloc[int(np.argmax(out))]
        hint = ""
        if score_scale == "fraction" and arr.min() >= 0 and arr.max() <= 100:
            hint = "; scores look like percentages, use --score-scale percent"
        scale = "[0, 100]" if score_scale == "percent" else "[0, 1]"
        raise JaggedInputError(
            f"{source}: column '{column}' has value {cell_repr(shown)} outside {scale} "
            f"({row_location(first, line_offset)}){hint}")
    return pd.Series(arr, index=values.index, name="score", dtype="float64")


#: Most items behind one score: 2**53, the largest whole number a float holds exactly (and a binomial draw takes).
MAX_N_ITEMS = 2**53


def _n_items(raw: pd.Series, source: str, line_offset: int | None) -> pd.Series:
    values = pd.to_numeric(raw, errors="coerce").astype("float64")
    bad = values.isna() & raw.notna() & (raw.astype("string").str.strip() != "")
    arr = values.to_numpy()
    bad_num = ~np.isnan(arr) & ((arr <= 0) | ~np.isfinite(arr) | (arr != np.round(arr)) | (arr > MAX_N_ITEMS))
    bad = bad.to_numpy() | bad_num
    if bad.any():
        first = values.index[int(np.argmax(bad))]
        raise JaggedInputError(
            f"{source}: column 'n_items' has value {cell_repr(raw.iloc[int(np.argmax(bad))])}, not a positive whole "
            f"number of at most 2**53 ({row_location(first, line_offset)})")
    return pd.Series(arr, index=values.index, name="n_items", dtype="float64")


_COLUMN_NAME = re.compile(r"^[\w][\w .()%#+-]{0,63}$")


def found_columns(frame: pd.DataFrame) -> str:
    """``found: a, b, c`` for a message, only when the header looks like a table's.

    A file that is no table (``/etc/shadow`` given as scores) would have its first line
    echoed; names are shown only for two or more short plain names, else only their count.
    """
    names = [str(c) for c in frame.columns]
    if len(names) >= 2 and all(_COLUMN_NAME.match(n) for n in names):
        return "found: " + ", ".join(names[:12])
    return f"found {len(names)} column(s) that do not look like a table header; not shown"


def validate_scores(frame: pd.DataFrame, source: str = "<table>", *, score_scale: str = "fraction",
                    line_offset: int | None = 2) -> pd.DataFrame:
    """Check a long table (``model``, ``domain``, ``score``, optional ``n_items``, ``category``) into canonical form.

    Other columns are ignored; exact duplicate (model, domain) rows are collapsed. Refused
    with a one-line error: an empty table, a missing column, an empty name, a non-numeric,
    NaN, infinite or out-of-range score, an invalid ``n_items``, a (model, domain) pair given
    twice with different scores (naming a column that tells them apart).
    """
    if len(frame.columns) == 0:
        raise JaggedInputError(f"{source}: the table has no columns")
    missing = [c for c in ("model", "domain", "score") if c not in frame.columns]
    if missing:
        raise JaggedInputError(f"{source}: missing column(s) {', '.join(missing)} ({found_columns(frame)})")
    if len(frame) == 0:
        raise JaggedInputError(f"{source}: the table has a header but no rows")
    model = name_categories(frame["model"], "model", source, line_offset)
    domain = name_categories(frame["domain"], "domain", source, line_offset)
    score = to_fraction(frame["score"], "score", source, score_scale=score_scale, line_offset=line_offset)
    if "n_items" in frame.columns:
        n_items = _n_items(frame["n_items"], source, line_offset).to_numpy()
    else:
        n_items = np.full(len(frame), np.nan)
    if "category" in frame.columns:
        cat = frame["category"].astype("string").str.strip()
        category = pd.Categorical(cat.where(cat != "").astype(object))
    else:
        category = pd.Categorical.from_codes(np.full(len(frame), -1), categories=pd.Index([], dtype=object))
    out = pd.DataFrame({"model": model, "domain": domain, "score": score.to_numpy(),
                        "n_items": n_items, "category": category}, index=frame.index)
    return _deduplicate(out, source, line_offset, raw=frame)


def _telling_apart(raw: pd.DataFrame | None, rows: pd.Index) -> str:
    """``; the rows differ in 'release' (...): choose with --where release=...`` for a duplicate error, or ""."""
    if raw is None or not rows.isin(raw.index).all():
        return ""
    extra = [c for c in raw.columns if c not in CANONICAL_COLUMNS]
    for column in extra:
        values = raw.loc[rows, column].astype("string").str.strip()
        if values.nunique(dropna=False) > 1:
            shown = list(dict.fromkeys(str(v) for v in values))
            return (f"; the rows differ in {column!r} ({listing(shown, 4, quote=True)}): choose with --where "
                    f"{column}={shown[-1]}")
    return ""


def _deduplicate(table: pd.DataFrame, source: str, line_offset: int | None,
                 raw: pd.DataFrame | None = None) -> pd.DataFrame:
    """Collapse exact duplicate (model, domain) rows; conflicting ones are an error."""
    n_domains = len(table["domain"].cat.categories)
    cells = len(table["model"].cat.categories) * n_domains
    key = table["model"].cat.codes.to_numpy().astype(np.int32 if cells < 2**31 else np.int64)
    key *= n_domains
    key += table["domain"].cat.codes.to_numpy()
    if cells <= 4 * len(key) + 10_000_000:
        counts = np.bincount(key, minlength=cells)
        if not (counts > 1).any():
            return table if isinstance(table.index, pd.RangeIndex) and table.index.start == 0 else (
                table.reset_index(drop=True))
        dup = counts[key] > 1
    else:
        dup = pd.Series(key).duplicated(keep=False).to_numpy()
    if dup.any():
        sub = table[dup].assign(_key=key[dup])
        spread = sub.groupby("_key")["score"].agg(["min", "max"])
        conflict = spread[spread["max"] != spread["min"]]
        if len(conflict):
            k = conflict.index[0]
            rows = sub[sub["_key"] == k]
            where = ", ".join(row_location(i, line_offset) for i in rows.index[:3])
            first = rows["score"].iloc[0]
            other = rows["score"][rows["score"] != first].iloc[0]
            raise JaggedInputError(
                f"{source}: model {str(rows['model'].iloc[0])!r}, domain {str(rows['domain'].iloc[0])!r} is "
                f"given twice with different scores {first:g} and {other:g} ({where})"
                + _telling_apart(raw, rows.index))
        keep = ~pd.Series(key).duplicated(keep="first").to_numpy()
        table = table[keep]
    if isinstance(table.index, pd.RangeIndex) and table.index.start == 0 and table.index.step == 1:
        return table
    return table.reset_index(drop=True)


def wide_to_long(frame: pd.DataFrame, source: str = "<table>", *, score_scale: str = "fraction",
                 line_offset: int | None = 2) -> pd.DataFrame:
    """A wide table (``model`` plus a score column per domain) as a long one; an empty cell: no score."""
    if "model" not in frame.columns:
        raise JaggedInputError(
            f"{source}: no 'model' column; expected long (model, domain, score) or wide "
            f"(model plus one column per domain) scores ({found_columns(frame)})")
    domain_cols = [c for c in frame.columns if c != "model"]
    if not domain_cols:
        raise JaggedInputError(f"{source}: wide table has a 'model' column but no domain columns")
    if len(frame) == 0:
        raise JaggedInputError(f"{source}: the table has a header but no rows")
    for col in domain_cols:
        if str(col).strip() == "" or str(col).startswith("Unnamed: "):
            raise JaggedInputError(f"{source}: a domain column has an empty header")
    frame = frame.copy()
    for col in domain_cols:
        cells = frame[col]
        present = cells.notna() & (cells.astype("string").str.strip() != "").fillna(False)
        converted = to_fraction(cells[present], str(col), source, score_scale=score_scale, line_offset=line_offset,
                                whole=False)
        frame[col] = converted.reindex(frame.index)
    if score_scale == "percent":
        largest = frame[domain_cols].max().max()
        if pd.notna(largest):
            check_percent_scale(100.0 * float(largest), source)
    long = frame.melt(id_vars="model", value_vars=domain_cols, var_name="domain",
                      value_name="score", ignore_index=False)
    long = long[long["score"].notna().to_numpy()]
    if len(long) == 0:
        raise JaggedInputError(f"{source}: wide table has no score values")
    long["domain"] = long["domain"].astype(str)
    return long


@dataclass(frozen=True)
class ItemCounts:
    """Item counts given for a table without them (``--n-items``): one for ``every`` domain, or ``by_domain``."""

    every: float | None = None
    by_domain: dict[str, float] = field(default_factory=dict)
    source: str = ""


#: What ``--n-items`` reads as a number rather than a file name.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _whole(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if np.isfinite(number) and 0 < number <= MAX_N_ITEMS and number == round(number) else None


def item_counts(value: Any) -> ItemCounts:
    """The ``n_items`` option: a positive whole number, or a ``domain,n_items`` CSV of one such count per domain."""
    numeric = isinstance(value, str) and _NUMBER.fullmatch(value.strip()) is not None
    if not isinstance(value, (str, Path)) or numeric:
        number = None if isinstance(value, bool) else _whole(value)
        if number is None:
            raise JaggedInputError(f"--n-items {str(value)[:60]!r}: not a positive whole number of at most 2**53")
        return ItemCounts(every=number, source=f"{number:g}")
    path = Path(value)
    if not os.path.isfile(path):  # os.path: a name too long for the file system is no file either
        raise JaggedInputError(f"--n-items {str(value)[:60]!r}: neither a positive whole number nor a file")
    frame = read_csv(path)
    missing = [c for c in ("domain", "n_items") if c not in frame.columns]
    if missing:
        raise JaggedInputError(f"{path.name}: missing column(s) {', '.join(missing)} (an --n-items file has "
                               f"domain,n_items; {found_columns(frame)})")
    counts = _n_items(frame["n_items"], path.name, 2)
    if counts.isna().any():
        raise JaggedInputError(f"{path.name}: column 'n_items' is empty (line {int(np.argmax(counts.isna())) + 2})")
    domains = pd.Series(name_categories(frame["domain"], "domain", path.name, 2)).astype(str)
    spread = counts.groupby(domains.to_numpy()).agg(["min", "max"])
    twice = spread[spread["min"] != spread["max"]]
    if len(twice):
        raise JaggedInputError(f"{path.name}: domain {twice.index[0]!r} has two counts, {twice['min'].iloc[0]:g} "
                               f"and {twice['max'].iloc[0]:g}")
    return ItemCounts(by_domain={str(k): float(v) for k, v in spread["min"].items()}, source=path.name)


def with_item_counts(scores: pd.DataFrame, counts: ItemCounts, source: str) -> pd.DataFrame:
    """A canonical table with ``n_items`` from the ``n_items`` option.

    Policy: a table with item counts of its own refuses the option (one or the other, never
    a mix); a domain the counts file lacks is an error naming it.
    """
    if scores["n_items"].notna().any():
        raise JaggedInputError(f"{source}: the table has item counts (n_items) of its own; --n-items is for tables "
                               "without them (give one or the other)")
    if counts.every is not None:
        return scores.assign(n_items=counts.every)
    domains = [str(d) for d in scores["domain"].cat.categories]
    lacking = [d for d in domains if d not in counts.by_domain]
    if lacking:
        raise JaggedInputError(f"{counts.source}: no n_items for {plural(len(lacking), 'domain')} of {source}: "
                               f"{listing(lacking, 6, quote=True)}")
    lookup = np.array([counts.by_domain[d] for d in domains], dtype="float64")
    return scores.assign(n_items=lookup[scores["domain"].cat.codes.to_numpy()])


def summarize(table: pd.DataFrame) -> dict[str, object]:
    """Counts that describe a canonical table (``jagged validate`` and reports).

    Returns ``rows``, ``models``, ``domains``, ``complete_models``, ``incomplete`` (names),
    ``score_min``, ``score_max``, ``has_n_items`` (every score has a count), ``n_items_known``,
    ``without_n_items`` (models lacking a count when some scores have one), ``categories``.
    """
    n_domains = table["domain"].nunique()
    per_model = table.groupby("model", sort=True, observed=True)["domain"].nunique()
    incomplete = per_model[per_model < n_domains].index.tolist()
    categories = table["category"].dropna().nunique() if "category" in table else 0
    unknown = table["n_items"].isna().to_numpy()
    without = sorted({str(m) for m in table["model"][unknown]}) if 0 < unknown.sum() < len(table) else []
    return {
        "rows": int(len(table)),
        "models": int(per_model.size),
        "domains": int(n_domains),
        "complete_models": int(per_model.size - len(incomplete)),
        "incomplete": [str(m) for m in incomplete],
        "score_min": float(table["score"].min()),
        "score_max": float(table["score"].max()),
        "has_n_items": bool(not unknown.any()),
        "n_items_known": int(len(table) - unknown.sum()),
        "without_n_items": without,
        "categories": int(categories),
    }
