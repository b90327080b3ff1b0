"""Model or benchmark: the logit decomposition, relative jaggedness, variance shares, parallel analysis.

Numbers are checked against independent computations (statsmodels' binomial GLM, dense
least squares, numpy's eigendecomposition of ``np.corrcoef``, a per-draw permutation loop)
and against simulated tables with known model levels, domain difficulties, planted
residuals and factor structures (binomial draws, 1,000 items per domain). The larger rate
studies are in ``benchmarks/bench_structure.py --study``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from conftest import BUNDLED, TEST_DATA

import jagged
from jagged.analysis import AnalysisOptions, analyse, metrics_table
from jagged.readers.dataset import Dataset
from jagged.stats import bootstrap as boot
from jagged.stats import decomposition as sdec
from jagged.stats import dimensions as sdim
from jagged.stats import structure as st
from jagged.stats import uncertainty as u
from jagged.stats.residual_test import residual_profile
from jagged.views import structure as vs

MMLU_SUBJECTS = TEST_DATA / "mmlu_per_subject_lmeval_5shot.csv"


def expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def long_table(errors: np.ndarray, n: np.ndarray | None, *, categories: list[str] | None = None) -> pd.DataFrame:
    """A canonical table from an M × D matrix of error rates (NaN: no score)."""
    m, d = errors.shape
    rows = []
    for i in range(m):
        for j in range(d):
            if np.isfinite(errors[i, j]):
                rows.append({"model": f"m{i:02d}", "domain": f"d{j:02d}", "score": 1.0 - errors[i, j],
                             "n_items": float(n[i, j]) if n is not None else np.nan,
                             **({"category": categories[j]} if categories else {})})
    return jagged.validate_scores(pd.DataFrame(rows), "simulated", line_offset=None)


def simulate(rng: np.random.Generator, *, models: int = 30, domains: int = 15, items: int = 1000,
             residual_sd: float = 0.3) -> dict[str, np.ndarray]:
    """Known a, b and planted residuals; binomial error counts.

    The planted residuals are a pure interaction (double-centred: mean 0 in every row and
    column), since any row or column mean of them would be part of a or b.
    """
    a = rng.normal(0.0, 0.8, models)
    b = rng.normal(0.0, 0.6, domains)
    rho = rng.normal(0.0, residual_sd, (models, domains)) if residual_sd > 0 else np.zeros((models, domains))
    rho = rho - rho.mean(axis=1, keepdims=True) - rho.mean(axis=0, keepdims=True) + rho.mean()
    p = expit(-0.6 + a[:, None] + b[None, :] + rho)
    n = np.full((models, domains), items)
    k = rng.binomial(n, p)
    return {"a": a, "b": b, "rho": rho, "p": p, "n": n, "errors": k / n}


def ols_logits(cells: pd.DataFrame, logits: np.ndarray) -> np.ndarray:
    """Fitted logits of statsmodels' ordinary least squares with model and domain indicators."""
    import statsmodels.api as sm

    design = pd.get_dummies(cells[["model", "domain"]].astype(str), drop_first=True, dtype=float)
    design.insert(0, "const", 1.0)
    return sm.OLS(logits, design.to_numpy()).fit().fittedvalues


# --------------------------------------------------------------------------- the fit


def test_fit_equals_statsmodels_least_squares_on_an_incomplete_table_with_zero_cells():
    rng = np.random.default_rng(3)
    sim = simulate(rng, models=12, domains=7)
    n = rng.integers(40, 400, sim["errors"].shape)
    errors = rng.binomial(n, sim["p"]) / n
    errors[0, 0], errors[1, 3], errors[2, 5] = 0.0, 1.0, 0.0           # no errors / all wrong
    errors[3, 1] = errors[4, 6] = errors[5, 2] = np.nan                  # models missing domains
    dec = sdec.decompose(long_table(errors, n))
    cells = dec.residuals()
    k = cells["error"] * cells["n_items"]
    adjusted = ((k + 0.5) / (cells["n_items"] + 1.0)).to_numpy()        # the counts place the 0 and 1 cells
    logits = np.log(adjusted / (1 - adjusted))
    expected = ols_logits(cells, logits)
    ours = np.log(cells["expected_error"] / (1 - cells["expected_error"])).to_numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-10)
    assert len(cells) == errors.size - 3
    # the residual is the corrected empirical logit minus the fit, finite for 0 and 1 cells
    np.testing.assert_allclose(cells["residual"], logits - expected, atol=1e-10)
    assert np.isfinite(cells["residual"]).all()
    # effects: Σa = Σb = 0 and μ + a + b reproduces the fit
    fitted = dec.intercept + dec.model_effect[:, None] + dec.domain_effect[None, :]
    np.testing.assert_allclose(fitted[dec.fitted], dec.eta[dec.fitted], atol=1e-10)
    assert abs(np.nansum(dec.model_effect)) < 1e-9 and abs(np.nansum(dec.domain_effect)) < 1e-9


@pytest.mark.parametrize("counts", ["none", "constant", "varying"])
def test_complete_table_shares_add_up_with_or_without_item_counts_as_a_two_way_anova(counts):
    """Issue 29: a constant --n-items 50 changed 54.6/21.8/23.6 % into 45.0/17.6/24.1 % plus 13-25 % cross terms.

    The sums of squares of statsmodels' two-way analysis of variance of the same logits (no
    interaction term: the residual is the interaction) are the reference.
    """
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    rng = np.random.default_rng(21)
    sim = simulate(rng, models=9, domains=6, items=60, residual_sd=0.4)
    n = {"none": None, "constant": np.full(sim["n"].shape, 50),
         "varying": rng.integers(10, 500, sim["n"].shape)}[counts]
    errors = sim["errors"] if n is None else rng.binomial(n, sim["p"]) / n
    errors[0, 0] = 0.0                                                   # a 0 cell: its place depends on n
    scores = long_table(errors, n)
    result = st.structure(scores, draws=20)
    shares = result.shares.set_index("component")
    assert abs(shares.loc[["domain", "model", "residual"], "share"].sum() - 1.0) < 1e-12
    assert abs(shares.loc["cross", "share"]) < 1e-12 and sdec.cross_causes(result.decomposition) == []
    cells = result.decomposition.residuals()
    size = 100 if n is None else cells["n_items"]
    adjusted = (size * cells["error"] + 0.5) / (size + 1.0)
    frame = cells.assign(logit=np.log(adjusted / (1 - adjusted)))
    table = sm.stats.anova_lm(ols("logit ~ C(model) + C(domain)", data=frame).fit())
    ss = table["sum_sq"] / len(frame)                                    # population variances over the cells
    assert shares.loc["model", "variance"] == pytest.approx(ss["C(model)"], rel=1e-10)
    assert shares.loc["domain", "variance"] == pytest.approx(ss["C(domain)"], rel=1e-10)
    assert shares.loc["residual", "variance"] == pytest.approx(ss["Residual"], rel=1e-10)
    noise = shares.loc["noise", "variance"]
    assert np.isnan(noise) if n is None else 0 < noise < shares.loc["residual", "variance"]
    assert not any(p.startswith("cross terms") for p in vs.share_table(result)["part"])


