"""Sampling noise and the noise-corrected CV (jagged/stats/uncertainty.py).

The simulation test prints its table of regimes; see it with ``pytest -s``.
"""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import jagged
from jagged.analysis import AnalysisOptions, metrics_table
from jagged.cli import main
from jagged.stats import bootstrap as boot
from jagged.stats import uncertainty as u
from jagged.text import flag_text
from jagged.views import uncertainty_text as ut


def long_scores(rows: dict[str, list[tuple[str, float, float]]]) -> pd.DataFrame:
    records = [{"model": m, "domain": d, "score": s, "n_items": n} for m, v in rows.items() for d, s, n in v]
    return jagged.validate_scores(pd.DataFrame(records), "t", line_offset=None)


# --- noise_share and the corrected CV -----------------------------------------------------

def test_noise_share_matches_a_hand_computation():
    # one model, three domains: scores 0.9 (n=100), 0.8 (n=50), 0.5 (n=20)
    scores = long_scores({"A": [("x", 0.9, 100), ("y", 0.8, 50), ("z", 0.5, 20)]})
    row = u.sampling_noise(scores).iloc[0]
    e = [0.1, 0.2, 0.5]
    n = [100, 50, 20]
    v_obs = statistics.pvariance(e)                                   # ddof=0
    sigma2 = [ei * (1 - ei) / (ni - 1) for ei, ni in zip(e, n)]       # unbiased per-domain noise
    noise = (3 - 1) / 3 ** 2 * sum(sigma2)
    assert row["var_error"] == pytest.approx(v_obs, rel=1e-12)
    assert row["noise_var"] == pytest.approx(noise, rel=1e-12)
    assert row["noise_share"] == pytest.approx(noise / v_obs, rel=1e-12)
    assert row["cv_error_corrected"] == pytest.approx((v_obs - noise) ** 0.5 / statistics.mean(e), rel=1e-12)
    # Pearson chi-square on the 3 x 2 table of (wrong, right) counts, against scipy
    from scipy.stats import chi2_contingency

    wrong = np.array([10, 10, 10])
    table = np.column_stack([wrong, np.array(n) - wrong])
    expected_p = chi2_contingency(table, correction=False).pvalue
    assert row["p_equal_error"] == pytest.approx(expected_p, rel=1e-9)


def test_noise_formula_is_the_expected_inflation_of_the_observed_variance():
    """E[V_obs] = V_true + ((D-1)/D^2) sum sigma_d^2, checked by Monte Carlo."""
    rng = np.random.default_rng(5)
    e = np.array([0.1, 0.3, 0.35, 0.5, 0.6])
    n = np.array([40, 80, 25, 60, 200])
    draws = 1 - rng.binomial(n, 1 - e, size=(400_000, e.size)) / n
    mc = draws.var(axis=1).mean()
    d = e.size
    theory = e.var() + (d - 1) / d ** 2 * (e * (1 - e) / n).sum()
    assert mc == pytest.approx(theory, rel=3e-3)
    # and the estimator of the noise term is unbiased
    est = (d - 1) / d ** 2 * (draws * (1 - draws) / (n - 1)).sum(axis=1)
    assert est.mean() == pytest.approx((d - 1) / d ** 2 * (e * (1 - e) / n).sum(), rel=3e-3)


def test_partial_credit_noise_uses_the_item_variance():
    items = pd.DataFrame({"model": ["A"] * 6, "domain": ["x", "x", "x", "y", "y", "y"],
                          "item": list("abcdef"), "correct": [0.5, 1.0, 0.0, 0.25, 0.25, 1.0]})
    ds = jagged.load(items)
    noise = u.domain_noise(ds.scores, ds.items).set_index("domain")["noise_var"]
    assert noise["x"] == pytest.approx(statistics.variance([0.5, 1.0, 0.0]) / 3)
    assert noise["y"] == pytest.approx(statistics.variance([0.25, 0.25, 1.0]) / 3)
    # aggregated scores alone assume 0/1 items: a larger (conservative) noise
    assert u.domain_noise(ds.scores).set_index("domain")["noise_var"]["y"] > noise["y"]


