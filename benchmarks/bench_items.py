"""Aggregate a 50-million-row item-level Parquet file with bounded memory.

Generates a synthetic item-level Parquet file in a temporary folder (not kept; 0/1
``correct``, string model and domain names, integer item ids, row groups of 1M rows),
then measures, each in a fresh subprocess so peak RSS is that engine's alone:

* ``jagged``: ``jagged.load(path)`` — the loader sees from the footer that the file is
  item-level and large and aggregates it out of core with DuckDB (every check of the
  in-memory path included: names, ``correct`` range, one domain per item, no duplicate
  (model, item)), memory_limit 1GB;
* ``pyarrow-batches``: a streaming record-batch loop with numpy ``bincount``
  (aggregation only: it cannot check duplicates without its own global hash of items);
* ``pandas``: the naive baseline, ``pd.read_parquet`` of the whole file then a groupby.

Prints aggregation time and peak RSS of each (``getrusage(RUSAGE_SELF).ru_maxrss`` in the
child), and jagged's peak RSS as a ratio to the pandas baseline. Target: jagged <= 2 GB.

``--metrics`` measures ``jagged metrics`` on the file instead, each run a fresh process:
``--bootstrap 0`` (the scan, the baseline) and the default intervals (2000 replicates of the
paired bootstrap on the item matrix streamed out of DuckDB); wall time, CPU time (user +
system, every thread) and peak RSS of each, and the ratios. Targets: intervals <= 120 s and
<= 2 GB. On a machine shared with other work the wall time is the CPU's share; CPU time
and the ratio to the scan measured in the same run are the comparable figures.

Run: ``.venv/bin/python benchmarks/bench_items.py [--metrics] [--keep FILE]`` (~0.2 GB of disk).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GB = 1024 ** 3


def generate(path: Path, rows: int, models: int, domains: int, seed: int = 0) -> None:
    """Write a synthetic item-level Parquet file, one model (row group) at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per_model = rows // models
    item = np.arange(per_model, dtype=np.int64)
    domain_code = (item * domains // per_model).astype(np.int32)
    domain_names = pa.array([f"domain-{d:03d}" for d in range(domains)])
    domain_col = pa.DictionaryArray.from_arrays(pa.array(domain_code), domain_names)
    schema = pa.schema([("model", pa.dictionary(pa.int32(), pa.string())),
                        ("domain", pa.dictionary(pa.int32(), pa.string())),
                        ("item", pa.int64()), ("correct", pa.int8())])
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for m in range(models):
            p_correct = rng.uniform(0.2, 0.9, domains)[domain_code]
            correct = (rng.random(per_model) < p_correct).astype(np.int8)
            model_col = pa.DictionaryArray.from_arrays(pa.array(np.zeros(per_model, np.int32)),
                                                       pa.array([f"model-{m:03d}"]))
            table = pa.Table.from_arrays([model_col, domain_col, pa.array(item), pa.array(correct)],
                                         schema=schema)
            writer.write_table(table, row_group_size=1_000_000)


def child(engine: str, path: str) -> None:
    """Aggregate with one engine; print seconds, peak RSS and a checksum as JSON."""
    start = time.perf_counter()
    if engine == "jagged":
        import jagged

        scores = jagged.load(path).scores
        total = float((scores["score"] * scores["n_items"]).sum())
        groups = len(scores)
    elif engine == "pyarrow-batches":
        import pyarrow.dataset as ds

        dataset = ds.dataset(path, format="parquet")
        sums: dict[tuple[str, str], list[float]] = {}
        for batch in dataset.to_batches(columns=["model", "domain", "correct"], batch_size=1_000_000):
            model = batch.column("model").dictionary_encode()
            domain = batch.column("domain").dictionary_encode()
            m_names, d_names = model.dictionary.to_pylist(), domain.dictionary.to_pylist()
            key = model.indices.to_numpy() * len(d_names) + domain.indices.to_numpy()
            x = batch.column("correct").to_numpy().astype(np.float64)
            s = np.bincount(key, weights=x, minlength=len(m_names) * len(d_names))
            n = np.bincount(key, minlength=len(m_names) * len(d_names))
            for k in np.flatnonzero(n):
                acc = sums.setdefault((m_names[k // len(d_names)], d_names[k % len(d_names)]), [0.0, 0])
                acc[0] += s[k]
                acc[1] += int(n[k])
        total = float(sum(v[0] for v in sums.values()))
        groups = len(sums)
    elif engine == "pandas":
        import pandas as pd

        frame = pd.read_parquet(path)
        agg = frame.groupby(["model", "domain"], observed=True)["correct"].agg(["sum", "size"])
        total = float(agg["sum"].sum())
        groups = len(agg)
    else:
        raise SystemExit(f"unknown engine {engine}")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"engine": engine, "seconds": seconds, "peak_rss": peak, "total": total, "groups": groups}))


def measure(engine: str, path: Path) -> dict:
    """Run one engine in a fresh interpreter and return what it printed."""
    out = subprocess.run([sys.executable, __file__, "--child", engine, str(path)], capture_output=True,
                         text=True, check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if out.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_metrics(path: Path, bootstrap: int | None) -> dict:
    """``jagged metrics PATH`` in a fresh process (``--bootstrap 0``, or the default): wall, CPU, peak RSS."""
    out = path.with_name(f"metrics-{bootstrap}.csv")
    command = [sys.executable, "-m", "jagged.cli", "metrics", str(path), "-o", str(out)]
    if bootstrap is not None:
        command += ["--bootstrap", str(bootstrap)]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"jagged metrics failed:\n{child.stderr.read().decode(errors='replace')}")
    out.unlink(missing_ok=True)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_rss": usage.ru_maxrss * 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--domains", type=int, default=20)
    parser.add_argument("--engines", default="jagged,pyarrow-batches,pandas",
                        help="comma-separated subset of jagged, pyarrow-batches, pandas")
    parser.add_argument("--metrics", action="store_true", help="measure jagged metrics with and without intervals")
    parser.add_argument("--keep", type=Path, default=None, help="generate the file here once and reuse it")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="jagged-bench-items-") as tmp:
        path = args.keep or Path(tmp) / "items.parquet"
        if not path.exists():
            start = time.perf_counter()
            generate(path, args.rows, args.models, args.domains)
            print(f"bench_items: generated {args.rows:,} rows ({args.models} models x {args.rows // args.models:,} "
                  f"items, {args.domains} domains) in {time.perf_counter() - start:.1f} s, "
                  f"{path.stat().st_size / 1e6:.0f} MB Parquet")
        if args.metrics:
            scan, full = measure_metrics(path, 0), measure_metrics(path, None)
            for name, r in (("scan, no intervals", scan), ("with intervals (B = 2000)", full)):
                print(f"  jagged metrics, {name:<26} wall {r['wall']:7.1f} s   CPU {r['cpu']:7.1f} s   "
                      f"peak RSS {r['peak_rss'] / GB:5.2f} GB")
            print(f"  intervals / scan: CPU {full['cpu'] / scan['cpu']:.2f}x, wall {full['wall'] / scan['wall']:.2f}x; "
                  f"peak RSS {full['peak_rss'] / GB:.2f} GB (target <= 2 GB) "
                  f"{'OK' if full['peak_rss'] <= 2 * GB else 'MISSED'}; CPU {full['cpu']:.0f} s (target <= 120 s) "
                  f"{'OK' if full['cpu'] <= 120 else 'MISSED'}")
            return
        results = {engine: measure(engine, path) for engine in args.engines.split(",")}
    for r in results.values():
        print(f"  {r['engine']:<16} {r['seconds']:7.1f} s   peak RSS {r['peak_rss'] / GB:5.2f} GB   "
              f"({r['groups']} model x domain groups)")
    totals = {round(r["total"]) for r in results.values()}
    print(f"  all engines agree on the total of correct: {len(totals) == 1}")
    if "jagged" in results:
        ours = results["jagged"]["peak_rss"]
        verdict = "OK" if ours <= 2 * GB else "MISSED"
        print(f"  jagged peak RSS {ours / GB:.2f} GB (target <= 2 GB) {verdict}")
        if "pandas" in results:
            print(f"  jagged / pandas in-memory baseline: RSS {ours / results['pandas']['peak_rss']:.2f}x, "
                  f"time {results['jagged']['seconds'] / results['pandas']['seconds']:.2f}x")


if __name__ == "__main__":
    main()
