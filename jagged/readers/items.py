"""Item-level results: validate them and aggregate them to canonical per-domain scores.

An item-level table has one row per (model, item) with the columns

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
========== ===================================================================

``choice``, ``key`` and ``n_options`` are checked by :mod:`jagged.readers.choices`
(``correct`` must equal ``choice == key`` where a row has a key) and feed the item audit
(:mod:`jagged.stats.item_audit`). Other columns (e.g. ``pred_missing``) are ignored. Aggregation gives the canonical table of
:mod:`jagged.readers.table` with ``score`` = mean of ``correct`` over the items the model has in the
domain and ``n_items`` = the number of those items. Items a model lacks are counted per
model (coverage) and never imputed.

Small tables are validated and aggregated in memory (:func:`dataset_from_items`); a Parquet
file with more than :data:`IN_MEMORY_MAX_ROWS` rows (counted while decoding it, within the
input cap of :mod:`jagged.readers.limits`; a footer's row count can lie) is aggregated out of
core with DuckDB
(:func:`dataset_from_parquet`), which reads the file in row groups and spills to disk, so
peak memory stays bounded whatever the file size.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.dataset import Dataset
from jagged.text import merge_notes
from jagged.readers.table import cell_repr, name_categories, row_location


@dataclass
class ItemRead:
    """Item-level rows an evaluator reader found (lm-eval samples, Inspect logs), before aggregation.

    Attributes
    ----------
    items : pandas.DataFrame
        ``model, domain, item, correct, category``; item ids are ``task:id`` when several
        tasks are read (ids restart in every task), epochs already averaged.
    categories : dict
        Domain to category (None when unknown).
    paths : list of pathlib.Path
        Files used.
    model_notes : dict
        Per-model remarks (limit flags, incomplete logs).
    details : dict
        Facts for ``jagged validate`` and the report.
    """

    items: pd.DataFrame
    categories: dict[str, str | None]
    paths: list[Path]
    model_notes: dict[str, str]
    details: dict[str, Any]

    def to_dataset(self, *, source: str, format: str) -> Dataset:
        """Aggregate the items (:func:`dataset_from_items`) and keep the reader's notes and facts.

        Parameters
        ----------
        source : str
            Display name of the input.
        format : str
            The format the reader detected (e.g. ``"lm-eval samples"``).
        """
        dataset = dataset_from_items(self.items, source=source, paths=self.paths, line_offset=None)
        dataset.format = format
        dataset.model_notes = merge_notes(dataset.model_notes, self.model_notes)
        dataset.details = {**self.details, **dataset.details}
        return dataset



ITEM_COLUMNS: tuple[str, ...] = ("model", "domain", "item", "correct")
ITEM_ALIASES: dict[str, str] = {"item_id": "item"}
#: Item-level Parquet files with more rows than this are aggregated out of core (DuckDB)
#: and their item table is not kept in memory.
IN_MEMORY_MAX_ROWS: int = 5_000_000
#: DuckDB memory cap for out-of-core aggregation (it spills to a temporary folder beyond it).
DUCKDB_MEMORY_LIMIT: str = "1GB"
#: The item-level MMLU-Pro responses behind the bundled per-category scores (choice and key
#: included; see ``jagged/data/PROVENANCE.md``).
BUNDLED_ITEMS_NAME = "mmlu_pro_responses.csv.gz"


def load_bundled_items() -> Dataset:
    """The bundled item-level MMLU-Pro responses (29 models × 12,032 items, with choice and key).

    Their per-(model, domain) scores equal the bundled per-category scores exactly.
    """
    from jagged.readers.files import read_csv
    from jagged.resources import data_dir

    path = data_dir() / BUNDLED_ITEMS_NAME
    return dataset_from_items(read_csv(path), source=path.name, paths=[path], line_offset=2)


def is_item_table(columns: Any) -> bool:
    """True when a set of column names describes item-level results.

    Parameters
    ----------
    columns : iterable of str
        Column names as read.

    Returns
    -------
    bool
        ``correct`` plus ``item`` (or its alias ``item_id``) are present.
    """
    names = {str(c).strip() for c in columns}
    return "correct" in names and ("item" in names or any(a in names for a in ITEM_ALIASES))


def _rename_aliases(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    present = {alias: name for alias, name in ITEM_ALIASES.items() if alias in frame.columns}
    for alias, name in present.items():
        if name in frame.columns:
            raise JaggedInputError(f"{source}: both '{name}' and its alias '{alias}' are columns; keep one")
    return frame.rename(columns=present) if present else frame


def _check_columns(columns: Any, source: str) -> None:
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
    """Check an item-level table and return it in canonical form.

    Parameters
    ----------
    frame : pandas.DataFrame
        Table with ``model``, ``domain``, ``item`` (or ``item_id``) and ``correct``;
        optional ``category``; other columns are ignored.
    source : str
        Name used in error messages (normally the file name).
    line_offset : int or None
        Added to integer row labels to report file lines (2 for a CSV with a header).

    Returns
    -------
    pandas.DataFrame
        Columns ``model``, ``domain``, ``item`` (str), ``correct`` (float64) and
        ``category`` (object, None when unknown), in input order; then ``choice`` and
        ``key`` (object, None when empty) and ``n_options`` (float64, NaN when empty),
        each only when the input has it.

    Raises
    ------
    JaggedInputError
        Missing column; empty table; empty model, domain or item name; ``correct``
        missing, non-numeric or outside [0, 1]; the same (model, item) twice; an item
        listed under two domains; a domain given two categories; a malformed choice or
        key, a key beyond ``n_options``, or ``correct`` not equal to ``choice == key``
        (see :mod:`jagged.readers.choices`).
    """
    frame = _rename_aliases(frame, source)
    _check_columns(frame.columns, source)
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
    _check_duplicates(table, source, line_offset)
    _check_item_domains(table, source, line_offset)
    _check_categories(table, source, line_offset)
    return table.reset_index(drop=True)


def _with_answers(table: pd.DataFrame, frame: pd.DataFrame, source: str, line_offset: int | None) -> pd.DataFrame:
    """Add the optional ``choice``, ``key`` and ``n_options`` columns, checked (:mod:`jagged.readers.choices`)."""
    from jagged.readers import choices

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
            f"({row_location(rows.index[0], line_offset)}) and {other['domain']!r} ({row_location(other.name, line_offset)})")


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
    """Aggregate a validated item table to the canonical per-domain table.

    Parameters
    ----------
    items : pandas.DataFrame
        Output of :func:`validate_items`.

    Returns
    -------
    pandas.DataFrame
        Canonical columns ``model, domain, score, n_items, category`` sorted by model and
        domain, with ``score`` = sum(correct) / n_items over the items the model has in
        the domain.

    Notes
    -----
    The score is computed as a float64 sum divided by the count, so for 0/1 data it is the
    correctly rounded fraction k/n (what ``k / n`` gives in Python).
    """
    grouped = items.groupby(["model", "domain"], sort=True)
    out = grouped["correct"].agg(["sum", "size"]).reset_index()
    categories = items.dropna(subset=["category"]).groupby("domain")["category"].first()
    return pd.DataFrame({
        "model": out["model"].astype(object).to_numpy(),
        "domain": out["domain"].astype(object).to_numpy(),
        "score": out["sum"].to_numpy(dtype=float) / out["size"].to_numpy(dtype=float),
        "n_items": out["size"].to_numpy(dtype=float),
        "category": out["domain"].map(categories).astype(object).where(
            out["domain"].map(categories).notna(), None).to_numpy(),
    })


def coverage_from_counts(scores: pd.DataFrame, domain_items: pd.Series) -> pd.DataFrame:
    """Per-model item coverage from per-domain item counts.

    Parameters
    ----------
    scores : pandas.DataFrame
        Canonical table whose ``n_items`` are the items each model has per domain.
    domain_items : pandas.Series
        Number of distinct items per domain over all models (index: domain).

    Returns
    -------
    pandas.DataFrame
        One row per model (sorted): ``model``, ``n_items`` (items the model has),
        ``n_items_total`` (items in the data), ``missing_items``, ``coverage``
        (n_items / n_items_total) and ``domains_short`` (domains where the model lacks
        items, including domains it has none of, as a ``", "``-joined string).
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