def test_chi2_sf_against_scipy():
    from scipy.stats import chi2

    for df in (1, 2, 3, 4, 13, 56, 57, 200):
        for x in (0.01, 0.5, 1.0, df * 0.8, float(df), df * 1.5, df * 3.0 + 20):
            assert u.chi2_sf(x, df) == pytest.approx(chi2.sf(x, df), rel=1e-9, abs=1e-300)
    assert u.chi2_sf(0.0, 5) == 1.0


def test_without_n_items_noise_is_unknown_and_no_interval():
    scores = jagged.validate_scores(pd.DataFrame({"model": ["A"] * 3, "domain": list("xyz"),
                                                  "score": [0.9, 0.8, 0.5]}), "t", line_offset=None)
    ds = jagged.Dataset(scores=scores, source="t", paths=[], format="long")
    table = metrics_table(ds, AnalysisOptions(bootstrap=50))
    row = table.iloc[0]
    assert np.isnan(row["noise_share"]) and np.isnan(row["cv_error_corrected"]) and row["noise_flag"] is pd.NA
    assert np.isnan(row["cv_error_lo"]) and np.isnan(row["macro_score_hi"])
    assert row["interval_note"] == boot.REASON_NO_N_ITEMS
    assert "no n_items" in row["interval_note"] and u.NOTE_NO_N_ITEMS in row["note"]


# --- the bundled real data ------------------------------------------------------------------

def test_mmlu_pythia_is_noise_dominated_llama30b_is_not(shared_data):
    ds = jagged.load(shared_data / "mmlu_per_subject_lmeval_5shot.csv")
    noise = u.sampling_noise(ds.scores).set_index("model")
    pythia = noise[noise.index.str.startswith("pythia")]
    assert len(pythia) == 16
    assert pythia["noise_flag"].all()
    assert (pythia["noise_share"] > 0.5).all()                  # each one on noise share alone
    assert pythia["noise_share"].median() == pytest.approx(0.619, abs=0.005)
    llama = noise.loc["llama-30B"]
    assert not llama["noise_flag"]
    assert llama["noise_share"] == pytest.approx(0.0522, abs=0.0005) and llama["p_equal_error"] < 1e-100
    assert llama["cv_error_corrected"] == pytest.approx(0.3566, abs=0.0005)
    sentences = ut.noise_sentences(metrics_table(ds).merge(noise[[]], left_on="model", right_index=True))
    assert len(sentences) == 16 and all(s.startswith("pythia") for s in sentences)
    assert "cannot be told apart from noise" in sentences[0]


def test_mmlu_pro_noise_is_small(shared_data):
    ds = jagged.load(shared_data / "mmlu_pro_item_level.csv")
    noise = u.sampling_noise(ds.scores, ds.items)
    assert noise["noise_share"].median() == pytest.approx(0.0222, abs=0.0005)
    assert not noise["noise_flag"].any()
    # the per-category file (aggregated, n_items) gives the same numbers for 0/1 data
    agg = u.sampling_noise(jagged.load(shared_data / "mmlu_pro_per_category.csv").scores)
    np.testing.assert_allclose(agg["noise_share"], noise["noise_share"], rtol=1e-12)


def test_forest_plot(tmp_path):
    from matplotlib.axes import Axes

    from jagged.plots.uncertainty import cv_forest

    table = pd.DataFrame({"model": ["a", "b"], "cv_error": [0.06, 0.3], "cv_error_corrected": [0.02, 0.29],
                          "cv_error_lo": [0.0, 0.25], "cv_error_hi": [0.05, 0.33], "noise_flag": [True, False]})
    ax = cv_forest(table)
    assert isinstance(ax, Axes)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a *", "b"]     # sorted, flagged marked
    assert {a.get_gid() for a in ax.collections} >= {"interval", "raw", "corrected"}
    with pytest.raises(ValueError, match="cv_error_corrected"):
        cv_forest(table.drop(columns="cv_error_corrected"))
    many = pd.DataFrame({"model": list("abcde"), "cv_error": [0.1, 0.2, 0.3, 0.4, 0.5],
                         "cv_error_corrected": [0.1, 0.2, 0.3, 0.4, 0.5]})
    ax = cv_forest(many, limit=3)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "d", "e"]
    assert "2 middle models not shown" in ax.get_title(loc="left")


# --- the simulation ---------------------------------------------------------------------------

