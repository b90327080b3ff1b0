"""CSV and Parquet tables: long, wide and item-level layouts, told apart by their columns.

* item-level: ``model, domain, item`` (or ``item_id``), ``correct`` (:mod:`jagged.readers.items`;
  a large Parquet file, rows counted while decoding, is aggregated out of core);
* long: ``model, domain, score`` (+ optional ``n_items``, ``category``);
* wide: ``model`` plus one numeric column per domain.

**Row selection** (:func:`select_rows`) is applied to the table as read, before validation,
so rows of other releases never reach the duplicate check. ``where`` keeps rows whose
column equals the value (as stripped text, all conditions holding); in a wide table
``domains`` picks columns and the ``where`` columns are dropped before the melt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers import items, items_parquet
from jagged.readers.canonical import wide_to_long
from jagged.readers.dataset import Dataset
from jagged.readers.files import check_footers, read_csv, read_parquet, scan_parquet
from jagged.readers.reader import ItemRead, Parsed, Reader, ScoreRead
from jagged.text import listing, plural

#: The loader options that select rows.
SELECTION = ("where", "models", "domains")
#: Names shown in a message listing what a table holds.
SHOWN = 12


def parse_where(where: Any) -> list[tuple[str, str]]:
    """``["release=2024-08-31", ...]`` as (column, value) pairs; a condition without ``=`` or a column is an error."""
    if isinstance(where, str):
        where = [where]
    pairs = []
    for condition in where or ():
        column, sep, value = str(condition).partition("=")
        if not sep or not column.strip():
            raise JaggedInputError(f"--where {str(condition)[:60]!r}: expected COLUMN=VALUE (e.g. release=2024-08-31)")
        pairs.append((column.strip(), value.strip()))
    return pairs


def _names(values: Any) -> list[str]:
    if isinstance(values, str):
        return [values]
    return [str(v).strip() for v in values or ()]


def _as_text(column: pd.Series) -> pd.Series:
    return column.astype("string").str.strip()


def _check_known(wanted: list[str], present: pd.Series | list[str], what: str, flag: str, source: str) -> None:
    present = list(dict.fromkeys(str(v) for v in present if not pd.isna(v)))
    unknown = [w for w in wanted if w not in set(present)]
    if unknown:
        raise JaggedInputError(f"{source}: {flag} {listing(unknown, 5, quote=True)}: no such {what}; the table holds "
                               f"{plural(len(present), what)}: {listing(sorted(present, key=str.lower), SHOWN)}")


def select_rows(frame: pd.DataFrame, *, source: str, where: Any = (), models: Any = (), domains: Any = (),
                wide: bool = False) -> pd.DataFrame:
    """Keep the rows (and, in a ``wide`` table, the domain columns) the selection options ask for.

    The index (file lines) is kept; a wide table loses its ``where`` columns. An unknown
    column, model, domain or value (the message lists at most :data:`SHOWN` of what the table
    holds), or no row left, is a :class:`JaggedInputError`.
    """
    conditions, models, domains = parse_where(where), _names(models), _names(domains)
    if not (conditions or models or domains):
        return frame
    keep = pd.Series(True, index=frame.index)
    columns = [str(c) for c in frame.columns]
    for column, value in conditions:
        if column not in columns:
            raise JaggedInputError(f"{source}: --where {column}={value}: no column {column!r}; the table has "
                                   f"{listing(columns, SHOWN, quote=True)}")
        text = _as_text(frame[column])
        match = (text == value).fillna(False)
        if not match.any():
            raise JaggedInputError(f"{source}: --where {column}={value}: no row has {column} = {value!r}; {column} "
                                   f"holds {listing(sorted(text.dropna().unique(), key=str.lower), SHOWN, quote=True)}")
        keep &= match
    if models:
        if "model" not in columns:
            raise JaggedInputError(f"{source}: --models needs a 'model' column")
        text = _as_text(frame["model"])
        _check_known(models, text.dropna().unique(), "model", "--models", source)
        keep &= text.isin(models).fillna(False)
    if domains and not wide:
        if "domain" not in columns:
            raise JaggedInputError(f"{source}: --domains needs a 'domain' column, or a wide table")
        text = _as_text(frame["domain"])
        _check_known(domains, text.dropna().unique(), "domain", "--domains", source)
        keep &= text.isin(domains).fillna(False)
    if not keep.any():
        asked = [f"--where {c}={v}" for c, v in conditions] + [f"--models {m}" for m in models]
        asked += [] if wide else [f"--domains {d}" for d in domains]
        raise JaggedInputError(f"{source}: no row matches all of {listing(asked, 6)}")
    out = frame[keep.to_numpy()]
    if wide:
        drop = [c for c in dict.fromkeys(c for c, _ in conditions) if c != "model"]
        if domains:
            present = [c for c in columns if c != "model" and c not in drop]
            _check_known(domains, present, "domain", "--domains", source)
            out = out[["model", *[c for c in present if c.strip() in domains]]]
        else:
            out = out.drop(columns=drop)
    return out


def _is_wide(columns: set[str]) -> bool:
    return not ("correct" in columns and ({"item", "item_id"} & columns)) and not ({"domain", "score"} <= columns)


def from_frame(frame: pd.DataFrame, *, source: str, paths: list[Path], score_scale: str = "fraction",
               line_offset: int | None = 2, where: Any = (), models: Any = (),
               domains: Any = ()) -> ScoreRead | ItemRead:
    """Tell the layout by the columns; the selected rows as read (``line_offset``: 2 for CSV), for the registry."""
    columns = set(frame.columns)
    if _is_wide(columns) and "model" in columns and ("domain" in columns or "score" in columns):
        missing = "score" if "domain" in columns else "domain"
        raise JaggedInputError(f"{source}: missing column '{missing}' (a long table needs model, domain, score)")
    frame = select_rows(frame, source=source, where=where, models=models, domains=domains, wide=_is_wide(columns))
    if "correct" in columns and ({"item", "item_id"} & columns):
        return ItemRead(items=frame, categories={}, paths=list(paths), model_notes={}, details={},
                        line_offset=line_offset, selected=True)
    if {"domain", "score"} <= columns:
        return ScoreRead(scores=frame, label=source, paths=list(paths), format="long", score_scale=score_scale,
                         line_offset=line_offset, selected=True)
    long = wide_to_long(frame, source, score_scale=score_scale, line_offset=line_offset)
    return ScoreRead(scores=long, label=source, paths=list(paths), format="wide", line_offset=line_offset,
                     selected=True)


def read_table(found: list[Parsed], *, source: str, score_scale: str = "fraction", where: Any = (),
               models: Any = (), domains: Any = (), **_: Any) -> ScoreRead | ItemRead | Dataset:
    """Read one CSV or Parquet file; a large item-level Parquet file comes back as a Dataset aggregated out of core."""
    path = found[0].path
    if found[0].kind == "parquet":
        try:  # the column names only; the row count comes from decoding, never from the footer
            is_items = items.is_item_table(items.parquet_names(path))
        except Exception:  # corrupt footer: scan_parquet gives the one-line error
            is_items = False
        limit = items.IN_MEMORY_MAX_ROWS
        check_footers([path], path.name)  # what the footer declares, before decoding what it holds
        scan = scan_parquet(path, keep_rows=limit if is_items else None)
        selection = {"where": where, "models": models, "domains": domains}
        if is_items and scan.rows > limit:
            if any(selection.values()):
                raise JaggedInputError(f"{path.name}: --where, --models and --domains are not available for an "
                                       f"item-level Parquet file of more than {limit:,} rows (read out of core); "
                                       "select the rows before")
            return items_parquet.dataset_from_parquet(path)
        return from_frame(read_parquet(path, scan), source=path.name, paths=[path], score_scale=score_scale,
                          line_offset=None, **selection)
    return from_frame(read_csv(path), source=path.name, paths=[path], score_scale=score_scale, line_offset=2,
                      where=where, models=models, domains=domains)


READER = Reader(name="table", family="CSV/Parquet tables", what="CSV/Parquet tables",
                options=("score_scale", *SELECTION), read=read_table, kinds=("text", "parquet"))
