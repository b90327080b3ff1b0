"""The item audit's classical evidence: speed on MMLU-Pro and memory out of core.

Two parts (``--part`` picks some; all by default; P(flawed) is benchmarks/bench_flaw.py's):

* ``speed``: every item statistic for the bundled MMLU-Pro responses (29 models × 12,032
  items, up to 10 options) with :func:`jagged.stats.item_audit.audit_items` (median of 5
  runs, from the loaded dataset, without the flaw model), and the engine's share of it (the
  sums and the sensitivity's sums of :func:`jagged.stats.item_sums.item_sums`, warm; target
  < 0.5 s), against a per-item Python loop over scipy calls
  computing the classical statistics only (``scipy.stats.pointbiserialr`` for r_rest, a
  sort for the upper–lower index, ``scipy.stats.pearsonr(alternative="greater")`` per wrong
  option, ``scipy.stats.false_discovery_control`` once), measured in the same run on the
  same arrays. Targets: < 1 s, ≥ 20× faster.
* ``scale``: a synthetic item-level Parquet file with choice and key (default 50M rows:
  50 models × 1M items, 20 domains; kept in a temporary folder) audited out of core
  (``jagged.load`` then ``audit_items`` and ``flag_sensitivity``, DuckDB with its 1 GB
  memory limit) in a fresh subprocess; prints seconds and peak RSS
  (``getrusage(RUSAGE_SELF).ru_maxrss``). Target: peak RSS ≤ 2 GB.
Run: ``.venv/bin/python benchmarks/bench_item_audit.py [--part speed,scale] [--rows N]``.
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
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
GB = 1024 ** 3


# --------------------------------------------------------------------------- speed


def loop_baseline(items: pd.DataFrame) -> int:
    """The classical item statistics, item by item with scipy (the baseline)."""
    from scipy import stats

    x = items["correct"].to_numpy(dtype=float)
    g = items.groupby(["model", "domain"])["correct"]
    s, n = g.transform("sum").to_numpy(dtype=float), g.transform("size").to_numpy(dtype=float)
    rest = (s - x) / (n - 1)
    choice = items["choice"].to_numpy(dtype=object)
    codes, _ = pd.factorize(items["item"])
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0, True])
    p_values = []
    for start, end in zip(bounds[:-1], bounds[1:]):
        rows = order[start:end]
        xi, ri, ci = x[rows], rest[rows], choice[rows]
        if xi.std() > 0 and ri.std() > 0:
            stats.pointbiserialr(xi, ri)
        k = max(1, int(np.floor(0.27 * len(rows) + 0.5)))
        ranked = np.argsort(-ri, kind="stable")
        _ = xi[ranked[:k]].mean() - xi[ranked[-k:]].mean()
        for option in set(ci[(xi == 0) & (ci != None)]):  # noqa: E711
            d = ((ci == option) & (xi == 0)).astype(float)
            if 0 < d.sum() < len(d) and ri.std() > 0:
                p_values.append(stats.pearsonr(d, ri, alternative="greater").pvalue)
    stats.false_discovery_control(np.asarray(p_values))
    return len(p_values)


def item_sums_time(items: pd.DataFrame, repeats: int = 5) -> tuple[float, float]:
    """Median seconds (warm) of the engine's part of the audit: the sums and the sensitivity's sums."""
    from jagged.stats.item_sums import item_sums

    item_sums(items)  # warm up (imports, first connection)
    parts = []
    for _ in range(repeats):
        start = time.perf_counter()
        sums = item_sums(items)
        first = time.perf_counter() - start
        sums.model_domain_sums(sums.items["item"].to_numpy(dtype=object)[::40], {})
        parts.append((first, time.perf_counter() - start - first))
    return tuple(float(np.median(p)) for p in zip(*parts))  # type: ignore[return-value]


def speed() -> None:
    from jagged.readers.items import load_bundled_items
    from jagged.stats.item_audit import audit_items

    dataset = load_bundled_items()
    items = dataset.items
    sums_s, sensitivity_s = item_sums_time(items)
    total_s = sums_s + sensitivity_s
    audit_items(dataset, model=False)  # warm up
    times = []
    for _ in range(5):  # the classical audit; the item response model is timed by bench_irt.py and bench_flaw.py
        start = time.perf_counter()
        audit = audit_items(dataset, model=False)
        times.append(time.perf_counter() - start)
    ours = float(np.median(times))
    start = time.perf_counter()
    n_pairs = loop_baseline(items)
    loop = time.perf_counter() - start
    print(f"speed: MMLU-Pro {items['model'].nunique()} models x {len(audit.items):,} items, {len(items):,} rows")
    print(f"  jagged audit_items(model=False) (classical statistics): {ours:.3f} s (median of 5; "
          f"{min(times):.3f}-{max(times):.3f}) {'OK' if ours < 1 else 'MISSED'} (target < 1 s)")
    print(f"  per-item loop over scipy calls (classical statistics only, {n_pairs:,} option tests): {loop:.2f} s")
    print(f"  ratio: {loop / ours:.0f}x faster {'OK' if loop / ours >= 20 else 'MISSED'} (target >= 20x)")
    print(f"  of which the engine (DuckDB, warm, median of 5): sums {sums_s:.3f} s + "
          f"sensitivity sums {sensitivity_s:.3f} s = {total_s:.3f} s {'OK' if total_s < 0.5 else 'MISSED'} "
          f"(target < 0.5 s; the per-item loop takes {loop / total_s:.0f}x as long)")


# --------------------------------------------------------------------------- scale


def generate(path: Path, rows: int, models: int, domains: int, seed: int = 0) -> None:
    """Item-level Parquet with choice and key, one model (row group) at a time; 4% of items miskeyed."""
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
    miskeyed = rng.random(per_model) < 0.04
    true = np.where(miskeyed, (key + 1) % n_options, key)
    dictionary = lambda codes, names: pa.DictionaryArray.from_arrays(pa.array(codes), names)  # noqa: E731
    domain_col = dictionary(domain_code, pa.array([f"domain-{d:03d}" for d in range(domains)]))
    schema = pa.schema([("model", pa.dictionary(pa.int32(), pa.string())),
                        ("domain", pa.dictionary(pa.int32(), pa.string())), ("item", pa.int64()),
                        ("correct", pa.int8()), ("choice", pa.dictionary(pa.int32(), pa.string())),
                        ("key", pa.dictionary(pa.int32(), pa.string())), ("n_options", pa.int8())])
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for m in range(models):
            ability = rng.normal(0, 1)
            knows = rng.random(per_model) < 1 / (1 + np.exp(-1.3 * (ability - difficulty)))
            guess = (rng.random(per_model) * n_options).astype(np.int32)
            chosen = np.where(knows, true, guess)
            correct = (chosen == key).astype(np.int8)
            model_col = dictionary(np.zeros(per_model, np.int32), pa.array([f"model-{m:03d}"]))
            table = pa.Table.from_arrays([model_col, domain_col, pa.array(item), pa.array(correct),
                                          dictionary(chosen, letters), dictionary(key, letters),
                                          pa.array(n_options)], schema=schema)
            writer.write_table(table, row_group_size=1_000_000)


def child(path: str) -> None:
    """Load and audit one file; print seconds, peak RSS and a summary as JSON."""
    import jagged
    from jagged.stats.item_audit import audit_items, flag_sensitivity

    start = time.perf_counter()
    dataset = jagged.load(path)
    loaded = time.perf_counter() - start
    audit = audit_items(dataset)
    audited = time.perf_counter() - start - loaded
    sensitivity = flag_sensitivity(audit)
    total = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"load": loaded, "audit": audited, "total": total, "peak_rss": peak,
                      "items": len(audit.items), "flagged": int(audit.items["flagged"].sum()),
                      "source": audit.sums.source, "models": len(sensitivity)}))


def scale(rows: int, models: int, domains: int) -> None:
    with tempfile.TemporaryDirectory(prefix="jagged-bench-audit-") as tmp:
        path = Path(tmp) / "items.parquet"
        start = time.perf_counter()
        generate(path, rows, models, domains)
        print(f"scale: generated {rows:,} rows ({models} models x {rows // models:,} items, {domains} domains, "
              f"choice and key) in {time.perf_counter() - start:.0f} s, {path.stat().st_size / 1e6:.0f} MB Parquet")
        out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True,
                             check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if out.returncode != 0:
            raise SystemExit(f"audit failed:\n{out.stderr.strip()}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  load (checks + aggregation, DuckDB) {r['load']:.0f} s; audit ({r['source']}) {r['audit']:.0f} s; "
          f"with the sensitivity {r['total']:.0f} s in all")
    print(f"  {r['items']:,} items, {r['flagged']:,} flagged; peak RSS {r['peak_rss'] / GB:.2f} GB "
          f"{'OK' if r['peak_rss'] <= 2 * GB else 'MISSED'} (target <= 2 GB)")


# --------------------------------------------------------------------------- evidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="speed,scale")
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--domains", type=int, default=20)
    parser.add_argument("--child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    parts = args.part.split(",")
    if "speed" in parts:
        speed()
    if "scale" in parts:
        scale(args.rows, args.models, args.domains)


if __name__ == "__main__":
    main()
