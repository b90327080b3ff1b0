"""Item-level Parquet too large for memory, a file or a hive-partitioned folder: checked and aggregated out of core.

:func:`dataset_from_parquet` runs the checks of :func:`jagged.readers.items.validate_items`
and the aggregation of :func:`jagged.readers.items.aggregate_items` as SQL in DuckDB, which
reads in row groups and spills to disk. Messages name the row (``row 12``; in a folder
``model=a/part-0.parquet row 12``). The Dataset records the input as ``item_path`` for the
item statistics, which read it again (:mod:`jagged.stats.engine`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.paths import DUCKDB_CONFIG, confine_duckdb, parquet_parts, spill_folder
from jagged.readers.canonical import cell_repr, validate_scores
from jagged.readers.dataset import Dataset
from jagged.readers.files import check_footers
from jagged.readers.items import (
    ITEM_ALIASES,
    check_columns,
    coverage_from_counts,
    coverage_notes,
    pa_is_text,
    parquet_columns,
    sql_name,
)

#: DuckDB memory cap for out-of-core aggregation (it spills to a temporary folder beyond it).
DUCKDB_MEMORY_LIMIT: str = "1GB"


def lake_schema(path: Path) -> Any:
    """The pyarrow schema of a Parquet file, or of a partitioned folder (its first file's, plus the keys as text)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_dir():
        return pq.read_schema(path)
    files = parquet_parts(path)
    schema = pq.read_schema(files[0])
    for part in files[0].relative_to(path).parts[:-1]:
        if "=" in part:
            key = part.split("=", 1)[0]
            if key not in schema.names:
                schema = schema.append(pa.field(key, pa.string()))
    return schema


def lake_columns(path: Path) -> dict[str, str]:
    """:func:`jagged.readers.items.parquet_columns` for a Parquet file or a partitioned folder."""
    import pyarrow as pa

    from jagged.readers.choices import sql_label

    if not path.is_dir():
        return parquet_columns(path)
    schema = lake_schema(path)
    col = _named(schema)

    def kind(name: str) -> str:
        dtype = schema.field(col[name]).type
        if pa.types.is_dictionary(dtype):
            dtype = dtype.value_type
        return "integer" if pa.types.is_integer(dtype) else ("float" if pa.types.is_floating(dtype) else "text")

    out = {}
    for name in ("model", "domain"):
        if name in col:
            out[name] = f"trim({sql_name(col[name])})" if kind(name) == "text" else sql_name(col[name])
    if "item" in col:
        out["item"] = sql_label(sql_name(col["item"]), kind("item"))
    if "correct" in col:
        out["correct"] = f"TRY_CAST({sql_name(col['correct'])} AS DOUBLE)"
    if "category" in col:
        out["category"] = f"NULLIF(trim(CAST({sql_name(col['category'])} AS VARCHAR)), '')"
    for name in ("choice", "key"):
        if name in col:
            out[name] = sql_label(sql_name(col[name]), kind(name))
    if "n_options" in col:
        out["n_options"] = f"TRY_CAST({sql_name(col['n_options'])} AS DOUBLE)"
    return out


def _named(schema: Any) -> dict[str, Any]:
    """Column name (stripped; the item aliases of :data:`ITEM_ALIASES` too) → the schema's own name."""
    col = {str(raw).strip(): raw for raw in schema.names}
    for alias, name in ITEM_ALIASES.items():
        if alias in col and name not in col:
            col[name] = col[alias]
    return col


class _RowRef:
    """How a row is named: ``file_row_number`` in a file; (file name, row) in a partitioned folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder = path.is_dir()
        self.key = "struct_pack(f := filename, r := file_row_number)" if self.folder else "file_row_number"

    def where(self, value: Any) -> str:
        """SQL condition selecting the row ``value`` (a value of :attr:`key`)."""
        if self.folder:
            name = "'" + str(value["f"]).replace("'", "''") + "'"
            return f"filename = {name} AND file_row_number = {int(value['r'])}"
        return f"file_row_number = {int(value)}"

    def label(self, value: Any) -> str:
        """``row N`` (1-based), in a folder ``FILE row N`` with the file relative to the folder."""
        if self.folder:
            try:
                name = Path(str(value["f"])).relative_to(self.path).as_posix()
            except ValueError:
                name = Path(str(value["f"])).name
            return f"{name} row {int(value['r']) + 1}"
        return f"row {int(value) + 1}"


def dataset_from_parquet(path: str | Path, *, source: str | None = None,
                         memory_limit: str = DUCKDB_MEMORY_LIMIT, threads: int | None = None) -> Dataset:
    """Validate and aggregate a large item-level Parquet file, or a partitioned folder, out of core with DuckDB.

    Parameters
    ----------
    path : str or pathlib.Path
        Item-level Parquet file, or a folder of them partitioned hive-style
        (``model=a/part-0.parquet``; a column may live in the path).
    source : str, optional
        Name used in messages (default: the file name).
    memory_limit, threads
        DuckDB's (threads default: the CPU count, at most 4).

    Returns
    -------
    Dataset
        As :func:`jagged.readers.items.dataset_from_items` with ``items=None`` and
        ``item_path`` set.

    Raises
    ------
    JaggedInputError
        The checks of :func:`validate_items`, with the Parquet row; a folder's parts as
        :func:`jagged.paths.parquet_parts` refuses them; footers that declare more than the
        input cap (:func:`jagged.readers.files.check_footers`), or rows beyond them.

    Notes
    -----
    DuckDB gets the file or the parts as literal paths and may open nothing else
    (:func:`jagged.paths.confine_duckdb`). DuckDB rather than a pyarrow batch loop: the
    duplicate and one-domain-per-item checks need a hash over every (model, item) pair and
    item, which DuckDB keeps in C++ with a memory cap and spilling.
    """
    import duckdb

    path = Path(path)
    source = source or path.name
    path = Path(os.path.abspath(path))  # DuckDB is allowed these files by name
    parts = parquet_parts(path, source) if path.is_dir() else [path]
    declared = check_footers(parts, source, path if path.is_dir() else None)
    schema = lake_schema(path)
    col = _named(schema)
    check_columns(col, source)
    rows = _RowRef(path)
    text = {name: pa_is_text(schema.field(raw).type) for name, raw in col.items()}
    keys = {k: (f"trim({sql_name(col[k])})" if text[k] else sql_name(col[k])) for k in ("model", "domain", "item")}
    c = sql_name(col["correct"])
    cat = sql_name(col["category"]) if "category" in col else "NULL"
    threads = threads or min(os.cpu_count() or 1, 4)
    spill = spill_folder()
    try:
        con = duckdb.connect(":memory:", config={**DUCKDB_CONFIG, "memory_limit": memory_limit, "threads": threads,
                                                  "temp_directory": spill, "preserve_insertion_order": False})
        try:
            files = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in confine_duckdb(con, parts, [spill])) + "]"
            if rows.folder:
                con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({files}, file_row_number = true, "
                            "filename = true, hive_partitioning = true, hive_types_autocast = false)")
            else:
                con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({files}, file_row_number = true)")
            scores, domain_items, partial, n_rows, n_distinct = _duckdb_checks_and_aggregate(
                con, source, keys["model"], keys["domain"], keys["item"], c, cat, rows, declared)
            answers = _duckdb_answer_checks(con, source, lake_columns(path), rows)
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise JaggedInputError(f"{source}: cannot aggregate item-level Parquet: {first}") from None
        finally:
            con.close()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    scores = validate_scores(scores, source, line_offset=None)
    cov = coverage_from_counts(scores, domain_items)
    notes, summary = coverage_notes(cov)
    details = {
        "items": (f"{n_rows:,} item results, {n_distinct:,} distinct items"
                  + (", partial credit present" if partial else ", all 0/1")
                  + "; aggregated out of core (DuckDB), item table not kept"),
        "coverage": summary,
        "choices": answers,
    }
    return Dataset(scores=scores, source=source, paths=[path], format="items", items=None, item_path=path,
                   model_notes=notes, details=details)


def _duckdb_answer_checks(con: Any, source: str, expr: dict[str, str], rows: _RowRef) -> str:
    """The checks of :func:`jagged.readers.choices.check_answers` in SQL on view ``t``; the summary line."""
    from jagged.readers.choices import LABEL_MAX, sql_malformed, sql_option_index

    has_choice, has_key = "choice" in expr, "key" in expr
    if not has_choice and not has_key:
        return "no choice or key columns: the item audit uses correctness only (no distractor analysis)"

    _row = rows.label

    def first(condition: str) -> Any:
        return con.execute(f"SELECT min({rows.key}) FROM t WHERE {condition}").fetchone()[0]

    def at(row: Any, *columns: str) -> Any:
        return con.execute(f"SELECT {', '.join(columns)} FROM t WHERE {rows.where(row)}").fetchone()

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


def _duckdb_checks_and_aggregate(con: Any, source: str, m: str, d: str, i: str, c: str, cat: str, rows: _RowRef,
                                 declared: int) -> tuple[pd.DataFrame, pd.Series, bool, int, int]:
    """The validation queries, then the aggregation, on view ``t``: four passes (row checks, at most ``declared``
    rows; one domain per item; distinct (model, item) pairs; the (model, domain) sums)."""
    _row = rows.label

    def one(sql: str) -> Any:
        return con.execute(sql).fetchone()

    x = f"TRY_CAST({c} AS DOUBLE)"
    conditions = {
        "model": f"{m} IS NULL OR CAST({m} AS VARCHAR) = ''",
        "domain": f"{d} IS NULL OR CAST({d} AS VARCHAR) = ''",
        "item": f"{i} IS NULL OR CAST({i} AS VARCHAR) = ''",
        "correct": f"{x} IS NULL OR isnan({x}) OR {x} < 0 OR {x} > 1",
    }
    firsts = ", ".join(f"min({rows.key}) FILTER (WHERE {cond})" for cond in conditions.values())
    row = one(f"SELECT count(*), {firsts} FROM t")
    n_rows = int(row[0])
    if n_rows > declared:
        raise JaggedInputError(f"{source}: {n_rows:,} rows read where the Parquet footers declare {declared:,}")
    if n_rows == 0:
        raise JaggedInputError(f"{source}: the table has a header but no rows")
    for name, first in zip(conditions, row[1:]):
        if first is None:
            continue
        if name != "correct":
            raise JaggedInputError(f"{source}: column '{name}' has an empty {name} name ({_row(first)})")
        raw, value = one(f"SELECT CAST({c} AS VARCHAR), {x} FROM t WHERE {rows.where(first)}")
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
        bad = one(f"SELECT {m}, {i}, list({rows.key} ORDER BY {rows.key})[1:2] FROM t "
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