SIM_DOMAINS = (5, 20, 60)
SIM_ITEMS = (30, 200, 1000)
SIM_CV = (0.0, 0.1, 0.3, 0.6)
SIM_DATASETS = 100
SIM_BOOT = 400
SIM_MEAN_ERROR = 0.4


def true_errors(n_domains: int, cv: float) -> np.ndarray:
    """Domain error rates with mean 0.4 and population CV exactly ``cv`` (all within (0, 1))."""
    v = np.linspace(-1, 1, n_domains)
    z = np.sign(v) * np.sqrt(np.abs(v))
    z = (z - z.mean()) / z.std()
    return SIM_MEAN_ERROR * (1 + cv * z)


def simulate_regime(n_domains: int, n_items: int, cv: float, rng: np.random.Generator) -> dict:
    """SIM_DATASETS independent item-level datasets (one per column), bootstrapped together."""
    e = true_errors(n_domains, cv)
    assert e.std() / e.mean() == pytest.approx(cv, abs=1e-12) and e.min() > 0 and e.max() < 1
    x = (rng.random((n_domains * n_items, SIM_DATASETS)) < np.repeat(1 - e, n_items)[:, None]).astype(float)
    names = np.asarray([f"sim{i:03d}" for i in range(SIM_DATASETS)], dtype=object)
    domains = np.asarray([f"d{j:02d}" for j in range(n_domains)], dtype=object)
    matrix = boot.ItemMatrix(correct=x, present=np.ones_like(x, dtype=bool), bounds=np.arange(n_domains + 1) * n_items,
                          models=names, domains=domains)
    s = x.reshape(n_domains, n_items, SIM_DATASETS).mean(axis=1)
    scores = pd.DataFrame({"model": np.tile(names, n_domains), "domain": np.repeat(domains, SIM_DATASETS),
                           "score": s.ravel(), "n_items": float(n_items)})
    noise = u.sampling_noise(scores).set_index("model").loc[names]
    reps = boot.replicates_from_matrix(matrix, n_boot=SIM_BOOT, seed=int(rng.integers(2 ** 31)))
    lo, hi = boot.centred_interval(reps.observed["cv_error"], reps.cv_error, 0.95, squared=True)
    err = 1 - s
    raw = err.std(axis=0) / err.mean(axis=0)
    covered = (lo <= cv) & (cv <= hi)
    low_noise = noise["noise_share"].to_numpy() < 0.5
    return {
        "D": n_domains, "n": n_items, "true_cv": cv,
        "median_noise_share": float(noise["noise_share"].median()),
        "n_low_noise": int(low_noise.sum()), "n_covered": int(covered[low_noise].sum()),
        "coverage": float(covered[low_noise].mean()) if low_noise.any() else np.nan,
        "mae_raw": float(np.abs(raw - cv).mean()),
        "mae_corrected": float(np.abs(noise["cv_error_corrected"].to_numpy() - cv).mean()),
        "flag_rate": float(noise["noise_flag"].mean()),
    }


def test_simulation_coverage_correction_and_flag():
    """Known true domain error rates; D 5-60, 30-1,000 items per domain, true CV 0-0.6."""
    rng = np.random.default_rng(20240601)
    rows = [simulate_regime(d, n, cv, rng) for d in SIM_DOMAINS for n in SIM_ITEMS for cv in SIM_CV]
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(f"\nSimulation: {SIM_DATASETS} datasets per regime, B = {SIM_BOOT}, 95 % intervals; coverage over "
              "datasets with noise_share < 0.5")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    pooled = table["n_covered"].sum() / table["n_low_noise"].sum()
    mae_raw, mae_corrected = table["mae_raw"].mean(), table["mae_corrected"].mean()
    flag_at_zero = table.loc[table["true_cv"] == 0, "flag_rate"]
    print(f"pooled coverage {pooled:.3f} over {table['n_low_noise'].sum()} datasets; MAE raw {mae_raw:.4f}, "
          f"corrected {mae_corrected:.4f}; noise flag at true CV 0: {flag_at_zero.mean():.3f} "
          f"(lowest regime {flag_at_zero.min():.2f})")
    assert 0.90 <= pooled <= 0.99
    enough = table[table["n_low_noise"] >= 50]
    assert (enough["coverage"] >= 0.85).all(), enough
    assert mae_corrected < mae_raw
    assert flag_at_zero.mean() >= 0.90 and (flag_at_zero >= 0.85).all()


