"""Item-level results in memory: validate them and aggregate them to canonical per-domain scores.

An item-level table has one row per (model, item):

========== ===================================================================
column     meaning
========== ===================================================================
model      model name
domain     the domain the item belongs to (one domain per item)
item       item identifier (``item_id`` is accepted as an alias)
correct    1 / 0, or partial credit in [0, 1]
category   optional coarser group of the domain (constant within a domain)
choice     optional: the option the model chose (empty: no answer extracted)
key        optional: the option scored as correct for that model
n_options  optional: how many options the item had for that model
text       optional: the question as the benchmark states it
options    optional: the options, a JSON list of their texts (option k is
           letter A + k), or any other text as written (``A) … | B) …``)
========== ===================================================================

``text`` and ``options`` are one bounded value per item (:func:`cap_text`,
:func:`options_text`), untrusted: stored as given, escaped where shown. ``choice``, ``key``
and ``n_options`` are checked by :mod:`jagged.readers.choices`. Other columns are ignored.
Aggregation: ``score`` = mean of ``correct`` over the items the model has in the domain,
``n_items`` their number; items a model lacks are counted (coverage), never imputed. A
Parquet file of more than :data:`IN_MEMORY_MAX_ROWS` rows is aggregated out of core by
:mod:`jagged.readers.items_parquet`, from the SQL columns of :func:`parquet_columns`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers import choices
from jagged.readers.canonical import cell_repr, name_categories, row_location, validate_scores
from jagged.readers.choices import answers_summary, sql_label
from jagged.readers.dataset import Dataset
from jagged.readers.files import read_csv
from jagged.readers.reader import mapped
from jagged.resources import data_dir

ITEM_COLUMNS: tuple[str, ...] = ("model", "domain", "item", "correct")
ITEM_ALIASES: dict[str, str] = {"item_id": "item"}
#: Item-level Parquet files with more rows are aggregated out of core, their item table not kept.
IN_MEMORY_MAX_ROWS: int = 5_000_000
#: The bundled item-level MMLU-Pro responses, with choice and key (``jagged/data/PROVENANCE.md``).
BUNDLED_ITEMS_NAME = "mmlu_pro_responses.csv.gz"
#: MMLU-Pro's question texts and options, read only for the items a report lists.
BUNDLED_TEXT_NAME = "mmlu_pro_item_text.csv.gz"
#: The optional text columns of an item table (one value per item).
TEXT_COLUMNS: tuple[str, ...] = ("text", "options")
#: Longest text kept per item (characters); longer ones are cut and end in :data:`ELLIPSIS`.
TEXT_MAX_CHARS: int = 4_000
#: Longest option text kept in a JSON option list, and the most options kept.
OPTION_MAX_CHARS: int = 1_000
MAX_OPTIONS: int = 26
ELLIPSIS = "…"


def load_bundled_items() -> Dataset:
    """The bundled item-level MMLU-Pro responses (29 models × 12,032 items, with choice and key)."""
    path = data_dir() / BUNDLED_ITEMS_NAME
    return dataset_from_items(read_csv(path), source=path.name, paths=[path], line_offset=2)


def is_item_table(columns: Any) -> bool:
    """Whether column names describe item-level results: ``correct`` plus ``item`` (or ``item_id``)."""
    names = {str(c).strip() for c in columns}
    return "correct" in names and ("item" in names or any(a in names for a in ITEM_ALIASES))


def _rename_aliases(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    present = {alias: name for alias, name in ITEM_ALIASES.items() if alias in frame.columns}
    for alias, name in present.items():
        if name in frame.columns:
            raise JaggedInputError(f"{source}: both '{name}' and its alias '{alias}' are columns; keep one")
    return frame.rename(columns=present) if present else frame


def check_columns(columns: Any, source: str) -> None:
    missing = [c for c in ITEM_COLUMNS if c not in columns]
    if missing:
        raise JaggedInputError(
            f"{source}: missing column(s) {', '.join(missing)} (an item-level table needs "
            f"{', '.join(ITEM_COLUMNS)})")


def _correct(raw: pd.Series, source: str, line_offset: int | None) -> np.ndarray:
    """``correct`` as float64 in [0, 1], or a one-line error naming the row and value."""
    if pd.api.types.is_bool_dtype(raw.dtype) or pd.api.types.is_numeric_dtype(raw.dtype):
        values = raw.astype("float64").to_numpy()
        bad_text = np.zeros(len(values), dtype=bool)
    else:
        coerced = pd.to_numeric(raw, errors="coerce").astype("float64")
        values = coerced.to_numpy()
        bad_text = (coerced.isna() & raw.notna() & (raw.astype("string").str.strip() != "")).to_numpy()
    if bad_text.any():
        first = raw.index[int(np.argmax(bad_text))]
        raise JaggedInputError(f"{source}: column 'correct' has non-numeric value {cell_repr(raw.loc[first])} "
                               f"({row_location(first, line_offset)})")
    nan = np.isnan(values)
    if nan.any():
        first = raw.index[int(np.argmax(nan))]
        raise JaggedInputError(f"{source}: column 'correct' has a missing value ({row_location(first, line_offset)})")
    out = ~((values >= 0) & (values <= 1))
    if out.any():
        first = raw.index[int(np.argmax(out))]
        raise JaggedInputError(f"{source}: column 'correct' has value {cell_repr(raw.loc[first])} outside [0, 1] "
                               f"({row_location(first, line_offset)})")
    return values


def _item_ids(raw: pd.Series, source: str, line_offset: int | None) -> pd.Series:
    """Item identifiers as strings; integral floats lose their ``.0``."""
    if pd.api.types.is_float_dtype(raw.dtype):
        values = raw.to_numpy()
        finite = np.isfinite(values)
        if finite.all() and np.all(values == np.round(values)):
            raw = pd.Series(values.astype(np.int64), index=raw.index)
    return name_categories(raw, "item", source, line_offset)


def validate_items(frame: pd.DataFrame, source: str = "<table>", *, line_offset: int | None = 2) -> pd.DataFrame:
    """Check an item-level table and return it in canonical form, in input order.

    Columns: ``model``, ``domain``, ``item`` (str), ``correct`` (float64), ``category`` (None
    when unknown), then those the input has of ``choice``, ``key`` (None when empty),
    ``n_options`` (NaN when empty), ``text`` and ``options`` (one bounded value per item).
    Refused with a one-line error: a missing column, no rows, an empty name, ``correct``
    missing, non-numeric or outside [0, 1], a (model, item) twice, an item under two domains,
    a domain with two categories, and what :func:`jagged.readers.choices.check_answers` refuses.
    """
    frame = _rename_aliases(frame, source)
    check_columns(frame.columns, source)
    if len(frame) == 0:
        raise JaggedInputError(f"{source}: the table has a header but no rows")
    model = name_categories(frame["model"], "model", source, line_offset)
    domain = name_categories(frame["domain"], "domain", source, line_offset)
    item = _item_ids(frame["item"], source, line_offset)
    correct = _correct(frame["correct"], source, line_offset)
    if "category" in frame.columns:
        cat = frame["category"].astype("string").str.strip()
        category = cat.where(cat.notna() & (cat != ""), None).astype(object).to_numpy()
    else:
        category = np.full(len(frame), None, dtype=object)
    table = pd.DataFrame({"model": model.to_numpy(), "domain": domain.to_numpy(), "item": item.to_numpy(),
                          "correct": correct, "category": category}, index=frame.index)
    table = _with_answers(table, frame, source, line_offset)
    table = _with_text(table, frame)
    _check_duplicates(table, source, line_offset)
    _check_item_domains(table, source, line_offset)
    _check_categories(table, source, line_offset)
    return table.reset_index(drop=True)


def _with_answers(table: pd.DataFrame, frame: pd.DataFrame, source: str, line_offset: int | None) -> pd.DataFrame:
    """Add the optional ``choice``, ``key`` and ``n_options`` columns, checked."""
    present = [c for c in choices.CHOICE_COLUMNS if c in frame.columns]
    if not present:
        return table
    extra = {}
    for column in present:
        if column == "n_options":
            extra[column] = choices.normalise_n_options(frame[column], source, line_offset)
        else:
            extra[column] = pd.Series(choices.normalise_labels(frame[column], column, source, line_offset),
                                      index=table.index, dtype=object)
    table = table.assign(**extra)
    choices.check_answers(table, source, line_offset)
    return table


def cap_text(value: Any, limit: int = TEXT_MAX_CHARS) -> str | None:
    """One text, stripped; a longer one than ``limit`` keeps ``limit - 1`` characters and ends in ``…``.

    Numbers are written as text; anything else, and empty text, gives None.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if isinstance(value, float) and not np.isfinite(value):
        return None
    text = str(value).strip()
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def options_text(options: Any) -> str | None:
    """Option texts as the ``options`` cell: a JSON list (option k is letter A + k), bounded; None without options.

    A JSON list given as a string is read first, other text kept as written (cut); an object
    option gives its ``text``; at most :data:`MAX_OPTIONS` options of :data:`OPTION_MAX_CHARS`
    characters, an empty one kept as ``""``.
    """
    if isinstance(options, str):
        stripped = options.strip()
        if not stripped.startswith("["):
            return cap_text(stripped)
        try:
            options = json.loads(stripped)
        except ValueError:
            return cap_text(stripped)
    if not isinstance(options, (list, tuple)) or not options:
        return None
    texts = []
    for option in list(options)[:MAX_OPTIONS]:
        if isinstance(option, dict):
            option = option.get("text", option.get("value"))
        texts.append(cap_text(option, OPTION_MAX_CHARS) or "")
    if not any(texts):
        return None
    return json.dumps(texts, ensure_ascii=False)