def _coverage_notes(cov: pd.DataFrame) -> tuple[dict[str, str], str]:
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
    """Validate and aggregate an in-memory item-level table into a Dataset.

    Parameters
    ----------
    frame : pandas.DataFrame
        Item-level table as read (see the module docstring for its columns).
    source : str
        Name used in messages.
    paths : list of pathlib.Path
        Files behind the table.
    line_offset : int or None
        Added to row labels to give file lines in messages (2 for CSV).

    Returns
    -------
    Dataset
        ``format="items"``; ``scores`` aggregated per (model, domain); ``items`` the
        validated item table; ``model_notes`` a coverage remark for every model that lacks
        items; ``details`` with ``items`` and ``coverage`` summaries.
    """
    from jagged.readers.table import validate_scores

    items = validate_items(frame, source, line_offset=line_offset)
    scores = validate_scores(aggregate_items(items), source, line_offset=None)
    cov = coverage_from_counts(scores, items.groupby("domain")["item"].nunique())
    notes, summary = _coverage_notes(cov)
    partial = bool(((items["correct"] > 0) & (items["correct"] < 1)).any())
    details = {
        "items": (f"{len(items):,} item results, {items['item'].nunique():,} distinct items"
                  + (", partial credit present" if partial else ", all 0/1")),
        "coverage": summary,
        "choices": choices_summary(items),
    }
    return Dataset(scores=scores, source=source, paths=list(paths), format="items", items=items,
                   model_notes=notes, details=details)


