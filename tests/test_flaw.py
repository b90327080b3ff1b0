"""The flawed-item posterior: hand-worked pieces, a simulation with known truth, and MMLU-Pro's revised keys.

Truth: tests/irt_simulation.py plants wrong keys and ability-unrelated items, clustered by
domain (prevalence per domain from a Beta); the 31 MMLU-Pro items whose key letter was
revised between file versions. The comparison is the classical suspicion score of
:mod:`jagged.stats.item_audit` on the same data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from irt_simulation import precision_at, simulate, simulate_benchmark
from item_simulation import recall_and_auc
from scipy.special import betaln

from jagged.stats import flaw
from jagged.stats import flaw_likelihood as fl
from jagged.stats import item_audit as ia
from jagged.stats.irt import fit_2pl

TEST_DATA = Path(__file__).resolve().parent / "data"
REVISED_OPTIONS = {2129, 2253, 2453, 3983, 5457, 5664, 5666, 6921, 8410, 8582, 8584}
SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def runs() -> list[tuple[pd.DataFrame, pd.DataFrame, flaw.FlawPosterior]]:
    out = []
    for seed in SEEDS:
        table, truth = simulate(n_models=300, n_items=1000, seed=seed)
        post = flaw.flaw_posterior(table, fit_2pl(table))
        out.append((table, truth, post))
    return out


def merged(run) -> pd.DataFrame:
    _, truth, post = run
    return post.items.merge(truth, on="item", suffixes=("", "_true")).set_index("item")


# --------------------------------------------------------------------------- hand-worked


def test_dirichlet_multinomial_sequence_probability_is_the_polya_urn():
    # counts (2, 1, 0) over 3 categories: P(a, a, b) = 1/3 · 2/4 · 1/5 = 1/30
    assert np.exp(fl.dirmult(np.array([2.0, 1.0, 0.0]), np.array(3.0))) == pytest.approx(1 / 30)
    # κ = 1/2: P(a, a, b) = (½/1.5) · (1.5/2.5) · (½/3.5) = 1/35
    assert np.exp(fl.dirmult(np.array([2.0, 1.0]), np.array(3.0), 0.5)) == pytest.approx(1 / 35)


def test_rest_dirichlet_multinomial_leaves_out_each_option():
    counts = np.array([[3.0, 1.0, 0.0, 1.0]])  # options A, B, C and "no answer or invalid"
    valid = np.array([[True, True, False]])
    got = fl.rest_dirmult(counts, valid, 1.0)
    # o = A: the other choices (B, invalid) over the 2 other categories: 1/2 · 1/3 = 1/6
    assert np.exp(got[0, 0]) == pytest.approx(np.exp(fl.dirmult(np.array([1.0, 1.0]), np.array(2.0))))
    assert np.exp(got[0, 0]) == pytest.approx(1 / 6)
    # o = B: A, A, A, invalid over 2 categories: 1/2 · 2/3 · 3/4 · 1/5 = 1/20
    assert np.exp(got[0, 1]) == pytest.approx(1 / 20)
    assert got[0, 2] == -np.inf


def test_correctness_only_unrelated_likelihood_is_the_beta_binomial_sequence():
    table = pd.DataFrame({"model": list("abcdefgh"), "domain": "d", "item": "i", "correct": [1, 0, 1, 1, 0, 0, 0, 1]})
    table = pd.concat([table, table.assign(item="j", correct=[1, 1, 1, 1, 0, 0, 0, 0])])
    post = flaw.flaw_posterior(table, use_choices=False).items.set_index("item")
    assert post.loc["i", "loglik_unrelated"] == pytest.approx(betaln(4 + 1, 4 + 1))  # ∫ρ⁴(1−ρ)⁴ dρ
    assert not flaw.flaw_posterior(table, use_choices=False).uses_choices


def test_likelihoods_on_the_grid_against_a_loop():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(7, 2))
    group = np.array([0, 1, 1])
    y = (rng.random((7, 3)) < 0.5).astype(float)
    w = np.ones_like(y)
    w[0, 1] = 0.0
    y *= w
    guess = np.array([0.25, 0.0, 0.1])
    a, c = np.array([0.5, 2.0]), np.array([-1.0, 1.0])
    got = fl.option_logliks(y[:, :, None].astype(np.float32), w.astype(np.float32), theta, guess, a, c,
                            item_group=group)[:, 0]
    rev = fl.option_logliks(y[:, :, None].astype(np.float32), w.astype(np.float32), theta, guess, a, c, sign=-1.0,
                            item_group=group)[:, 0]
    for j in range(3):
        for g in range(2):
            for sign, out in ((1, got), (-1, rev)):
                s = 1 / (1 + np.exp(-(sign * a[g] * theta[:, group[j]] + c[g])))
                p = guess[j] + (1 - guess[j]) * s
                want = np.sum(w[:, j] * np.where(y[:, j] > 0, np.log(p), np.log(1 - p)))
                assert out[j, g] == pytest.approx(want, rel=1e-5)


def test_option_mixture_is_the_grid_weighted_likelihood_of_each_option():
    """ln Σ_g G_g p(y | o, g) by a loop over items, options and grid points, with a zero weight and an item
    whose every option is impossible under some grid points (guess 0: a chooser of o at σ → 0)."""
    rng = np.random.default_rng(1)
    theta = rng.normal(size=(6, 2))
    group = np.array([0, 0, 1, 1])
    choice = rng.integers(0, 3, size=(6, 4))
    ind = (choice[:, :, None] == np.arange(3)).astype(np.float32)
    w = np.ones((6, 4), dtype=np.float32)
    w[2, 3] = 0.0
    ind[2, 3] = 0.0
    guess = np.array([0.0, 1 / 3, 0.25, 0.0])
    a, c = np.array([0.5, 2.0, 4.0]), np.array([-2.0, 0.0, 3.0])
    weights = np.array([0.5, 0.0, 0.5])
    got = fl.option_mixture(ind, w, theta, guess, a, c, weights, item_group=group)
    assert got.shape == (4, 3)
    for j in range(4):
        for o in range(3):
            terms = []
            for g in range(3):
                s = 1 / (1 + np.exp(-(a[g] * theta[:, group[j]] + c[g])))
                q = guess[j] + (1 - guess[j]) * s
                terms.append(weights[g] * np.exp(np.sum(w[:, j] * np.where(ind[:, j, o] > 0, np.log(q),
                                                                                np.log(1 - q)))))
            assert got[j, o] == pytest.approx(np.log(sum(terms)), rel=1e-4)


def one_line_rule(table: pd.DataFrame) -> pd.Series:
    """Issue 19's baseline: 1 − p_correct, ties broken by how many models agree on one wrong option."""
    p = table.groupby("item")["correct"].mean()
    agree = table[table["correct"] < 1].groupby(["item", "choice"]).size().groupby("item").max()
    n = table.groupby("item").size()
    return (1 - p) + agree.reindex(p.index, fill_value=0) / (n + 1) ** 2


