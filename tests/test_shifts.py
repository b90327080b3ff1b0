"""The two-way view of a change (jagged.stats.shifts): the benchmark's part and the models' part."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from compare_pairs import grader_bug_pair, scores_dataset
from statsmodels.stats.anova import anova_lm

from jagged.stats.compare import METHOD_BINOMIAL, METHOD_ITEMS, compare
from jagged.stats.shifts import additive_parts, change_shares, fit_cells

# --------------------------------------------------------------------------- the fit, by hand and by statsmodels


def test_hand_worked_two_by_two():
    # Δ = [[0.1, 0.3], [0.2, 0.6]] (models × domains): μ = 0.3; domain means 0.15, 0.45; model means 0.2, 0.4;
    # residuals ±0.05. Sums of squares: total 0.50 = overall 4·0.09 + domains 2·2·0.15² + models 2·2·0.1²
    # + residual 4·0.05² = 0.36 + 0.09 + 0.04 + 0.01.
    delta = np.array([[0.1, 0.3], [0.2, 0.6]])
    keep = np.ones((2, 2), dtype=bool)
    mu, shift, effect, fitted = additive_parts(delta, keep)
    assert mu == pytest.approx(0.3)
    np.testing.assert_allclose(shift, [0.15, 0.45])
    np.testing.assert_allclose(effect, [-0.1, 0.1])
    np.testing.assert_allclose(delta - fitted, [[0.05, -0.05], [-0.05, 0.05]], atol=1e-12)
    shares = change_shares(delta, keep)
    assert shares["benchmark"] == pytest.approx(0.9) and shares["models"] == pytest.approx(0.1)
    assert [shares[k] for k in ("overall", "domains", "model_effects", "residual")] == pytest.approx(
        [0.72, 0.18, 0.08, 0.02])
    assert shares["sum_of_squares"] == pytest.approx(0.5) and shares["complete"]


def _long(delta, present):
    rows, cols = np.nonzero(present)
    return pd.DataFrame({"y": delta[rows, cols], "m": [f"m{r}" for r in rows], "d": [f"d{c}" for c in cols]})


def test_incomplete_table_matches_statsmodels_ols_with_sum_coded_dummies():
    rng = np.random.default_rng(5)
    delta = rng.normal(size=(6, 5))
    present = np.ones((6, 5), dtype=bool)
    present[0, 1] = present[2, 3] = present[4, 0] = present[5, 4] = False
    mu, shift, effect, fitted = additive_parts(np.where(present, delta, np.nan), fit_cells(present))
    fit = smf.ols("y ~ C(m, Sum) + C(d, Sum)", _long(delta, present)).fit()
    rows, cols = np.nonzero(present)
    np.testing.assert_allclose(fitted[rows, cols], fit.fittedvalues, atol=1e-12)
    assert mu == pytest.approx(fit.params["Intercept"])
    domain = [fit.params[f"C(d, Sum)[S.d{k}]"] for k in range(4)]
    model = [fit.params[f"C(m, Sum)[S.m{k}]"] for k in range(5)]
    np.testing.assert_allclose(shift - mu, domain + [-sum(domain)], atol=1e-12)
    np.testing.assert_allclose(effect, model + [-sum(model)], atol=1e-12)
    shares = change_shares(np.where(present, delta, np.nan), present)
    assert not shares["complete"] and shares["benchmark"] + shares["models"] == pytest.approx(1.0)


def test_complete_table_shares_are_the_two_way_anova():
    rng = np.random.default_rng(2)
    delta = rng.normal(0.1, 1.0, size=(7, 4)) + np.linspace(-1, 1, 4)[None, :]
    frame = _long(delta, np.ones_like(delta, dtype=bool))
    table = anova_lm(smf.ols("y ~ C(d) + C(m)", frame).fit(), typ=1)
    total = float((delta ** 2).sum())
    shares = change_shares(delta, np.ones_like(delta, dtype=bool))
    assert shares["overall"] == pytest.approx(delta.size * delta.mean() ** 2 / total)
    assert shares["domains"] == pytest.approx(table.loc["C(d)", "sum_sq"] / total)
    assert shares["model_effects"] == pytest.approx(table.loc["C(m)", "sum_sq"] / total)
    assert shares["residual"] == pytest.approx(table.loc["Residual", "sum_sq"] / total)
    # a batch of tables is fitted at once, each as on its own
    mu, shift, effect, _ = additive_parts(np.stack([delta, 2 * delta, np.full_like(delta, np.nan)]),
                                          np.ones_like(delta, dtype=bool))
    np.testing.assert_allclose(shift[1], 2 * delta.mean(axis=0))
    np.testing.assert_allclose(effect[0], delta.mean(axis=1) - delta.mean())
    assert np.isnan(mu[2]) and np.isnan(shift[2]).all()  # a replicate that lost a cell


def test_fit_cells_keeps_the_largest_connected_group_and_needs_two_models():
    present = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1]], dtype=bool)
    keep = fit_cells(present)
    assert keep[:3].tolist() == present[:3].tolist() and not keep[3].any()
    assert not fit_cells(np.ones((1, 4), dtype=bool)).any()  # one model: nothing tells it from the benchmark
    shares = change_shares(np.ones((1, 4)), fit_cells(np.ones((1, 4), dtype=bool)))
    assert np.isnan(shares["benchmark"]) and shares["sum_of_squares"] == 4.0


# --------------------------------------------------------------------------- simulations with known parts

MODELS, DOMAINS = [f"m{k:02d}" for k in range(30)], [f"d{k}" for k in range(10)]


def _simulate(true_delta, n_items, seed):
    """Two releases scored from Binomial(n, s) with s_B = s_A + true_delta (models × domains)."""
    rng = np.random.default_rng(seed)
    m, d = true_delta.shape
    s_a = 0.6 + rng.uniform(-0.12, 0.12, size=(m, 1)) + rng.uniform(-0.12, 0.12, size=(1, d))
    sides = []
    for name, s in (("a", s_a), ("b", s_a + true_delta)):
        k = rng.binomial(n_items, s)
        rows = [(MODELS[i], DOMAINS[j], k[i, j] / n_items, n_items) for i in range(m) for j in range(d)]
        sides.append(scores_dataset(rows, name))
    return compare(*sides, n_boot=400, seed=seed)


def test_a_pure_benchmark_shift_is_the_benchmark_and_moves_no_model_beyond_the_field():
    true = np.zeros((30, 10))
    true[:, :3] = -0.3  # three tasks dropped for every model
    flagged, covered = 0, 0
    for seed in range(3):
        c = _simulate(true, 400, seed)
        models = c.models.set_index("model")
        assert models["macro_score_delta_hi"].lt(0).all()  # raw: every model "went down beyond noise"
        shares = c.shares
        assert shares["benchmark"] > 0.9 and shares["models"] == pytest.approx(shares["noise"], abs=0.02)
        domains = c.domains.set_index("domain")
        assert domains["beyond_noise"].iloc[:3].all() and (domains["interval_method"] == METHOD_BINOMIAL).all()
        np.testing.assert_allclose(domains["shift"].iloc[:3], -0.3, atol=0.02)
        flagged += int(models["vs_field_beyond_noise"].sum())
        covered += int(((models["macro_delta_vs_field_lo"] <= 0) & (models["macro_delta_vs_field_hi"] >= 0)).sum())
    # relative to the field no model moved: flags only at the 5 % chance rate (3 × 30 intervals)
    assert flagged <= 10 and covered >= 80


def test_a_pure_model_change_is_the_models_and_no_domain_moves_for_everyone():
    effect = np.repeat([0.08, -0.08, 0.0], 10)  # ten models up, ten down, ten unchanged; no domain shift
    c = _simulate(np.repeat(effect[:, None], 10, axis=1), 400, seed=7)
    assert c.shares["models"] > 0.95 and c.shares["benchmark"] < 0.05
    models = c.models.set_index("model")
    beyond = models["vs_field_beyond_noise"].to_numpy()
    assert beyond[:20].all() and beyond[20:].sum() <= 2
    np.testing.assert_allclose(models["macro_delta_vs_field"], effect, atol=0.03)
    assert c.domains["beyond_noise"].sum() <= 1 and np.abs(c.domains["shift"]).max() < 0.03


def test_a_mixture_recovers_its_parts():
    rng = np.random.default_rng(11)
    mu, shift = -0.05, np.array([-0.2, -0.1, 0, 0, 0, 0, 0, 0, 0.1, 0.2])
    effect = np.repeat([0.05, -0.05, 0.0], 10)
    true = mu + shift[None, :] + effect[:, None] + rng.normal(0, 0.02, size=(30, 10))
    c = _simulate(true, 2000, seed=3)
    truth = change_shares(true, np.ones_like(true, dtype=bool))
    for part in ("benchmark", "overall", "domains", "model_effects"):
        assert c.shares[part] == pytest.approx(truth[part], abs=0.03), part
    assert c.shares["overall_shift"] == pytest.approx(true.mean(), abs=0.01)
    np.testing.assert_allclose(c.domains["shift"], true.mean(axis=0), atol=0.01)
    np.testing.assert_allclose(c.models["macro_delta_vs_field"], true.mean(axis=1) - true.mean(), atol=0.01)
    assert c.domains["beyond_noise"].all()  # every domain's shift, μ + δ_d, is at least 0.05 away from 0


def test_paired_items_see_a_change_every_model_shares_without_noise():
    """A grader bug marks 15 of 40 easy law items wrong for every model in B: a pure benchmark change."""
    c = compare(*grader_bug_pair(), n_boot=300, seed=1)
    assert c.models["macro_score_delta_hi"].lt(0).all()  # raw: every model went down beyond noise
    assert c.shares["benchmark"] == pytest.approx(1.0) and c.shares["noise"] == pytest.approx(0.0)
    domains = c.domains.set_index("domain")
    assert domains.loc["law", "shift"] == pytest.approx(-15 / 40) and domains.loc["law", "beyond_noise"]
    assert domains.loc["law", "interval_method"] == METHOD_ITEMS
    assert not domains.loc[["math", "bio"], "beyond_noise"].any()
    # every replicate draws the same law items for all models: no model moves relative to the field
    assert np.allclose(c.models[["macro_delta_vs_field", "macro_delta_vs_field_lo", "macro_delta_vs_field_hi"]], 0)
    assert not c.models["vs_field_beyond_noise"].any()
