"""Time the logit decomposition against a plain numpy least-squares fit, in the same run; optionally
run the simulation studies behind the structure tests.

Speed (default): a complete synthetic table of 10,000 models × 100 domains (1M cells, 100–1,000
items each, binomial draws around known effects). jagged's time is ``decompose`` from the
canonical long table (pivoting, connectivity check, the least-squares fit of the logits,
effects and residuals), and separately the fit alone (``additive_wls`` on the matrices). The
baseline is a plain numpy least-squares fit of the same model on the same matrices (model
effects eliminated, ``numpy.linalg.lstsq`` on the 100 × 100 normal equations), no checks.
Best of 5 runs each; prints times and ratios, and how far the two fits differ.

Study (``--study``): on simulated tables of 30 models × 15 domains × 1,000 items (binomial),

* the correlation of estimated with planted residuals (sd 0.3, double-centred: a pure
  model × domain interaction) and of the corrected
  relative jaggedness with each model's true residual spread;
* with nothing planted: the share of models flagged as indistinguishable from noise and
  the median corrected vs raw relative jaggedness;
* coverage of the 95% bootstrap interval of the relative jaggedness (B = 300);
* parallel analysis: how often 1 dimension is retained on one-factor data and 3 on
  three-factor data (factor correlations 0, 0.2 and 0.3);
* the category check: how often categories are called distinct on three-factor data whose
  blocks are the categories, and on one-factor data with arbitrary categories;

and the findings on the bundled MMLU-Pro data and the MMLU per-subject data in tests/data.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def synthetic(models: int, domains: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A complete canonical long table and its M × D error and item matrices."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 0.8, models)
    b = rng.normal(0, 0.6, domains)
    p = 1 / (1 + np.exp(-(-0.6 + a[:, None] + b[None, :] + rng.normal(0, 0.3, (models, domains)))))
    n = rng.integers(100, 1001, (models, domains))
    errors = rng.binomial(n, p) / n
    model_names = pd.Categorical([f"model-{i:05d}" for i in range(models)])
    domain_names = pd.Categorical([f"domain-{j:03d}" for j in range(domains)])
    frame = pd.DataFrame({
        "model": model_names.take(np.repeat(np.arange(models), domains)),
        "domain": domain_names.take(np.tile(np.arange(domains), models)),
        "score": 1.0 - errors.ravel(), "n_items": n.ravel().astype(float),
        "category": pd.Categorical([np.nan] * (models * domains)),
    })
    return frame, errors, n.astype(float)


def baseline(errors: np.ndarray, n: np.ndarray) -> np.ndarray:
    """One least-squares fit of logit(ẽ) = a_m + b_d in plain numpy (lstsq, model effects eliminated)."""
    y = (n * errors + 0.5) / (n + 1)
    z = np.log(y / (1 - y))
    w = np.ones_like(z)
    w_row = w.sum(axis=1)
    normal = np.diag(w.sum(axis=0)) - (w / w_row[:, None]).T @ w
    rhs = (w * z).sum(axis=0) - w.T @ ((w * z).sum(axis=1) / w_row)
    b = np.linalg.lstsq(normal, rhs, rcond=None)[0]
    a = ((w * z).sum(axis=1) - w @ b) / w_row
    return a[:, None] + b[None, :]


def best_of(func, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def speed(models: int, domains: int, repeats: int) -> None:
    from jagged.stats import decomposition as st

    frame, errors, n = synthetic(models, domains)
    st.decompose(frame.head(domains * 50))                       # warm up
    t_base, eta_base = best_of(lambda: baseline(errors, n), repeats)
    adjusted = st.adjusted_errors(errors, n)
    t_fit, fit = best_of(lambda: st.additive_wls(np.ones_like(adjusted), st.logit(adjusted)), repeats)
    t_dec, dec = best_of(lambda: st.decompose(frame), repeats)
    assert dec.fitted.all()
    print(f"bench_structure: {models:,} models x {domains:,} domains = {models * domains:,} cells")
    print(f"  plain numpy least squares (one lstsq solve): {t_base:.3f} s")
    print(f"  jagged additive_wls:                          {t_fit:.3f} s  ratio {t_fit / t_base:.2f}")
    print(f"  jagged decompose from the long table:         {t_dec:.3f} s  ratio {t_dec / t_base:.2f}")
    print(f"  max |jagged logit - lstsq logit| = {np.abs(fit - eta_base).max():.2e}")


# --------------------------------------------------------------------------- study

def study(datasets: int) -> None:
    from test_structure import factor_table, long_table, simulate

    import jagged
    from jagged.analysis import AnalysisOptions, metrics_table
    from jagged.readers.dataset import Dataset
    from jagged.stats import decomposition as sdec
    from jagged.stats import dimensions as sdim
    from jagged.stats import structure as st

    rng = np.random.default_rng(2026)
    start = time.perf_counter()
    corr_res, corr_rj, flagged, med_corr, med_raw, coverage = [], [], [], [], [], []
    for k in range(datasets):
        sim = simulate(rng)
        dec = sdec.decompose(long_table(sim["errors"], sim["n"]))
        per = sdec.model_structure(dec)
        corr_res.append(np.corrcoef(dec.residual.ravel(), sim["rho"].ravel())[0, 1])
        corr_rj.append(np.corrcoef(per["relative_jaggedness_corrected"], sim["rho"].std(axis=1))[0, 1])
        null = simulate(rng, residual_sd=0.0)
        per0 = sdec.model_structure(sdec.decompose(long_table(null["errors"], null["n"])))
        flagged.append(per0["relative_noise_flag"].mean())
        med_corr.append(per0["relative_jaggedness_corrected"].median())
        med_raw.append(per0["relative_jaggedness"].median())
        if k < max(datasets // 10, 5):
            sim = simulate(rng, residual_sd=0.25)
            table = metrics_table(Dataset(scores=long_table(sim["errors"], sim["n"]), source="sim", paths=[],
                                          format="long"), AnalysisOptions(bootstrap=300, seed=k))
            logit = np.log(sim["p"] / (1 - sim["p"]))
            truth = (logit - logit.mean(axis=1, keepdims=True) - logit.mean(axis=0, keepdims=True)
                     + logit.mean()).std(axis=1)
            coverage.append(np.mean((table["relative_jaggedness_lo"] <= truth)
                                    & (truth <= table["relative_jaggedness_hi"])))
    print(f"study: {datasets} simulated tables of 30 models x 15 domains x 1,000 items per setting")
    print(f"  corr(estimated, planted residuals): min {np.min(corr_res):.3f}, median {np.median(corr_res):.3f}, "
          f">= 0.9 in {np.mean(np.asarray(corr_res) >= 0.9):.1%} of tables")
    print(f"  corr(corrected relative jaggedness, true residual sd): min {np.min(corr_rj):.3f}, "
          f"median {np.median(corr_rj):.3f}")
    print(f"  nothing planted: models flagged as noise {np.mean(flagged):.1%}; median corrected RJ "
          f"{np.median(med_corr):.4f} vs raw {np.median(med_raw):.4f} logits")
    print(f"  95% bootstrap interval of RJ covers the true noise-free RJ: {np.mean(coverage):.1%} "
          f"({len(coverage)} tables x 30 models, B = 300)")
    for corr in (0.0, 0.2, 0.3):
        for factors in (1, 3):
            found = [sdim.dimensions(factor_table(rng, factors, factor_corr=corr)[0], draws=200, seed=k).n_dimensions
                     for k in range(datasets)]
            print(f"  parallel analysis, {factors}-factor data, factor correlation {corr}: retains {factors} in "
                  f"{np.mean(np.asarray(found) == factors):.1%} (counts by n retained: {np.bincount(found).tolist()})")
    verdicts3, verdicts1 = [], []
    for k in range(max(datasets // 2, 10)):
        verdicts3.append(st.structure(factor_table(rng, 3)[0], draws=200, seed=k).categories.verdict)
        verdicts1.append(st.structure(factor_table(rng, 1, labels=3)[0], draws=200, seed=k).categories.verdict)
    print(f"  categories called distinct: three-factor blocks {verdicts3.count('distinct') / len(verdicts3):.1%}; "
          f"one factor, arbitrary labels {verdicts1.count('distinct') / len(verdicts1):.1%} "
          f"(trace {verdicts1.count('trace') / len(verdicts1):.1%})")
    print(f"  study time {time.perf_counter() - start:.1f} s")
    for label, path in (("bundled MMLU-Pro", None),
                        ("MMLU per subject", ROOT / "tests/data/mmlu_per_subject_lmeval_5shot.csv")):
        dataset = jagged.load(path)
        result = st.structure(dataset.scores)
        table = metrics_table(dataset)
        shares = {c: f"{result.share(c):.1%}"
                  for c in ("model", "domain", "residual", "noise", "residual_beyond_noise")}
        corr = st.level_correlations(table)
        dims = result.dimensions
        categories = None if result.categories is None else (result.categories.verdict,
                                                              round(result.categories.p_value, 3))
        print(f"{label}: shares {shares}; n_dimensions {dims.n_dimensions}, first share {dims.first_share:.1%}, "
              f"rank-deficient {dims.rank_deficient}; flagged {int(result.models['relative_noise_flag'].sum())} of "
              f"{len(result.models)}; Spearman with macro: cv_error {corr['cv_error']:+.2f}, corrected RJ "
              f"{corr['relative_jaggedness_corrected']:+.2f}; categories: "
              f"{categories}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--domains", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--study", action="store_true", help="also run the simulation studies")
    parser.add_argument("--datasets", type=int, default=200, help="simulated tables per study setting")
    args = parser.parse_args()
    speed(args.models, args.domains, args.repeats)
    if args.study:
        study(args.datasets)


if __name__ == "__main__":
    main()