def test_a_constant_count_of_100_changes_the_noise_not_the_accounting():
    """Without counts the continuity correction assumes 100 items: --n-items 100 then leaves every share as it was."""
    sim = simulate(np.random.default_rng(22), models=7, domains=5, items=100)
    without = st.structure(long_table(sim["errors"], None), draws=20).shares.set_index("component")
    constant = st.structure(long_table(sim["errors"], sim["n"]), draws=20).shares.set_index("component")
    parts = ["domain", "model", "residual", "cross"]
    np.testing.assert_allclose(constant.loc[parts, "share"], without.loc[parts, "share"], atol=1e-12)
    assert np.isnan(without.loc["noise", "share"]) and constant.loc["noise", "share"] > 0


def test_without_n_items_every_cell_weighs_the_same():
    rng = np.random.default_rng(5)
    sim = simulate(rng, models=8, domains=5)
    dec = sdec.decompose(long_table(sim["errors"], None))
    assert not dec.has_n and dec.reasons[0] == ("no_n_items", {})
    cells = dec.residuals()
    adjusted = (100 * cells["error"] + 0.5) / 101
    logits = np.log(adjusted / (1 - adjusted)).to_numpy()
    # ordinary least squares of the logits on model and domain (dense lstsq)
    design = pd.get_dummies(cells[["model", "domain"]].astype(str), drop_first=True, dtype=float)
    design.insert(0, "const", 1.0)
    coef, *_ = np.linalg.lstsq(design.to_numpy(), logits, rcond=None)
    expected = design.to_numpy() @ coef
    ours = np.log(cells["expected_error"] / (1 - cells["expected_error"])).to_numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-10)
    # on a complete table that is the two-way analysis of variance: row mean + column mean − grand mean
    grid = logits.reshape(8, 5)
    anova = grid.mean(axis=1, keepdims=True) + grid.mean(axis=0, keepdims=True) - grid.mean()
    np.testing.assert_allclose(ours.reshape(8, 5), anova, atol=1e-10)
    per = sdec.model_structure(dec)
    assert per["relative_jaggedness"].notna().all() and per["relative_jaggedness_corrected"].isna().all()
    # unknown is not False: nothing was tested
    assert per["relative_noise_flag"].dtype == "boolean" and per["relative_noise_flag"].isna().all()
    assert (per["structure_note"] == sdec.NOTE_NO_N_ITEMS).all()


def test_additive_wls_equals_dense_least_squares_and_is_batched():
    rng = np.random.default_rng(6)
    for shape in [(9, 4), (4, 9)]:                           # both elimination sides
        w = rng.uniform(0.5, 3.0, (3,) + shape)
        w[:, 0, 1] = 0.0                                      # a missing cell
        z = rng.normal(size=(3,) + shape)
        fitted = sdec.additive_wls(w, z)
        r, c = shape
        design = np.hstack([np.repeat(np.eye(r), c, axis=0), np.tile(np.eye(c), (r, 1))])
        for b in range(3):
            sw = np.sqrt(w[b].ravel())
            coef = np.linalg.lstsq(design * sw[:, None], z[b].ravel() * sw, rcond=None)[0]
            expected = (design @ coef).reshape(shape)
            keep = w[b] > 0
            np.testing.assert_allclose(fitted[b][keep], expected[keep], atol=1e-10)


# --------------------------------------------------------------------------- edge cases


def test_one_model_or_one_domain_gives_a_note_not_a_crash():
    one_model = long_table(np.array([[0.2, 0.4, 0.5]]), np.full((1, 3), 100))
    one_domain = long_table(np.array([[0.2], [0.3], [0.6]]), np.full((3, 1), 100))
    for table in (one_model, one_domain):
        dec = sdec.decompose(table)
        assert not dec.ok and dec.reasons[-1][0] == "too_small"
        assert vs.reason_text(dec.reasons[-1]).startswith(sdec.NOTE_FEW_MODELS + "; the table has ")
        per = sdec.model_structure(dec)
        assert per["relative_jaggedness"].isna().all() and (per["structure_note"] == sdec.NOTE_FEW_MODELS).all()
        assert sdec.variance_shares(dec)["share"].isna().all()
        assert vs.structure_sentences(st.structure(table, draws=20))[0].startswith("No decomposition")
    dims = sdim.dimensions(one_model, draws=20)
    assert dims.n_dimensions is None
    assert dims.reasons[-1] == ("too_few_observations", {"observations": 1, "variables": 0})  # one model: no spread
    assert "at least 3 observations" in vs.dimension_sentence(dims)


def test_disconnected_models_are_left_out_with_a_note_and_single_domain_models_have_no_spread():
    errors = np.full((6, 5), np.nan)
    errors[:4, :3] = [[0.1, 0.2, 0.3], [0.2, 0.3, 0.5], [0.3, 0.5, 0.6], [0.05, 0.1, 0.2]]
    errors[4:, 3:] = [[0.3, 0.4], [0.2, 0.5]]                 # share no domain with the first four
    errors[3, 1:] = np.nan                                    # m03 has one domain left
    errors[3, 0] = 0.1
    dec = sdec.decompose(long_table(errors, np.full(errors.shape, 200)))
    assert dec.fitted[:4].any() and not dec.fitted[4:].any()
    assert dec.reasons[0] == ("not_connected", {"models": ["m04", "m05"]})
    assert vs.reason_text(dec.reasons[0]) == ("2 models share no domain with the main table and are not decomposed: "
                                              "m04, m05")
    per = sdec.model_structure(dec).set_index("model")
    assert per.loc["m04", "structure_note"] == sdec.NOTE_NOT_CONNECTED
    assert np.isnan(per.loc["m03", "relative_jaggedness"]) and per.loc["m03", "structure_note"] == \
        sdec.NOTE_FEW_DOMAINS_MODEL
    assert abs(dec.residual[3, 0]) < 1e-8                      # its level absorbs its only cell


