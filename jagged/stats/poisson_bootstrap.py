"""Intervals without the item matrix: a Poisson bootstrap over items, computed in the engine.

The paired item bootstrap (:mod:`jagged.stats.bootstrap`) draws, per domain and replicate,
a multinomial count for every item and multiplies an items × models matrix: it needs that
matrix in memory. At the scale of a data lake (thousands of models × tens of thousands of
items × many benchmarks) the matrix does not fit, and a multinomial draw couples all items
of a domain. The Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy et al. 2012, "Estimating
uncertainty for massive data streams") gives every item, independently, a weight
``w_ib ~ Poisson(1)`` per replicate b, the limit of the multinomial(n, 1/n) count as n
grows. Because the weight is a function of (item, replicate, seed) only, every row computes
its own weight where it lies, and the same item gets the same weight for every model
(paired), on any engine and any partitioning:

* item code ``i``: the item's rank among the distinct item names (computed in the engine);
* ``h = H(H(i ⊕ H(seed)) ⊕ (b · 0x9E3779B9 mod 2³²))`` with ``H`` the 32-bit integer
  mixer ``x ← ((x ≫ 16) ⊕ x) · 0x45d9f3b mod 2³²`` (twice), ``x ← (x ≫ 16) ⊕ x``;
* ``u = (h + ½) / 2³²`` and ``w = min{k : u ≤ F(k)}`` with ``F`` the Poisson(1) CDF (the
  inverse-CDF draw; :data:`POISSON_CDF` up to k = 18, beyond which the mass is < 1e-17).

Per (model, domain, replicate) the engine sums ``Σ w·x``, ``Σ w`` and ``Σ w·x²`` — the
numerator, denominator and square sums that :func:`jagged.stats.bootstrap.replicate_statistics`
turns into replicate cv_error, macro_score, dep_score and wedge, exactly as for the paired
bootstrap. The weights only need integer arithmetic that DuckDB and Spark share, so both
engines give the same replicates, bit for bit in the weights.

When each is used (:func:`jagged.stats.bootstrap.interval_route`, recorded in the intervals'
``interval_method``): the paired bootstrap whenever the item table is in memory (the report,
``jagged analyse`` on item-level files up to :data:`jagged.readers.items.IN_MEMORY_MAX_ROWS`
rows) and the engine is DuckDB; the Poisson bootstrap for item-level data aggregated out of
core (a large Parquet file or a partitioned folder, on DuckDB or Spark) and for any item-level
data with ``engine="spark"``. Their coverage on simulated data with known truth is checked side
by side in ``tests/test_engines.py`` and, through the report's routing, in
``tests/test_poisson_intervals.py``.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from jagged.errors import JaggedInputError
from jagged.stats.replicates import Replicates, ReplicateStatistic, chunk_size, summarise

METHOD_POISSON = "Poisson bootstrap over items (weights from a hash of item and replicate), paired across models"
#: 2³² − 1: the hash works on unsigned 32-bit values held in 64-bit integers (no overflow on any engine).
MASK32 = 0xFFFFFFFF
#: The mixer's multiplier and the replicate's stride (the golden ratio in 32 bits).
MIX, STRIDE = 0x45D9F3B, 0x9E3779B9
#: Poisson(1) CDF F(0), …, F(17); a draw above F(17) is 18.
POISSON_CDF: tuple[float, ...] = tuple(
    math.exp(-1.0) * sum(1.0 / math.factorial(j) for j in range(k + 1)) for k in range(18))
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
    """Per (model, domain, replicate ``b``): ``num`` Σw·x, ``den`` Σw, ``sq`` Σw·x².

    Parameters
    ----------
    rows : ibis.Table
        ``model, domain, item, x`` (:func:`jagged.stats.item_expr.rows_table`).
    replicates : ibis.Table
        One column ``b`` (int64): the replicates to compute.
    seed : int
        Seed of the weights.
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
    from jagged.stats.item_expr import fetch

    cells = fetch(con, rows.group_by(["model", "domain"]).aggregate(
        num=rows.x.sum(), den=rows.count(), sq=(rows.x * rows.x).sum(),
        partial=rows.count(where=(rows.x > 0) & (rows.x < 1))))
    models = np.asarray(sorted(cells["model"].unique()), dtype=object)
    domains = np.asarray(sorted(cells["domain"].unique()), dtype=object)
    at = pd.Index(models).get_indexer(cells["model"]), pd.Index(domains).get_indexer(cells["domain"])
    sums = []
    for name in ("num", "den", "sq"):
        a = np.zeros((len(models), len(domains)))
        a[at] = cells[name].to_numpy(dtype=float)
        sums.append(a)
    return models, domains, tuple(sums), bool(cells["partial"].sum() > 0)