def test_one_line_rule_by_hand():
    table = pd.DataFrame({"model": list("abcd") * 3, "item": np.repeat(["x", "y", "z"], 4),
                          "correct": [0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0],
                          "choice": list("BBAA" "BCAA" "AAAB")})
    score = one_line_rule(table)
    # x and y: p = 1/2; x's two wrong models agree on B, y's do not; z: p = 3/4
    assert list(score.sort_values(ascending=False).index) == ["x", "y", "z"]
    assert score["x"] == pytest.approx(0.5 + 2 / 25) and score["z"] == pytest.approx(0.25 + 1 / 25)


# --------------------------------------------------------------------------- simulation


def test_planted_flaws_found_with_few_false_alarms(runs):
    for run in runs:
        it = merged(run)
        miskey = it["kind"] == "miskey"
        assert (it.loc[miskey, "posterior"] > 0.5).mean() >= 0.95
        assert (it.loc[~it["flawed"], "posterior"] > 0.5).mean() <= 0.02
        # the likely answer of a found wrong key is not the key
        found = it[miskey & (it["posterior"] > 0.5)]
        assert (found["likely_key"] != found["key"]).mean() >= 0.95


def test_posterior_is_calibrated_across_seeds(runs):
    it = pd.concat([merged(run) for run in runs])
    # of the items given a posterior in [0.5, 0.97), about that share are planted
    mid = it[(it["posterior"] >= 0.5) & (it["posterior"] < 0.97)]
    assert len(mid) >= 20
    se = np.sqrt(mid["posterior"].mean() * (1 - mid["posterior"].mean()) / len(mid))
    assert abs(mid["flawed"].mean() - mid["posterior"].mean()) < max(2.5 * se, 0.1), (len(mid), mid["flawed"].mean(),
                                                                                     mid["posterior"].mean())
    # and overall: the expected number of flawed items is the planted number, within its interval
    for run in runs:
        _, truth, post = run
        total = post.domains["expected_flawed"].sum()
        sd = np.sqrt((post.domains["sd"] ** 2).sum())
        assert abs(total - truth["flawed"].sum()) < 3 * sd + 3


