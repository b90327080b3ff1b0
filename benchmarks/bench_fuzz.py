"""Time the fuzz suite's inputs through jagged's loaders against a bare parse of the same bytes, in one run.

tests/test_fuzz.py feeds 200 seeded hypothesis examples to each entry point (this script 500) and checks that
every outcome is a correct result or a one-line error; how long that takes is measured here,
not limited there. The examples are drawn with the suite's own strategies and seeds:

* ``tables``: random files (binary, delimited tables, plausible long tables, JSON) read by
  ``jagged.load`` + ``jagged.jaggedness``; baseline ``pandas.read_csv(sep=None)`` of the same
  bytes (errors caught), i.e. parsing alone, without validation or metrics;
* ``lm-eval`` and ``inspect``: damaged lm-eval results files and Inspect logs read by
  ``jagged.load``; baseline ``json.loads`` of the same bytes.

Prints, per suite, seconds per 500 examples for jagged and the baseline, their ratio, and the
slowest single example (what the suite's former 10 s per-case alarm guarded). Targets: the
slowest example under 1 s (a tenth of the old alarm); no ratio target, the figure tracks changes.

Run: ``.venv/bin/python benchmarks/bench_fuzz.py [--examples 500]``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pandas as pd  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_fuzz import any_file, damaged, inspect_log, lmeval_results  # noqa: E402

import jagged  # noqa: E402
from jagged.errors import JaggedInputError, JaggedWarning  # noqa: E402


def draw_examples(strategy: st.SearchStrategy, n: int, seed_value: int) -> list[Any]:
    """The first ``n`` examples hypothesis generates for ``strategy`` with a fixed seed."""
    found: list[Any] = []

    @seed(seed_value)
    @settings(max_examples=n, deadline=None, database=None, phases=["generate"],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        found.append(example)

    collect()
    return found[:n]


def jagged_load(path: Path) -> None:
    """What the fuzz suite asks of the API: a result or a one-line error."""
    try:
        jagged.jaggedness(jagged.load(path).scores)
    except JaggedInputError:
        pass


def parse_csv(path: Path) -> None:
    try:
        pd.read_csv(io.BytesIO(path.read_bytes()), sep=None, engine="python")
    except Exception:  # the baseline only parses; any failure is an answer
        pass


def parse_json(path: Path) -> None:
    try:
        json.loads(path.read_bytes())
    except ValueError:
        pass


def timed(func: Callable[[Path], None], paths: list[Path]) -> tuple[float, float, list[str]]:
    """Total and slowest seconds of ``func`` over ``paths``, and the internal errors it raised.

    An exception other than a one-line input error is a bug (tests/test_fuzz.py fails on
    it when its examples hit it); it is listed here and the timing goes on.
    """
    slowest = total = 0.0
    errors: list[str] = []
    for path in paths:
        start = time.perf_counter()
        try:
            func(path)
        except Exception as exc:
            errors.append(f"{path.name}: {type(exc).__name__}: {exc}")
        spent = time.perf_counter() - start
        total += spent
        slowest = max(slowest, spent)
    return total, slowest, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500)
    args = parser.parse_args()
    warnings.simplefilter("ignore", JaggedWarning)
    suites = [
        ("tables", any_file, 20261129, ".csv", jagged_load, parse_csv),
        ("lm-eval", damaged(lmeval_results), 20261133, ".json", jagged_load, parse_json),
        ("inspect", damaged(inspect_log), 20261134, ".json", jagged_load, parse_json),
    ]
    print(f"bench_fuzz: {args.examples} seeded examples per suite (tests/test_fuzz.py's strategies)")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="bench_fuzz.") as tmp:
        for name, strategy, seed_value, suffix, ours, baseline in suites:
            paths = []
            for i, data in enumerate(draw_examples(strategy, args.examples, seed_value)):
                path = Path(tmp) / f"{name}-{i:04d}{suffix}"
                path.write_bytes(data)
                paths.append(path)
            ours(paths[0])  # lazy imports out of the timing
            baseline(paths[0])
            t_base, _, _ = timed(baseline, paths)
            t_ours, slowest, errors = timed(ours, paths)
            worst = max(worst, slowest)
            per = 500 / len(paths)
            print(f"  {name:8s} jagged {t_ours * per:6.2f} s / 500, bare parse {t_base * per:6.2f} s / 500: "
                  f"{t_ours / t_base:6.1f}x; slowest example {slowest:.3f} s")
            for error in errors:
                print(f"    internal error (a bug, not bad input): {error}")
    print(f"  slowest example of all: {worst:.3f} s (target < 1 s) {'OK' if worst < 1 else 'MISSED'}")


if __name__ == "__main__":
    main()
