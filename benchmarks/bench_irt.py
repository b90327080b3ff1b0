"""The 2PL fit (jagged.stats.irt): speed against the `mirt` package, and peak memory at 50M responses.

Two parts (``--part`` picks some; both by default):

* ``speed``: simulated 2PL responses (abilities N(0, 1), slopes LogNormal(0.1, 0.5²),
  intercepts N(0, 1.5²), 10 domains of 1,000 items, 5 % missing) for 300 and 1,000
  models × 10,000 items. :func:`jagged.stats.irt.fit_2pl` (a trait per domain, the
  default) is timed on all 10,000 items; the baseline, ``mirt.fit_mirt(model="2PL")``
  (21 quadrature points, no standard errors, its defaults otherwise), is timed on one
  domain of 1,000 items in the same run, and so is :func:`fit_2pl_matrix` on that domain,
  so the ratio compares like with like. Targets: 300 × 10,000 ≤ 10 s, 1,000 × 10,000
  ≤ 30 s. Also printed: one trait for all 10,000 items (``rest="test"``) at 300 models.
* ``memory``: 1,000 models × 50,000 items (10 domains; 50M responses, float32
  matrices built block by block) fitted from the response matrix in a fresh
  subprocess; prints seconds and peak RSS (``getrusage(RUSAGE_SELF).ru_maxrss``).
  Target: ≤ 2 GB. (An item *table* of 50M rows costs more before the fit: pandas'
  columns themselves; the fit's own memory is the two matrices plus one domain's copy.)

Run: ``.venv/bin/python benchmarks/bench_irt.py [--part speed,memory] [--no-baseline]``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GB = 1024 ** 3


def simulate_matrix(n_models: int, n_items: int, n_domains: int, *, seed: int = 0,
                    dtype: type = np.float64, missing: float = 0.05):
    """A ResponseMatrix of 2PL responses, generated one domain at a time (bounded temporaries)."""
    from jagged.stats.irt import ResponseMatrix

    rng = np.random.default_rng(seed)
    per = n_items // n_domains
    y = np.empty((n_models, per * n_domains), dtype=dtype)
    w = np.empty_like(y)
    for d in range(n_domains):
        sl = slice(d * per, (d + 1) * per)
        theta = rng.normal(size=(n_models, 1)).astype(dtype)
        a = rng.lognormal(0.1, 0.5, per).astype(dtype)
        c = rng.normal(0, 1.5, per).astype(dtype)
        p = 1 / (1 + np.exp(-(theta * a + c)))
        w[:, sl] = rng.random((n_models, per), dtype=np.float32) >= missing
        y[:, sl] = (rng.random((n_models, per), dtype=np.float32) < p) * w[:, sl]
        del p
    models = np.array([f"m{k}" for k in range(n_models)], dtype=object)
    items = np.array([f"i{k}" for k in range(per * n_domains)], dtype=object)
    domains = np.repeat(np.array([f"d{k}" for k in range(n_domains)], dtype=object), per)
    return ResponseMatrix(models, items, domains, y, w)


def speed(baseline: bool) -> None:
    from jagged.stats.irt import fit_2pl, fit_2pl_matrix

    for n_models, target in ((300, 10.0), (1000, 30.0)):
        mat = simulate_matrix(n_models, 10_000, 10, seed=n_models)
        start = time.perf_counter()
        fit = fit_2pl(mat)
        ours = time.perf_counter() - start
        ok = "meets" if ours <= target else "MISSES"
        print(f"{n_models:>5} models x 10,000 items, trait per domain: {ours:6.2f} s "
              f"(target <= {target:.0f} s: {ok}; cycles {fit.groups['cycles'].tolist()})")
        one = slice(0, 1000)
        start = time.perf_counter()
        fit_2pl_matrix(mat.y[:, one], mat.w[:, one])
        ours_one = time.perf_counter() - start
        if baseline:
            try:
                import mirt
            except ImportError:
                print("      mirt not installed: no baseline (pip install mirt)")
                continue
            data = np.where(mat.w[:, one] > 0, mat.y[:, one], np.nan)
            start = time.perf_counter()
            mirt.fit_mirt(data, model="2PL", n_quadpts=21, compute_standard_errors=False)
            theirs = time.perf_counter() - start
            print(f"      one domain (1,000 items): jagged {ours_one:.2f} s, mirt {theirs:.2f} s "
                  f"-> jagged takes {ours_one / theirs:.2f}x mirt's time")
    mat = simulate_matrix(300, 10_000, 1, seed=1)
    start = time.perf_counter()
    fit = fit_2pl(mat, rest="test")
    print(f"  300 models x 10,000 items, one trait: {time.perf_counter() - start:6.2f} s "
          f"(cycles {fit.groups['cycles'].tolist()})")


def memory_child() -> None:
    from jagged.stats.irt import fit_2pl

    start = time.perf_counter()
    mat = simulate_matrix(1000, 50_000, 10, seed=3, dtype=np.float32)
    built = time.perf_counter() - start
    fit = fit_2pl(mat)
    total = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{built:.1f} {total:.1f} {peak} {int(fit.groups['converged'].all())}")


def memory() -> None:
    out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, check=True)
    built, total, peak, converged = out.stdout.split()
    ok = "meets" if int(peak) <= 2 * GB else "MISSES"
    fit_time = float(total) - float(built)
    print(f"50M responses (1,000 x 50,000, float32): matrices {float(built):.1f} s, fit {fit_time:.1f} s, "
          f"peak RSS {int(peak) / GB:.2f} GB (target <= 2 GB: {ok}; converged {bool(int(converged))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="speed,memory")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        memory_child()
        return
    parts = set(args.part.split(","))
    if "speed" in parts:
        speed(not args.no_baseline)
    if "memory" in parts:
        memory()


if __name__ == "__main__":
    main()
