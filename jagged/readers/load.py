"""Read score files of every supported format into a :class:`Dataset`.

Loaders know formats; nothing downstream does. Detection is by content: Parquet by its
magic bytes, JSON by its first character, CSV tables by their columns:

* item-level: ``model, domain, item`` (or ``item_id``), ``correct`` (aggregated, see
  :mod:`jagged.readers.items`; item-level Parquet files with more rows than
  ``IN_MEMORY_MAX_ROWS``, counted while decoding them, not read from the footer, are
  aggregated out of core);
* long: ``model, domain, score`` (+ optional ``n_items``, ``category``);
* wide: ``model`` plus one numeric column per domain.

Every read is bounded by the input cap, ``max_input_bytes`` (:mod:`jagged.readers.limits`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.readers.dataset import Dataset
from jagged.readers import limits
from jagged.readers.files import read_csv, read_parquet, scan_parquet, sniff
from jagged.readers.table import validate_scores, wide_to_long
from jagged.resources import data_dir

BUNDLED_SCORES = data_dir() / "mmlu_pro_per_category.csv"


def _check_path(path: Path) -> None:
    if not path.exists():
        raise JaggedInputError(f"{path}: no such file")
    if path.is_dir():
        raise JaggedInputError(f"{path}: is a directory, expected a score file")
    if not path.is_file():
        raise JaggedInputError(f"{path}: not a regular file (a FIFO, device or socket), expected a score file")


def frame_to_dataset(frame: pd.DataFrame, *, source: str, paths: list[Path], score_scale: str = "fraction",
                     line_offset: int | None = 2) -> Dataset:
    """Detect the table layout by its columns and build a validated :class:`Dataset`.

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
    """
    columns = set(frame.columns)
    if "correct" in columns and ({"item", "item_id"} & columns):
        from jagged.readers import items as items_module

        return items_module.dataset_from_items(frame, source=source, paths=paths, line_offset=line_offset)
    if {"domain", "score"} <= columns:
        scores = validate_scores(frame, source, score_scale=score_scale, line_offset=line_offset)
        return Dataset(scores=scores, source=source, paths=paths, format="long")
    if "model" in columns and ("domain" in columns or "score" in columns):
        missing = "score" if "domain" in columns else "domain"
        raise JaggedInputError(f"{source}: missing column '{missing}' (a long table needs model, domain, score)")
    long = wide_to_long(frame, source, score_scale=score_scale, line_offset=line_offset)
    scores = validate_scores(long, source, line_offset=line_offset)
    return Dataset(scores=scores, source=source, paths=paths, format="wide")


def load(path: str | Path | None = None, *, score_scale: str = "fraction", max_input_bytes: int | str | None = None,
         **options: Any) -> Dataset:
    """Load any supported score input into a validated :class:`Dataset`.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        A CSV / Parquet table, an evaluator output file or folder. ``None`` loads the
        bundled MMLU-Pro per-category scores.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    max_input_bytes : int or str, optional
        The input cap: the most bytes any file, archive member or table may expand to
        (see :mod:`jagged.readers.limits`). Default: ``JAGGED_MAX_INPUT_BYTES`` if set,
        else 2 GiB.
    **options
        Format-specific options (e.g. ``task``, ``metric`` for evaluator outputs).

    Returns
    -------
    Dataset

    Raises
    ------
    JaggedInputError
        The message names the file and the column or value at fault;
        :class:`~jagged.readers.limits.InputTooLargeError` when an input passes the cap.
    """
    with limits.input_cap(max_input_bytes):
        return _load(BUNDLED_SCORES if path is None else Path(path), score_scale=score_scale, **options)


def _load(path: Path, *, score_scale: str, **options: Any) -> Dataset:
    if path.is_dir():
        from jagged.readers import evaluators

        if evaluators.handles_directory(path):
            return evaluators.load_directory(path, **options)
    _check_path(path)
    kind = sniff(path)
    if kind in ("json", "zip"):
        from jagged.readers import evaluators

        return evaluators.load_file(path, kind, **options)
    if kind == "binary":
        raise JaggedInputError(f"{path.name}: unknown file type (binary data; expected CSV, Parquet or JSON)")
    if kind == "parquet":
        from jagged.readers import items as items_module

        try:  # the column names only; the row count comes from decoding, never from the footer
            is_items = items_module.is_item_table(items_module.parquet_names(path))
        except Exception:  # corrupt footer: scan_parquet gives the one-line error
            is_items = False
        scan = scan_parquet(path, keep_rows=items_module.IN_MEMORY_MAX_ROWS if is_items else None)
        if is_items and scan.rows > items_module.IN_MEMORY_MAX_ROWS:
            return items_module.dataset_from_parquet(path)
        frame = read_parquet(path, scan)
    else:
        frame = read_csv(path)
    return frame_to_dataset(frame, source=path.name, paths=[path], score_scale=score_scale,
                            line_offset=2 if kind == "text" else None)


def load_scores(path: str | Path | None = None, *, score_scale: str = "fraction", **options: Any) -> pd.DataFrame:
    """Load a score input and return only its canonical per-domain table.

    See :func:`load` for the parameters.
    """
    return load(path, score_scale=score_scale, **options).scores