# --------------------------------------------------------------------------- known truth


def test_residuals_recover_the_planted_ones():
    rng = np.random.default_rng(11)
    sim = simulate(rng)
    dec = sdec.decompose(long_table(sim["errors"], sim["n"]))
    r = np.corrcoef(dec.residual.ravel(), sim["rho"].ravel())[0, 1]
    assert r >= 0.9, r
    # the levels and difficulties too (up to the centring)
    assert np.corrcoef(dec.model_effect, sim["a"])[0, 1] > 0.99
    assert np.corrcoef(dec.domain_effect, sim["b"])[0, 1] > 0.99
    # the corrected relative jaggedness tracks each model's true residual spread
    per = sdec.model_structure(dec)
    truth = sim["rho"].std(axis=1)
    assert np.corrcoef(per["relative_jaggedness_corrected"], truth)[0, 1] > 0.9
    assert not per["relative_noise_flag"].any()


def test_without_planted_residuals_the_corrected_spread_is_near_zero_and_flagged():
    rng = np.random.default_rng(12)
    flagged, corrected, raw, ratio = [], [], [], []
    for _ in range(5):
        sim = simulate(rng, residual_sd=0.0)
        dec = sdec.decompose(long_table(sim["errors"], sim["n"]))
        per = sdec.model_structure(dec)
        flagged.append(per["relative_noise_flag"].mean())
        corrected.append(per["relative_jaggedness_corrected"].median())
        raw.append(per["relative_jaggedness"].median())
        _, v_obs, n_hat = sdec.residual_spread(dec.residual, dec.noise_var, dec.leverage, dec.fitted)
        ratio.append(n_hat.sum() / v_obs.sum())
    assert np.mean(flagged) >= 0.9, flagged
    assert np.median(corrected) < 0.25 * np.median(raw), (corrected, raw)
    assert np.median(raw) > 0.05                                # the raw spread is pure noise, not 0
    assert 0.9 < np.mean(ratio) < 1.1, ratio                   # the expected noise is the observed spread


def test_noise_share_of_the_table_is_the_residual_when_nothing_is_planted():
    rng = np.random.default_rng(13)
    sim = simulate(rng, residual_sd=0.0)
    shares = sdec.variance_shares(sdec.decompose(long_table(sim["errors"], sim["n"]))).set_index("component")
    assert 0.85 < shares.loc["noise", "share"] / shares.loc["residual", "share"] < 1.15
    # exact additive logits from (nearly) infinite items: no residual, level and difficulty as simulated
    exact = simulate(np.random.default_rng(14), residual_sd=0.0)
    errors = expit(-0.6 + exact["a"][:, None] + exact["b"][None, :])
    shares = sdec.variance_shares(sdec.decompose(long_table(errors, np.full(errors.shape, 10 ** 8))))
    shares = shares.set_index("component")
    total = exact["a"].var() + exact["b"].var()
    assert abs(shares.loc["model", "share"] - exact["a"].var() / total) < 1e-4
    assert abs(shares.loc["domain", "share"] - exact["b"].var() / total) < 1e-4
    assert shares.loc["residual", "share"] < 1e-6


# --------------------------------------------------------------------------- bootstrap


def test_relative_jaggedness_replicates_are_the_other_intervals_replicates():
    rng = np.random.default_rng(15)
    sim = simulate(rng, models=8, domains=6, items=300)
    scores = long_table(sim["errors"], sim["n"])

    def macro(num, den, present, models, domains):
        return np.where(present[None], num / np.where(den > 0, den, 1), 0).sum(axis=2) / present.sum(axis=1)

    plain = boot.bootstrap_replicates(scores, n_boot=60, seed=4)
    both = boot.bootstrap_replicates(scores, n_boot=60, seed=4, statistics={"macro": macro,
                                  "rj": sdec.replicate_statistic(sdec.decompose(scores))})
    np.testing.assert_array_equal(plain.cv_error, both.cv_error)          # extra statistics draw nothing
    np.testing.assert_allclose(both.extra["macro"], both.macro_score, atol=1e-12)
    assert both.extra["rj"].shape == (60, 8) and np.isfinite(both.extra["rj"]).all()


def test_relative_jaggedness_interval_covers_the_truth():
    rng = np.random.default_rng(16)
    sim = simulate(rng, residual_sd=0.25)
    scores = long_table(sim["errors"], sim["n"])
    dataset = Dataset(scores=scores, source="sim", paths=[], format="long")
    table = metrics_table(dataset, AnalysisOptions(bootstrap=300, seed=1))
    logits = np.log(sim["p"] / (1 - sim["p"]))
    centred = logits - logits.mean(axis=1, keepdims=True) - logits.mean(axis=0, keepdims=True) + logits.mean()
    truth = centred.std(axis=1)
    lo, hi = table["relative_jaggedness_lo"].to_numpy(), table["relative_jaggedness_hi"].to_numpy()
    covered = np.mean((lo <= truth) & (truth <= hi))
    assert covered >= 0.8, covered
    assert (lo <= table["relative_jaggedness_corrected"]).all() and (table["relative_jaggedness_corrected"] <= hi).all()


def test_item_level_bootstrap_gives_relative_jaggedness_intervals():
    rate = np.repeat([[0.9, 0.6, 0.5, 0.8]], 60, axis=1) * np.array([[1.0], [0.9], [0.8]])
    correct = (np.random.default_rng(17).random(rate.shape) < rate).astype(float)
    frame = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 240),
                          "domain": np.tile(np.repeat(["w", "x", "y", "z"], 60), 3),
                          "item": np.tile([f"q{j}" for j in range(240)], 3), "correct": correct.ravel()})
    dataset = jagged.load(frame)
    table = metrics_table(dataset, AnalysisOptions(bootstrap=80, seed=0))
    assert set(table["interval_method"]) == {boot.METHOD_ITEMS}
    assert (table["relative_jaggedness_lo"] <= table["relative_jaggedness_hi"]).all()
    assert table["relative_jaggedness_hi"].notna().all()


