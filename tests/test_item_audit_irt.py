"""The item response model in the item audit (issue 19): IRT columns, flaw posterior ranking, abilities, limits.

The numbers are checked against independent calls of :func:`jagged.stats.irt.fit_2pl` and
:func:`jagged.stats.flaw.flaw_posterior` on the same table, and against the truth of
simulated tables with planted sign-flipped items (``tests/irt_simulation.py``).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_bad_input, run_cli
from irt_simulation import simulate

import jagged
from jagged.errors import JaggedInputError
from jagged.readers import items as items_module
from jagged.stats import item_audit as ia
from jagged.stats.flaw import flaw_posterior
from jagged.stats.irt import fit_2pl

IRT_NUMBERS = ("slope", "se_slope", "intercept", "se_intercept", "difficulty", "se_difficulty", "loading",
               "se_loading")


@pytest.fixture(scope="module")
def flipped() -> tuple[pd.DataFrame, pd.DataFrame, ia.ItemAudit]:
    """150 models × 240 items in 3 domains; the flawed items are sign-flipped (24 planted with seed 3)."""
    table, truth = simulate(n_models=150, n_items=240, n_domains=3, seed=3, kinds={"flip": 1.0},
                            prevalence=(3.0, 20.0))
    return table, truth, ia.audit_items(table)


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    """40 models × 90 items in 3 domains, with one item every model gets right and one every model gets wrong."""
    table, _ = simulate(n_models=40, n_items=90, n_domains=3, seed=5)
    right, wrong = table["item"] == "q00001", table["item"] == "q00002"
    table.loc[right, "correct"] = 1.0
    table.loc[right, "choice"] = table.loc[right, "key"]
    table.loc[wrong, "correct"] = 0.0
    table.loc[wrong, "choice"] = np.where(table.loc[wrong, "key"] == "A", "B", "A")
    return table


def test_planted_sign_flipped_items_are_flagged_and_ranked_first(flipped):
    _, truth, audit = flipped
    items = audit.items.merge(truth[["item", "flawed"]], on="item")
    planted = items["flawed"].to_numpy(dtype=bool)
    k = int(planted.sum())
    assert k == 24
    negative = items["flag_negative_loading"].fillna(False).to_numpy(dtype=bool)
    assert negative[planted].mean() >= 0.95 and negative[~planted].mean() <= 0.02
    # rows are ranked by the posterior: the first half of the planted count are all planted, most of the top k
    assert items["flaw_rank"].tolist() == list(range(1, len(items) + 1))
    assert planted[: k // 2].all() and planted[:k].mean() >= 0.8
    # the classical flags and their meaning are kept beside the IRT ones
    review = items[[f"flag_{f}" for f in ia.REVIEW_FLAGS]].fillna(False).to_numpy(dtype=bool).any(axis=1)
    assert (items["flagged"].to_numpy() == review).all()
    assert list(audit.items.columns) == list(ia.MODEL_AUDIT_COLUMNS)


def test_columns_equal_an_independent_fit_and_posterior(flipped):
    table, _, audit = flipped
    fit = fit_2pl(table)  # independent calls on the same table
    post = flaw_posterior(table, fit)
    items = audit.items.set_index("item")
    want = fit.items.set_index("item").loc[items.index]
    for column in IRT_NUMBERS:
        np.testing.assert_allclose(items[column], want[column], rtol=1e-9, atol=1e-12, err_msg=column)
    for name in ia.IRT_FLAGS:
        assert (items[f"flag_{name}"].fillna(False).to_numpy(dtype=bool) == want[f"flag_{name}"].to_numpy()).all()
    p = post.items.set_index("item").loc[items.index]
    np.testing.assert_allclose(items["posterior"], p["posterior"], rtol=1e-9, atol=1e-12)
    assert (items["flaw_rank"].to_numpy() == p["flaw_rank"].to_numpy()).all()
    # the loading is the normal-ogive loading of the slope (by hand)
    u = items["slope"] / 1.702
    np.testing.assert_allclose(items["loading"], u / np.sqrt(1 + u * u))
    # abilities: EAP and SD per model and domain, as the fit has them
    pd.testing.assert_frame_equal(audit.abilities.reset_index(drop=True), fit.abilities.reset_index(drop=True))
    assert set(audit.abilities["group"]) == set(table["domain"]) and len(audit.abilities) == 3 * 150


def test_precomputed_fit_and_flaws_are_used_not_recomputed(small, monkeypatch):
    fit = fit_2pl(small)
    flaws = flaw_posterior(small, fit)
    reference = ia.audit_items(small)

    def refuse(*args, **kwargs):
        raise AssertionError("recomputed")

    monkeypatch.setattr(ia, "fit_2pl", refuse)
    monkeypatch.setattr(ia, "flaw_posterior", refuse)
    given = ia.audit_items(small, fit=fit, flaws=flaws)
    assert given.fit is fit and given.flaws is flaws
    pd.testing.assert_frame_equal(given.items, reference.items)
    with pytest.raises(JaggedInputError, match="rest='domain'.*rest='test'"):
        ia.audit_items(small, rest="test", fit=fit, flaws=flaws)


def test_rest_test_fits_one_trait(small):
    whole = ia.audit_items(small, rest="test")
    assert set(whole.abilities["group"]) == {"test"} and len(whole.abilities) == 40
    assert whole.abilities["theta_sd"].gt(0).all()
    fit = fit_2pl(small, rest="test")
    items = whole.items.set_index("item")
    want = fit.items.set_index("item").loc[items.index]
    np.testing.assert_allclose(items["slope"], want["slope"], rtol=1e-9, equal_nan=True)
    by_domain = ia.audit_items(small).items.set_index("item").loc[items.index]
    assert not np.allclose(items["slope"], by_domain["slope"], equal_nan=True)  # the trait changed
    # the expected flawed items per domain are in the domain table either way
    assert {"expected_flawed", "expected_flawed_lower", "expected_flawed_upper"} <= set(ia.domain_flags(whole).columns)


def test_zero_variance_items_are_set_aside_with_their_flag(small):
    audit = ia.audit_items(small)
    items = audit.items.set_index("item")
    for item, said in (("q00001", "every model right"), ("q00002", "every model wrong")):
        row = items.loc[item]
        assert row["flag_uninformative"]  # the classical flag stays
        assert all(np.isnan(row[c]) for c in IRT_NUMBERS)  # no IRT numbers
        assert all(pd.isna(row[f"flag_{name}"]) for name in ia.IRT_FLAGS)
        assert said in row["note"] and "IRT: every model alike: set aside" in row["note"]
        assert np.isfinite(row["posterior"])  # the posterior still weighs them
    # every item: IRT numbers exactly where some models differ on it
    alike = items["flag_uninformative"].to_numpy(dtype=bool)
    assert (np.isfinite(items[list(IRT_NUMBERS)].to_numpy()).all(axis=1) == ~alike).all()
    assert (items["note"].str.contains("IRT: every model alike: set aside").to_numpy() == alike).all()


def test_expected_flawed_per_domain_with_its_interval(small):
    audit = ia.audit_items(small)
    domains = ia.domain_flags(audit).set_index("domain")
    by_domain = audit.items.groupby("domain")
    np.testing.assert_allclose(domains["expected_flawed"], by_domain["posterior"].sum().loc[domains.index], rtol=1e-6)
    p_visible = audit.flaws.items.groupby("domain")["p_visible"].sum().loc[domains.index]
    np.testing.assert_allclose(domains["visible"], p_visible, rtol=1e-6)
    for low, mid, high in (("visible_lower", "visible", "visible_upper"),
                           ("expected_flawed_lower", "expected_flawed", "expected_flawed_upper")):
        assert (domains[low] <= domains[mid] + 0.5).all() and (domains[mid] <= domains[high] + 0.5).all()
        assert (domains[low] == np.round(domains[low])).all() and (domains[high] <= domains["n_items"]).all()
    counts = ia.flag_counts(audit).set_index("flag")
    for name in ia.IRT_FLAGS:
        assert counts.loc[name, "n_items"] == int(audit.items[f"flag_{name}"].fillna(False).sum())
        assert not counts.loc[name, "review"]


def _big_parquet(tmp_path, monkeypatch) -> tuple[pd.DataFrame, str]:
    table, _ = simulate(n_models=12, n_items=60, n_domains=2, seed=2)
    path = tmp_path / "items.parquet"
    table.to_parquet(path)
    monkeypatch.setattr(items_module, "IN_MEMORY_MAX_ROWS", 100)  # the table has 720 rows: out of core
    return table, str(path)


def test_out_of_core_parquet_gets_the_classical_audit_and_a_note(tmp_path, monkeypatch):
    table, path = _big_parquet(tmp_path, monkeypatch)
    dataset = jagged.load(path)
    assert dataset.items is None
    audit = ia.audit_items(dataset)
    assert list(audit.items.columns) == list(ia.AUDIT_COLUMNS) and audit.fit is None and audit.flaws is None
    assert list(audit.items["item"]) == sorted(audit.items["item"], key=str)  # no ranking: by domain and item
    assert audit.abilities.empty and list(audit.abilities.columns) == ["model", "group", "n_items", "theta",
                                                                       "theta_sd"]
    note = audit.notes[-1]
    assert "needs the response matrix in memory" in note and "without P(flawed)" in note
    assert "\n" not in note
    assert "expected_flawed" not in ia.domain_flags(audit).columns
    # the command: exit 0, the classical columns, the note on stderr; --abilities stops with it (exit 2)
    code, out, err = run_cli("items", path)
    assert code == 0, err
    assert list(pd.read_csv(io.StringIO(out)).columns) == list(ia.AUDIT_COLUMNS)
    assert "Traceback" not in err and any(line.startswith("jagged: note: ") and "in memory" in line
                                          for line in err.splitlines())
    code, out, err = run_cli("items", path, "--abilities")
    errors = [line for line in err.splitlines() if line.startswith("jagged: error: ")]
    assert code == 2 and not out and "Traceback" not in err and len(errors) == 1
    assert "needs the response matrix in memory" in errors[0] and "classical" not in errors[0]


def test_a_matrix_over_the_budget_gets_the_classical_audit(small, monkeypatch):
    monkeypatch.setattr(ia, "IRT_MAX_CELLS", 40 * 90 - 1)
    audit = ia.audit_items(small)
    assert audit.fit is None and "flaw_rank" not in audit.items
    assert "40 × 90 response matrix (3,600 cells), above the in-memory budget of 3,599 cells" in audit.notes[-1]
    assert audit.notes[-1].endswith(ia.NO_MODEL)
    monkeypatch.setattr(ia, "IRT_MAX_CELLS", 40 * 90)
    assert ia.audit_items(small).fit is not None


def test_cli_csv_json_abilities_and_domain_tables(small, tmp_path):
    path = tmp_path / "items.csv"
    small.to_csv(path, index=False)
    code, out, err = run_cli("items", path)
    assert code == 0, err
    listing = pd.read_csv(io.StringIO(out))
    assert list(listing.columns) == [*ia.MODEL_AUDIT_COLUMNS, "top_models_chose"]  # no text columns in the table
    assert "expected flawed items" in err and "the most likely flawed first" in err
    audit = ia.audit_items(small)
    want = audit.items.set_index("item")
    got = listing.astype({"item": str}).set_index("item").loc[want.index]
    np.testing.assert_allclose(got["posterior"], want["posterior"], rtol=1e-9)
    np.testing.assert_allclose(got["slope"], want["slope"], rtol=1e-9, equal_nan=True)
    target = tmp_path / "items.json"
    code, _, err = run_cli("items", path, "--top", "5", "-o", target)
    assert code == 0, err
    records = json.loads(target.read_text())
    assert len(records) == 5 and list(records[0]) == [*ia.MODEL_AUDIT_COLUMNS, "top_models_chose"]
    assert [r["flaw_rank"] for r in records] == [1, 2, 3, 4, 5]
    code, out, err = run_cli("items", path, "--abilities", "--rest", "test")
    assert code == 0, err
    abilities = pd.read_csv(io.StringIO(out))
    assert list(abilities.columns) == ["model", "group", "n_items", "theta", "theta_sd"]
    assert set(abilities["group"]) == {"test"} and len(abilities) == 40
    code, out, err = run_cli("items", path, "--abilities")
    assert code == 0, err
    assert set(pd.read_csv(io.StringIO(out))["group"]) == set(small["domain"])
    code, out, err = run_cli("items", path, "--by-domain")
    assert code == 0, err
    domains = pd.read_csv(io.StringIO(out)).set_index("domain")
    expected = audit.flaws.domains.set_index("domain").loc[domains.index]
    np.testing.assert_allclose(domains["expected_flawed"], expected["expected_flawed"], rtol=1e-9)
    np.testing.assert_allclose(domains[["expected_flawed_lower", "expected_flawed_upper"]],
                               expected[["lower", "upper"]], rtol=1e-9, atol=1e-12)


def test_bad_input_is_still_one_line(small, tmp_path):
    path = tmp_path / "bad.csv"
    small.assign(correct=small["correct"].where(small.index != 7, 2.0)).to_csv(path, index=False)
    assert_bad_input("items", path, fragments=("correct",))
    assert_bad_input("items", path, "--abilities", fragments=("correct",))


def test_fewer_than_five_models_get_the_classical_audit_with_the_reason(tmp_path):
    """Below IRT_MIN_MODELS the posterior would be mostly its prior (1 model: 0.5 for every item): not fitted."""
    table, _ = simulate(n_models=4, n_items=60, n_domains=3, seed=8)
    audit = ia.audit_items(table)
    assert audit.fit is None and audit.flaws is None and "slope" not in audit.items.columns
    assert any("needs at least 5 models (4 here)" in note for note in audit.notes)
    assert "posterior" not in audit.items and any("P(flawed)" in note for note in audit.notes)
    five, _ = simulate(n_models=5, n_items=60, n_domains=3, seed=8)
    assert ia.audit_items(five).fit is not None                      # the bound is inclusive
    path = tmp_path / "four.csv"
    table.to_csv(path, index=False)
    assert not jagged.analyse(str(path), bootstrap=0).has_item_model  # the report leaves the section out