def test_prevalence_follows_the_domains_and_intervals_cover_the_counts(runs):
    covered, pairs = 0, []
    for run in runs:
        _, truth, post = run
        true = truth.groupby("domain").agg(n=("flawed", "sum"), prev=("prevalence", "first"))
        dom = post.domains.set_index("domain").join(true)
        covered += ((dom["n"] >= np.floor(dom["lower"])) & (dom["n"] <= np.ceil(dom["upper"]))).sum()
        pairs.append(dom[["prevalence", "prev"]])
    pairs = pd.concat(pairs)
    assert covered >= 0.8 * len(pairs)
    assert np.corrcoef(pairs["prevalence"], pairs["prev"])[0, 1] > 0.8


def test_ranking_beats_the_classical_suspicion_in_simulation(runs):
    for table, truth, post in runs:
        planted = truth.loc[truth["flawed"], "item"].to_numpy(dtype=object)
        ours = post.items.set_index("item")["posterior"]
        classical = ia.item_audit(table).set_index("item")["suspicion"]
        k = len(planted)
        _, auc_ours = recall_and_auc(ours, planted)
        _, auc_classical = recall_and_auc(classical, planted)
        assert auc_ours > auc_classical
        assert precision_at(ours, set(planted), k) >= precision_at(classical, set(planted), k)


def test_correctness_only_finds_sign_flipped_items():
    table, truth = simulate(n_models=300, n_items=600, n_domains=3, kinds={"flip": 1.0}, prevalence=(2, 30),
                            seed=7, choices=False)
    it = flaw.flaw_posterior(table).items.merge(truth, on="item")
    assert it["flawed"].sum() >= 10
    assert (it.loc[it["flawed"], "posterior"] > 0.5).mean() >= 0.95
    assert (it.loc[~it["flawed"], "posterior"] > 0.5).mean() <= 0.02


# --------------------------------------------------------------------------- few models (issue 19's annotated sets)

#: The two held-out annotated sets of issue 19: models, items, domains (100 items each), share flawed.
FEW_MODELS = {"10 models": (10, 3000, 30, 0.09), "14 models": (14, 5700, 57, 0.065)}
FEW_SEEDS = (11, 12, 13)


@pytest.fixture(scope="module")
def few_model_runs() -> dict:
    out = {}
    for name, (n_models, n_items, n_domains, share) in FEW_MODELS.items():
        for with_n_options in (True, False):
            for seed in FEW_SEEDS:
                table, truth = simulate_benchmark(n_models=n_models, n_items=n_items, n_domains=n_domains,
                                                  flawed_share=share, with_n_options=with_n_options, seed=seed)
                out[name, with_n_options, seed] = table, truth, flaw.flaw_posterior(table)
    return out


@pytest.mark.parametrize("with_n_options", [True, False], ids=["n_options", "no n_options"])
@pytest.mark.parametrize("name", list(FEW_MODELS))
def test_top_100_beats_the_one_line_rule_with_few_models(few_model_runs, name, with_n_options):
    for seed in FEW_SEEDS:
        table, truth, post = few_model_runs[name, with_n_options, seed]
        assert post.uses_choices
        planted = set(truth.loc[truth["flawed"], "item"])
        ours = post.items.set_index("item")["posterior"]
        rule = one_line_rule(table)
        assert precision_at(ours, planted, 100) > precision_at(rule, planted, 100), seed
        _, auc = recall_and_auc(ours, np.asarray(sorted(planted), dtype=object))
        assert auc >= 0.75, seed


