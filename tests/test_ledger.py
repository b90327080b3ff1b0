"""The item ledger, key re-scoring and run-to-run noise (jagged.stats.ledger)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from compare_pairs import DATA, bundled_file_split, hand_pair, mmlu_pro_pair, release_keys
from scipy import stats as sps
from statsmodels.stats.proportion import proportions_ztest

from jagged.errors import JaggedInputError
from jagged.stats.ledger import (
    item_ledger,
    item_status,
    noise_floor,
    paired_items,
    rescore_by_domain,
    rescore_by_model,
    run_noise,
)


@pytest.fixture(scope="module")
def mmlu():
    return mmlu_pro_pair()


@pytest.fixture(scope="module")
def mmlu_ledger(mmlu):
    return item_ledger(mmlu.a.items, mmlu.b.items)


# --------------------------------------------------------------------------- hand-worked

def test_hand_ledger_names_the_removed_added_and_rekeyed_items():
    a, b = hand_pair()
    ledger = item_ledger(a.items, b.items)
    assert dict(zip(ledger["item"], ledger["change"])) == {"i7": "added", "i2": "removed", "i4": "key_changed"}
    row = ledger.set_index("item").loc["i4"]
    assert (row["key_a"], row["key_b"]) == ("A", "B")
    # i4: A right/wrong (m1 0, m2 1, m3 0), B all right: u = 2 up, v = 0 down,
    # p = 2 * P(Bin(2, 1/2) <= 0) = 2 * 1/4
    assert row["share_a"] == pytest.approx(1 / 3) and row["share_b"] == pytest.approx(1.0)
    assert row["p_value"] == pytest.approx(0.5)
    # five tested items with p = (1, 1, 0.5, 1, 1): q of 0.5 is min(0.5*5/1, 1*5/2, ..., 1) -> 1
    assert row["q_value"] == pytest.approx(1.0)
    assert ledger.set_index("item").loc["i7", "key_b"] == "A" and pd.isna(ledger.set_index("item").loc["i7", "p_value"])


def test_hand_status_counts_and_unchanged_items():
    a, b = hand_pair()
    status = item_status(a.items, b.items).set_index("item")
    assert list(status.index) == ["i1", "i2", "i3", "i4", "i5", "i6", "i7"]
    assert status.loc["i3", "change"] == "" and status.loc["i3", "p_value"] == 1.0
    assert status.loc["i1", ["n_models_a", "n_models_b", "n_paired"]].tolist() == [3, 3, 3]
    # i5: A (0, 1, 1), B (0, 0, 1): one down, none up -> p = 2 * P(Bin(1, 1/2) <= 0) = 1
    assert status.loc["i5", "share_delta"] == pytest.approx(-1 / 3) and status.loc["i5", "p_value"] == 1.0


def test_unpaired_items_use_the_two_proportion_z_test():
    rows_a = [(f"m{k}", "d", "u", 1) for k in range(4)] + [(f"m{k}", "d", "v", k % 2) for k in range(4)]
    rows_b = [(f"n{k}", "d", "u", 0) for k in range(4)] + [(f"n{k}", "d", "v", 1) for k in range(4)]
    cols = ["model", "domain", "item", "correct"]
    status = item_status(pd.DataFrame(rows_a, columns=cols), pd.DataFrame(rows_b, columns=cols)).set_index("item")
    for item, counts in (("u", [4, 0]), ("v", [2, 4])):
        _, expected = proportions_ztest(counts, [4, 4])
        assert status.loc[item, "p_value"] == pytest.approx(expected, rel=1e-12)
        assert status.loc[item, "n_paired"] == 0 and status.loc[item, "test"].startswith("two-proportion")
    assert status.loc["u", "p_value"] == pytest.approx(2 * sps.norm.sf(1 / np.sqrt(0.5 * 0.5 * 0.5)))


def test_text_changes_need_a_text_column_on_both_sides():
    cols = ["model", "domain", "item", "correct", "text"]
    a = pd.DataFrame([("m", "d", "x", 1, "What is 2+2?"), ("m", "d", "y", 1, "Same")], columns=cols)
    b = pd.DataFrame([("m", "d", "x", 1, "What is 2 + 2?"), ("m", "d", "y", 1, " Same ")], columns=cols)
    ledger = item_ledger(a, b)
    assert ledger[["item", "change", "text_a", "text_b"]].values.tolist() == [
        ["x", "text_changed", "What is 2+2?", "What is 2 + 2?"]]
    assert item_ledger(a.drop(columns="text"), b).empty


def test_rescoring_applies_the_new_key_to_the_recorded_choice():
    a, b = hand_pair()
    by_domain = rescore_by_domain(a.items, item_ledger(a.items, b.items)).set_index(["model", "domain"])
    # i4's key A -> B: m1 chose B (wrong -> right), m2 chose A (right -> wrong), m3 chose C (stays wrong)
    assert by_domain.loc[("m1", "d2"), ["score_before", "score_after", "n_gained"]].tolist() == [0.5, 1.0, 1]
    assert by_domain.loc[("m2", "d2"), ["score_before", "score_after", "n_lost"]].tolist() == [1.0, 0.5, 1]
    assert by_domain.loc[("m3", "d2"), "score_delta"] == 0.0
    assert by_domain["n_rescored"].sum() == 3
    by_model = rescore_by_model(by_domain.reset_index()).set_index("model")
    np.testing.assert_allclose(by_model["macro_score_delta"], [1 / 6, -1 / 6, 0.0])
    # m1 after: d1 = 1, d2 = 1, d3 = 0 -> e = (0, 0, 1): mean 1/3, population sd sqrt(2)/3, CV sqrt(2)
    assert by_model.loc["m1", "cv_error_after"] == pytest.approx(np.sqrt(2))
    with pytest.raises(JaggedInputError, match="choice"):
        rescore_by_domain(a.items.drop(columns="choice"), pd.Series({"i4": "B"}))


def test_run_noise_by_hand():
    a, b = hand_pair()
    runs = run_noise(a.items, b.items).set_index("model")
    # m1 on i1, i3, i4, i5, i6: flips on i4 (d2, n=2) and i6 (d3, n=2):
    # Var = (1/3^2) (0 + 1/2^2 + 1/2^2) = 1/18
    assert runs.loc["m1", ["n_items", "n_flips", "n_domains"]].tolist() == [5, 2, 3]
    assert runs.loc["m1", "macro_delta_sd"] == pytest.approx(np.sqrt(1 / 18))
    assert runs.loc["m1", "macro_score_delta"] == pytest.approx(1 / 3)
    floor = noise_floor(runs.reset_index(), z=2.0).iloc[0]
    expected = np.sqrt(np.mean(runs["macro_delta_sd"] ** 2))
    assert floor["noise_floor"] == pytest.approx(expected)
    assert floor["min_detectable_difference"] == pytest.approx(2 * expected)
    assert floor["flip_share"] == pytest.approx(runs["n_flips"].sum() / 15)


def test_run_noise_floor_matches_simulated_repeats():
    """Two independent runs of 300 models: the floor recovers the known sd of the macro difference."""
    rng = np.random.default_rng(11)
    n_models, per_domain, domains = 300, 60, 3
    p = rng.uniform(0.1, 0.9, size=(n_models, per_domain * domains))
    item = np.tile(np.arange(per_domain * domains), n_models)
    frame = pd.DataFrame({"model": np.repeat([f"m{k}" for k in range(n_models)], per_domain * domains),
                          "item": item.astype(str), "domain": (item // per_domain).astype(str)})
    run1 = frame.assign(correct=(rng.uniform(size=p.shape) < p).ravel().astype(float))
    run2 = frame.assign(correct=(rng.uniform(size=p.shape) < p).ravel().astype(float))
    floor = noise_floor(run_noise(run1, run2)).iloc[0]
    # Var(Δ_m) = (1/D²) Σ_d (1/n²) Σ_i 2 p_i (1 - p_i), averaged over the models
    truth = np.sqrt(np.mean((2 * p * (1 - p)).sum(axis=1) / (domains ** 2 * per_domain ** 2)))
    assert floor["noise_floor"] == pytest.approx(truth, rel=0.03)
    assert floor["macro_delta_rms"] == pytest.approx(truth, rel=0.12)


def test_paired_items_drop_items_that_changed_domain():
    cols = ["model", "domain", "item", "correct"]
    a = pd.DataFrame([("m", "d1", "x", 1), ("m", "d1", "y", 0)], columns=cols)
    b = pd.DataFrame([("m", "d1", "x", 0), ("m", "d2", "y", 0)], columns=cols)
    assert paired_items(a, b)[["item", "correct_a", "correct_b"]].values.tolist() == [["x", 1, 0]]
    with pytest.raises(JaggedInputError, match="share no"):
        run_noise(a[a["item"] == "y"], b)


# --------------------------------------------------------------------------- MMLU-Pro releases

def test_mmlu_key_changes_are_exactly_the_items_whose_key_differs(mmlu, mmlu_ledger):
    items = pd.read_csv(DATA / "mmlu_pro_items.csv.gz")
    flagged = set(items.loc[items["answer_key_differs_across_files"] == 1, "item_id"].astype(str))
    keyed = mmlu_ledger[mmlu_ledger["change"] == "key_changed"]
    assert len(flagged) == 33 and set(keyed["item"]) == flagged == mmlu.key_changed
    raw = mmlu.raw
    gemini = raw[raw["model"] == "gemini-1.5-pro-002"].set_index("item")["answer"]
    llama = raw[raw["model"] == "Llama-2-7b-hf"].set_index("item")["answer"]
    assert (keyed.set_index("item")["key_b"] == gemini.reindex(keyed["item"])).all()
    assert (keyed.set_index("item")["key_a"] == llama.reindex(keyed["item"])).all()


def test_mmlu_added_removed_and_moved_items(mmlu, mmlu_ledger):
    by_change = mmlu_ledger.groupby("change")["item"].apply(set)
    assert by_change["added"] == mmlu.added and by_change["removed"] == mmlu.removed
    assert by_change["difficulty_moved"] == mmlu.easier and len(mmlu.easier) == 10
    moved = mmlu_ledger[mmlu_ledger["changes"].str.contains("difficulty_moved")]
    assert (moved["q_value"] < 0.05).all()
    assert set(moved["item"]) - mmlu.easier <= mmlu.key_changed  # only a key change moves other items
    assert set(mmlu_ledger["change"]) == {"added", "removed", "key_changed", "difficulty_moved"}


def test_mmlu_rescoring_equals_scoring_the_raw_choices_against_the_new_keys(mmlu, mmlu_ledger):
    by_domain = rescore_by_domain(mmlu.a.items, mmlu_ledger)
    raw = mmlu.raw[mmlu.raw["item"].isin(set(mmlu.a.items["item"])) & (mmlu.raw["model"] != "jamba-1.5-large")]
    old, new = release_keys(mmlu.raw)
    key = raw["item"].map(old).where(~raw["item"].isin(mmlu.key_changed), raw["item"].map(new))
    expected = raw.assign(c=(raw["pred"].to_numpy(dtype=object) == key.to_numpy(dtype=object))
                          ).groupby(["model", "domain"])["c"].mean()
    got = by_domain.set_index(["model", "domain"])["score_after"]
    np.testing.assert_allclose(got.to_numpy(), expected.reindex(got.index).to_numpy(), rtol=0, atol=1e-15)
    before = mmlu.a.scores.astype({"model": str, "domain": str}).set_index(["model", "domain"])["score"]
    np.testing.assert_allclose(by_domain["score_before"], before.reindex(got.index).to_numpy(), atol=1e-15)
    assert (by_domain.groupby("model")["n_rescored"].sum() <= 33).all()


def test_bundled_file_split_shows_the_31_visible_key_changes():
    older, newer = bundled_file_split()
    ledger = item_ledger(older, newer)
    items = pd.read_csv(DATA / "mmlu_pro_items.csv.gz")
    flagged = set(items.loc[items["answer_key_differs_across_files"] == 1, "item_id"].astype(str))
    keyed = set(ledger.loc[ledger["change"] == "key_changed", "item"])
    assert keyed == flagged - {"3983", "8410"} and len(keyed) == 31
    assert (ledger["test"].isin(["", "two-proportion z-test (no model answered on both sides)"])).all()


def test_bad_alpha_is_an_input_error():
    a, b = hand_pair()
    with pytest.raises(JaggedInputError, match="alpha"):
        item_status(a.items, b.items, alpha=1.5)