def choices_summary(items: pd.DataFrame) -> str:
    """Whether an item table has choices and keys, in one line (``jagged validate``, the report)."""
    from jagged.readers.choices import answers_summary

    return answers_summary(items)


# --- out of core ---------------------------------------------------------------------

def parquet_names(path: str | Path) -> list[str]:
    """A Parquet file's column names, from its footer (the row count there is not trusted).

    Parameters
    ----------
    path : str or pathlib.Path
        A Parquet file.
    """
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def pa_is_text(dtype: Any) -> bool:
    """True for pyarrow string-like types (plain or dictionary-encoded)."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype))


def _sql_name(name: str) -> str:
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

    Keys ``model, domain, item, correct`` always; ``category, choice, key, n_options`` when
    the file has them. Names and labels are trimmed text (NULL when empty), item ids and
    labels written as in memory (``1.0`` → ``1``), ``correct`` and ``n_options`` as DOUBLE.
    """
    import pyarrow.parquet as pq

    from jagged.readers.choices import sql_label

    schema = pq.read_schema(path)
    col = {str(raw).strip(): raw for raw in schema.names}
    for alias, name in ITEM_ALIASES.items():
        if alias in col and name not in col:
            col[name] = col[alias]
    kind = {name: _pa_kind(schema.field(raw).type) for name, raw in col.items()}
    out = {}
    for name in ("model", "domain"):
        if name in col:
            out[name] = f"trim({_sql_name(col[name])})" if kind[name] == "text" else _sql_name(col[name])
    if "item" in col:
        out["item"] = sql_label(_sql_name(col["item"]), kind["item"] if kind["item"] != "other" else "text")
    if "correct" in col:
        out["correct"] = f"TRY_CAST({_sql_name(col['correct'])} AS DOUBLE)"
    if "category" in col:
        out["category"] = f"NULLIF(trim(CAST({_sql_name(col['category'])} AS VARCHAR)), '')"
    for name in ("choice", "key"):
        if name in col:
            out[name] = sql_label(_sql_name(col[name]), kind[name] if kind[name] != "other" else "text")
    if "n_options" in col:
        out["n_options"] = f"TRY_CAST({_sql_name(col['n_options'])} AS DOUBLE)"
    return out