def test_the_clustered_domain_gets_the_highest_prevalence(few_model_runs):
    for (name, with_n_options, seed), (_, truth, post) in few_model_runs.items():
        dom = post.domains.set_index("domain")
        hot = truth.groupby("domain")["flawed"].mean().idxmax()  # subject-00, 57 % flawed
        assert dom["prevalence"].idxmax() == hot, (name, with_n_options, seed)
        n_hot = truth.loc[truth["domain"] == hot, "flawed"].sum()
        # the planted count of that domain against the expected number (wide: silent flaws do not show)
        assert dom.loc[hot, "expected_flawed"] > 0.5 * n_hot


def test_the_ranking_is_by_the_posterior_log_odds(few_model_runs):
    _, _, post = few_model_runs["10 models", True, FEW_SEEDS[0]]
    it = post.items
    assert it["flaw_rank"].tolist() == list(range(1, len(it) + 1))
    assert it["log_odds"].is_monotonic_decreasing
    assert np.allclose(it["posterior"], 1 / (1 + np.exp(-it["log_odds"])))
    assert np.allclose(it["log_odds"], np.log(it["prior"] / (1 - it["prior"])) + it["log_bayes_factor"])


# --------------------------------------------------------------------------- MMLU-Pro


@pytest.fixture(scope="module")
def mmlu():
    from jagged.readers import items as items_module

    table = items_module.load_bundled_items().items
    fit = fit_2pl(table)
    items = pd.read_csv(TEST_DATA / "mmlu_pro_items.csv.gz")
    revised = {str(i) for i in set(items.loc[items["answer_key_differs_across_files"] == 1, "item_id"])
               - REVISED_OPTIONS}
    return table, fit, flaw.flaw_posterior(table, fit), revised


def test_revised_keys_rank_high_on_mmlu_pro(mmlu):
    _, _, post, revised = mmlu
    assert len(revised) == 31
    score = post.items.set_index("item")["posterior"]
    _, auc = recall_and_auc(score, np.asarray(sorted(revised), dtype=object))
    assert auc > 0.90
    ranks = post.items.set_index("item").loc[sorted(revised), "flaw_rank"]
    assert ranks.median() < 0.05 * len(score)


@pytest.mark.xfail(strict=True, reason="measured: posterior AUC 0.917 vs classical 0.927 (paired bootstrap of the "
                                       "difference -0.009 [-0.020, 0.000]); precision@31 3 vs 4 of 31. Within math "
                                       "(23 of the 31) 0.921 vs 0.923, outside math 0.983 vs 0.981: the gap is "
                                       "between domains (law's prevalence 0.32, math's 0.115). 64 items have >= 27 "
                                       "of 29 models on one non-key option (7 revised); their Bayes factors are "
                                       "near-equal. Tried, none beats both (benchmarks/bench_flaw.py --part mmlu "
                                       "shows the split): per-model guess floor, abilities from answered rows or "
                                       "from smoothed score logits, per-domain G, slope floors, single slopes, "
                                       "guess grids, Dirichlet concentration, fixed wrong-key share, one "
                                       "prevalence for all domains (0.924, and the annotated-set simulation falls "
                                       "from 0.90 to 0.86 AUC) (issue 19 acceptance not met on MMLU-Pro)")
def test_posterior_beats_the_classical_ranking_on_mmlu_pro(mmlu):
    table, _, post, revised = mmlu
    positives = np.asarray(sorted(revised), dtype=object)
    ours = post.items.set_index("item")["posterior"]
    classical = ia.item_audit(table).set_index("item")["suspicion"]
    assert recall_and_auc(ours, positives)[1] > recall_and_auc(classical, positives)[1]
    assert precision_at(ours, revised, 31) > precision_at(classical, revised, 31)