def replicate_sums(con: Any, rows: Any, n_boot: int, seed: int, models: np.ndarray, domains: np.ndarray,
                   partial: bool, block: int = BLOCK) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Per block of replicates, the b × M × D arrays Σw·x, Σw and (partial credit only) Σw·x².

    Parameters
    ----------
    con : ibis.BaseBackend
        The engine.
    rows : ibis.Table
        The item-level rows.
    n_boot, seed : int
        Replicates and seed.
    models, domains : numpy.ndarray
        Order of the M and D axes.
    partial : bool
        Whether to return Σw·x² (else None).
    block : int
        Replicates per engine query.
    """
    import ibis

    from jagged.stats.item_expr import fetch

    block = min(block, chunk_size(n_boot, len(models) * len(domains)))
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        reps = ibis.memtable(pd.DataFrame({"b": np.arange(start, start + b, dtype=np.int64)}), schema={"b": "int64"})
        out = fetch(con, replicate_sums_expr(rows, reps, seed))
        bi = out["b"].to_numpy(dtype=np.int64) - start
        mi = pd.Index(models).get_indexer(out["model"])
        di = pd.Index(domains).get_indexer(out["domain"])
        arrays = []
        for name in ("num", "den", "sq"):
            a = np.zeros((b, len(models), len(domains)))
            a[bi, mi, di] = out[name].to_numpy(dtype=float)
            arrays.append(a)
        yield arrays[0], arrays[1], arrays[2] if partial else None


def poisson_replicates(data: Any, *, weights: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0,
                       engine: str | None = None, spark_master: str | None = None,
                       statistics: Mapping[str, ReplicateStatistic] | None = None) -> Replicates:
    """Poisson-bootstrap replicates of cv_error, macro_score, dep_score and wedge, summed in the engine.

    Parameters
    ----------
    data : Dataset, pandas.DataFrame, str or pathlib.Path
        Item-level results: a Dataset (items in memory, or a Parquet file or partitioned
        folder aggregated out of core), a validated item table, or the path of a Parquet
        file or folder.
    weights : pandas.DataFrame, optional
        Profiles × domains weight matrix.
    n_boot : int
        Replicates B (1 … 100,000).
    seed : int
        Seed of the weights (same seed, same replicates, on either engine).
    engine : {"duckdb", "spark"}, optional
        Where the sums run (default DuckDB).
    spark_master : str, optional
        See :func:`jagged.stats.engine.spark_session`.
    statistics : mapping, optional
        Further per-model statistics of the replicates (as :func:`jagged.stats.bootstrap.bootstrap_replicates`).

    Returns
    -------
    Replicates
        ``method`` is :data:`METHOD_POISSON`; models and domains sorted by name.
    """
    from pathlib import Path

    from jagged.readers.dataset import Dataset
    from jagged.stats.engine import backend, read_parquet, table_from_frame
    from jagged.stats.item_expr import rows_table

    if int(n_boot) != n_boot or not 1 <= n_boot <= 100_000:
        raise JaggedInputError(f"bootstrap replicates must be a whole number from 1 to 100000, not {n_boot!r}")
    frame, path = None, None
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, Dataset):
        frame, path = data.items, data.item_path
        if frame is None and path is None:
            raise JaggedInputError(f"{data.source}: the Poisson bootstrap needs item-level results")
    else:
        path = Path(data)
    with backend(engine, spark_master=spark_master) as con:
        if frame is not None:
            columns = {"model": "string", "domain": "string", "item": "string", "correct": "float64"}
            table = table_from_frame(con, frame[list(columns)].astype({"correct": float}), columns)
            rows, _, _ = rows_table(table, validated=True)
        else:
            rows, _, _ = rows_table(read_parquet(con, path))
        models, domains, (num, den, sq), partial = _observed(con, rows)
        w, profiles = _weight_matrix(weights, domains)
        return summarise(replicate_sums(con, rows, int(n_boot), seed, models, domains, partial),
                         (num, den, sq if partial else None), den > 0, w, statistics, models, domains, profiles,
                         METHOD_POISSON)


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


def _weight_matrix(weights: pd.DataFrame | None, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if weights is None or len(weights) == 0:
        return np.zeros((0, len(domains))), np.asarray([], dtype=object)
    return (np.nan_to_num(weights.reindex(columns=list(domains)).to_numpy(dtype=float)),
            np.asarray(weights.index, dtype=object))
