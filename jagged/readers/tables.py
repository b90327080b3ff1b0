"""CSV and Parquet tables: long, wide and item-level layouts, told apart by their columns.

* item-level: ``model, domain, item`` (or ``item_id``), ``correct`` (see
  :mod:`jagged.readers.items`; item-level Parquet files with more rows than
  :data:`jagged.readers.items.IN_MEMORY_MAX_ROWS`, counted while decoding them, not read
  from the footer, are aggregated out of core by :mod:`jagged.readers.items_parquet`);
* long: ``model, domain, score`` (+ optional ``n_items``, ``category``);
* wide: ``model`` plus one numeric column per domain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers import items, items_parquet
from jagged.readers.dataset import Dataset
from jagged.readers.files import read_csv, read_parquet, scan_parquet
from jagged.readers.reader import Head, ItemRead, Parsed, Reader, ScoreRead
from jagged.readers.table import wide_to_long


def from_frame(frame: pd.DataFrame, *, source: str, paths: list[Path], score_scale: str = "fraction",
               line_offset: int | None = 2) -> ScoreRead | ItemRead:
    """Tell the table layout by its columns; the rows as read, for the registry to validate.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table as read.
    source : str
        Name used in messages.
    paths : list of pathlib.Path
        Files behind the table.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    line_offset : int or None
        Added to row labels to give file lines in messages (2 for CSV, None otherwise).

    Raises
    ------
    JaggedInputError
        A long table missing ``domain`` or ``score``; what :func:`~jagged.readers.table.wide_to_long`
        refuses.
    """
    columns = set(frame.columns)
    if "correct" in columns and ({"item", "item_id"} & columns):
        return ItemRead(items=frame, categories={}, paths=list(paths), model_notes={}, details={},
                        line_offset=line_offset)
    if {"domain", "score"} <= columns:
        return ScoreRead(scores=frame, label=source, paths=list(paths), format="long", score_scale=score_scale,
                         line_offset=line_offset)
    if "model" in columns and ("domain" in columns or "score" in columns):
        missing = "score" if "domain" in columns else "domain"
        raise JaggedInputError(f"{source}: missing column '{missing}' (a long table needs model, domain, score)")
    long = wide_to_long(frame, source, score_scale=score_scale, line_offset=line_offset)
    return ScoreRead(scores=long, label=source, paths=list(paths), format="wide", line_offset=line_offset)


def read_table(found: list[Parsed], *, source: str, score_scale: str = "fraction",
               **_: Any) -> ScoreRead | ItemRead | Dataset:
    """Read one CSV or Parquet file (see the module docstring for the layouts).

    A large item-level Parquet file comes back as a :class:`Dataset` already validated and
    aggregated out of core (:func:`jagged.readers.items_parquet.dataset_from_parquet`).
    """
    path = found[0].path
    if found[0].content == "parquet":
        try:  # the column names only; the row count comes from decoding, never from the footer
            is_items = items.is_item_table(items.parquet_names(path))
        except Exception:  # corrupt footer: scan_parquet gives the one-line error
            is_items = False
        limit = items.IN_MEMORY_MAX_ROWS
        scan = scan_parquet(path, keep_rows=limit if is_items else None)
        if is_items and scan.rows > limit:
            return items_parquet.dataset_from_parquet(path)
        return from_frame(read_parquet(path, scan), source=path.name, paths=[path], score_scale=score_scale,
                          line_offset=None)
    return from_frame(read_csv(path), source=path.name, paths=[path], score_scale=score_scale, line_offset=2)


def _recognises(head: Head) -> bool:
    return head.kind in ("text", "parquet")


def _parse(head: Head) -> Parsed:
    return Parsed(head.path, READER, head.kind, head.root)


READER = Reader(name="table", family="CSV/Parquet tables", what="CSV/Parquet tables", options=("score_scale",),
                recognises=_recognises, read=read_table, parse=_parse)

__all__ = ["READER", "from_frame", "read_table"]
