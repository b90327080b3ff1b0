"""``jagged.load``: any supported input, a file or a folder, into a validated :class:`Dataset`.

Which reader takes a file is decided by :mod:`jagged.readers.registry` (by its first bytes
and content, never by its name). A folder may hold any number of files of one family,
searched recursively (lm-eval writes ``<output>/<model>/results_<ts>.json``), hidden files
and folders skipped: HELM run folders (``run_spec.json`` beside ``per_instance_stats.json``)
are read as runs; in an Every Eval Ever datastore (the folder is its ``data/`` or holds
one) only ``data/`` is read, and with ``collection`` only that collection; every other
``.json``, ``.jsonl`` and ``.eval`` file is recognised by content, files no reader
recognises listed in ``details["not used"]``, damaged ones also named in a warning. A
folder of Parquet parts is read out of core. Every read is bounded by the input cap,
``max_input_bytes`` (:mod:`jagged.readers.limits`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.options import LOAD, check_keywords, names, selection
from jagged.paths import holds_parquet
from jagged.readers import eee, helm, items_parquet, limits, registry, tables
from jagged.readers.dataset import Dataset
from jagged.readers.reader import Parsed
from jagged.resources import data_dir
from jagged.text import listing

#: The bundled MMLU-Pro per-category scores, loaded when no path is given.
BUNDLED_SCORES = data_dir() / "mmlu_pro_per_category.csv"
#: File name endings looked at inside a folder.
EVALUATOR_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".eval")


def load(path: str | Path | pd.DataFrame | None = None, *, score_scale: str = "fraction",
         max_input_bytes: int | str | None = None, **options: Any) -> Dataset:
    """Load any supported score input into a validated :class:`Dataset`.

    Parameters
    ----------
    path : str, pathlib.Path or pandas.DataFrame, optional
        A CSV / Parquet table, an evaluator output file or folder, or a table in memory
        (long, wide or item-level). ``None`` loads the bundled MMLU-Pro per-category scores.
    score_scale : {"fraction", "percent"}
        Scale of scores in long and wide tables.
    max_input_bytes : int or str, optional
        The input cap (:mod:`jagged.readers.limits`); default ``JAGGED_MAX_INPUT_BYTES``, else 2 GiB.
    **options
        The other loader options of :mod:`jagged.options` (stage ``load``); a reader warns
        about those it does not take. A keyword that is no loader option is a TypeError.

    Returns
    -------
    Dataset
        Its :attr:`~Dataset.selection` holds the selection options given. Bad input is a
        one-line :class:`JaggedInputError` naming the file and the column or value.
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
        if handles_directory(path):
            return load_directory(path, options)
        if holds_parquet(path):
            return load_parquet_folder(path, options)
    if not path.exists():
        raise JaggedInputError(f"{path}: no such file")
    if path.is_dir():
        raise JaggedInputError(f"{path}: is a directory, expected a score file")
    if not path.is_file():
        raise JaggedInputError(f"{path}: not a regular file (a FIFO, device or socket), expected a score file")
    return registry.read_file(path, options)


def load_scores(path: str | Path | None = None, *, score_scale: str = "fraction", **options: Any) -> pd.DataFrame:
    """Load a score input (see :func:`load`) and return only its canonical per-domain table."""
    return load(path, score_scale=score_scale, **options).scores


def _walk(path: Path) -> Iterator[Path]:
    """Files below ``path`` that may be evaluator outputs, hidden files and folders skipped, in walk order."""
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in EVALUATOR_SUFFIXES:
                file = Path(folder, name)
                if file.is_file():
                    yield file


def _candidates(path: Path) -> list[Path]:
    return sorted(_walk(path), key=lambda p: p.parts)


def handles_directory(path: Path) -> bool:
    """Whether a folder holds files that may be evaluator outputs, by name only (``.json``, ``.jsonl``, ``.eval``)."""
    return next(_walk(Path(path)), None) is not None


