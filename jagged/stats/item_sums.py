"""The item audit's sufficient statistics (:class:`ItemSums`), computed by the engine from any input.

The item audit needs only sums over rows: per (model, domain), per item and per (item,
option), written once as the Ibis expressions of :mod:`jagged.stats.item_expr` and run by
the :class:`jagged.stats.engine.Engine`: :func:`item_sums` for an item table in memory
(registered, not copied), :func:`lake_item_sums` for a Parquet file or partitioned folder.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.engine import Engine, read_parquet, table_from_frame


@dataclass
class ItemSums:
    """Per-group, per-item and per-option sums behind the item audit.

    Attributes
    ----------
    model_group : pandas.DataFrame
        ``model``, ``group``, ``s`` (Σ correct), ``n`` (items).
    items : pandas.DataFrame
        One row per item, sorted by name (:data:`jagged.stats.item_expr.ITEM_SUM_COLUMNS`).
    options : pandas.DataFrame
        One row per (item, chosen label) over rows with choice information
        (:data:`jagged.stats.item_expr.OPTION_SUM_COLUMNS`; ``pos`` is the item's row in
        :attr:`items`; the label :data:`jagged.stats.item_expr.NO_ANSWER` is "no answer").
    keys : pandas.DataFrame
        ``pos``, ``key``, ``count``: how many rows carry each key.
    has_choice, has_key : bool
        Whether the table has the columns.
    model_domain_sums : callable
        ``model_domain_sums(set_aside, rescore)`` → per (model, domain) ``s, n`` over all
        items, ``s_kept, n_kept`` without the items ``set_aside``, and ``s_rescored`` with
        the items of ``rescore`` (item → option) scored against that option (``n_rescored``).
    source : str
        ``"memory"`` (an item table, through DuckDB), ``"duckdb"`` (a Parquet input) or ``"spark"``.
    """

    model_group: pd.DataFrame
    items: pd.DataFrame
    options: pd.DataFrame
    keys: pd.DataFrame
    has_choice: bool
    has_key: bool
    model_domain_sums: Callable[[np.ndarray, dict[str, str]], pd.DataFrame]
    source: str = "memory"


def item_sums(items: pd.DataFrame, *, rest: str = "domain", engine: Engine | str | None = None) -> ItemSums:
    """The :class:`ItemSums` of a validated item table in memory (:func:`jagged.readers.items.validate_items`).

    ``rest``: rest scores and abilities within the item's domain, or over the whole
    ``"test"``; ``engine``: where the sums run (default DuckDB, which reads the frame
    where it is). ``source`` is ``"memory"`` or ``"spark"``.
    """
    columns = [c for c in ("model", "domain", "item", "correct", "choice", "key", "n_options") if c in items.columns]
    frame = items[columns].copy(deep=False)
    names: dict[str, np.ndarray] = {}
    for name in ("model", "domain", "item"):  # integer codes of the sorted names: the engine groups integers
        codes, uniques = pd.factorize(frame[name].astype(object), sort=True)
        frame[name] = codes.astype(np.int64)
        names[name] = np.asarray(uniques, dtype=object)
    names["grp"] = names["domain"] if rest == "domain" else np.asarray(["(all)"], dtype=object)
    for name in ("choice", "key"):
        if name in frame:
            frame[name] = frame[name].astype(object)
    frame["correct"] = frame["correct"].astype(float)
    if "n_options" in frame:
        frame["n_options"] = frame["n_options"].astype(float)
    # one DuckDB thread: the sums are added in the frame's order, so the same table gives the same bits (and
    # items with the same responses exactly tied statistics) run after run
    return _engine_sums(lambda con: _memtable(con, frame), rest=rest, engine=replace(Engine.of(engine), threads=1),
                        source="memory", validated=True, names=names)


def lake_item_sums(path: str | Path, *, rest: str = "domain", engine: Engine | str | None = None) -> ItemSums:
    """The :class:`ItemSums` of an item-level Parquet file or hive-partitioned folder the loader checked.

    ``rest`` and ``engine`` as in :func:`item_sums`; ``source`` is ``"duckdb"`` or
    ``"spark"``, and ``model_domain_sums`` reads the input again.
    """
    path = Path(path)
    return _engine_sums(lambda con: read_parquet(con, path), rest=rest, engine=Engine.of(engine),
                        source=None, validated=False, name=path.name)


def _memtable(con: Any, frame: pd.DataFrame) -> Any:
    types = {"model": "int64", "domain": "int64", "item": "int64", "correct": "float64", "choice": "string",
             "key": "string", "n_options": "float64"}
    return table_from_frame(con, frame, {c: types[c] for c in frame.columns})


def _engine_sums(table: Callable[[Any], Any], *, rest: str, engine: Engine, source: str | None, validated: bool,
                 name: str = "<item table>", names: dict[str, np.ndarray] | None = None) -> ItemSums:
    """Open the engine, build the rows from ``table(con)``, compute the sums.

    The connection stays open for the sums' later question (the sensitivity), which
    reuse the registered rows; it closes when the last function that uses it (in this
    :class:`ItemSums` or a copy of it) is garbage-collected.
    """
    from jagged.stats.item_expr import (
        compute_item_sums,
        rows_table,
        run_cell_sums,
        run_model_domain_sums,
    )

    source = "spark" if engine.spark else (source or "duckdb")
    con, close = engine.connect()
    held = _Held(con)
    closing = weakref.finalize(held, close)
    try:
        rows, has_choice, has_key = rows_table(table(con), rest=rest, validated=validated, coded=names is not None)
        mg, items, options, keys = _engine_errors(
            name, lambda: compute_item_sums(con, rows, has_choice=has_choice, has_key=has_key, names=names))
    except BaseException:
        closing()
        raise
    # per (model, domain) over all items: the per-group sums when the group is the domain, else one query when asked
    cells: list[pd.DataFrame] = [mg.rename(columns={"group": "domain"})[["model", "domain", "s", "n"]]] \
        if rest == "domain" else []

    def model_domain_sums(set_aside: np.ndarray, rescore: dict[str, str]) -> pd.DataFrame:
        if not cells:
            cells.append(_engine_errors(name, lambda: run_cell_sums(held.con, rows, names)))
        return _engine_errors(name, lambda: run_model_domain_sums(held.con, rows, has_choice, set_aside, rescore,
                                                                   cells[0], names))

    return ItemSums(model_group=mg, items=items, options=options, keys=keys, has_choice=has_choice,
                    has_key=has_key, model_domain_sums=model_domain_sums, source=source)


class _Held:
    """The open engine connection, held by the functions of an :class:`ItemSums`; closed when it is collected."""

    def __init__(self, con: Any) -> None:
        self.con = con


def _engine_errors(name: str, run: Callable[[], Any]) -> Any:
    """``run()``, an engine's error (DuckDB, Spark) as a one-line :class:`JaggedInputError` naming the input."""
    try:
        return run()
    except (JaggedInputError, ValueError, TypeError, KeyError, MemoryError):
        raise
    except Exception as exc:  # duckdb.Error, pyspark's AnalysisException / Py4JJavaError ...
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise JaggedInputError(f"{name}: cannot compute the item statistics: {first}") from None
