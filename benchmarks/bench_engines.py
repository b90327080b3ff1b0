"""The item statistics on DuckDB and on Spark local[2]: rows per second per core on a generated partitioned store.

Generates a hive-partitioned Parquet store (``model=model-NNN/part-0.parquet``; default 50M
rows: 50 models x 1M items, 20 domains, choice, key and n_options; in a temporary folder, never
in the repository), then, per engine, in a fresh subprocess:

* ``scan``: the per-(model, domain) Σx and n, one pass (the baseline of the same run);
* ``statistics``: every sufficient statistic of the item audit
  (:func:`jagged.stats.item_sums.lake_item_sums`: per group, the windowed per-row weights,
  per item, per option, per key, Σ softplus) — the work that scales with the rows;
* ``poisson``: the Poisson bootstrap's replicate sums for ``--boot`` replicates (rows × B
  weighted rows).

It prints seconds, rows per second per core (rows / seconds / cores) and the ratio to the
scan, then what a 10-billion-row store needs at the measured Spark rate (cores x minutes).

Run: ``.venv/bin/python benchmarks/bench_engines.py [--rows N] [--models M] [--engines duckdb,spark]
[--boot B] [--cores C]``. Spark runs ``local[C]`` (default 2) with 3 GB of driver memory and 4·C
shuffle partitions (Spark's default 200 is sized for clusters; on two cores its task overhead dominates).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def generate(folder: Path, rows: int, models: int, domains: int, seed: int = 0) -> None:
    """A hive-partitioned item-level store: one Parquet file per model, the model only in the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per_model = rows // models
    item = np.arange(per_model, dtype=np.int64)
    domain_code = (item * domains // per_model).astype(np.int32)
    letters = pa.array(list("ABCDEFGHIJ"))
    n_options = np.where(rng.random(per_model) < 0.5, 4, 10).astype(np.int8)
    key = (rng.random(per_model) * n_options).astype(np.int32)
    difficulty = rng.normal(0, 1.2, per_model)
    domain_col = pa.DictionaryArray.from_arrays(pa.array(domain_code),
                                                pa.array([f"domain-{d:03d}" for d in range(domains)]))
    for m in range(models):
        ability = rng.normal(0, 1)
        knows = rng.random(per_model) < 1 / (1 + np.exp(-1.3 * (ability - difficulty)))
        chosen = np.where(knows, key, (rng.random(per_model) * n_options).astype(np.int32))
        table = pa.table({"domain": domain_col, "item": pa.array(item),
                          "correct": pa.array((chosen == key).astype(np.int8)),
                          "choice": pa.DictionaryArray.from_arrays(pa.array(chosen), letters),
                          "key": pa.DictionaryArray.from_arrays(pa.array(key), letters),
                          "n_options": pa.array(n_options)})
        target = folder / f"model=model-{m:03d}"
        target.mkdir(parents=True)
        pq.write_table(table, target / "part-0.parquet", row_group_size=1_000_000)


def child(folder: str, engine: str, boot: int, cores: int) -> None:
    """Time scan, statistics and Poisson replicate sums on one engine; print JSON."""
    import warnings

    warnings.simplefilter("ignore")
    from jagged.stats import engine as eng
    from jagged.stats.item_expr import fetch, rows_table
    from jagged.stats.item_sums import lake_item_sums
    from jagged.stats.poisson_bootstrap import _present, replicate_sums

    master = f"local[{cores}]"
    start = time.perf_counter()
    if engine == "spark":
        from pyspark.sql import SparkSession

        session = (SparkSession.builder.master(master).config("spark.driver.memory", "3g")
                   .config("spark.sql.shuffle.partitions", str(4 * cores))
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter() - start
    out = {"start": started}
    with eng.Engine(engine, master, threads=cores, memory_limit="3GB").backend() as con:
        rows, _, _ = rows_table(eng.read_parquet(con, folder))
        t = time.perf_counter()
        scan = fetch(con, rows.group_by(["model", "domain"]).aggregate(s=rows.x.sum(), n=rows.count()))
        out["scan"] = time.perf_counter() - t
        out["rows"] = float(scan["n"].sum())
    t = time.perf_counter()
    sums = lake_item_sums(folder, engine=eng.Engine(engine, master))
    out["statistics"] = time.perf_counter() - t
    out["items"] = len(sums.items)
    if boot:
        with eng.Engine(engine, master, threads=cores, memory_limit="3GB").backend() as con:
            rows, _, _ = rows_table(eng.read_parquet(con, folder))
            models, domains, _, partial = _present(con, rows)
            t = time.perf_counter()
            for _ in replicate_sums(con, rows, boot, 0, models, domains, partial, block=boot):
                pass
            out["poisson"] = time.perf_counter() - t
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--domains", type=int, default=20)
    parser.add_argument("--engines", default="duckdb,spark")
    parser.add_argument("--boot", type=int, default=4, help="Poisson replicates timed (0: none)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("FOLDER", "ENGINE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.boot, args.cores)
        return
    with tempfile.TemporaryDirectory(prefix="jagged-bench-engines-") as tmp:
        folder = Path(tmp) / "store"
        start = time.perf_counter()
        generate(folder, args.rows, args.models, args.domains)
        size = sum(f.stat().st_size for f in folder.rglob("*.parquet"))
        print(f"generated {args.rows:,} rows ({args.models} models x {args.rows // args.models:,} items, "
              f"{args.domains} domains, choice and key), hive-partitioned by model: {size / 1e6:.0f} MB Parquet in "
              f"{time.perf_counter() - start:.0f} s")
        results = {}
        for engine in args.engines.split(","):
            run = subprocess.run([sys.executable, __file__, "--child", str(folder), engine, "--boot", str(args.boot),
                                  "--cores", str(args.cores)], capture_output=True, text=True, check=False,
                                 env={**os.environ, "PYTHONWARNINGS": "ignore"})
            if run.returncode != 0:
                print(f"{engine}: failed\n{run.stderr.strip()[-3000:]}")
                continue
            r = json.loads(run.stdout.strip().splitlines()[-1])
            results[engine] = r
            n, c = r["rows"], args.cores
            print(f"{engine} ({c} cores{', session start %.0f s' % r['start'] if engine == 'spark' else ''}):")
            print(f"  scan (per model x domain sums)  {r['scan']:7.1f} s  {n / r['scan'] / c:12,.0f} rows/s/core")
            print(f"  every sufficient statistic      {r['statistics']:7.1f} s  {n / r['statistics'] / c:12,.0f} "
                  f"rows/s/core  ({r['statistics'] / r['scan']:.1f}x the scan)")
            if "poisson" in r:
                print(f"  Poisson replicate sums, B={args.boot:<4}  {r['poisson']:7.1f} s  "
                      f"{n * args.boot / r['poisson'] / c:12,.0f} weighted rows/s/core")
        if "duckdb" in results and "spark" in results:
            d, s = results["duckdb"], results["spark"]
            print(f"spark / duckdb time on the same store: statistics {s['statistics'] / d['statistics']:.1f}x, "
                  f"scan {s['scan'] / d['scan']:.1f}x")
        if "spark" in results:
            rate = results["spark"]["rows"] / results["spark"]["statistics"] / args.cores
            print("a 10-billion-row store at the measured Spark rate (every sufficient statistic, linear scaling "
                  "assumed):")
            for cores in (16, 64, 256, 1024):
                print(f"  {cores:5d} cores: {1e10 / rate / cores / 60:8.1f} min")


if __name__ == "__main__":
    main()