# --------------------------------------------------------------------------- dimensions


def factor_table(rng: np.random.Generator, factors: int, *, models: int = 30, domains: int = 15,
                 items: int = 1000, factor_corr: float = 0.0, labels: int | None = None
                 ) -> tuple[pd.DataFrame, list[str]]:
    """Domain error rates driven by ``factors`` abilities (correlated ``factor_corr``), each behind a block of
    domains, loadings U(0.6, 1.2) logits, unique parts sd 0.3, then binomial draws. The categories are the
    blocks, or ``labels`` arbitrary groups of domains."""
    cov = np.full((factors, factors), factor_corr) + (1 - factor_corr) * np.eye(factors)
    theta = rng.multivariate_normal(np.zeros(factors), cov, models)
    block = np.arange(domains) % factors
    loading = rng.uniform(0.6, 1.2, domains)
    logit = -0.5 + rng.normal(0, 0.5, domains)[None, :] - loading[None, :] * theta[:, block] \
        + rng.normal(0, 0.3, (models, domains))
    n = np.full((models, domains), items)
    errors = rng.binomial(n, expit(logit)) / n
    names = [f"c{c}" for c in (block if labels is None else np.arange(domains) % labels)]
    return long_table(errors, n, categories=names), names


def test_eigenvalues_and_thresholds_against_independent_computations():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(25, 6))
    dims = sdim.parallel_analysis(x, draws=2000, seed=3)
    np.testing.assert_allclose(dims.eigenvalues, np.sort(np.linalg.eigvalsh(np.corrcoef(x, rowvar=False)))[::-1],
                               atol=1e-10)
    loop = np.empty((2000, 6))                                 # a plain per-draw loop with np.corrcoef
    other = np.random.default_rng(99)
    for b in range(2000):
        shuffled = np.column_stack([other.permutation(x[:, j]) for j in range(6)])
        loop[b] = np.sort(np.linalg.eigvalsh(np.corrcoef(shuffled, rowvar=False)))[::-1]
    np.testing.assert_allclose(dims.thresholds, np.quantile(loop, 0.95, axis=0), atol=0.06)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    perm = sdim.permuted_eigenvalues(z, 50, np.random.default_rng(0))
    np.testing.assert_allclose(perm.sum(axis=1), 6.0, atol=1e-9)  # trace of a correlation matrix
    assert dims.draws == 2000 and dims.seed == 3 and dims.percentile == 0.95
    again = sdim.parallel_analysis(x, draws=2000, seed=3)
    np.testing.assert_array_equal(again.thresholds, dims.thresholds)
    assert dims.n_dimensions == 0 or dims.eigenvalues[0] > dims.thresholds[0]


@pytest.mark.parametrize("factors", [1, 3])
def test_parallel_analysis_retains_the_simulated_number_of_dimensions(factors):
    rng = np.random.default_rng(100 + factors)
    found = [sdim.dimensions(factor_table(rng, factors)[0], draws=200, seed=k).n_dimensions for k in range(30)]
    rate = np.mean(np.asarray(found) == factors)
    assert rate >= 0.9, (factors, found)


def test_rank_deficient_when_fewer_models_than_domains():
    rng = np.random.default_rng(22)
    table, _ = factor_table(rng, 1, models=10, domains=20)
    dims = sdim.dimensions(table, draws=200)
    assert dims.rank_deficient and dims.rank == 9 and dims.n_dimensions == 1
    assert dims.reasons[-1] == ("rank_deficient", {"models": 10, "domains": 20, "rank": 9})
    np.testing.assert_allclose(dims.eigenvalues[9:], 0.0, atol=1e-8)
    assert "rank at most 9" in vs.dimension_sentence(dims)


def test_incomplete_models_and_constant_domains_are_left_out_of_the_parallel_analysis():
    errors = np.random.default_rng(23).uniform(0.1, 0.9, (8, 4))
    errors[:, 2] = 0.5
    errors[0, 0] = np.nan
    dims = sdim.dimensions(long_table(errors, None), draws=50)
    assert dims.n_observations == 7 and dims.n_variables == 3
    assert dims.reasons == [("incomplete_models", {"models": 1}), ("constant_domains", {"domains": ["d02"]})]
    assert vs.reason_text(dims.reasons[0]).startswith("1 model lacking")


def test_categories_as_distinct_dimensions_or_not():
    rng = np.random.default_rng(24)
    table, _ = factor_table(rng, 3)
    result = st.structure(table, draws=300)
    assert result.dimensions.n_dimensions == 3
    assert result.categories.verdict == "distinct" and result.categories.p_value < 0.05
    assert result.categories.within > result.categories.between
    verdicts = []
    for k in range(12):                                        # one factor, arbitrary category labels
        one, _ = factor_table(rng, 1, labels=3)
        verdicts.append(st.structure(one, draws=200, seed=k).categories.verdict)
    assert verdicts.count("distinct") == 0 and verdicts.count("not distinct") >= 10, verdicts


# --------------------------------------------------------------------------- real data


def test_bundled_mmlu_pro_one_dimension_and_cv_error_follows_the_level():
    dataset = jagged.load(BUNDLED)
    result = st.structure(dataset.scores, draws=300)
    wide = 1 - dataset.scores.pivot_table(index="model", columns="domain", values="score", observed=True)
    eig = np.sort(np.linalg.eigvalsh(np.corrcoef(wide.to_numpy(), rowvar=False)))[::-1]
    np.testing.assert_allclose(result.dimensions.eigenvalues, eig, atol=1e-10)
    assert result.dimensions.n_dimensions == 1 and eig[1] < 1 and not result.dimensions.rank_deficient
    assert result.share("model") > result.share("domain") > result.share("residual") > result.share("noise")
    table = metrics_table(dataset)
    corr = st.level_correlations(table)
    assert corr["cv_error"] > 0.8 and abs(corr["relative_jaggedness_corrected"]) < 0.4


