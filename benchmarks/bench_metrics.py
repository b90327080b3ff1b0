"""Time jagged's validation + metrics against a bare pandas groupby, in the same run.

Synthetic long table: 10,000 models x 1,000 domains (10 million rows), names as pandas'
default string dtype, as `pd.read_csv` / `pd.read_parquet` give them. jagged's time
includes `validate_scores` (names, ranges, duplicate pairs, categoricals) and
`jaggedness`; the baseline is a bare groupby computing the same statistics
(n_domains, complete, macro_score, mean_error, sd_error, cv_error) with no validation.

Prints the best of 5 runs of each and the ratio. Target: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import jagged


def synthetic(models: int, domains: int, seed: int = 0) -> pd.DataFrame:
    """A complete long table with random scores."""
    rng = np.random.default_rng(seed)
    model_names = pd.array([f"model-{i:05d}" for i in range(models)], dtype="str")
    domain_names = pd.array([f"domain-{j:04d}" for j in range(domains)], dtype="str")
    return pd.DataFrame({
        "model": model_names.take(np.repeat(np.arange(models), domains)),
        "domain": domain_names.take(np.tile(np.arange(domains), models)),
        "score": rng.uniform(0.05, 0.95, models * domains),
    })


def baseline(frame: pd.DataFrame) -> pd.DataFrame:
    """The same statistics with a bare pandas groupby and no validation."""
    error = 1.0 - frame["score"]
    by_model = error.groupby(frame["model"])
    out = pd.DataFrame({
        "n_domains": by_model.size(),
        "macro_score": frame["score"].groupby(frame["model"]).mean(),
        "mean_error": by_model.mean(),
        "sd_error": by_model.std(ddof=0),
    })
    out["cv_error"] = out["sd_error"] / out["mean_error"]
    out["complete"] = out["n_domains"] == frame["domain"].nunique()
    return out


def with_jagged(frame: pd.DataFrame) -> pd.DataFrame:
    """Validation included, as every loader does it."""
    return jagged.jaggedness(jagged.validate_scores(frame, "synthetic", line_offset=None))


def best_of(func, frame: pd.DataFrame, repeats: int) -> tuple[float, pd.DataFrame]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = func(frame)
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--domains", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    frame = synthetic(args.models, args.domains)
    with_jagged(frame.head(2_000))  # warm up lazy imports of both paths
    baseline(frame.head(2_000))
    t_base, base = best_of(baseline, frame, args.repeats)
    t_jag, ours = best_of(with_jagged, frame, args.repeats)
    ours = ours.set_index("model")
    np.testing.assert_allclose(ours["cv_error"].to_numpy(), base["cv_error"].to_numpy(), rtol=1e-9)
    ratio = t_jag / t_base
    print(f"bench_metrics: {args.models:,} models x {args.domains:,} domains = {len(frame):,} rows")
    print(f"  bare pandas groupby (no validation): {t_base:.3f} s")
    print(f"  jagged validate_scores + jaggedness: {t_jag:.3f} s")
    print(f"  ratio jagged / baseline: {ratio:.2f}x (target <= 1.5x) {'OK' if ratio <= 1.5 else 'MISSED'}")


if __name__ == "__main__":
    main()