def dataset_from_parquet(path: str | Path, *, source: str | None = None,
                         memory_limit: str = DUCKDB_MEMORY_LIMIT, threads: int | None = None) -> Dataset:
    """Validate and aggregate a large item-level Parquet file out of core with DuckDB.

    Parameters
    ----------
    path : str or pathlib.Path
        Item-level Parquet file (columns as in the module docstring).
    source : str, optional
        Name used in messages (default: the file name).
    memory_limit : str
        DuckDB ``memory_limit``; DuckDB spills hash tables to a temporary folder beyond it.
    threads : int, optional
        DuckDB threads (default: the CPU count, at most 4).

    Returns
    -------
    Dataset
        As :func:`dataset_from_items` but with ``items=None``: the item table is not
        loaded, so intervals come from the parametric bootstrap on ``n_items``.

    Raises
    ------
    JaggedInputError
        The same checks as :func:`validate_items`, reported with the Parquet row number.

    Notes
    -----
    Why DuckDB rather than a pyarrow-dataset batch loop: aggregation alone is easy either
    way, but two checks need a hash over every (model, item) pair (duplicates) and every
    item (one domain per item). DuckDB does these in C++ with a memory cap and spilling,
    while a Python batch loop would have to keep its own global hash of item names.
    """
    import duckdb
    import pyarrow.parquet as pq

    path = Path(path)
    source = source or path.name
    names = [str(n).strip() for n in pq.read_schema(path).names]
    raw_names = list(pq.read_schema(path).names)
    col = {name: raw for name, raw in zip(names, raw_names)}
    for alias, name in ITEM_ALIASES.items():
        if alias in col and name not in col:
            col[name] = col[alias]
    _check_columns(col, source)
    schema = pq.read_schema(path)
    text = {name: pa_is_text(schema.field(raw).type) for name, raw in col.items()}
    keys = {k: (f"trim({_sql_name(col[k])})" if text[k] else _sql_name(col[k])) for k in ("model", "domain", "item")}
    c = _sql_name(col["correct"])
    cat = _sql_name(col["category"]) if "category" in col else "NULL"
    threads = threads or min(os.cpu_count() or 1, 4)
    with tempfile.TemporaryDirectory(prefix="jagged-duckdb-") as spill:
        con = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "threads": threads,
                                                  "temp_directory": spill, "preserve_insertion_order": False})
        try:
            literal = "'" + str(path).replace("'", "''") + "'"
            con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({literal}, file_row_number = true)")
            scores, domain_items, partial, n_rows, n_distinct = _duckdb_checks_and_aggregate(
                con, source, keys["model"], keys["domain"], keys["item"], c, cat)
            answers = _duckdb_answer_checks(con, source, parquet_columns(path))
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise JaggedInputError(f"{source}: cannot aggregate item-level Parquet: {first}") from None
        finally:
            con.close()
    from jagged.readers.table import validate_scores

    scores = validate_scores(scores, source, line_offset=None)
    cov = coverage_from_counts(scores, domain_items)
    notes, summary = _coverage_notes(cov)
    details = {
        "items": (f"{n_rows:,} item results, {n_distinct:,} distinct items"
                  + (", partial credit present" if partial else ", all 0/1")
                  + "; aggregated out of core (DuckDB), item table not kept"),
        "coverage": summary,
        "choices": answers,
    }
    return Dataset(scores=scores, source=source, paths=[path], format="items", items=None,
                   model_notes=notes, details=details)


def out_of_core_path(dataset: Dataset) -> Path | None:
    """The Parquet file behind an item-level dataset aggregated out of core (its item table not kept), else None."""
    if dataset.format != "items" or dataset.items is not None or len(dataset.paths) != 1:
        return None
    path = Path(dataset.paths[0])
    try:
        with open(path, "rb") as handle:
            return path if handle.read(4) == b"PAR1" else None
    except OSError:
        return None


def _row(value: Any) -> str:
    return f"row {int(value) + 1}"