def _datastore_files(path: Path, collection: str | None) -> tuple[list[Path], list[str]] | None:
    """An EEE datastore's files (only ``data/``, only ``collection``) and not-used entries; None if no datastore."""
    data = eee.datastore_data(path)
    if data is None:
        return None
    if collection:
        folder = data / collection
        if not folder.is_dir():
            present = sorted((p.name for p in data.iterdir() if p.is_dir() and not p.name.startswith(".")),
                             key=str.lower)
            if not present:
                return None
            raise JaggedInputError(f"{path}: no Every Eval Ever collection {collection!r} in {data.name}/; it holds "
                                   f"{listing(present, 20)}")
        files = _candidates(folder)
    else:
        files = _candidates(data)
    outside = []
    if data != path:
        outside = sorted({p.relative_to(path).parts[0] for p in path.iterdir() if p != data
                          and not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() in EVALUATOR_SUFFIXES)})
    not_used = [f"{name} (outside the datastore's data/ folder)" for name in outside]
    return files, not_used


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while thousands of parsed JSON documents (no cycles) are alive."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@registry.one_line_errors
def load_directory(path: Path, options: dict[str, Any]) -> Dataset:
    """Load a folder of evaluator outputs (see the module docstring), the garbage collector paused."""
    path = Path(path)
    with paused_gc():
        options = registry.given_options(options)
        store = _datastore_files(path, options.get("collection"))
        runs: list[Path] = []
        if store is not None:
            files, outside = store
            parsed, ignored, damaged = registry.parse_all(files, path)
        if store is None or not any(p.reader is eee.READER for p in parsed):  # no datastore
            found = _candidates(path)
            runs = helm.runs_among(found)
            inside = set(runs)
            files = [f for f in found if f.parent not in inside]
            outside = []
            parsed, ignored, damaged = registry.parse_all(files, path)
        parsed += [Parsed(folder, helm.READER, folder, path) for folder in runs]
        if damaged and options.get("strict"):
            raise JaggedInputError(f"{path.name}: damaged file {damaged[0]} (--strict refuses damaged files; "
                                   "without it they are left out and listed)")
        if damaged:
            warnings.warn(f"{path.name}: {len(damaged)} damaged file(s) skipped: {'; '.join(damaged[:3])}"
                          + (f" and {len(damaged) - 3} more" if len(damaged) > 3 else ""), JaggedWarning,
                          stacklevel=3)
        if not parsed:
            shown = "; ".join(ignored[:3]) if ignored else "no .json, .jsonl or .eval files"
            raise JaggedInputError(f"{path}: no lm-eval or Inspect output found, nor Every Eval Ever or HELM files "
                                   f"({shown})")
        return registry.read_found(parsed, source=path.name or str(path), options=options,
                                   ignored=ignored + outside)


@registry.one_line_errors
def load_parquet_folder(path: Path, options: dict[str, Any]) -> Dataset:
    """Read a hive-partitioned folder of item-level Parquet files out of core.

    The parts (:func:`jagged.paths.parquet_parts`) are read by
    :func:`jagged.readers.items_parquet.dataset_from_parquet` after their footers are held to
    the input cap; partition keys (``model=...``) become columns. Selection options are
    refused (select the rows before).
    """
    path = Path(path)
    given = registry.given_options(options)
    chosen = [k for k in ("where", "models", "domains") if given.get(k)]
    if chosen:
        raise JaggedInputError(f"{path.name}: --{chosen[0]} is not available for a partitioned Parquet folder (read "
                               "out of core); select the rows before")
    others = [k for k, v in given.items()
              if k not in ("score_scale", "strict", "where", "models", "domains") and v not in (None, "", [], ())]
    for key in others:
        warnings.warn(f"{registry.BY_NAME[key].flag} does not apply to a partitioned Parquet folder and is ignored",
                      JaggedWarning, stacklevel=3)
    dataset = items_parquet.dataset_from_parquet(path, source=path.name or str(path))
    return registry.finish(dataset, path.name or str(path), {k: v for k, v in given.items() if k == "n_items"})
