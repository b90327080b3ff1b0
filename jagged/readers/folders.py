"""Folders of evaluator outputs: which files below a folder are read, each recognised by :mod:`jagged.readers.registry`.

A folder may hold any number of files of one family (searched recursively, as lm-eval
writes ``<output>/<model>/results_<ts>.json``); hidden files and folders are skipped. HELM
run folders (``run_spec.json`` beside ``per_instance_stats.json``) are found first and read
as runs. In an Every Eval Ever datastore (the folder is its ``data/`` folder or holds one)
only ``data/`` is read, and with ``collection`` only that collection. Every other
``.json``, ``.jsonl`` and ``.eval`` file is recognised by content; files no reader
recognises are listed in ``details["not used"]``, damaged ones (invalid JSON, e.g. a
truncated results file) also named in a warning.
"""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from pathlib import Path
from typing import Any, Iterator

from jagged.errors import JaggedInputError, JaggedWarning
from jagged.readers import eee_collection, helm, registry
from jagged.readers.dataset import Dataset
from jagged.readers.reader import Parsed
from jagged.text import listing

#: File name endings looked at inside a folder.
EVALUATOR_SUFFIXES: tuple[str, ...] = (".json", ".jsonl", ".eval")


def _walk(path: Path) -> Iterator[Path]:
    """Files that may be evaluator outputs below ``path``, hidden files and folders skipped, in walk order."""
    for folder, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in EVALUATOR_SUFFIXES:
                file = Path(folder, name)
                if file.is_file():
                    yield file


def _candidates(path: Path) -> list[Path]:
    """Files that may be evaluator outputs below ``path`` (see :func:`_walk`), sorted by their path parts."""
    return sorted(_walk(path), key=lambda p: p.parts)


def handles_directory(path: Path) -> bool:
    """Return True when a folder holds files that may be evaluator outputs.

    Only the names are looked at here (``.json``, ``.jsonl``, ``.eval`` anywhere below
    ``path``, hidden folders skipped); :func:`load_directory` then decides by content.
    """
    return next(_walk(Path(path)), None) is not None


def _datastore_files(path: Path, collection: str | None) -> tuple[list[Path], list[str]] | None:
    """An EEE datastore's candidate files (only ``data/``, only the collection asked for); None otherwise.

    Returns
    -------
    (files, not_used) or None
        None when ``path`` is no datastore (no ``data/`` at or below it holding EEE files).
    """
    data = eee_collection.datastore_data(path)
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
    """Pause the cyclic garbage collector while thousands of parsed JSON documents are alive.

    Parsing creates millions of containers and none of them form cycles; with the collector
    running, every few thousand allocations it rescans all that is alive, which doubled
    the time of reading a 4,500-file datastore (``benchmarks/bench_eee.py``).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@registry.one_line_errors
def load_directory(path: Path, options: dict[str, Any]) -> Dataset:
    """Load a folder of evaluator outputs into a :class:`Dataset`, the garbage collector paused.

    Parameters
    ----------
    path : pathlib.Path
        The folder (see the module docstring for what is read).
    options : dict
        Loader options, given or not.

    Raises
    ------
    JaggedInputError
        No evaluator output found, outputs of two families mixed, or any error of the
        format readers.
    """
    path = Path(path)
    with paused_gc():
        options = registry.given_options(options)
        store = _datastore_files(path, options.get("collection"))
        runs: list[Path] = []
        if store is not None:
            files, outside = store
            parsed, ignored, damaged = registry.parse_all(files, path)
        if store is None or not any(p.reader is eee_collection.READER for p in parsed):  # no datastore
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
    """Read a hive-partitioned folder of item-level Parquet files out of core, without loading it whole.

    The folder's parts (:func:`jagged.paths.parquet_parts`: hidden and ``_`` files and
    folders such as ``_SUCCESS`` or ``_temporary/`` skipped; any other file must be a
    regular ``.parquet`` file inside the folder) are read by
    :func:`jagged.readers.items_parquet.dataset_from_parquet` (DuckDB; partition keys such
    as ``model=...`` become columns), after their footers are held to the input cap.

    Raises
    ------
    JaggedInputError
        A file that is no Parquet, a FIFO or a symlink leading outside, a corrupt file,
        schemas that do not agree, more than the input cap, a selection option (``where``,
        ``models``, ``domains``: select the rows before), or any check of the item table;
        one line naming the file.
    """
    from jagged.readers import items_parquet

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


__all__ = ["EVALUATOR_SUFFIXES", "handles_directory", "load_directory", "load_parquet_folder",
           "paused_gc"]
