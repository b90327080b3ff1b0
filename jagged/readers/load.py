"""``jagged.load``: any supported input, a file or a folder, into a validated :class:`Dataset`.

Which reader takes a file is decided by :mod:`jagged.readers.registry` (by its first bytes
and content, never by its name); a folder's files are found by :mod:`jagged.readers.folders`.
Every read is bounded by the input cap, ``max_input_bytes`` (:mod:`jagged.readers.limits`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from jagged.errors import JaggedInputError
from jagged.options import LOAD, check_keywords, names, selection
from jagged.readers import limits, registry, tables
from jagged.readers.dataset import Dataset
from jagged.resources import data_dir

#: The bundled MMLU-Pro per-category scores, loaded when no path is given.
BUNDLED_SCORES = data_dir() / "mmlu_pro_per_category.csv"


def _check_path(path: Path) -> None:
    if not path.exists():
        raise JaggedInputError(f"{path}: no such file")
    if path.is_dir():
        raise JaggedInputError(f"{path}: is a directory, expected a score file")
    if not path.is_file():
        raise JaggedInputError(f"{path}: not a regular file (a FIFO, device or socket), expected a score file")


def load(path: str | Path | pd.DataFrame | None = None, *, score_scale: str = "fraction",
         max_input_bytes: int | str | None = None, **options: Any) -> Dataset:
    """Load any supported score input into a validated :class:`Dataset`.

    Parameters
    ----------
    path : str, pathlib.Path or pandas.DataFrame, optional
        A CSV / Parquet table, an evaluator output file or folder, or a table in memory
        (the layouts a CSV file may have: long, wide or item-level). ``None`` loads the
        bundled MMLU-Pro per-category scores.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    max_input_bytes : int or str, optional
        The input cap: the most bytes any file, archive member or table may expand to
        (see :mod:`jagged.readers.limits`). Default: ``JAGGED_MAX_INPUT_BYTES`` if set,
        else 2 GiB.
    **options
        The other loader options of :mod:`jagged.options` (stage ``load``: ``task``,
        ``metric``, ``model_name``, ``domain_key``, ``allow_incomplete``, ``collection``);
        each reader takes those it declares and warns about the others given.

    Returns
    -------
    Dataset
        Its :attr:`~Dataset.selection` holds the selection options given (``where``,
        ``models``, ``domains``, ``n_items``), for the report to show.

    Raises
    ------
    JaggedInputError
        The message names the file and the column or value at fault;
        :class:`~jagged.readers.limits.InputTooLargeError` when an input passes the cap.
    TypeError
        A keyword that is no loader option (the closest one suggested).
    """
    check_keywords(options, "load", [n for n in names(LOAD) if n not in ("score_scale", "max_input_bytes")])
    if isinstance(path, pd.DataFrame):  # read as a CSV file's table would be, validated once
        given = registry.given_options({**options, "score_scale": score_scale})
        read = tables.from_frame(path, source="DataFrame", paths=[], line_offset=None,
                                 **registry.options_for(tables.READER, given))
        dataset = registry.finish(read, "DataFrame", given)
        dataset.selection = selection(options)
        return dataset
    path = BUNDLED_SCORES if path is None else Path(path)
    if max_input_bytes is None:  # the cap in force stays
        dataset = _load(path, score_scale=score_scale, **options)
    else:
        with limits.input_cap(max_input_bytes):
            dataset = _load(path, score_scale=score_scale, **options)
    dataset.selection = selection(options)
    return dataset


def _load(path: Path, *, score_scale: str, **options: Any) -> Dataset:
    options = {**options, "score_scale": score_scale}
    if path.is_dir():
        from jagged.paths import holds_parquet
        from jagged.readers import folders

        if folders.handles_directory(path):
            return folders.load_directory(path, options)
        if holds_parquet(path):
            return folders.load_parquet_folder(path, options)
    _check_path(path)
    return registry.read_file(path, options)


def load_scores(path: str | Path | None = None, *, score_scale: str = "fraction", **options: Any) -> pd.DataFrame:
    """Load a score input and return only its canonical per-domain table.

    See :func:`load` for the parameters.
    """
    return load(path, score_scale=score_scale, **options).scores
