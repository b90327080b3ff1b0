"""Intervals of item-level results the engine reads: the item matrix streamed out of it, or a Poisson bootstrap in it.

Out of core, the paired item bootstrap (:mod:`jagged.stats.bootstrap`) runs on the item
matrix streamed out of DuckDB once (:func:`matrix_from_engine`) while models × items stay
within :data:`MATRIX_CELLS`. Beyond that, and on Spark, the Poisson bootstrap (Hanley &
MacGibbon 2006; Chamandy et al. 2012) runs where the rows lie: every item gets, per
replicate b, a weight ``w_ib ~ Poisson(1)`` (the limit of the multinomial(n, 1/n) count),
a function of (item, replicate, seed) only, so every row computes its own weight on any
engine and partitioning, and the same item gets the same weight for every model (paired):

* item code ``i``: the item's rank among the distinct item names;
* ``h = H(H(i ⊕ H(seed)) ⊕ (b · 0x9E3779B9 mod 2³²))`` with ``H`` the 32-bit mixer
  ``x ← ((x ≫ 16) ⊕ x) · 0x45d9f3b mod 2³²`` (twice), ``x ← (x ≫ 16) ⊕ x``;
* ``w = min{k : (h + ½) / 2³² ≤ F(k)}``, ``F`` the Poisson(1) CDF (:data:`POISSON_CDF`).

Per (model, domain, replicate) the engine sums ``Σ w·x``, ``Σ w`` and ``Σ w·x²``, which
:func:`jagged.stats.replicates.summarise` turns into the statistics exactly as for the paired
bootstrap; DuckDB and Spark give the same weights, bit for bit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.engine import Engine, read_parquet, table_from_frame
from jagged.stats.item_expr import fetch, rows_table
from jagged.stats.replicates import ItemMatrix, Replicates, ReplicateStatistic, chunk_size, summarise, weight_array

METHOD_POISSON = "Poisson bootstrap over items (weights from a hash of item and replicate), paired across models"
#: 2³² − 1: the hash works on unsigned 32-bit values held in 64-bit integers (no overflow on any engine).
MASK32 = 0xFFFFFFFF
#: The mixer's multiplier and the replicate's stride (the golden ratio in 32 bits).
MIX, STRIDE = 0x45D9F3B, 0x9E3779B9
#: Poisson(1) CDF F(0), …, F(17); a draw above F(17) is 18.
POISSON_CDF: tuple[float, ...] = tuple(
    math.exp(-1.0) * sum(1.0 / math.factorial(j) for j in range(k + 1)) for k in range(18))
#: Most models × items cells streamed out of DuckDB for the paired bootstrap (:func:`matrix_from_engine`):
#: 5 bytes a cell with 0/1 credit (float32 and a presence byte; 0.5 GB at the bound), 17 with partial credit.
MATRIX_CELLS = 100_000_000
#: Replicates per engine query at most (each query reads the rows once); fewer when the
#: query's replicate × model × domain cells would pass :data:`jagged.stats.replicates.CELL_BUDGET`.
BLOCK = 250


def mix32(x: Any) -> Any:
    """The 32-bit mixer ``H`` on an Ibis integer expression, a numpy array or a Python int (values in [0, 2³²))."""
    x = ((x >> 16) ^ x) * MIX & MASK32
    x = ((x >> 16) ^ x) * MIX & MASK32
    return (x >> 16) ^ x


def with_poisson_weight(table: Any, code: str, replicate: str, seed: int, name: str = "w") -> Any:
    """``table`` with a column ``name``: the Poisson(1) weight of item ``code`` in replicate ``replicate``.

    Each step of the hash is its own projection, so the generated SQL stays linear in the
    number of steps (an expression that names ``x`` twice per step would double at each).
    """
    import ibis

    step = "_jagged_h"
    t = table.mutate(**{step: table[code] ^ mix32(int(seed) & MASK32)})

    def mix(t: Any) -> Any:
        for _ in range(2):
            t = t.mutate(**{step: ((t[step] >> 16) ^ t[step]) * MIX & MASK32})
        return t.mutate(**{step: (t[step] >> 16) ^ t[step]})

    t = mix(t)
    t = t.mutate(**{step: t[step] ^ (t[replicate] * STRIDE & MASK32)})
    t = mix(t)
    t = t.mutate(**{step: (t[step].cast("float64") + 0.5) / 4294967296.0})
    u = t[step]
    weight = ibis.cases(*((u <= f, k) for k, f in enumerate(POISSON_CDF)), else_=len(POISSON_CDF)).cast("float64")
    return t.mutate(**{name: weight}).drop(step)


def replicate_sums_expr(rows: Any, replicates: Any, seed: int) -> Any:
    """Per (model, domain, replicate ``b`` of the int64 table ``replicates``): ``num`` Σw·x, ``den`` Σw, ``sq`` Σw·x².

    ``rows`` has ``model, domain, item, x`` (:func:`jagged.stats.item_expr.rows_table`).
    """
    import ibis

    items = rows.select("item").distinct()
    # Spark's dense_rank is a 32-bit INT, which Ibis types as int64: through int32 so that the cast is written
    items = items.mutate(code=ibis.dense_rank().over(order_by=items.item).cast("int32").cast("int64"))
    coded = rows.select("model", "domain", "item", "x").join(items, "item")
    j = with_poisson_weight(coded.cross_join(replicates), "code", "b", seed)
    return j.group_by(["model", "domain", "b"]).aggregate(num=(j.w * j.x).sum(), den=j.w.sum(),
                                                          sq=(j.w * j.x * j.x).sum())


def _observed(con: Any, rows: Any) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], bool]:
    """Models, domains (sorted), the M × D sums Σx, n and Σx² of the data as observed, and whether credit is partial."""
    cells = fetch(con, rows.group_by(["model", "domain"]).aggregate(
        num=rows.x.sum(), den=rows.count(), sq=(rows.x * rows.x).sum(),
        partial=rows.count(where=(rows.x > 0) & (rows.x < 1))))
    models = np.asarray(sorted(cells["model"].unique()), dtype=object)
    domains = np.asarray(sorted(cells["domain"].unique()), dtype=object)
    at = pd.Index(models).get_indexer(cells["model"]), pd.Index(domains).get_indexer(cells["domain"])
    return models, domains, _placed(cells, at, (len(models), len(domains))), bool(cells["partial"].sum() > 0)


def _placed(frame: pd.DataFrame, at: tuple[np.ndarray, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The ``num``, ``den`` and ``sq`` columns of ``frame`` placed at ``at`` in zero arrays of ``shape``."""
    out = tuple(np.zeros(shape) for _ in range(3))
    for a, name in zip(out, ("num", "den", "sq")):
        a[at] = frame[name].to_numpy(dtype=float)
    return out