def test_mmlu_subjects_are_rank_deficient_and_say_so():
    dataset = jagged.load(MMLU_SUBJECTS)
    result = st.structure(dataset.scores, draws=200)
    assert result.dimensions.rank_deficient and result.dimensions.rank == dataset.scores["model"].nunique() - 1
    assert result.categories is not None and result.categories.category_dimensions.n_dimensions >= 1
    text = " ".join(vs.structure_sentences(result))
    assert "rank at most 19" in text and "categor" in text


# --------------------------------------------------------------------------- surfaces


def test_metrics_table_gains_the_columns_before_note_and_keeps_the_others_in_order():
    from jagged.analysis import add_deployment, add_hierarchy, profile_weights

    dataset = jagged.load(BUNDLED)
    options = AnalysisOptions(profiles=("uniform", "items"), bootstrap=40, seed=2)
    table = metrics_table(dataset, options)
    before = u.add_noise(jagged.jaggedness(dataset.scores), dataset.scores, dataset.items)
    before = add_deployment(add_hierarchy(before, dataset.scores), dataset.scores, profile_weights(dataset, options))
    before = boot.add_intervals(before, dataset.scores, weights=profile_weights(dataset, options), n_boot=40, seed=2)
    ours = [c for c in table.columns if c in sdec.METRIC_COLUMNS or c.startswith("relative_jaggedness_")
            or c.endswith("_rests_on")]
    assert [c for c in table.columns if c not in ours] == list(before.columns)
    assert ours == ["model_effect", "relative_jaggedness", "relative_jaggedness_corrected", "relative_jaggedness_lo",
                    "relative_jaggedness_hi", "relative_noise_share", "p_model_fit", "relative_noise_flag",
                    "cv_error_rests_on", "relative_jaggedness_rests_on"]
    assert list(table.columns[-3:]) == ["interval_method", "interval_note", "note"]
    per = sdec.relative_jaggedness(dataset.scores).set_index("model")
    first = table.drop_duplicates("model").set_index("model")
    assert not first["note"].str.contains("relative jaggedness").any()      # the flag has its own column
    solo = metrics_table(Dataset(scores=long_table(np.array([[0.2, 0.4]]), np.full((1, 2), 50)), source="one",
                                 paths=[], format="long"))
    assert solo["note"].iloc[0] == "" and np.isnan(solo["relative_jaggedness"].iloc[0])
    np.testing.assert_allclose(first["relative_jaggedness"], per.loc[first.index, "relative_jaggedness"])


def test_cli_structure_json_text_and_residuals(tmp_path):
    out = tmp_path / "residuals.csv"
    code, stdout, stderr = run_cli("structure", BUNDLED, "--json", "-o", out, "--draws", 100, "--seed", 5)
    assert code == 0, stderr
    summary = json.loads(stdout)
    for key in ("n_dimensions", "first_share", "eigenvalues", "thresholds", "draws", "seed", "variance_shares"):
        assert key in summary
    assert summary["draws"] == 100 and summary["seed"] == 5 and len(summary["thresholds"]) == 14
    assert abs(sum(summary["variance_shares"][c] for c in ("domain", "model", "residual", "cross")) - 1) < 1e-9
    residuals = pd.read_csv(out)
    assert list(residuals.columns) == ["model", "domain", "error", "n_items", "expected_error", "residual",
                                       "residual_se", "z"] and len(residuals) == 29 * 14
    code, stdout, _ = run_cli("structure", BUNDLED, "--draws", 50)
    assert code == 0 and "retained: 1 of 14" in stdout and "model level" in stdout
    assert "--draws" in run_cli("structure", "--help")[1]


def test_cli_structure_bad_and_small_input(tmp_path):
    assert_bad_input("structure", tmp_path / "missing.csv", fragments=("missing.csv",))
    one = tmp_path / "one.csv"
    one.write_text("model,domain,score\na,x,0.5\na,y,0.7\n")
    code, stdout, stderr = run_cli("structure", one, "--json")
    assert code == 0 and "Traceback" not in stderr
    summary = json.loads(stdout)
    assert summary["n_dimensions"] is None and any(sdec.NOTE_FEW_MODELS in n for n in summary["notes"])


def test_analysis_has_the_decomposition_section():
    analysis = analyse(BUNDLED, bootstrap=0)
    assert analysis.sections["decomposition"] and analysis.structure.dimensions.n_dimensions == 1
    assert analysis.structure is analysis.structure               # computed once


def test_default_draws_shrink_only_for_very_large_tables(monkeypatch):
    assert sdim.default_draws(29, 14) == sdim.DEFAULT_DRAWS == 500 and sdim.default_draws(300, 60) == 500
    assert sdim.default_draws(10_000, 100) == 200 and sdim.default_draws(10_000, 1_000) == sdim.MIN_DRAWS
    code, stdout, _ = run_cli("structure", "--help")
    assert code == 0 and "default 500" in " ".join(stdout.split())
    table = long_table(np.random.default_rng(30).uniform(0.1, 0.9, (40, 4)), None)
    monkeypatch.setattr("jagged.stats.dimensions.WORK_BUDGET", 40 * 16 * 120)  # as if huge: 120 draws
    dims = sdim.dimensions(table)
    assert dims.draws == 120
    assert dims.reasons[0] == ("fewer_draws", {"draws": 120, "default": 500, "models": 40, "domains": 4})
    assert vs.reason_text(dims.reasons[0]).startswith("120 permutation draws instead of 500")


# --------------------------------------------------------------------------- views and plots


@pytest.fixture(scope="module")
def bundled():
    dataset = jagged.load(BUNDLED)
    table = metrics_table(dataset, AnalysisOptions(bootstrap=60, seed=0))
    return dataset, table, st.structure(dataset.scores, draws=100)