def test_notes_name_the_cause_why_the_noise_share_is_missing():
    """Issue 17: all-zero scores with n_items 50 were said to have "a domain has a single item"."""
    rows = ([("wrong", d, 0.0, 50) for d in "xyz"] + [("single", d, s, n) for d, s, n in
                                                       zip("xyz", (0.0, 0.6, 0.5), (1, 50, 50))]
            + [("fine", d, s, 50) for d, s in zip("xyz", (0.2, 0.5, 0.7))])
    scores = jagged.validate_scores(pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]))
    noise = u.sampling_noise(scores).set_index("model")
    wrong, single = noise.loc["wrong"], noise.loc["single"]
    assert np.isnan(wrong["noise_share"]) and wrong["noise_var"] == 0.0 and wrong["var_error"] == 0.0
    assert wrong["noise_note"].startswith(u.NOTE_NO_VARIATION) and "single item" not in wrong["noise_note"]
    assert wrong["p_equal_error"] == 1.0 and wrong["noise_flag"]
    assert "equal error in every domain not rejected, p = 1" in wrong["noise_note"]   # why it is flagged
    assert np.isnan(single["noise_share"]) and single["noise_note"].startswith(u.NOTE_SINGLE_ITEM)
    assert noise.loc["fine", "noise_note"] == ""


# --------------------------------------------------------------------------- unknown is not False (issue 18)

def _without_n_items(tmp_path):
    """The bundled per-category file with its item counts removed (a leaderboard table)."""
    from conftest import BUNDLED

    path = tmp_path / "no_counts.csv"
    pd.read_csv(BUNDLED).drop(columns="n_items").to_csv(path, index=False)
    return path


@pytest.mark.parametrize("source", ["readme", "bundled"])
def test_flags_are_missing_not_false_on_real_tables_without_item_counts(tmp_path, source):
    from conftest import TEST_DATA

    path = TEST_DATA / "mmlu_hendrycks_readme_4categories.csv" if source == "readme" else _without_n_items(tmp_path)
    table = metrics_table(jagged.load(path), AnalysisOptions(bootstrap=0))
    for flag in ("noise_flag", "relative_noise_flag"):
        assert table[flag].dtype == "boolean" and table[flag].isna().all(), flag
        assert table[table[flag] == False].empty      # noqa: E712 -- the filter the issue names keeps no one
        assert table[table[flag] == True].empty       # noqa: E712
    assert table["noise_share"].isna().all() and table["cv_error"].notna().all()
    assert (u.noise_summary(table)["noise_flag"] == "not tested").all()
    # CSV (the CLI's -o) writes an empty cell, JSON a null: never "False"
    out = tmp_path / "metrics.csv"
    result = CliRunner().invoke(main, ["metrics", str(path), "--bootstrap", "0", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert (written["noise_flag"] == "").all() and (written["relative_noise_flag"] == "").all()
    import json

    records = json.loads(table.to_json(orient="records"))
    assert all(r["noise_flag"] is None and r["relative_noise_flag"] is None for r in records)


def test_a_table_with_item_counts_keeps_true_and_false_and_only_untestable_models_are_missing():
    rows = [("even", d, 0.70, 400) for d in "abcd"]
    rows += [("uneven", d, s, 400) for d, s in zip("abcd", (0.9, 0.3, 0.8, 0.5))]
    rows += [("solo", "a", 0.6, 400), ("perfect", "a", 1.0, 400), ("perfect", "b", 1.0, 400)]
    scores = jagged.validate_scores(pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"]), "t",
                                    line_offset=None)
    noise = u.sampling_noise(scores).set_index("model")["noise_flag"]
    assert noise.dtype == "boolean"
    # even: equal error everywhere is not rejected (p = 1) -> True; uneven: far beyond noise -> False;
    # one domain (CV undefined) and no errors (CV undefined): nothing tested -> missing
    assert bool(noise["even"]) is True
    assert bool(noise["uneven"]) is False
    assert noise[["solo", "perfect"]].isna().all()
    assert list(flag_text(noise.reindex(["even", "uneven", "solo"]))) == ["noise", "", "not tested"]
