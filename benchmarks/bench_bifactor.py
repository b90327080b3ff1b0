"""The bifactor fit (jagged.stats.bifactor) on MMLU-Pro's item-level responses: time and peak memory.

The bundled item-level file (29 models × 12,032 items, 14 domains) is read once; then
:func:`jagged.stats.irt.fit_2pl` (a trait per domain, the baseline) and
:func:`jagged.stats.bifactor.fit_bifactor` (loadings, ω with intervals, scores, residual
correlations, item-level parallel analysis) are timed in the same run, wall and CPU
seconds (the machine may be shared), and the ratio printed. Peak RSS is the process's
(``getrusage``), reading included. Targets: ≤ 60 s and ≤ 2 GB.

Run: ``.venv/bin/python benchmarks/bench_bifactor.py``.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    from jagged.readers.items import load_bundled_items
    from jagged.stats.bifactor import fit_bifactor
    from jagged.stats.irt import fit_2pl, response_matrix

    mat = response_matrix(load_bundled_items().items)
    print(f"MMLU-Pro items: {mat.y.shape[0]} models x {mat.y.shape[1]:,} items, {len(set(mat.domains))} domains")
    _, base_wall, base_cpu = timed(fit_2pl, mat)
    print(f"baseline 2PL (trait per domain): {base_wall:6.1f} s wall, {base_cpu:6.1f} s CPU")
    fit, wall, cpu = timed(fit_bifactor, mat)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    print(f"bifactor: {wall:6.1f} s wall, {cpu:6.1f} s CPU ({cpu / base_cpu:.1f} x the 2PL's CPU); "
          f"{fit.cycles} cycles, converged {fit.converged}; peak RSS {rss:.2f} GB")
    print(f"target <= 60 s: {'meets' if wall <= 60 else 'MISSES'} (wall), "
          f"{'meets' if cpu <= 60 else 'MISSES'} (CPU); <= 2 GB: {'meets' if rss <= 2 else 'MISSES'}")
    print(f"omega_h (test) {fit.omega_h:.3f} [{fit.omega_h_lo:.3f}, {fit.omega_h_hi:.3f}]")
    print(fit.domains[["domain", "n_fitted", "omega_h", "omega_s", "rest", "dimensions", "dimensions_lo",
                       "dimensions_hi"]].round(3).to_string(index=False))


if __name__ == "__main__":
    main()