def _with_text(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Add the optional ``text`` and ``options`` columns: one bounded value per item."""
    present = [c for c in TEXT_COLUMNS if c in frame.columns]
    if not present:
        return table
    extra = {}
    for column in present:
        text = frame[column].astype("string").str.strip()  # the first non-empty value of every item
        per_item = text.where(text != "").groupby(table["item"].to_numpy(), sort=False).first().astype(object)
        bounded = per_item.map(options_text if column == "options" else cap_text)
        values = table["item"].map(bounded)
        extra[column] = values.astype(object).where(values.notna(), None)
    return table.assign(**extra)


def item_texts(items: pd.DataFrame) -> pd.DataFrame:
    """The ``text`` and ``options`` of a validated item table, one row per item (index ``item``; None where absent)."""
    first = (items if any(c in items.columns for c in TEXT_COLUMNS) else items.iloc[:0]).drop_duplicates("item")
    return pd.DataFrame({c: first[c].to_numpy(dtype=object) if c in first else None for c in TEXT_COLUMNS},
                        index=pd.Index(first["item"].to_numpy(dtype=object), name="item"))


def load_bundled_item_text(item_ids: Any = None) -> pd.DataFrame:
    """MMLU-Pro's bounded question ``text`` and ``options`` (index ``item``) for ``item_ids`` (default: all)."""
    table = pd.read_csv(data_dir() / BUNDLED_TEXT_NAME, usecols=["item_id", "question", "options"])
    ids = table["item_id"].astype(str)
    if item_ids is not None:
        keep = ids.isin({str(i) for i in item_ids}).to_numpy()
        table, ids = table[keep], ids[keep]
    return pd.DataFrame({"text": table["question"].map(cap_text).to_numpy(dtype=object),
                         "options": table["options"].map(options_text).to_numpy(dtype=object)},
                        index=pd.Index(ids.to_numpy(dtype=object), name="item"))


def _check_duplicates(table: pd.DataFrame, source: str, line_offset: int | None) -> None:
    dup = table.duplicated(["model", "item"], keep=False).to_numpy()
    if dup.any():
        first = int(np.argmax(dup))
        row = table.iloc[first]
        same = np.flatnonzero(dup & (table["model"].to_numpy() == row["model"])
                              & (table["item"].to_numpy() == row["item"]))
        where = " and ".join(row_location(table.index[i], line_offset) for i in same[:2])
        raise JaggedInputError(f"{source}: model {row['model']!r} has item {row['item']!r} twice ({where})")


def _check_item_domains(table: pd.DataFrame, source: str, line_offset: int | None) -> None:
    per_item = table.groupby("item", sort=False)["domain"].nunique()
    if (per_item > 1).any():
        bad = per_item.index[np.argmax(per_item.to_numpy() > 1)]
        rows = table[table["item"].to_numpy() == bad]
        first = rows.iloc[0]
        other = rows[rows["domain"] != first["domain"]].iloc[0]
        raise JaggedInputError(
            f"{source}: item {bad!r} is listed under two domains, {first['domain']!r} "
            f"({row_location(rows.index[0], line_offset)}) and {other['domain']!r} "
            f"({row_location(other.name, line_offset)})")


def _check_categories(table: pd.DataFrame, source: str, line_offset: int | None) -> None:
    known = table[table["category"].notna()]
    if len(known) == 0:
        return
    per_domain = known.groupby("domain", sort=False)["category"].nunique()
    if (per_domain > 1).any():
        bad = per_domain.index[np.argmax(per_domain.to_numpy() > 1)]
        rows = known[known["domain"].to_numpy() == bad]
        other = rows[rows["category"] != rows["category"].iloc[0]].iloc[0]
        raise JaggedInputError(
            f"{source}: domain {bad!r} has two categories, {rows['category'].iloc[0]!r} and "
            f"{other['category']!r} ({row_location(other.name, line_offset)})")


def aggregate_items(items: pd.DataFrame) -> pd.DataFrame:
    """Aggregate a validated item table to the canonical per-domain table, sorted by model and domain.

    Notes
    -----
    ``score`` = sum(correct) / n_items over the items the model has in the domain, a float64
    sum divided by the count: for 0/1 data the correctly rounded k/n.
    """
    grouped = items.groupby(["model", "domain"], sort=True)
    out = grouped["correct"].agg(["sum", "size"]).reset_index()
    categories = items.dropna(subset=["category"]).groupby("domain")["category"].first()
    return pd.DataFrame({
        "model": out["model"].astype(object).to_numpy(),
        "domain": out["domain"].astype(object).to_numpy(),
        "score": out["sum"].to_numpy(dtype=float) / out["size"].to_numpy(dtype=float),
        "n_items": out["size"].to_numpy(dtype=float),
        "category": mapped(out["domain"], categories).to_numpy(),
    })


def coverage_from_counts(scores: pd.DataFrame, domain_items: pd.Series) -> pd.DataFrame:
    """Per-model item coverage from a canonical table's ``n_items`` and the distinct items per domain.

    One row per model: ``n_items``, ``n_items_total``, ``missing_items``, ``coverage`` and
    ``domains_short`` (domains where it lacks items, ``", "``-joined).
    """
    total = int(domain_items.sum())
    n_total = domain_items.reindex(pd.Index(scores["domain"].to_numpy(dtype=object))).to_numpy(dtype=float)
    have = pd.DataFrame({"model": scores["model"].to_numpy(dtype=object),
                         "domain": scores["domain"].to_numpy(dtype=object),
                         "n_items": scores["n_items"].to_numpy(dtype=float), "n_total": n_total})
    short = have[have["n_items"] < have["n_total"]]
    per_model = have.groupby("model", sort=True)["n_items"].sum()
    rows = []
    for model, n in per_model.items():
        present = set(have.loc[have["model"] == model, "domain"])
        lacking = sorted(set(short.loc[short["model"] == model, "domain"]) | (set(domain_items.index) - present))
        rows.append({"model": model, "n_items": int(n), "n_items_total": total, "missing_items": total - int(n),
                     "coverage": n / total, "domains_short": ", ".join(lacking)})
    return pd.DataFrame(rows, columns=["model", "n_items", "n_items_total", "missing_items", "coverage",
                                       "domains_short"])


def coverage(items: pd.DataFrame) -> pd.DataFrame:
    """Per-model item coverage of a validated item table (see :func:`coverage_from_counts`)."""
    return coverage_from_counts(aggregate_items(items), items.groupby("domain")["item"].nunique())


def coverage_notes(cov: pd.DataFrame) -> tuple[dict[str, str], str]:
    """Per-model notes for models that lack items, and a one-line summary."""
    lacking = cov[cov["missing_items"] > 0]
    notes = {row.model: (f"covers {row.n_items:,} of {row.n_items_total:,} items ({row.coverage:.1%}); "
                         f"missing items are not imputed")
             for row in lacking.itertuples()}
    if len(lacking) == 0:
        summary = f"every model has all {int(cov['n_items_total'].iloc[0]):,} items"
    else:
        shown = ", ".join(f"{row.model} {row.coverage:.1%}" for row in lacking.head(5).itertuples())
        more = f" and {len(lacking) - 5} more" if len(lacking) > 5 else ""
        summary = (f"{len(cov) - len(lacking)} of {len(cov)} models have all "
                   f"{int(cov['n_items_total'].iloc[0]):,} items; lacking items: {shown}{more} (not imputed)")
    return notes, summary


def dataset_from_items(frame: pd.DataFrame, *, source: str, paths: list[Path],
                       line_offset: int | None = None) -> Dataset:
    """Validate and aggregate an in-memory item table into a Dataset, with coverage notes and summaries."""
    items = validate_items(frame, source, line_offset=line_offset)
    scores = validate_scores(aggregate_items(items), source, line_offset=None)
    cov = coverage_from_counts(scores, items.groupby("domain")["item"].nunique())
    notes, summary = coverage_notes(cov)
    partial = bool(((items["correct"] > 0) & (items["correct"] < 1)).any())
    details = {
        "items": (f"{len(items):,} item results, {items['item'].nunique():,} distinct items"
                  + (", partial credit present" if partial else ", all 0/1")),
        "coverage": summary,
        "choices": answers_summary(items),
    }
    return Dataset(scores=scores, source=source, paths=list(paths), format="items", items=items,
                   model_notes=notes, details=details)

def parquet_names(path: str | Path) -> list[str]:
    """A Parquet file's column names, from its footer."""
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def pa_is_text(dtype: Any) -> bool:
    """True for pyarrow string-like types (plain or dictionary-encoded)."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype))


def sql_name(name: str) -> str:
    """A column name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def _pa_kind(dtype: Any) -> str:
    """``"text"``, ``"integer"``, ``"float"`` or ``"other"`` for a pyarrow type."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa_is_text(dtype):
        return "text"
    if pa.types.is_integer(dtype):
        return "integer"
    if pa.types.is_floating(dtype):
        return "float"
    return "other"


def parquet_columns(path: str | Path) -> dict[str, str]:
    """SQL expressions for the canonical columns of an item-level Parquet file (view ``t``).

    ``model, domain, item, correct`` always; ``category, choice, key, n_options`` when
    present. Names and labels are trimmed text (NULL when empty), ids and labels written as
    in memory (``1.0`` → ``1``), ``correct`` and ``n_options`` as DOUBLE.
    """
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    col = {str(raw).strip(): raw for raw in schema.names}
    for alias, name in ITEM_ALIASES.items():
        if alias in col and name not in col:
            col[name] = col[alias]
    kind = {name: _pa_kind(schema.field(raw).type) for name, raw in col.items()}
    out = {}
    for name in ("model", "domain"):
        if name in col:
            out[name] = f"trim({sql_name(col[name])})" if kind[name] == "text" else sql_name(col[name])
    if "item" in col:
        out["item"] = sql_label(sql_name(col["item"]), kind["item"] if kind["item"] != "other" else "text")
    if "correct" in col:
        out["correct"] = f"TRY_CAST({sql_name(col['correct'])} AS DOUBLE)"
    if "category" in col:
        out["category"] = f"NULLIF(trim(CAST({sql_name(col['category'])} AS VARCHAR)), '')"
    for name in ("choice", "key"):
        if name in col:
            out[name] = sql_label(sql_name(col[name]), kind[name] if kind[name] != "other" else "text")
    if "n_options" in col:
        out["n_options"] = f"TRY_CAST({sql_name(col['n_options'])} AS DOUBLE)"
    return out
