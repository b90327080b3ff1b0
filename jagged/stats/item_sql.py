"""The item audit's sufficient statistics out of core: plain SQL, run by DuckDB.

Every statement the out-of-core audit runs is in :data:`STATEMENTS` (and the two
parameterised queries :data:`SOFTPLUS_SQL` and :data:`SENSITIVITY_SQL`), written against
one view ``rows(model, domain, grp, item, x, choice, key, n_options, informed)`` so that
another SQL engine with window functions and ``FILTER`` clauses could run them
unchanged. They produce exactly the tables of :class:`jagged.stats.item_sums.ItemSums`
(the numpy road's definitions are in that module's docstring):

1. ``mg``: per (model, rest group) Σx, n and the ability θ;
2. ``w``: every row with its rest score, θ and upper/lower weights (one window over
   each item's rows ordered by rest score: the rows strictly above and those at or
   above give both groups' tie-sharing weights);
3. ``item_sums``, ``option_sums``, ``key_counts``: sums per item, per (item, label),
   per (item, key);
4. Σ softplus(a (θ − b_g)) per item on the difficulty grid of the slope that
   :func:`jagged.stats.item_model.choose_slope` picks from the item sums (a join with a
   small per-(model, group) table), after which the per-row tables are dropped; and,
   on demand, the per-(model, domain) sums for the sensitivity analysis.

DuckDB runs them with a memory limit and spills to a temporary folder, so peak memory
stays bounded whatever the file size (``benchmarks/bench_item_audit.py``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.item_model import choose_slope
from jagged.stats.item_sums import OPTION_SUM_COLUMNS, UPPER_LOWER, ItemSums

#: The statements, in order. ``{upper_lower}`` is :data:`jagged.stats.item_sums.UPPER_LOWER`.
STATEMENTS: tuple[str, ...] = (
    # 1. per (model, rest group)
    """CREATE TEMP TABLE mg AS
       SELECT row_number() OVER (ORDER BY model, grp) - 1 AS mg_id, model, grp,
              sum(x) AS s, count(*) AS n, ln((sum(x) + 0.5) / (count(*) - sum(x) + 0.5)) AS theta
       FROM rows GROUP BY model, grp""",
    # 2. rows with rest score, ability and upper/lower weights
    """CREATE TEMP TABLE w AS
       WITH r AS (
         SELECT rows.item, rows.domain, rows.grp, rows.x, rows.choice, rows.informed, rows.n_options,
                mg.mg_id, mg.theta,
                CASE WHEN mg.n > 1 THEN (mg.s - rows.x) / (mg.n - 1) END AS rest
         FROM rows JOIN mg ON rows.model = mg.model AND rows.grp = mg.grp),
       ranked AS (
         SELECT r.*,
                count(rest) OVER (PARTITION BY item) AS n_r,
                rank() OVER (PARTITION BY item ORDER BY rest DESC NULLS LAST) - 1 AS above,
                count(rest) OVER (PARTITION BY item ORDER BY rest DESC NULLS LAST
                                  RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS through
         FROM r),
       sized AS (
         SELECT ranked.*,
                CASE WHEN n_r > 0 THEN greatest(1, floor({upper_lower} * n_r + 0.5)) ELSE 0 END AS k
         FROM ranked)
       SELECT item, domain, grp, x, choice, informed, n_options, mg_id, theta, rest, k,
              CASE WHEN rest IS NULL THEN 0.0
                   WHEN through <= k THEN 1.0
                   ELSE greatest(0.0, least(1.0, (k - above) / (through - above))) END AS w_u,
              CASE WHEN rest IS NULL THEN 0.0
                   WHEN n_r - above <= k THEN 1.0
                   ELSE greatest(0.0, least(1.0, (k - (n_r - through)) / (through - above))) END AS w_l
       FROM sized""",
    # 3a. per item
    """CREATE TEMP TABLE item_sums AS
       SELECT item, min(domain) AS domain, min(grp) AS grp, count(*) AS n, sum(x) AS sx, sum(x * x) AS sxx,
              count(rest) AS n_r,
              coalesce(sum(x) FILTER (WHERE rest IS NOT NULL), 0) AS sx_r,
              coalesce(sum(x * x) FILTER (WHERE rest IS NOT NULL), 0) AS sxx_r,
              coalesce(sum(rest), 0) AS sr, coalesce(sum(rest * rest), 0) AS srr,
              coalesce(sum(x * rest), 0) AS sxr, sum(theta) AS stheta, sum(x * theta) AS sxtheta,
              max(k) AS k_ul, sum(x * w_u) AS sxwu, sum(x * w_l) AS sxwl,
              count(*) FILTER (WHERE informed) AS n_choice, min(n_options) AS nopt_min, max(n_options) AS nopt_max
       FROM w GROUP BY item""",
    # 3b. per (item, chosen label), rows with choice information
    """CREATE TEMP TABLE option_sums AS
       SELECT item, coalesce(choice, '') AS label, count(*) AS count, sum(theta) AS stheta, sum(w_u) AS swu,
              count(*) FILTER (WHERE x = 0) AS n_wrong,
              count(*) FILTER (WHERE x = 0 AND rest IS NOT NULL) AS n_wrong_r,
              coalesce(sum(rest) FILTER (WHERE x = 0), 0) AS sr_wrong,
              coalesce(sum(w_u) FILTER (WHERE x = 0), 0) AS swu_wrong
       FROM w WHERE informed GROUP BY item, coalesce(choice, '')""",
    # 3c. per (item, key)
    """CREATE TEMP TABLE key_counts AS
       SELECT item, {key_label} AS key, count(*) AS count
       FROM rows WHERE {key_label} IS NOT NULL GROUP BY item, {key_label}""",
    # items and labels numbered (the Python side gets integers, not a string per row)
    """CREATE TEMP TABLE item_pos AS SELECT item, row_number() OVER (ORDER BY item) - 1 AS pos FROM item_sums""",
    """CREATE TEMP TABLE label_code AS
       SELECT label, row_number() OVER (ORDER BY label) - 1 AS code
       FROM (SELECT DISTINCT label FROM option_sums UNION SELECT DISTINCT key FROM key_counts)""",
    # the per-row table for the on-demand queries
    """CREATE TEMP TABLE presence AS SELECT item_pos.pos, w.mg_id FROM w JOIN item_pos ON w.item = item_pos.item""",
    """DROP TABLE w""",
)

#: What the Python side fetches (items in order; options and keys by item position and label code).
FETCH_ITEMS = "SELECT * FROM item_sums ORDER BY item"
FETCH_OPTIONS = """SELECT item_pos.pos, label_code.code AS label, o.count, o.stheta, o.swu, o.n_wrong, o.n_wrong_r,
                          o.sr_wrong, o.swu_wrong
                   FROM option_sums o JOIN item_pos ON o.item = item_pos.item
                   JOIN label_code ON o.label = label_code.label ORDER BY item_pos.pos, o.label"""
FETCH_KEYS = """SELECT item_pos.pos, label_code.code AS key, k.count
                FROM key_counts k JOIN item_pos ON k.item = item_pos.item
                JOIN label_code ON k.key = label_code.label ORDER BY item_pos.pos, k.key"""
FETCH_LABELS = "SELECT label FROM label_code ORDER BY code"

#: Σ_m softplus(a (θ_m − b_g)) per item: ``sp`` holds one row per (model, group) with one column per grid point.
SOFTPLUS_SQL = """SELECT presence.pos, {sums} FROM presence JOIN sp ON presence.mg_id = sp.mg_id
                  GROUP BY presence.pos"""

#: Per (model, domain): all items, those not set aside, and the what-if re-scoring.
SENSITIVITY_SQL = """SELECT rows.model, rows.domain, sum(rows.x) AS s, count(*) AS n,
                            coalesce(sum(rows.x) FILTER (WHERE aside.item IS NULL), 0) AS s_kept,
                            count(*) FILTER (WHERE aside.item IS NULL) AS n_kept,
                            sum(CASE WHEN alt.option IS NULL THEN rows.x
                                     WHEN rows.choice = alt.option THEN 1.0 ELSE 0.0 END) AS s_rescored,
                            count(*) FILTER (WHERE alt.option IS NOT NULL) AS n_rescored
                     FROM rows LEFT JOIN aside ON rows.item = aside.item LEFT JOIN alt ON rows.item = alt.item
                     GROUP BY rows.model, rows.domain"""

#: DuckDB memory cap of the audit's sessions; it spills to a temporary folder beyond it (the loader's own
#: session, which checks the file first, has :data:`jagged.readers.items.DUCKDB_MEMORY_LIMIT`).
MEMORY_LIMIT = "512MB"


class _Session:
    """A DuckDB connection with its own spill folder (memory limit, threads)."""

    def __init__(self, memory_limit: str, threads: int | None) -> None:
        import duckdb

        self.spill = tempfile.mkdtemp(prefix="jagged-audit-duckdb-")
        self.con = duckdb.connect(":memory:", config={
            "memory_limit": memory_limit, "threads": threads or min(os.cpu_count() or 1, 4),
            "temp_directory": self.spill, "preserve_insertion_order": False,
            # give freed memory back to the system at once: the audit's arrays follow
            "allocator_flush_threshold": "16MB", "allocator_bulk_deallocation_flush_threshold": "16MB"})

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            shutil.rmtree(self.spill, ignore_errors=True)



def _rows_view(path: Path, expr: dict[str, str], rest: str) -> str:
    literal = "'" + str(path).replace("'", "''") + "'"
    group = expr["domain"] if rest == "domain" else "'(all)'"
    choice = expr.get("choice", "NULL")
    key = expr.get("key", "NULL")
    if "key" in expr:
        informed = f"({key} IS NOT NULL)"
    elif "choice" in expr:
        informed = "true"
    else:
        informed = "false"
    columns = {"model": expr["model"], "domain": expr["domain"], "grp": group, "item": expr["item"],
               "x": expr["correct"], "choice": choice, "key": key, "n_options": expr.get("n_options", "NULL"),
               "informed": informed}
    select = ", ".join(f"{value} AS {name}" for name, value in columns.items())
    return f"CREATE VIEW rows AS SELECT {select} FROM read_parquet({literal})"


def parquet_item_sums(path: str | Path, *, rest: str = "domain", memory_limit: str = MEMORY_LIMIT,
                      threads: int | None = None) -> ItemSums:
    """The :class:`ItemSums` of an item-level Parquet file, computed out of core.

    Parameters
    ----------
    path : str or pathlib.Path
        An item-level Parquet file the loader has checked (:func:`jagged.load`).
    rest : {"domain", "test"}
        Rest group: the item's domain, or the whole test.
    memory_limit : str
        DuckDB memory limit.
    threads : int, optional
        DuckDB threads (default: the CPU count, at most 4).

    Returns
    -------
    ItemSums
        ``source="duckdb"``; its ``softplus`` returns the sums for the chosen slope, and
        its ``model_domain_sums`` runs :data:`SENSITIVITY_SQL` in a new DuckDB session.
    """
    import duckdb

    from jagged.readers.items import parquet_columns

    path = Path(path)
    expr = parquet_columns(path)
    session = _Session(memory_limit, threads)
    con = session.con
    has_choice, has_key = "choice" in expr, "key" in expr
    try:
        con.execute(_rows_view(path, expr, rest))
        key_label = "key" if has_key else ("CASE WHEN x = 1 THEN choice END" if has_choice else "NULL")
        for statement in STATEMENTS:
            con.execute(statement.format(upper_lower=repr(UPPER_LOWER), key_label=key_label))
        mg = con.execute("SELECT mg_id, model, grp, s, n, theta FROM mg ORDER BY mg_id").fetch_df()
        items = con.execute(FETCH_ITEMS).fetch_df()
        # the slope and the softplus sums now, so the 50M-row presence table can go before the options come
        items = _typed(items, ("item", "domain", "grp")).rename(columns={"grp": "group"})
        group_table = _typed(mg.drop(columns="mg_id").rename(columns={"grp": "group"}), ("model", "group"))
        slope, grid = choose_slope(group_table, items)
        softplus_table = _softplus_sums(con, mg, slope, grid, len(items))
        con.execute("DROP TABLE presence")
        labels = np.asarray([r[0] for r in con.execute(FETCH_LABELS).fetchall()], dtype=object)
        options = _fetch_in_batches(con, FETCH_OPTIONS, "SELECT count(*) FROM option_sums")
        keys = _fetch_in_batches(con, FETCH_KEYS, "SELECT count(*) FROM key_counts")
        for table in ("option_sums", "key_counts", "item_sums", "item_pos", "label_code", "sp"):
            con.execute(f"DROP TABLE {table}")  # the sensitivity query reads the file again
    except duckdb.Error as exc:
        session.close()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JaggedInputError(f"{path.name}: cannot audit item-level Parquet: {first}") from None
    options = _coded(options, labels, "label")[list(OPTION_SUM_COLUMNS)]
    keys = _coded(keys, labels, "key")

    held = [softplus_table]

    def softplus_sums(a: float, g: np.ndarray) -> np.ndarray:
        if a != slope or not np.array_equal(np.asarray(g), grid) or not held:
            raise ValueError("the out-of-core sums were computed once, for the slope and grid of choose_slope")
        return held.pop()  # handed over once: the audit keeps no second copy

    session.close()  # frees DuckDB's memory before the audit's own arrays grow

    def model_domain_sums(set_aside: np.ndarray, rescore: dict[str, str]) -> pd.DataFrame:
        return _sensitivity_sums(path, expr, rest, set_aside, rescore, memory_limit, threads)

    return ItemSums(model_group=group_table, items=items, options=options, keys=keys, has_choice=has_choice,
                    has_key=has_key, softplus=softplus_sums, model_domain_sums=model_domain_sums, source="duckdb")


def _sensitivity_sums(path: Path, expr: dict[str, str], rest: str, set_aside: np.ndarray, rescore: dict[str, str],
                      memory_limit: str, threads: int | None) -> pd.DataFrame:
    """:data:`SENSITIVITY_SQL` in a fresh DuckDB session (one more pass over the file)."""
    import duckdb

    session = _Session(memory_limit, threads)
    con = session.con
    try:
        con.execute(_rows_view(path, expr, rest))
        aside = pd.DataFrame({"item": pd.Series(np.asarray(list(set_aside), dtype=object), dtype=object)})
        alt = pd.DataFrame({"item": pd.Series(list(rescore), dtype=object),
                            "option": pd.Series(list(rescore.values()), dtype=object)})
        con.register("aside_frame", aside)
        con.register("alt_frame", alt)
        con.execute("CREATE TEMP TABLE aside AS SELECT CAST(item AS VARCHAR) AS item FROM aside_frame")
        con.execute("CREATE TEMP TABLE alt AS SELECT CAST(item AS VARCHAR) AS item, CAST(option AS VARCHAR) AS option "
                    "FROM alt_frame")
        out = con.execute(SENSITIVITY_SQL + " ORDER BY rows.model, rows.domain").fetch_df()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JaggedInputError(f"{path.name}: cannot audit item-level Parquet: {first}") from None
    finally:
        session.close()
    out = _typed(out, ("model", "domain"))
    for column in ("s", "n", "s_kept", "n_kept", "s_rescored", "n_rescored"):
        out[column] = out[column].to_numpy(dtype=float)
    return out


def _fetch_in_batches(con: Any, query: str, count_query: str, batch: int = 1_000_000) -> dict[str, np.ndarray]:
    """A query's result as numpy columns, filled batch by batch (no second full copy in memory)."""
    ((total,),) = con.execute(count_query).fetchall()
    reader = con.sql(query).to_arrow_reader(batch)
    out: dict[str, np.ndarray] = {}
    start = 0
    for record in reader:
        for name, column in zip(record.schema.names, record.columns):
            values = column.to_numpy(zero_copy_only=False)
            if name not in out:
                dtype = np.int32 if values.dtype.kind in "iu" and name != "pos" else values.dtype
                out[name] = np.empty(int(total), dtype=dtype)
            out[name][start:start + len(values)] = values
        start += record.num_rows
    if not out:
        return {name: np.zeros(0) for name in reader.schema.names}
    return out


def _softplus_sums(con: Any, mg: pd.DataFrame, a: float, grid: np.ndarray, n_items: int) -> np.ndarray:
    """Σ_m softplus(a (θ_m − b_g)) per item (rows: item positions) with :data:`SOFTPLUS_SQL`."""
    table = pd.DataFrame({"mg_id": mg["mg_id"].to_numpy()})
    z = a * (mg["theta"].to_numpy(dtype=float)[:, None] - np.asarray(grid)[None, :])
    for g in range(len(grid)):
        table[f"sp_{g}"] = np.logaddexp(0.0, z[:, g])
    con.register("sp_frame", table)
    con.execute("CREATE OR REPLACE TEMP TABLE sp AS SELECT * FROM sp_frame")
    con.unregister("sp_frame")
    sums = ", ".join(f"sum(sp.sp_{g}) AS sp_{g}" for g in range(len(grid)))
    out = con.execute(SOFTPLUS_SQL.format(sums=sums)).fetchnumpy()
    result = np.zeros((n_items, len(grid)))
    pos = np.asarray(out["pos"], dtype=np.int64)
    for g in range(len(grid)):
        result[pos, g] = np.asarray(out[f"sp_{g}"], dtype=float)
    return result


def _typed(frame: pd.DataFrame, text: tuple[str, ...]) -> pd.DataFrame:
    """Text columns as object arrays of str, the others as float (DuckDB gives Int64, Decimal ...)."""
    out = {}
    for column in frame.columns:
        if column in text:
            values = frame[column].to_numpy(dtype=object)
            values[pd.isna(values)] = None
            out[column] = pd.Series(values, dtype=object)
        else:
            out[column] = pd.to_numeric(frame[column]).to_numpy(dtype=float)
    return pd.DataFrame(out)


def _coded(columns: dict[str, np.ndarray], labels: np.ndarray, label_column: str) -> pd.DataFrame:
    """A fetched table sorted by (``pos``, label), the label codes back as label text, counts int32, the rest float."""
    pos, code = np.asarray(columns["pos"]), np.asarray(columns[label_column])
    key = pos.astype(np.int64) * (len(labels) + 1) + code
    if len(key) > 1 and not (key[1:] >= key[:-1]).all():  # a streamed result need not keep ORDER BY
        order = np.argsort(key, kind="stable")
        columns = {name: np.asarray(values)[order] for name, values in columns.items()}
    del key
    out = {}
    for name, values in columns.items():
        values = np.asarray(values)
        if name == "pos" or name in ("count", "n_wrong", "n_wrong_r"):
            out[name] = values.astype(np.int32 if name != "pos" or len(values) < 2 ** 31 else np.int64)
        elif name == label_column:
            out[name] = pd.Series(labels[values.astype(np.int64)], dtype=object)
        else:
            out[name] = np.asarray(values, dtype=float)
    return pd.DataFrame(out, copy=False)