def test_residual_heatmap_shows_the_most_model_specific_models_and_a_diverging_scale_centred_at_zero(bundled):
    from jagged.plots import dispersion
    from jagged.plots import structure as ps

    dataset, table, result = bundled
    per = table.drop_duplicates("model").set_index("model")["relative_jaggedness_corrected"]
    by_rj = per.sort_values(ascending=False, kind="mergesort").index.tolist()
    for limit in (None, 10):
        grid, cut = vs.residual_grid(result.decomposition, dataset.scores, table, limit=limit)
        errors_ax = dispersion.error_heatmap(dataset.scores, table, limit=limit)
        ax = ps.residual_heatmap(grid, cut=cut)
        labels = [t.get_text() for t in ax.get_yticklabels()]
        # rows: highest relative jaggedness (noise removed) on top, the lowest at the bottom
        expected = by_rj if limit is None else by_rj[:5] + [labels[5]] + by_rj[-5:]
        assert labels == expected and (limit is None or labels[5].startswith("median of 19"))
        assert [t.get_text() for t in ax.get_xticklabels()] == [t.get_text() for t in errors_ax.get_xticklabels()]
        (image,) = [c for c in ax.collections if c.get_gid() == "residuals"]
        lo, hi = image.get_clim()
        assert lo == -hi and hi == pytest.approx(np.nanmax(np.abs(grid.to_numpy())))
        assert image.get_cmap().name.startswith("RdBu")
        np.testing.assert_allclose(np.ma.filled(image.get_array(), np.nan), grid.to_numpy(), equal_nan=True)
    # the summary row is the median residual of the models left out
    grid, cut = vs.residual_grid(result.decomposition, dataset.scores, table, limit=10)
    from jagged.views.overview import left_out

    hidden = left_out(table, limit=10, by="relative_jaggedness_corrected")
    assert set(hidden) == set(by_rj[5:-5])
    res = result.decomposition.residuals()
    median = res[res["model"].isin(hidden)].groupby("domain")["residual"].median()
    np.testing.assert_allclose(grid.iloc[cut].to_numpy(), median.reindex(grid.columns).to_numpy())


