"""Comparing two runs or releases model by model (jagged.stats.compare)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from compare_pairs import hand_pair, items_dataset, mmlu_pro_pair, scores_dataset
from scipy import stats as sps

from jagged.errors import JaggedInputError
from jagged.stats.compare import (
    METHOD_BINOMIAL,
    METHOD_DOMAINS,
    METHOD_ITEMS,
    added_removed,
    common_scope,
    compare,
    compare_models,
    kendall_tau_rows,
    paired_replicates,
    rank_changes,
    side_statistics,
)
from jagged.stats.deployment import deployment_metrics
from jagged.stats.metrics import jaggedness


def cv(scores):
    e = 1.0 - np.asarray(scores, dtype=float)
    return e.std() / e.mean()


@pytest.fixture(scope="module")
def hand():
    a, b = hand_pair()
    weights = pd.DataFrame([[0.5, 0.25, 0.25]], index=["p"], columns=["d1", "d2", "d3"])
    return a, b, weights


@pytest.fixture(scope="module")
def mmlu():
    pair = mmlu_pro_pair()
    return pair, compare(pair.a, pair.b, n_boot=400, seed=1)


# --------------------------------------------------------------------------- hand-worked, item level

# Common items of every model: i1 (d1), i3 i4 (d2), i5 i6 (d3); domain scores on them:
HAND_COMMON_A = {"m1": (1, 0.5, 0), "m2": (1, 1, 0.5), "m3": (0, 0.5, 1)}
HAND_COMMON_B = {"m1": (1, 1, 0.5), "m2": (1, 1, 0), "m3": (1, 1, 1)}
# Everything each side has: A adds i2 to d1, B adds i7 to d3.
HAND_ALL_A = {"m1": (1, 0.5, 0), "m2": (0.5, 1, 0.5), "m3": (0, 0.5, 1)}
HAND_ALL_B = {"m1": (1, 1, 2 / 3), "m2": (1, 1, 0), "m3": (1, 1, 2 / 3)}


def test_hand_models_like_for_like_and_whole_side(hand):
    a, b, _ = hand
    table = compare_models(a, b, n_boot=0).set_index("model")
    assert list(table.index) == ["m1", "m2", "m3"]
    assert table["n_domains"].tolist() == [3, 3, 3] and table["n_items"].tolist() == [5, 5, 5]
    for m in ("m1", "m2", "m3"):
        assert table.loc[m, "macro_score_a"] == pytest.approx(np.mean(HAND_COMMON_A[m]))
        assert table.loc[m, "macro_score_b"] == pytest.approx(np.mean(HAND_COMMON_B[m]))
        assert table.loc[m, "macro_score_all_a"] == pytest.approx(np.mean(HAND_ALL_A[m]))
        assert table.loc[m, "macro_score_all_b"] == pytest.approx(np.mean(HAND_ALL_B[m]))
        assert table.loc[m, "cv_error_a"] == pytest.approx(cv(HAND_COMMON_A[m]))
    # m1: e_A = (0, 1/2, 1): sd sqrt(1/6), mean 1/2 -> CV 0.8165; e_B = (0, 0, 1/2): sd sqrt(1/18), mean 1/6 -> 1.4142
    assert table.loc["m1", "cv_error_a"] == pytest.approx(np.sqrt(1 / 6) / 0.5)
    assert table.loc["m1", "cv_error_b"] == pytest.approx(np.sqrt(2))
    assert table.loc["m1", "cv_error_delta"] == pytest.approx(np.sqrt(2) - np.sqrt(2 / 3))
    np.testing.assert_allclose(table["macro_score_delta"], [1 / 3, -1 / 6, 1 / 2])
    # m3 has no error on the common items of B: CV undefined, with A's and B's notes kept apart
    assert np.isnan(table.loc["m3", "cv_error_b"]) and "B: no errors" in table.loc["m3", "note"]
    assert table["interval_method"].eq("").all() and table["macro_score_delta_lo"].isna().all()


def test_hand_profiles_give_dep_score_and_wedge_per_profile(hand):
    a, b, weights = hand
    table = compare_models(a, b, weights, n_boot=0).set_index(["model", "profile"])
    row = table.loc[("m1", "p")]
    # dep = 0.5 s1 + 0.25 s2 + 0.25 s3: A (1, .5, 0) -> 0.625; B (1, 1, .5) -> 0.875
    assert row["dep_score_a"] == pytest.approx(0.625) and row["dep_score_b"] == pytest.approx(0.875)
    assert row["wedge_a"] == pytest.approx(0.5 - 0.625) and row["wedge_b"] == pytest.approx(5 / 6 - 0.875)
    assert row["dep_score_delta"] == pytest.approx(0.25)
    # whole side B of m1: (1, 1, 2/3) -> dep 0.5 + 0.25 + 1/6
    assert row["dep_score_all_b"] == pytest.approx(0.5 + 0.25 + 1 / 6)
    bad = weights.drop(columns="d3")
    with pytest.raises(JaggedInputError, match="d3"):
        compare_models(a, b, bad, n_boot=0)


def test_hand_ranks_and_kendall_tau(hand):
    a, b, _ = hand
    table = compare_models(a, b, n_boot=0)
    ranks, summary = rank_changes(table, None)
    ranks = ranks.set_index("model")
    # A macro: m1 1/2, m2 5/6, m3 1/2 -> ranks 2, 1, 2; B: 5/6, 2/3, 1 -> ranks 2, 3, 1
    assert ranks.loc[["m1", "m2", "m3"], "rank_a"].tolist() == [2, 1, 2]
    assert ranks.loc[["m1", "m2", "m3"], "rank_b"].tolist() == [2, 3, 1]
    assert ranks.loc[["m1", "m2", "m3"], "rank_change"].tolist() == [0, -2, 1]
    # pairs: (m1, m2) discordant, (m1, m3) tied in A, (m2, m3) discordant: (0 - 2) / sqrt((3 - 1) * 3)
    assert summary.loc[0, "kendall_tau"] == pytest.approx(-2 / np.sqrt(6))
    expected = sps.kendalltau(table["macro_score_a"], table["macro_score_b"]).statistic
    assert summary.loc[0, "kendall_tau"] == pytest.approx(expected)
    assert not ranks["moved"].any() and np.isnan(summary.loc[0, "kendall_tau_lo"])


def test_identical_sides_have_zero_width_paired_intervals(hand):
    a, _, weights = hand
    table = compare_models(a, a, weights, n_boot=200, seed=4)
    for stat in ("macro_score", "dep_score", "wedge"):
        np.testing.assert_array_equal(table[f"{stat}_delta_lo"], 0.0)
        np.testing.assert_array_equal(table[f"{stat}_delta_hi"], 0.0)
    assert set(table["interval_method"]) == {METHOD_ITEMS}
    again = compare_models(a, a, weights, n_boot=200, seed=4)
    pd.testing.assert_frame_equal(table, again)


def test_added_and_removed_domains_and_models():
    a = scores_dataset([("m1", "d1", 0.8, 100), ("m1", "d2", 0.6, 100), ("m1", "d3", 0.5, 100),
                        ("m2", "d1", 0.7, 100), ("m2", "d2", 0.7, 100), ("m2", "d3", 0.4, 100),
                        ("m3", "d1", 0.2, 100), ("m3", "d2", 0.3, 100), ("m3", "d3", 0.4, 100)], "a.csv")
    b = scores_dataset([("m1", "d1", 0.9, 100), ("m1", "d2", 0.6, 100), ("m1", "d4", 0.1, 100),
                        ("m2", "d1", 0.6, 100), ("m2", "d2", 0.8, 100), ("m2", "d4", 0.2, 100),
                        ("m4", "d1", 0.5, 100), ("m4", "d2", 0.5, 100), ("m4", "d4", 0.5, 100)], "b.csv")
    changes = added_removed(a, b)
    assert changes.values.tolist() == [["domain", "d4", "b", "added"], ["domain", "d3", "a", "removed"],
                                       ["model", "m4", "b", "added"], ["model", "m3", "a", "removed"]]
    table = compare_models(a, b, n_boot=0).set_index("model")
    assert list(table.index) == ["m1", "m2"] and common_scope(a, b).kind == "domains"
    # like for like on d1, d2 only: m1 (0.8, 0.6) -> (0.9, 0.6); m2 (0.7, 0.7) -> (0.6, 0.8)
    assert table.loc["m1", "macro_score_a"] == pytest.approx(0.7) and table.loc["m1", "macro_score_b"] == 0.75
    assert table.loc["m2", "macro_score_delta"] == pytest.approx(0.0, abs=1e-15)
    assert table.loc["m2", "cv_error_a"] == 0.0 and table.loc["m2", "cv_error_b"] == pytest.approx(0.1 / 0.3)
    assert table.loc["m1", "macro_score_all_b"] == pytest.approx((0.9 + 0.6 + 0.1) / 3)
    assert table["n_items"].tolist() == [200, 200]


def test_a_weighted_domain_missing_from_the_shared_scope_leaves_dep_score_undefined():
    a = scores_dataset([(m, d, s, 100) for m, base in (("m1", 0.5), ("m2", 0.7))
                        for d, s in (("d1", base), ("d2", base + 0.1), ("d3", base - 0.2))], "a.csv")
    b = scores_dataset([(m, d, s, 100) for m, base in (("m1", 0.6), ("m2", 0.7))
                        for d, s in (("d1", base), ("d2", base + 0.1), ("d4", 0.3))], "b.csv")
    weights = pd.DataFrame([[0.4, 0.4, 0.2, 0.0], [0.5, 0.5, 0.0, 0.0]], index=["uses_d3", "d1_d2"],
                           columns=["d1", "d2", "d3", "d4"])
    table = compare_models(a, b, weights, n_boot=200).set_index(["profile", "model"])
    uses = table.loc["uses_d3"]
    assert uses[["dep_score_a", "dep_score_b", "dep_score_delta_lo", "wedge_delta_hi"]].isna().all().all()
    assert uses["note"].str.contains("no score for weighted domain").all()
    # m1 on everything A has: 0.4 * 0.5 + 0.4 * 0.6 + 0.2 * 0.3
    assert uses.loc["m1", "dep_score_all_a"] == pytest.approx(0.5)
    both = table.loc["d1_d2"]
    # on d1, d2 the weights equal 1/D: dep = macro, wedge = 0; m1 moves from 0.55 to 0.65
    assert both.loc["m1", "dep_score_delta"] == pytest.approx(0.1) and both.loc["m1", "wedge_a"] == pytest.approx(0)
    assert both.loc["m1", "dep_score_delta_lo"] < 0.1 < both.loc["m1", "dep_score_delta_hi"]
    with pytest.raises(JaggedInputError, match="d4"):
        compare_models(a, b, weights.drop(columns="d4"), n_boot=0)


def test_binomial_intervals_without_items_match_the_normal_approximation():
    rows_a, rows_b = [], []
    for m, base in (("m1", 0.5), ("m2", 0.6), ("m3", 0.7)):
        for k, d in enumerate(("d1", "d2", "d3")):
            rows_a.append((m, d, base + 0.05 * k, 400))
            rows_b.append((m, d, base + 0.05 * k + 0.02, 900))
    a, b = scores_dataset(rows_a, "a.csv"), scores_dataset(rows_b, "b.csv")
    table = compare_models(a, b, n_boot=4000, seed=2).set_index("model")
    assert set(table["interval_method"]) == {METHOD_BINOMIAL}
    for m, base in (("m1", 0.5), ("m2", 0.6), ("m3", 0.7)):
        s = base + 0.05 * np.arange(3)
        sd = np.sqrt((s * (1 - s) / 400 + (s + 0.02) * (1 - s - 0.02) / 900).sum()) / 3  # independent sides
        width = table.loc[m, "macro_score_delta_hi"] - table.loc[m, "macro_score_delta_lo"]
        assert width == pytest.approx(2 * 1.959964 * sd, rel=0.08)
    no_n = scores_dataset([(m, d, s, np.nan) for m, d, s, _ in rows_a], "c.csv")
    table = compare_models(no_n, b, n_boot=50).set_index("model")
    assert table["macro_score_delta_lo"].isna().all() and table["note"].str.contains("n_items unknown").all()
    ranks, summary = rank_changes(table.reset_index(), paired_replicates(common_scope(no_n, b), n_boot=50))
    assert summary.loc[0, "interval_method"] == METHOD_DOMAINS and ranks["rank_a_lo"].notna().all()


def test_no_common_model_is_an_input_error(hand):
    a, _, _ = hand
    other = items_dataset([("x", "d1", "i1", 1), ("x", "d2", "i3", 0)], "other")
    with pytest.raises(JaggedInputError, match="no model in common"):
        compare(a, other)


# --------------------------------------------------------------------------- ranks beyond noise

def simulated_runs(accuracy_a, accuracy_b, n_items=3000, seed=0):
    rng = np.random.default_rng(seed)
    item = np.arange(n_items)

    def run(acc):
        return pd.concat([pd.DataFrame({"model": f"m{k}", "domain": (item % 3).astype(str), "item": item.astype(str),
                                        "correct": (rng.uniform(size=n_items) < p).astype(float)})
                          for k, p in enumerate(acc)])

    return (items_dataset(run(accuracy_a).values.tolist(), "run_a"),
            items_dataset(run(accuracy_b).values.tolist(), "run_b"))


def test_a_model_that_overtakes_two_others_moved_beyond_noise():
    a, b = simulated_runs([0.3, 0.4, 0.5, 0.6, 0.7], [0.55, 0.4, 0.5, 0.6, 0.7])
    result = compare(a, b, n_boot=300, seed=5)
    ranks = result.ranks.set_index("model")
    assert ranks.loc["m0", "rank_change"] == 2
    assert set(ranks.index[ranks["moved"]]) == {"m0", "m1", "m2"}
    assert ranks.loc[["m3", "m4"], ["rank_change_lo", "rank_change_hi"]].eq(0).all().all()
    bounds = ranks[["rank_a_lo", "rank_a_hi", "rank_b_lo", "rank_b_hi", "rank_change_lo", "rank_change_hi"]]
    assert (bounds % 1 == 0).all().all() and (ranks["rank_a_lo"] <= ranks["rank_a"]).all()
    summary = result.rank_summary.iloc[0]
    assert summary["n_moved"] == 3 and summary["kendall_tau_lo"] <= summary["kendall_tau"] <= summary["kendall_tau_hi"]


def test_repeated_runs_give_a_noise_floor_and_flag_real_changes():
    a, b = simulated_runs([0.3, 0.4, 0.5, 0.6, 0.7], [0.3, 0.4, 0.5, 0.6, 0.8], seed=3)
    result = compare(a, b, n_boot=0, repeats=(a, b))
    floor = result.floor.iloc[0]
    # two independent runs of p = 0.5 on 3 x 1000 items: Var(Δ) = 2 p (1 - p) / 3000 for that model
    assert 0.008 < floor["noise_floor"] < 0.015
    beyond = result.models.set_index("model")["beyond_run_noise"]
    assert beyond["m4"] and beyond.sum() <= 2


def test_replicate_statistics_equal_the_single_dataset_functions():
    rng = np.random.default_rng(2)
    s = rng.uniform(0.2, 0.9, size=(6, 4))
    s[1, 3] = np.nan  # a model without d3: no dep_score where d3 is weighted
    w = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0]])
    domains, models = ["d0", "d1", "d2", "d3"], [f"m{k}" for k in range(6)]
    long = pd.DataFrame([(models[i], domains[j], s[i, j]) for i in range(6) for j in range(4) if not np.isnan(s[i, j])],
                        columns=["model", "domain", "score"])
    got = side_statistics(s, w)
    np.testing.assert_allclose(got["macro_score"], jaggedness(long)["macro_score"], rtol=1e-12)
    np.testing.assert_allclose(got["cv_error"], jaggedness(long)["cv_error"], rtol=1e-12)
    dep = deployment_metrics(long, pd.DataFrame(w, index=["p", "q"], columns=domains))
    for k, profile in enumerate(("p", "q")):
        rows = dep[dep["profile"] == profile]
        np.testing.assert_allclose(got["dep_score"][:, k], rows["dep_score"], rtol=1e-12)
        np.testing.assert_allclose(got["wedge"][:, k], rows["wedge"], rtol=1e-9, atol=1e-15)


def test_kendall_tau_rows_equals_scipy_row_by_row():
    rng = np.random.default_rng(8)
    x = rng.integers(0, 5, size=(40, 9)).astype(float)
    y = x + rng.integers(-2, 3, size=x.shape)
    x[3, 2] = np.nan
    y[7, 0] = np.nan
    got = kendall_tau_rows(x, y)
    for i in range(len(x)):
        keep = ~(np.isnan(x[i]) | np.isnan(y[i]))
        assert got[i] == pytest.approx(sps.kendalltau(x[i, keep], y[i, keep]).statistic, abs=1e-12)


# --------------------------------------------------------------------------- MMLU-Pro releases

def test_mmlu_like_for_like_uses_only_the_common_items(mmlu):
    pair, result = mmlu
    models = result.models.set_index("model")
    assert result.scope == "items" and len(models) == 27
    raw = pair.raw
    common = raw[~raw["item"].isin(pair.added | pair.removed)]
    from compare_pairs import release_keys
    old, new = release_keys(raw)
    for key, column in ((old, "macro_score_a"), (new, "macro_score_b")):
        sub = common[common["model"] == "Llama-2-70b-hf"]
        pred = sub["pred"].to_numpy(dtype=object)
        if column.endswith("_b"):
            pred = np.where(sub["item"].isin(pair.easier), sub["item"].map(new), pred)
        right = pred == sub["item"].map(key).to_numpy(dtype=object)
        expected = pd.Series(right, index=sub["domain"]).groupby(level=0).mean().mean()
        assert models.loc["Llama-2-70b-hf", column] == pytest.approx(expected, abs=1e-15)
    whole = jaggedness(pair.a.scores).set_index("model")
    np.testing.assert_allclose(models["macro_score_all_a"], whole["macro_score"].reindex(models.index), atol=1e-15)
    np.testing.assert_allclose(models["cv_error_all_a"], whole["cv_error"].reindex(models.index), atol=1e-15)
    assert (models["macro_score_delta"] > 0).all()  # re-keying and the easier items only add right answers


def test_mmlu_paired_interval_has_the_width_of_the_paired_normal_approximation(mmlu):
    pair, result = mmlu
    models = result.models.set_index("model")
    paired = common_scope(pair.a, pair.b).paired
    delta = paired.assign(d=paired["correct_b"] - paired["correct_a"])
    cells = delta.groupby(["model", "domain"])["d"].agg(lambda d: d.var(ddof=0) / len(d))
    sd = np.sqrt(cells.groupby(level="model").sum()) / 14
    for model in ("Llama-2-70b-hf", "Meta-Llama-3-70B", "gemma-7b"):
        width = models.loc[model, "macro_score_delta_hi"] - models.loc[model, "macro_score_delta_lo"]
        assert width == pytest.approx(2 * 1.959964 * sd[model], rel=0.2)
        assert models.loc[model, "macro_score_delta_lo"] > 0


def test_mmlu_rank_summary_and_rescoring(mmlu):
    pair, result = mmlu
    models = result.models
    tau = sps.kendalltau(models["macro_score_a"], models["macro_score_b"]).statistic
    assert result.rank_summary.loc[0, "kendall_tau"] == pytest.approx(tau)
    assert result.rank_summary.loc[0, "n_moved"] == 0
    assert result.rescoring is not None and len(result.rescoring) == 28
    assert set(result.changes["name"]) == {"jamba-1.5-large", "Yi-6B"}
    assert (result.ledger["change"] == "key_changed").sum() == 33


def test_no_bootstrap_means_no_delta_intervals():
    """compare(n_boot=0) asks for no intervals: every *_delta_lo/_hi is empty, the deltas are not."""
    a, b = hand_pair()
    models = compare(a, b, n_boot=0).models
    bounds = [c for c in models.columns if c.endswith(("_delta_lo", "_delta_hi"))]
    assert bounds and models[bounds].isna().all().all()
    assert models["macro_score_delta"].notna().all()
