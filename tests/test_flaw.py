"""The flaw model (issue 31): hand-worked pieces, simulations with known truth, MMLU-Pro's revised keys.

Truth: tests/irt_simulation.py ``simulate_benchmark`` (the class of the held-out annotated
sets: few models of widely varying strength, hard sound domains, flaws of several kinds
clustered by domain, some invisible in responses, optionally a model that memorised the
keys) and ``simulate`` (sign-flipped items without choices); the 31 MMLU-Pro items whose key
letter was revised between file versions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from irt_simulation import precision_at, simulate, simulate_benchmark
from item_simulation import recall_and_auc
from scipy import integrate, stats
from scipy.special import expit

from jagged.errors import JaggedInputError
from jagged.stats import flaw
from jagged.stats import flaw as fl
from jagged.stats.fdr import q_values
from jagged.stats.irt import fit_2pl

TEST_DATA = Path(__file__).resolve().parent / "data"
REVISED_OPTIONS = {2129, 2253, 2453, 3983, 5457, 5664, 5666, 6921, 8410, 8582, 8584}
#: The classical suspicion score's within-domain AUC on MMLU-Pro's revised keys (measured at 589efc6, before it
#: was retired for the flaw model: pairs of a revised and an unrevised item of the same domain).
CLASSICAL_WITHIN_DOMAIN_AUC = 0.9332
#: Simulated annotated benchmarks: (models, domains, overall flawed share, seed); 10 and 14 models like the held-out
#: sets, 120 for many models.
RUNS = ((10, 30, 0.09, 0), (10, 30, 0.09, 1), (10, 30, 0.09, 2), (14, 57, 0.065, 0), (14, 57, 0.065, 1),
        (120, 30, 0.09, 0))


# --------------------------------------------------------------------------- hand-worked


def test_rest_dirichlet_multinomial_is_the_polya_urn_of_the_other_options():
    counts = np.array([[3.0, 1.0, 0.0]])  # options A, B, C chosen 3, 1, 0 times
    valid = np.array([[True, True, True]])
    got = fl.rest_dirmult(counts, valid, 1.0)
    # o = A: the one choice of B over the 2 other options: 1/2
    assert np.exp(got[0, 0]) == pytest.approx(1 / 2)
    # o = C: A, A, A, B over A and B with κ = 1: 1/2 · 2/3 · 3/4 · 1/5 = 1/20
    assert np.exp(got[0, 2]) == pytest.approx(1 / 20)
    # κ = 1/2, o = B: A, A, A over A and C: (½/1) (1.5/2) (2.5/3) = 5/16
    assert np.exp(fl.rest_dirmult(counts, valid, 0.5)[0, 1]) == pytest.approx(5 / 16)
    assert fl.rest_dirmult(counts, np.array([[True, True, False]]), 1.0)[0, 2] == -np.inf


def test_grid_likelihoods_against_a_loop():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(7, 2))
    group = np.array([0, 1, 1])
    x = (rng.random((7, 3)) < 0.5).astype(np.float32)
    w = np.ones_like(x)
    w[0, 1] = x[0, 1] = 0.0
    floor = np.array([0.25, 0.0, 0.1])
    grid = fl.Grid(np.array([0.5, 2.0, 1.0]), np.array([-1.0, 1.0, 0.0]), np.array([1.0, 1.0, 0.0]))
    for sign in (1.0, -1.0):
        got = fl.grid_loglik(x[:, :, None], w, fl.GridTerms(theta, group, floor, grid, sign))[:, 0]
        for j in range(3):
            for g in range(3):
                q = floor[j] * grid.s[g] + (1 - floor[j] * grid.s[g]) * expit(
                    sign * grid.a[g] * theta[:, group[j]] + grid.c[g])
                want = np.sum(w[:, j] * np.where(x[:, j] > 0, np.log(q), np.log(1 - q)))
                assert got[j, g] == pytest.approx(want, rel=1e-5)


def test_mixed_likelihood_is_the_weighted_sum_over_the_grid_per_item():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=(6, 1))
    choice = rng.integers(0, 3, size=(6, 4))
    ind = (choice[:, :, None] == np.arange(3)).astype(np.float32)
    w = np.ones((6, 4), dtype=np.float32)
    grid = fl.Grid(np.array([0.5, 2.0, 4.0]), np.array([-2.0, 0.0, 3.0]), np.zeros(3))
    weights = rng.dirichlet(np.ones(3), size=4)
    weights[0] = [0.5, 0.0, 0.5]
    terms = fl.GridTerms(theta, np.zeros(4, dtype=int), np.zeros(4), grid)
    got = fl.mixed_loglik(ind, w, terms, weights)
    full = fl.grid_loglik(ind, w, terms).astype(float)
    for j in range(4):
        for o in range(3):
            assert got[j, o] == pytest.approx(np.log(np.sum(weights[j] * np.exp(full[j, o]))), rel=1e-4)


def test_q_values_are_scipys_with_nan_untested_and_out_of_range_refused():
    from statsmodels.stats.multitest import multipletests

    # hand-worked: p sorted 0.01, 0.03, 0.04, 0.20 (m = 4): 0.04, 0.04 (min of 0.06, 0.053), 0.0533, 0.20
    q = q_values(np.array([0.01, 0.04, 0.03, 0.20, np.nan]))
    assert q[:4] == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.20])
    assert np.isnan(q[4])
    p = np.random.default_rng(2).uniform(size=300) ** 3
    assert q_values(p) == pytest.approx(stats.false_discovery_control(p))
    assert q_values(p) == pytest.approx(multipletests(p, method="fdr_bh")[1])
    assert np.isnan(q_values(np.array([np.nan]))).all()
    for bad in (np.inf, -0.1, 1.5):
        with pytest.raises(JaggedInputError, match="not in"):
            q_values(np.array([0.2, bad]))


def test_item_posterior_integrates_the_prevalence_like_quadrature():
    """P(miskeyed_j | y) = ∫ σ(logit π + ln BF_j) p(π | y_d) dπ, with logit π ~ N(m, s²), by scipy quad."""
    lbf = np.array([3.0, -2.0, 0.5, -4.0, 6.0])
    mean, sd = -2.5, 1.2

    def prior(p: float) -> float:
        return stats.norm.pdf(np.log(p / (1 - p)), mean, sd) / (p * (1 - p))

    def like(p: float) -> float:
        return float(np.prod(p * np.exp(lbf) + 1 - p))

    z = integrate.quad(lambda p: prior(p) * like(p), 0, 1, points=[0.01, 0.1, 0.5], limit=200)[0]
    want = [integrate.quad(lambda p, b=b: prior(p) * like(p) * expit(np.log(p / (1 - p)) + b), 0, 1,
                           points=[0.01, 0.1, 0.5], limit=200)[0] / z for b in lbf]
    w = np.exp(flaw._prior_weights(mean, sd))
    q = np.log(flaw.PREVALENCE[None, :] * np.exp(lbf[:, None]) + 1 - flaw.PREVALENCE[None, :]).sum(axis=0)
    post = w * np.exp(q - q.max())
    post /= post.sum()
    got = (post[None, :] * expit(np.log(flaw.PREVALENCE / (1 - flaw.PREVALENCE))[None, :] + lbf[:, None])).sum(1)
    assert got == pytest.approx(want, abs=0.01)


def test_count_interval_is_the_mixture_quantile():
    # one normal: the integer quantiles with a continuity correction
    lo, hi = flaw._mixture_interval(np.array([[10.0]]), np.array([[4.0]]), np.array([[1.0]]), np.array([100]), 0.05)
    assert (lo[0], hi[0]) == (7, 13)  # P(X <= 6) = Φ(−1.75) < 0.05 <= P(X <= 7); P(X <= 12) < 0.95 <= P(X <= 13)
    # a mixture against Monte Carlo draws
    rng = np.random.default_rng(3)
    mean, var, w = np.array([[5.0, 30.0]]), np.array([[4.0, 25.0]]), np.array([[0.7, 0.3]])
    draws = np.where(rng.random(200_000) < 0.7, rng.normal(5, 2, 200_000), rng.normal(30, 5, 200_000))
    lo, hi = flaw._mixture_interval(mean, var, w, np.array([60]), 0.05)
    counts = np.round(draws)
    # the discrete quantiles: P(X <= lo − 1) < 0.05 <= P(X <= lo), and the same at 0.95 for hi
    assert np.mean(counts <= lo[0] - 1) < 0.05 + 0.002 and np.mean(counts <= lo[0]) >= 0.05 - 0.002
    assert np.mean(counts <= hi[0] - 1) < 0.95 + 0.002 and np.mean(counts <= hi[0]) >= 0.95 - 0.002
    # a one-item domain: 0 or 1
    assert flaw._mixture_interval(np.array([[0.01]]), np.array([[0.0099]]), np.array([[1.0]]), np.array([1]),
                                  0.05)[1][0] == 0


def test_a_unanimous_other_option_is_likely_miskeyed_and_its_answer_named():
    """Eight strong-to-weak models; on q1 every model chooses C against the key A, the others follow the ability."""
    rng = np.random.default_rng(4)
    models = [f"m{k}" for k in range(8)]
    rows = []
    for j in range(60):
        for k, m in enumerate(models):
            knows = rng.random() < expit(3.0 - 2.5 * k / 7 + 0.1 * (j % 7))
            rows.append((m, "d", f"q{j:02d}", "A" if knows else "BCD"[rng.integers(3)], "A"))
    table = pd.DataFrame(rows, columns=["model", "domain", "item", "choice", "key"])
    table.loc[table["item"] == "q01", "choice"] = "C"
    table["correct"] = (table["choice"] == table["key"]).astype(float)
    post = flaw.flaw_posterior(table).items.set_index("item")
    assert post.loc["q01", "flaw_rank"] == 1 and post.loc["q01", "posterior"] > 0.5
    assert post.loc["q01", "likely_key"] == "C" and post.loc["q01", "key"] == "A"
    assert post["posterior_lower"].le(post["posterior"]).all() and post["posterior"].le(post["posterior_upper"]).all()


def test_correctness_only_finds_sign_flipped_items():
    table, truth = simulate(n_models=300, n_items=600, n_domains=3, kinds={"flip": 1.0}, prevalence=(2, 30),
                            seed=7, choices=False)
    fp = flaw.flaw_posterior(table)
    it = fp.items.merge(truth, on="item")
    assert not fp.uses_choices and it["flawed"].sum() >= 10
    assert (it.loc[it["flawed"], "p_visible"] > 0.5).mean() >= 0.95
    assert (it.loc[~it["flawed"], "p_visible"] > 0.5).mean() <= 0.02


# --------------------------------------------------------------------------- the annotated-benchmark class


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


@pytest.fixture(scope="module")
def runs() -> dict:
    out = {}
    for n_models, n_domains, share, seed in RUNS:
        table, truth = simulate_benchmark(n_models=n_models, n_domains=n_domains, flawed_share=share, seed=seed)
        out[n_models, seed] = table, truth, flaw.flaw_posterior(table, fit_2pl(table))
    return out


def domain_truth(truth: pd.DataFrame, post: flaw.FlawPosterior) -> pd.DataFrame:
    planted = truth.groupby("domain").agg(flawed=("flawed", "sum"), planted_visible=("visible", "sum"),
                                          wrong_key=("kind", lambda k: int((k == "wrong_key").sum())))
    return post.domains.set_index("domain").join(planted)


def test_hard_sound_domains_are_not_read_as_flawed_and_key_errors_at_the_same_accuracy_are_found(runs):
    found, planted = 0.0, 0
    for (n_models, seed), (_, truth, post) in runs.items():
        dom = domain_truth(truth, post)
        hard, hot = dom[dom.index.str.startswith("hard")], dom.loc[dom.index.str.startswith("hot")].iloc[0]
        assert (hard["accuracy"] - hot["accuracy"]).abs().max() < 0.15, (n_models, seed)  # the same accuracy
        share = hard["visible"] / hard["n_items"]
        assert share.mean() < 0.03 and share.max() < 0.05, (n_models, seed)  # near 0 % miskeyed
        assert hot["visible"] > hard["visible"].max(), (n_models, seed)
        found, planted = found + hot["visible"], planted + hot["wrong_key"]
    assert found >= 0.7 * planted, (found, planted)  # over the six benchmarks (10 models: some keys hide)


def test_intervals_hold_the_planted_counts_about_nine_times_in_ten(runs):
    covered = []
    for (n_models, seed), (_, truth, post) in runs.items():
        dom = domain_truth(truth, post)
        covered.append((dom["lower"] <= dom["flawed"]) & (dom["flawed"] <= dom["upper"]))
        total = post.total
        assert total["lower"] <= truth["flawed"].sum() <= total["upper"] + 5, (n_models, seed, total)
        assert 0.5 <= total["expected_flawed"] / truth["flawed"].sum() <= 1.5, (n_models, seed, total)
    share = pd.concat(covered).mean()
    assert 0.8 <= share <= 0.99, share  # 90 % intervals over about 260 domains of six benchmarks


@pytest.mark.parametrize("n_models", [10, 14])
def test_top_100_beats_the_one_line_rule_with_few_models(runs, n_models):
    for (m, seed), (table, truth, post) in runs.items():
        if m != n_models:
            continue
        planted = set(truth.loc[truth["flawed"], "item"])
        ours = post.items.set_index("item")["posterior"]
        assert precision_at(ours, planted, 100) > precision_at(one_line_rule(table), planted, 100), seed
        assert recall_and_auc(ours, np.asarray(sorted(planted), dtype=object))[1] >= 0.8, seed


def test_the_ranking_is_by_the_posterior(runs):
    post = runs[10, 0][2]
    it = post.items
    assert it["flaw_rank"].tolist() == list(range(1, len(it) + 1))
    assert it["log_odds"].is_monotonic_decreasing
    assert np.allclose(it["posterior"], expit(it["log_odds"]))
    # the posteriors add up to the expected number of flawed items, per domain and in total
    sums = it.groupby("domain")["posterior"].sum()
    assert np.allclose(sums.reindex(post.domains["domain"]).to_numpy(), post.domains["expected_flawed"], rtol=1e-6)
    assert post.total["expected_flawed"] == pytest.approx(it["posterior"].sum(), rel=1e-6)


def test_honest_models_are_not_flagged(runs):
    flagged = [int(post.models["flagged"].sum()) for _, _, post in runs.values()]
    n = sum(len(post.models) for _, _, post in runs.values())
    assert sum(flagged) <= 0.05 * n, (flagged, n)


@pytest.mark.parametrize("n_models, n_domains, seed", [(10, 30, 3), (14, 57, 3), (120, 30, 5)])
def test_a_model_that_memorised_the_keys_is_flagged(n_models, n_domains, seed):
    table, _ = simulate_benchmark(n_models=n_models, n_domains=n_domains, flawed_share=0.08, memoriser=0.8, seed=seed)
    models = flaw.flaw_posterior(table).models.set_index("model")
    assert models.loc["model-000", "flagged"], models.head()
    assert models.loc["model-000", "agree"] > 2 * models.loc["model-000", "agree_peers"]
    assert models["flagged"].drop("model-000").sum() <= 0.05 * (n_models - 1) + 1


# --------------------------------------------------------------------------- MMLU-Pro


@pytest.fixture(scope="module")
def mmlu():
    from jagged.readers import items as items_module

    table = items_module.load_bundled_items().items
    items = pd.read_csv(TEST_DATA / "mmlu_pro_items.csv.gz")
    revised = {str(i) for i in set(items.loc[items["answer_key_differs_across_files"] == 1, "item_id"])
               - REVISED_OPTIONS}
    return table, flaw.flaw_posterior(table, fit_2pl(table)), revised


def within_domain_auc(score: pd.Series, domain: pd.Series, positives: set) -> float:
    """P(a positive item outranks a negative one of its domain), ties ½ (NaN without a pair); bench_flaw uses it too."""
    num = den = 0.0
    for _, part in score.groupby(domain):
        y = part.index.isin(list(positives))
        pos, neg = part.to_numpy()[y], part.to_numpy()[~y]
        num += (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
        den += len(pos) * len(neg)
    return num / den if den else float("nan")


def test_within_domain_auc_by_hand():
    score = pd.Series([3.0, 1.0, 2.0, 5.0, 4.0], index=list("abcde"))
    domain = pd.Series(["x", "x", "x", "y", "y"], index=list("abcde"))
    # x: a beats b and c (2 of 2); y: d beats e (1 of 1); c against a in x is not a revised pair
    assert within_domain_auc(score, domain, {"a", "d"}) == pytest.approx(1.0)
    assert within_domain_auc(score, domain, {"b", "e"}) == pytest.approx(0.0)


def test_revised_keys_rank_high_on_mmlu_pro(mmlu):
    _, post, revised = mmlu
    assert len(revised) == 31
    items = post.items.set_index(post.items["item"].astype(str))
    assert recall_and_auc(items["posterior"], np.asarray(sorted(revised), dtype=object))[1] > 0.88
    assert items.loc[sorted(revised), "flaw_rank"].median() < 0.1 * len(items)


@pytest.mark.xfail(strict=True, reason="measured: within-domain AUC of P(flawed) 0.921 against the retired classical "
                                       "score's 0.933 on MMLU-Pro's 31 revised keys (23 in math); the flaw model's "
                                       "Dirichlet concentration trades MMLU-Pro (0.934 at κ = 2) against the "
                                       "annotated-set class (κ = 0.8): see benchmarks/bench_flaw.py --part mmlu")
def test_posterior_ranks_revised_keys_within_domains_as_well_as_the_classical_score(mmlu):
    _, post, revised = mmlu
    items = post.items.set_index(post.items["item"].astype(str))
    assert within_domain_auc(items["log_odds"], items["domain"], revised) >= CLASSICAL_WITHIN_DOMAIN_AUC


def test_posterior_of_a_table_without_keys_names_no_answer():
    table, _ = simulate_benchmark(n_models=6, n_domains=3, per_domain=40, seed=8)
    post = flaw.flaw_posterior(table.drop(columns=["choice", "key"]))
    assert not post.uses_choices and (post.items["likely_key"] == "").all() and post.models.empty