def test_scree_bars_and_scatter_draw_the_numbers(bundled):
    from jagged.plots import structure as ps

    dataset, table, result = bundled
    dims = result.dimensions.table()
    ax = ps.scree(dims)
    lines = {line.get_gid(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["eigenvalues"].get_ydata(), result.dimensions.eigenvalues)
    np.testing.assert_allclose(lines["threshold"].get_ydata(), result.dimensions.thresholds)
    ax = ps.variance_bars(result.shares)
    widths = {p.get_gid(): p.get_width() for p in ax.patches}
    assert widths["share-model"] == pytest.approx(result.share("model"))
    assert widths["share-residual"] == pytest.approx(result.share("residual"))
    ax = ps.relative_vs_cv(table)
    points = ax.collections[[c.get_gid() for c in ax.collections].index("models")].get_offsets()
    first = table.drop_duplicates("model")
    np.testing.assert_allclose(np.sort(points[:, 1]), np.sort(first["relative_jaggedness_corrected"].to_numpy()))
    top = set(first.nlargest(5, "relative_jaggedness_corrected")["model"]) | set(first.nlargest(5, "cv_error")["model"])
    assert {t.get_text() for t in ax.texts} == top                 # 29 models: the 5 highest on each axis


def test_residual_profile_marks_a_planted_departure():
    rng = np.random.default_rng(31)
    sim = simulate(rng, residual_sd=0.0)
    logit = -0.6 + sim["a"][:, None] + sim["b"][None, :]
    logit[4, 7] += 1.0                                             # m04 much weaker in d07
    logit[4, 2] -= 1.0                                             # and much stronger in d02
    errors = rng.binomial(sim["n"], expit(logit)) / sim["n"]
    dec = sdec.decompose(long_table(errors, sim["n"]))
    profile = vs.profile_table(residual_profile(dec, "m04"))
    assert list(profile.columns) == ["domain", "error", "expected_error", "residual", "residual_lo", "residual_hi",
                                     "z", "departs"] and len(profile) == 15
    assert profile.iloc[0]["domain"] == "d07" and profile.iloc[0]["departs"] == "weaker than expected"
    assert profile.iloc[-1]["domain"] == "d02" and profile.iloc[-1]["departs"] == "stronger than expected"
    assert (profile["departs"] != "").sum() == 2                    # nothing else beyond noise
    assert (profile["residual_lo"] < profile["residual"]).all() and (profile["residual"] < profile["residual_hi"]).all()
    text = vs.describe_profile(profile, "m04")
    assert "more errors than expected in d07" in text and "fewer in d02" in text and "2 of 15" in text
    even = vs.profile_table(residual_profile(dec, "m05"))
    assert (even["departs"] == "").all() and "none of its 15 domains" in vs.describe_profile(even, "m05")
    from jagged.plots import structure as ps

    ax = ps.residual_profile_plot(profile, model="m04")
    assert [t.get_text() for t in ax.get_yticklabels()] == profile["domain"].tolist()


def test_sentences_and_text_quote_the_numbers(bundled):
    dataset, table, result = bundled
    text = " ".join(vs.structure_sentences(result, {"relative_jaggedness_corrected": st.level_correlations(table)}))
    assert f"{result.share('model'):.0%} is the models' level" in text
    assert f"{result.share('domain'):.0%} the domains' difficulty" in text
    assert "keeps 1" in text and f"{result.dimensions.first_share:.0%} of the variance" in text
    top = result.models.sort_values("relative_jaggedness_corrected", ascending=False).iloc[0]
    assert f"{top['model']} ({top['relative_jaggedness_corrected']:.2f})" in text
    corr = st.level_correlations(table)
    assert f"{corr['cv_error']:+.2f} with the macro score" in text
    printed = vs.structure_text(result)
    assert f"{result.share('residual'):.1%}" in printed and "retained: 1 of 14" in printed
    shares = vs.share_table(result)
    assert not any(p.startswith("cross terms") for p in shares["part"])  # complete table: none, with counts too
    assert "cross terms" not in text
    rel = vs.relative_table(table)
    assert rel["relative_jaggedness_corrected"].is_monotonic_decreasing
    assert set(rel["relative_noise_flag"]) <= {"noise", ""}
    assert "Heatmap of model × domain residuals" in vs.residual_heatmap_alt(*vs.residual_grid(
        result.decomposition, dataset.scores, table))
    assert "1 lie above it" in vs.scree_alt(result.dimensions)


def test_glance_finding_from_a_hand_made_table():
    from jagged.analysis import Analysis
    from jagged.views import glance

    errors = np.array([[0.10, 0.20, 0.40], [0.20, 0.35, 0.55], [0.30, 0.45, 0.70], [0.15, 0.30, 0.20]])
    scores = long_table(errors, np.full(errors.shape, 400))
    analysis = Analysis(dataset=Dataset(scores=scores, source="hand.csv", paths=[], format="long"),
                        options=AnalysisOptions())
    found = glance.decomposition_finding(analysis)
    result = analysis.structure
    assert found.section == "decomposition" and found.statistic == "residual_beyond_noise"
    assert found.value == pytest.approx(result.share("residual_beyond_noise"))
    assert found.sentence.startswith(f"{result.share('residual_beyond_noise'):.0%} of the variance")
    assert "a moderate part" in found.sentence                       # 12 %: between SMALL_PART and LARGE_PART
    top = result.models.sort_values("relative_jaggedness_corrected", ascending=False).iloc[0]
    most = glance.jaggedness_findings(analysis)[0]                   # the glance names it once, level-adjusted
    assert top["model"] == "m03" and most.subject == "m03" and "m03" not in found.sentence
    one = long_table(errors[:1], np.full((1, 3), 400))
    solo = Analysis(dataset=Dataset(scores=one, source="one.csv", paths=[], format="long"), options=AnalysisOptions())
    assert not solo.sections["decomposition"] and glance.decomposition_finding(solo) is None


def test_an_analysis_decomposes_once_and_shares_it(monkeypatch):
    """Issue 22: the metrics table, the structure and the notebooks read one decomposition per Analysis."""
    import jagged.stats.decomposition
    import jagged.stats.structure
    from jagged.analysis import Analysis

    real = jagged.stats.decomposition.decompose
    calls: list[int] = []

    def counted(scores):
        calls.append(len(scores))
        return real(scores)

    monkeypatch.setattr(jagged.stats.decomposition, "decompose", counted)
    monkeypatch.setattr(jagged.stats.structure, "decompose", counted)
    errors = np.array([[0.10, 0.20, 0.40], [0.20, 0.35, 0.55], [0.30, 0.45, 0.70], [0.15, 0.30, 0.20]])
    scores = long_table(errors, np.full(errors.shape, 400))
    analysis = Analysis(dataset=Dataset(scores=scores, source="hand.csv", paths=[], format="long"),
                        options=AnalysisOptions(bootstrap=20))
    table, found, dec = analysis.table, analysis.structure, analysis.decomposition
    assert calls == [12]
    assert found.decomposition is dec
    # the same numbers as decomposing afresh for each of them
    fresh = real(scores)
    np.testing.assert_allclose(dec.residual, fresh.residual, equal_nan=True)
    alone = metrics_table(analysis.dataset, AnalysisOptions(bootstrap=20))
    pd.testing.assert_frame_equal(table, alone)
    assert calls == [12, 12]  # metrics_table without a decomposition computes its own
    standalone = st.structure(scores, decomposition=None)
    pd.testing.assert_frame_equal(standalone.models, found.models)
    pd.testing.assert_frame_equal(standalone.shares, found.shares)


# --------------------------------------------------------------------------- shares that add up (issue 18)

def _from_logits(logits: np.ndarray) -> np.ndarray:
    """Error rates whose continuity-corrected logit (n = 100 without n_items) is ``logits``."""
    return (101.0 * expit(logits) - 0.5) / 100.0


def test_complete_table_without_counts_hand_worked_3x3_shares_add_up_exactly():
    a = np.array([-1.0, 0.0, 1.0])                     # Var over the 9 cells: 2/3
    b = np.array([-0.5, 0.0, 0.5])                     # 1/6
    r = np.array([[0.2, -0.1, -0.1], [-0.1, 0.2, -0.1], [-0.1, -0.1, 0.2]])  # double-centred: 0.18 / 9 = 0.02
    dec = sdec.decompose(long_table(_from_logits(-0.3 + a[:, None] + b[None, :] + r), None))
    np.testing.assert_allclose(dec.model_effect, a, atol=1e-12)
    np.testing.assert_allclose(dec.domain_effect, b, atol=1e-12)
    np.testing.assert_allclose(dec.residual, r, atol=1e-12)
    shares = sdec.variance_shares(dec).set_index("component")["share"]
    total = 2 / 3 + 1 / 6 + 0.02
    assert shares["model"] == pytest.approx((2 / 3) / total, abs=1e-12)           # 0.78125
    assert shares["domain"] == pytest.approx((1 / 6) / total, abs=1e-12)          # 0.1953125
    assert shares["residual"] == pytest.approx(0.02 / total, abs=1e-12)           # 0.0234375
    assert abs(shares["model"] + shares["domain"] + shares["residual"] - 1.0) < 1e-12
    assert abs(shares["cross"]) < 1e-12 and sdec.cross_causes(dec) == []


def test_complete_table_without_counts_hand_worked_2x2():
    logits = np.array([[0.0, 1.0], [2.0, 5.0]])
    # by hand: row means 0.5, 3.5; column means 1, 3; grand mean 2; interaction (0 − 1 − 2 + 5)/4 = 0.5
    dec = sdec.decompose(long_table(_from_logits(logits), None))
    np.testing.assert_allclose(dec.model_effect, [-1.5, 1.5], atol=1e-12)
    np.testing.assert_allclose(dec.domain_effect, [-1.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(dec.residual, [[0.5, -0.5], [-0.5, 0.5]], atol=1e-12)
    var = sdec.variance_shares(dec).set_index("component")["variance"]
    total = np.var(logits)                                      # 3.5 = 2.25 + 1 + 0.25
    assert total == pytest.approx(3.5)
    assert (var["model"], var["domain"], var["residual"]) == pytest.approx((2.25, 1.0, 0.25), abs=1e-12)
    assert abs(var["cross"]) < 1e-12


def test_real_complete_tables_without_counts_have_no_cross_term(tmp_path):
    """The issue's case: a complete table without n_items reported 'cross terms 29 %'; now 0 to 1e-12."""
    for path in (TEST_DATA / "mmlu_hendrycks_readme_4categories.csv", BUNDLED):
        scores = jagged.load(path).scores.assign(n_items=np.nan)
        result = st.structure(scores, draws=20)
        shares = result.shares.set_index("component")["share"]
        assert abs(shares["domain"] + shares["model"] + shares["residual"] - 1.0) < 1e-12
        assert abs(shares["cross"]) < 1e-12
        assert not any(p.startswith("cross terms") for p in vs.share_table(result)["part"])
        assert vs.cross_sentence(result) == "" and "cross terms" not in vs.structure_text(result)


def test_unbalanced_table_shows_its_cross_term_with_the_explanation():
    rng = np.random.default_rng(8)
    sim = simulate(rng, models=6, domains=4, residual_sd=0.0)
    errors = sim["errors"].copy()
    errors[:3, 0] = np.nan                                     # three models lack domain 0 ...
    errors[0, :] = _from_logits(np.array([np.nan, 3.0, 3.0, 3.0]))   # ... one of them far weaker than the rest
    result = st.structure(long_table(errors, None), draws=20)
    assert sdec.cross_causes(result.decomposition) == ["unbalanced"]
    cross = result.share("cross")
    assert cross > 0.05                                        # 6.3 %: level and difficulty confounded
    assert "cross terms (unbalanced table)" in vs.share_table(result)["part"].tolist()
    sentence = vs.cross_sentence(result)
    assert f"{cross:+.1%}" in sentence and "some models have no score in some domains" in sentence
    assert sentence in vs.structure_sentences(result)
    total = sum(result.share(c) for c in ("domain", "model", "residual", "cross"))
    assert total == pytest.approx(1.0, abs=1e-12)


def _with_shares(result, **shares):
    """The same structure with some variance shares replaced (to phrase hand-picked values)."""
    import dataclasses

    table = result.shares.copy()
    for component, value in shares.items():
        table.loc[table["component"] == component, "share"] = value
    return dataclasses.replace(result, shares=table)


def test_wording_of_the_model_specific_part_follows_the_thresholds(bundled):
    _, _, result = bundled
    assert (vs.size_word(0.099), vs.size_word(0.10), vs.size_word(0.199), vs.size_word(0.20)) == \
        ("small", "moderate", "moderate", "large")
    no_noise = _with_shares(result, noise=np.nan, residual_beyond_noise=np.nan)
    large = vs._meaning_sentence(_with_shares(no_noise, residual=0.29))       # the 29 %
    assert "small" not in large and "large (29%, sampling noise included)" in large
    assert "moderate part, 15%" in vs._meaning_sentence(_with_shares(result, residual_beyond_noise=0.15))
    assert "only about 5%" in vs._meaning_sentence(_with_shares(result, residual_beyond_noise=0.05))
    assert "large (25% beyond sampling noise)" in vs._meaning_sentence(_with_shares(result, residual_beyond_noise=0.25))


def test_noise_is_compared_with_the_residual_it_belongs_to(bundled):
    _, _, result = bundled
    # the case: expected noise 13 % of the variance, the residual 11 %: not "inside" it
    over = _with_shares(result, residual=0.11, noise=0.13, residual_beyond_noise=0.0)
    text = vs._shares_sentence(over)
    assert "all of that residual (expected noise 13% of the variance, the residual 11%)" in text
    assert "of which" not in text
    under = vs._shares_sentence(_with_shares(result, residual=0.20, noise=0.05, residual_beyond_noise=0.15))
    assert "about 25% of that residual (5% of the variance), leaving 15% beyond noise" in under


def test_glance_does_not_say_zero_beyond_noise_and_name_a_model_without_saying_how_both_hold(bundled):
    _, _, result = bundled
    zero = _with_shares(result, residual=0.06, noise=0.07, residual_beyond_noise=0.0)
    from jagged.views.glance import structure_finding

    sentence, statistic, value = structure_finding(zero)
    assert statistic == "residual_beyond_noise" and value == 0.0
    clear = int((result.models["relative_noise_flag"] == False).sum())   # noqa: E712
    tested = int(result.models["relative_noise_flag"].notna().sum())
    assert "no larger than sampling noise would produce, so 0 % is model-specific beyond noise" in sentence
    assert f"Tested one by one, {clear} of {tested} models still show unevenness of their own" in sentence


# --------------------------------------------------------------------------- views by what exists (issue 18)

@pytest.fixture(scope="module")
def no_counts():
    from test_glance import livebench_like

    scores = jagged.validate_scores(livebench_like(), "livebench_like.csv", line_offset=None)
    dataset = Dataset(scores=scores, source="livebench_like.csv", paths=[], format="long")
    table = metrics_table(dataset, AnalysisOptions(bootstrap=0))
    return dataset, table, st.structure(scores, draws=20)


def test_without_counts_views_fall_back_to_the_raw_relative_jaggedness(no_counts):
    from jagged.plots import structure as ps

    dataset, table, result = no_counts
    assert table["relative_jaggedness_corrected"].isna().all()
    assert vs.relative_column(table) == "relative_jaggedness"
    rel = vs.relative_table(table)
    expected = table.sort_values("relative_jaggedness", ascending=False)["model"].tolist()
    assert rel["model"].tolist() == expected and expected[0] == "quirky"          # not alphabetical
    assert "relative_jaggedness_corrected" not in rel.columns                    # empty everywhere: left out
    assert (rel["relative_noise_flag"] == "not tested").all()
    assert "highest first (raw" in vs.relative_caption(table)
    # the models the text names are the table's first rows (the top/bottom cut keeps them)
    named = vs._relative_sentence(result, {"relative_jaggedness": st.level_correlations(table, "relative_jaggedness")})
    assert all(m in named for m in expected[:3])
    # the scatter is not empty: every model, raw values, said in the axis, title and alt text
    ax = ps.relative_vs_cv(table)
    (points,) = [c for c in ax.collections if c.get_gid() == "models"]
    np.testing.assert_allclose(points.get_offsets()[:, 1],
                               table.drop_duplicates("model")["relative_jaggedness"].to_numpy())
    assert "raw" in ax.get_ylabel() and "raw relative jaggedness" in ax.get_title(loc="left")
    alt = vs.relative_alt(table)
    assert f"({len(table)} models)" in alt and "raw: without item counts" in alt and "Highest relative " \
        "jaggedness: quirky." in alt
    # the residual heatmap keeps the most model-specific models, not the highest cv_error
    grid, cut = vs.residual_grid(result.decomposition, dataset.scores, table, limit=2)
    assert grid.index[0] == "quirky" and cut == 1 and grid.index[1].startswith("median of 4")
    assert table.set_index("model")["cv_error"].idxmax() not in grid.index[:1]
