"""Time the paired stratified item bootstrap on the full MMLU-Pro item-level data.

Data: ``tests/data/mmlu_pro_item_level.csv.gz``, the real MMLU-Pro item-level results (29 models ×
12,032 items, 14 domains). Two profiles (``uniform`` and ``items``) give the dep_score and
wedge intervals.

* vectorised: :func:`jagged.stats.uncertainty.bootstrap_intervals` with B = 2000 — intervals
  for cv_error (noise-corrected), macro_score, dep_score and wedge. Target: <= 10 s.
* baseline: a straightforward per-replicate pandas loop (per replicate: pick the resampled
  items of every domain, merge them with the item table, groupby model × domain, then
  the same statistics), run on a smaller B with the same draws. Its replicates are checked
  to equal the vectorised ones, and its time is scaled per replicate. Target: vectorised
  >= 20× faster.

Run: ``.venv/bin/python benchmarks/bench_bootstrap.py [--boot 2000] [--loop-boot 20]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ITEM_FILE = Path(__file__).resolve().parents[1] / "tests" / "data" / "mmlu_pro_item_level.csv.gz"


def loop_replicates(items: pd.DataFrame, weights: pd.DataFrame, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """The baseline: one replicate at a time with pandas (same draws as the vectorised code)."""
    from jagged.stats.bootstrap import item_matrix

    matrix = item_matrix(items)
    rng = np.random.default_rng(seed)
    bounds = matrix.bounds
    # item names per domain in the matrix's row order, and the draws in the vectorised code's order
    order = pd.factorize(items["item"])[1]
    item_domain = items.drop_duplicates("item").set_index("item")["domain"]
    names = [np.asarray([q for q in order if item_domain[q] == d], dtype=object) for d in matrix.domains]
    sizes = np.diff(bounds)                      # domains of one size share a stream, replicate after replicate
    groups = [np.flatnonzero(sizes == n) for n in np.unique(sizes[sizes > 1])]
    draws = [np.zeros((n_boot, int(n)), dtype=np.int64) for n in sizes]
    for domains, stream in zip(groups, rng.spawn(len(groups))):
        block = stream.integers(0, sizes[domains[0]], size=(n_boot, len(domains), sizes[domains[0]]))
        for j, d in enumerate(domains):
            draws[d] = block[:, j]
    w = weights.reindex(columns=list(matrix.domains))
    out: dict[str, list] = {"cv_error": [], "macro_score": [], "dep_score": [], "wedge": []}
    for r in range(n_boot):
        chosen = pd.DataFrame({"item": np.concatenate([names[d][draws[d][r]] for d in range(len(names))])})
        sample = chosen.merge(items, on="item")
        grouped = sample.groupby(["model", "domain"])["correct"]
        s = grouped.mean().unstack().reindex(columns=list(matrix.domains))
        n = grouped.size().unstack().reindex(columns=list(matrix.domains))
        e = 1 - s
        d = s.notna().sum(axis=1)
        noise = (e * (1 - e) / (n - 1)).sum(axis=1) * (d - 1) / d ** 2
        cv = (e.var(axis=1, ddof=0) - noise) / e.mean(axis=1) ** 2      # the corrected CV's square, before its floor
        macro = s.mean(axis=1)
        dep = s.fillna(0) @ w.T
        out["cv_error"].append(cv.to_numpy())
        out["macro_score"].append(macro.to_numpy())
        out["dep_score"].append(dep.to_numpy())
        out["wedge"].append((macro.to_numpy()[:, None] - dep.to_numpy()))
    return {k: np.stack(v) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--loop-boot", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not ITEM_FILE.is_file():
        sys.exit(f"bench_bootstrap: {ITEM_FILE} not found (the repository's copy of the MMLU-Pro item-level "
                 "results)")

    import jagged
    from jagged.stats.bootstrap import bootstrap_intervals, bootstrap_replicates
    from jagged.stats.weights import resolve_profiles

    dataset = jagged.load(ITEM_FILE)
    items = dataset.items
    weights = resolve_profiles(dataset.scores, None, ("uniform", "items"))
    print(f"bench_bootstrap: {items['model'].nunique()} models x {items['item'].nunique():,} items "
          f"({len(items):,} results), {len(weights.columns)} domains, profiles {', '.join(weights.index)}")
    bootstrap_intervals(dataset.scores, items, weights=weights, n_boot=10, seed=args.seed)   # warm up

    start = time.perf_counter()
    intervals = bootstrap_intervals(dataset.scores, items, weights=weights, n_boot=args.boot, seed=args.seed)
    t_vec = time.perf_counter() - start
    columns = [c for c in intervals.columns if c.endswith(("_lo", "_hi"))]
    assert intervals[columns].notna().all().all()
    print(f"  vectorised, B = {args.boot}: {t_vec:.2f} s for intervals of {', '.join(c[:-3] for c in columns[::2])} "
          f"({t_vec / args.boot * 1e3:.2f} ms per replicate) (target <= 10 s) {'OK' if t_vec <= 10 else 'MISSED'}")

    start = time.perf_counter()
    loop = loop_replicates(items, weights, args.loop_boot, args.seed)
    t_loop = time.perf_counter() - start
    small = bootstrap_replicates(dataset.scores, items, weights=weights, n_boot=args.loop_boot, seed=args.seed)
    for name in ("cv_error", "macro_score", "dep_score", "wedge"):
        np.testing.assert_allclose(getattr(small, name), loop[name], rtol=1e-9, atol=1e-12, err_msg=name)
    per_loop, per_vec = t_loop / args.loop_boot, t_vec / args.boot
    ratio = per_loop / per_vec
    print(f"  per-replicate pandas loop, B = {args.loop_boot}: {t_loop:.2f} s ({per_loop * 1e3:.0f} ms per "
          f"replicate; same replicates as the vectorised code: checked)")
    print(f"  speed-up per replicate: {ratio:.0f}x (target >= 20x) {'OK' if ratio >= 20 else 'MISSED'}; "
          f"the loop would take {per_loop * args.boot:.0f} s for B = {args.boot}")


if __name__ == "__main__":
    main()