def _duckdb_answer_checks(con: Any, source: str, expr: dict[str, str]) -> str:
    """The checks of :func:`jagged.readers.choices.check_answers` in SQL on view ``t``; the summary line."""
    from jagged.readers.choices import LABEL_MAX, sql_malformed, sql_option_index

    has_choice, has_key = "choice" in expr, "key" in expr
    if not has_choice and not has_key:
        return "no choice or key columns: the item audit uses correctness only (no distractor analysis)"

    def first(condition: str) -> Any:
        return con.execute(f"SELECT min(file_row_number) FROM t WHERE {condition}").fetchone()[0]

    def at(row: int, *columns: str) -> Any:
        return con.execute(f"SELECT {', '.join(columns)} FROM t WHERE file_row_number = {int(row)}").fetchone()

    for name in ("choice", "key"):
        if name in expr:
            bad = first(sql_malformed(expr[name]))
            if bad is not None:
                (value,) = at(bad, expr[name])
                raise JaggedInputError(
                    f"{source}: column {name!r} has malformed value {cell_repr(value)} ({_row(bad)}): an option label "
                    f"is one letter, index or short name (at most {LABEL_MAX} characters, no spaces or separators)")
    if "n_options" in expr:
        n = expr["n_options"]
        bad = first(f"{n} IS NOT NULL AND ({n} < 1 OR {n} <> round({n}) OR isinf({n}))")
        if bad is not None:
            (value,) = at(bad, n)
            raise JaggedInputError(f"{source}: column 'n_options' has value {cell_repr(value)} ({_row(bad)}); it must "
                                   "be a whole number of options, at least 1")
    x, m, i = expr["correct"], expr["model"], expr["item"]
    if has_key:
        k = expr["key"]
        choice = expr.get("choice", "NULL")
        checks = [(f"{k} IS NOT NULL AND {x} > 0 AND {x} < 1",
                   lambda r: f"correct is {r[2]:g} but a row with a key is scored 0 or 1")]
        if "n_options" in expr:
            checks.append((f"{k} IS NOT NULL AND {sql_option_index(k)} >= {expr['n_options']}",
                           lambda r: f"key {r[3]!r} names an option beyond n_options {int(r[5])}"))
        checks.append((f"{k} IS NOT NULL AND (({x} = 1) <> coalesce({choice} = {k}, false))",
                       lambda r: (f"correct is {r[2]:g} but choice {r[4]!r} {'is' if r[4] == r[3] else 'is not'} "
                                  f"the key {r[3]!r}" if r[4] is not None else
                                  f"correct is {r[2]:g} but there is no choice (key {r[3]!r})")))
        for condition, text in checks:
            bad = first(condition)
            if bad is not None:
                row = at(bad, m, i, x, k, choice, expr.get("n_options", "NULL"))
                raise JaggedInputError(f"{source}: model {row[0]!r}, item {row[1]!r}: {text(row)} ({_row(bad)})")
    parts = []
    if has_choice:
        c = expr["choice"]
        labels = [r[0] for r in con.execute(f"SELECT DISTINCT {c} FROM t WHERE {c} IS NOT NULL ORDER BY 1").fetchall()]
        (empty,) = con.execute(f"SELECT count(*) FROM t WHERE {c} IS NULL").fetchone()
        shown = ", ".join(labels[:10]) + (" ..." if len(labels) > 10 else "")
        parts.append(f"choices present ({len(labels)} labels: {shown}; {int(empty):,} rows without an answer)")
    else:
        parts.append("no choice column")
    if has_key:
        k = expr["key"]
        (keyed,) = con.execute(f"SELECT count(*) FROM t WHERE {k} IS NOT NULL").fetchone()
        (several,) = con.execute(f"SELECT count(*) FROM (SELECT {i} FROM t WHERE {k} IS NOT NULL GROUP BY 1 "
                                 f"HAVING count(DISTINCT {k}) > 1)").fetchone()
        parts.append(f"keys present for {int(keyed):,} rows; {int(several):,} items keyed differently across models")
    else:
        parts.append("no key column")
    if has_choice and "n_options" in expr:
        (beyond,) = con.execute(f"SELECT count(*) FROM t WHERE {sql_option_index(expr['choice'])} >= "
                                f"{expr['n_options']}").fetchone()
        if beyond:
            parts.append(f"{int(beyond):,} choices name an option beyond n_options (wrong answers, not distractors)")
    return "; ".join(parts)