def replicate_sums(con: Any, rows: Any, n_boot: int, seed: int, models: np.ndarray, domains: np.ndarray,
                   partial: bool, block: int = BLOCK) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Per block of ``block`` replicates (one engine query), the b × M × D arrays Σw·x, Σw and (``partial``) Σw·x².

    The M and D axes follow ``models`` and ``domains``.
    """
    import ibis

    block = min(block, chunk_size(n_boot, len(models) * len(domains)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        reps = ibis.memtable(pd.DataFrame({"b": np.arange(start, start + b, dtype=np.int64)}), schema={"b": "int64"})
        out = fetch(con, replicate_sums_expr(rows, reps, seed))
        at = (out["b"].to_numpy(dtype=np.int64) - start, pd.Index(models).get_indexer(out["model"]),
              pd.Index(domains).get_indexer(out["domain"]))
        num, den, sq = _placed(out, at, (b, len(models), len(domains)))
        yield num, den, sq if partial else None


def _rows(con: Any, data: pd.DataFrame | Path) -> Any:
    """The rows ``model, domain, item, x`` of a validated item table or of a Parquet file or folder, on ``con``."""
    if isinstance(data, pd.DataFrame):
        columns = {"model": "string", "domain": "string", "item": "string", "correct": "float64"}
        table = table_from_frame(con, data[list(columns)].astype({"correct": float}), columns)
        return rows_table(table, validated=True)[0]
    return rows_table(read_parquet(con, data))[0]


def poisson_replicates(data: pd.DataFrame | str | Path, *, weights: pd.DataFrame | None = None, n_boot: int = 2000,
                       seed: int = 0, engine: Engine | str | None = None,
                       statistics: Mapping[str, ReplicateStatistic] | None = None) -> Replicates:
    """Poisson-bootstrap replicates of cv_error, macro_score, dep_score and wedge, summed in the engine.

    ``data`` is a validated item table or the path of an item-level Parquet file or
    partitioned folder; the other arguments are those of
    :func:`jagged.stats.bootstrap.bootstrap_replicates` (``n_boot`` 1 … 100,000; the same
    seed gives the same replicates on either engine). Models and domains are sorted by
    name; ``method`` is :data:`METHOD_POISSON`.
    """
    if int(n_boot) != n_boot or not 1 <= n_boot <= 100_000:
        raise JaggedInputError(f"bootstrap replicates must be a whole number from 1 to 100000, not {n_boot!r}")
    with Engine.of(engine).backend() as con:
        rows = _rows(con, data if isinstance(data, pd.DataFrame) else Path(data))
        models, domains, (num, den, sq), partial = _observed(con, rows)
        w, profiles = weight_array(weights, domains)
        return summarise(replicate_sums(con, rows, int(n_boot), seed, models, domains, partial),
                         (num, den, sq if partial else None), den > 0, w, statistics, models, domains, profiles,
                         METHOD_POISSON)


def matrix_from_engine(path: str | Path, models: np.ndarray, domains: np.ndarray, engine: Engine | None = None,
                       max_cells: int | None = None) -> ItemMatrix | None:
    """The :class:`~jagged.stats.replicates.ItemMatrix` of an item-level Parquet file or folder, streamed out of DuckDB.

    None when ``len(models)`` × items passes ``max_cells`` (default :data:`MATRIX_CELLS`).
    The engine ranks the items by name within their domain and sends (row, model,
    ``correct``) once, in Arrow batches, into an N × M float32 matrix (float64 once a
    partial credit arrives) and a presence mask: the matrix
    :func:`jagged.stats.bootstrap.item_matrix` builds from the same rows sorted by item,
    so the paired bootstrap on it gives the same replicates.
    """
    import ibis

    max_cells = MATRIX_CELLS if max_cells is None else max_cells
    with Engine.of(engine).backend() as con:
        rows = _rows(con, Path(path))
        items = rows.select("domain", "item").distinct()
        items = items.mutate(pos=ibis.row_number().over(group_by=items.domain, order_by=items.item))
        with items.cache() as cached:
            sizes = fetch(con, cached.group_by("domain").aggregate(n=cached.count()))
            n = pd.Series(sizes["n"].to_numpy(), index=sizes["domain"].to_numpy()).reindex(domains).fillna(0)
            bounds = np.concatenate([[0], np.cumsum(n.to_numpy(dtype=np.int64))])
            if len(models) * bounds[-1] > max_cells:
                return None
            starts = table_from_frame(con, pd.DataFrame({"domain": pd.Series(domains, dtype=object),
                                                         "start": bounds[:-1]}), {"domain": "string", "start": "int64"})
            codes = table_from_frame(con, pd.DataFrame({"model": pd.Series(models, dtype=object),
                                                        "m": np.arange(len(models), dtype=np.int64)}),
                                     {"model": "string", "m": "int64"})
            j = rows.join(cached, ["domain", "item"]).join(starts, "domain").join(codes, "model")
            x = np.zeros((int(bounds[-1]), len(models)), dtype=np.float32)
            present = np.zeros(x.shape, dtype=bool)
            query = str(con.compile(j.select(r=j.start + j.pos, m=j.m, x=j.x)))
            for batch in con.con.sql(query).to_arrow_reader(1 << 20):  # (ibis 12 calls a method DuckDB 2 removed)
                r, m = batch.column("r").to_numpy(), batch.column("m").to_numpy()
                v = batch.column("x").to_numpy()
                if x.dtype == np.float32 and ((v > 0) & (v < 1)).any():
                    x = x.astype(float)
                x[r, m], present[r, m] = v, True
    return ItemMatrix(correct=x, present=present, bounds=bounds, models=np.asarray(models, dtype=object),
                      domains=np.asarray(domains, dtype=object))


def aligned(reps: Replicates, models: np.ndarray) -> Replicates:
    """``reps`` (any bootstrap) with its model axis in the order of ``models`` (NaN for a model it lacks)."""
    at = pd.Index(reps.models).get_indexer(models)
    if len(at) == len(reps.models) and (at == np.arange(len(at))).all():
        return reps

    def take(values: np.ndarray, axis: int = 1) -> np.ndarray:
        shape = list(values.shape)
        shape[axis] = len(models)
        out = np.full(shape, np.nan)
        keep = (slice(None),) * axis + (at >= 0,)
        out[keep] = values[(slice(None),) * axis + (at[at >= 0],)]
        return out

    return Replicates(models=np.asarray(models, dtype=object), profiles=reps.profiles,
                      cv_error=take(reps.cv_error), macro_score=take(reps.macro_score),
                      dep_score=take(reps.dep_score), wedge=take(reps.wedge), method=reps.method,
                      extra={name: take(v) for name, v in reps.extra.items()},
                      observed={name: take(v, 0) for name, v in reps.observed.items()}, squared=reps.squared)
