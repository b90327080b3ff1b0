"""Time ``jagged batch`` against one ``jagged report``-style run per model, in the same run.

Three timings on the bundled MMLU-Pro scores (29 models) with the bundled profiles and
the CLI's default bootstrap (2000 replicates):

* **sequential**: each model's report made on its own, as ``jagged report --notebook
  model_report --params …`` does it: a fresh kernel per report (papermill's default),
  one after the other. The command's own Python start-up is *not* counted (the reports
  are made in this process), which favours the sequential side.
* **batch**: ``jagged batch`` with ``--jobs`` warm kernels (default 2), the 29 model reports
  *plus* the cross-model report and the index, from an empty folder.
* **rerun**: the same batch again with nothing changed (everything skipped, no kernel).

Prints the three times and two ratios. Targets: batch / sequential <= 0.4 and
rerun / batch <= 0.10. Exit status 1 when a target is missed.

Run: ``.venv/bin/python benchmarks/bench_batch.py [--jobs 2] [--models N]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from jagged.readers.load import BUNDLED_SCORES
from jagged.report import run_report
from jagged.report.batch import plan_batch, run_batch
from jagged.stats.weights import BUNDLED_PROFILES

ANALYSIS = {"weights": str(BUNDLED_PROFILES), "profiles": (), "missing_weight": "error", "bootstrap": 2000,
            "seed": 0, "ci": 0.95}
LOAD = {"score_scale": "fraction"}


def sequential(out: Path, limit: int | None) -> tuple[float, int]:
    """One report per model, a fresh kernel each, one after the other."""
    plan = plan_batch(BUNDLED_SCORES, out, load=LOAD, analysis=ANALYSIS, overview=False)
    jobs = plan.jobs[:limit] if limit else plan.jobs
    start = time.perf_counter()
    for job in jobs:
        run_report(job.notebook, job.html_path, job.parameters, title=job.title, subtitle=job.subtitle,
                   facts=job.facts)
    return time.perf_counter() - start, len(jobs)


def batch(out: Path, jobs: int, limit: int | None) -> tuple[float, int, str]:
    models = ()
    if limit:
        models = plan_batch(BUNDLED_SCORES, out, load=LOAD, analysis=ANALYSIS, overview=False).models[:limit]
    start = time.perf_counter()
    result = run_batch(BUNDLED_SCORES, out, jobs=jobs, models=models, load=LOAD, analysis=ANALYSIS,
                       progress=False)
    seconds = time.perf_counter() - start
    if result.failed:
        raise SystemExit(f"batch failed: {result.summary()}")
    return seconds, result.count("written"), result.summary()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="reports made at once, each in a warm kernel (default 2)")
    parser.add_argument("--models", type=int, default=None, help="only the first N models (quick check)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    with tempfile.TemporaryDirectory(prefix="bench_batch.") as tmp:
        seq_seconds, n_seq = sequential(Path(tmp) / "sequential", args.models)
        batch_seconds, n_batch, summary = batch(Path(tmp) / "batch", args.jobs, args.models)
        rerun_seconds, n_rerun, rerun_summary = batch(Path(tmp) / "batch", args.jobs, args.models)
    ratio = batch_seconds / seq_seconds
    rerun_ratio = rerun_seconds / batch_seconds
    print(f"machine: {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    print(f"sequential, fresh kernel per report : {seq_seconds:7.1f} s for {n_seq} model reports "
          f"({seq_seconds / n_seq:.2f} s each)")
    print(f"batch, {args.jobs} warm kernels           : {batch_seconds:7.1f} s for {n_batch} reports "
          f"(the models, the cross-model report and the index)")
    print(f"batch again, nothing changed        : {rerun_seconds:7.1f} s ({n_rerun} written)")
    print(f"batch / sequential = {ratio:.2f} (target <= 0.40): {'ok' if ratio <= 0.4 else 'MISSED'}")
    print(f"rerun / batch      = {rerun_ratio:.3f} (target <= 0.10): {'ok' if rerun_ratio <= 0.1 else 'MISSED'}")
    return 0 if ratio <= 0.4 and rerun_ratio <= 0.1 and n_rerun == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