def _duckdb_checks_and_aggregate(con: Any, source: str, m: str, d: str, i: str, c: str,
                                 cat: str) -> tuple[pd.DataFrame, pd.Series, bool, int, int]:
    """Run the validation queries, then the aggregation, on view ``t``.

    Four passes over the file: row checks (one scan, all conditions at once), the domain
    of every item, distinct (model, item) pairs, and the (model, domain) aggregation.
    """
    def one(sql: str) -> Any:
        return con.execute(sql).fetchone()

    x = f"TRY_CAST({c} AS DOUBLE)"
    conditions = {
        "model": f"{m} IS NULL OR CAST({m} AS VARCHAR) = ''",
        "domain": f"{d} IS NULL OR CAST({d} AS VARCHAR) = ''",
        "item": f"{i} IS NULL OR CAST({i} AS VARCHAR) = ''",
        "correct": f"{x} IS NULL OR isnan({x}) OR {x} < 0 OR {x} > 1",
    }
    firsts = ", ".join(f"min(file_row_number) FILTER (WHERE {cond})" for cond in conditions.values())
    row = one(f"SELECT count(*), {firsts} FROM t")
    n_rows = int(row[0])
    if n_rows == 0:
        raise JaggedInputError(f"{source}: the table has a header but no rows")
    for name, first in zip(conditions, row[1:]):
        if first is None:
            continue
        if name != "correct":
            raise JaggedInputError(f"{source}: column '{name}' has an empty {name} name ({_row(first)})")
        raw, value = one(f"SELECT CAST({c} AS VARCHAR), {x} FROM t WHERE file_row_number = {int(first)}")
        if raw is None or raw.strip() == "" or raw.strip().lower() == "nan":
            raise JaggedInputError(f"{source}: column 'correct' has a missing value ({_row(first)})")
        if value is None:
            raise JaggedInputError(f"{source}: column 'correct' has non-numeric value {cell_repr(raw)} ({_row(first)})")
        raise JaggedInputError(f"{source}: column 'correct' has value {cell_repr(raw)} outside [0, 1] ({_row(first)})")
    con.execute(f"CREATE TEMP TABLE item_domain AS SELECT {i} AS item, min({d}) AS dmin, max({d}) AS dmax "
                "FROM t GROUP BY 1")
    bad = one("SELECT item, dmin, dmax FROM item_domain WHERE dmin <> dmax LIMIT 1")
    if bad:
        raise JaggedInputError(f"{source}: item {cell_repr(str(bad[0]))} is listed under two domains, "
                               f"{bad[1]!r} and {bad[2]!r}")
    domain_items = con.execute("SELECT dmin AS domain, count(*) AS n FROM item_domain GROUP BY 1"
                               ).fetch_df().set_index("domain")["n"]
    n_distinct = int(domain_items.sum())
    n_pairs = one(f"SELECT count(*) FROM (SELECT DISTINCT {m}, {i} FROM t)")[0]
    if n_pairs != n_rows:
        bad = one(f"SELECT {m}, {i}, list(file_row_number ORDER BY file_row_number)[1:2] FROM t "
                  f"GROUP BY 1, 2 HAVING count(*) > 1 LIMIT 1")
        where = " and ".join(_row(r) for r in bad[2])
        raise JaggedInputError(f"{source}: model {bad[0]!r} has item {cell_repr(str(bad[1]))} twice ({where})")
    if cat != "NULL":
        key_c = f"NULLIF(trim(CAST({cat} AS VARCHAR)), '')"
        bad = one(f"SELECT {d}, min({key_c}), max({key_c}) FROM t GROUP BY 1 "
                  f"HAVING min({key_c}) <> max({key_c}) LIMIT 1")
        if bad:
            raise JaggedInputError(f"{source}: domain {bad[0]!r} has two categories, {bad[1]!r} and {bad[2]!r}")
        cat_expr = f"min({key_c})"
    else:
        cat_expr = "NULL"
    agg = con.execute(
        f"SELECT {m} AS model, {d} AS domain, sum({x}) AS s, count(*) AS n, "
        f"bool_or({x} > 0 AND {x} < 1) AS partial, {cat_expr} AS category "
        "FROM t GROUP BY 1, 2 ORDER BY 1, 2").fetch_df()
    categories = agg.dropna(subset=["category"]).groupby("domain")["category"].first()
    scores = pd.DataFrame({
        "model": agg["model"].astype(object).to_numpy(),
        "domain": agg["domain"].astype(object).to_numpy(),
        "score": agg["s"].to_numpy(dtype=float) / agg["n"].to_numpy(dtype=float),
        "n_items": agg["n"].to_numpy(dtype=float),
        "category": agg["domain"].map(categories).astype(object).where(
            agg["domain"].map(categories).notna(), None).to_numpy(),
    })
    domain_items.index = domain_items.index.astype(str)
    return scores, domain_items.astype(np.int64), bool(agg["partial"].any()), n_rows, n_distinct
