"""The jaggedness penalty against independent computations and hand-worked examples."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import BUNDLED
from hypothesis import given, settings
from hypothesis import strategies as st

import jagged
from jagged.errors import JaggedInputError, JaggedWarning
from jagged.stats.metrics import METRIC_COLUMNS, NOTE_FEW_DOMAINS, NOTE_NO_ERRORS


def _long(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = [(m, f"d{i}", s) for m, values in scores.items() for i, s in enumerate(values)]
    return jagged.validate_scores(pd.DataFrame(rows, columns=["model", "domain", "score"]))


def test_hand_worked_population_cv():
    """Scores (0.9, 0.8, 0.5): errors (0.1, 0.2, 0.5), mean 0.8/3 = 0.266667.

    Population variance: ((0.1-0.2667)^2 + (0.2-0.2667)^2 + (0.5-0.2667)^2) / 3
    = (0.027778 + 0.004444 + 0.054444) / 3 = 0.028889; sd 0.169967; CV 0.637377.
    With ddof=1 the variance would be 0.043333, sd 0.208167 and CV 0.780625.
    """
    table = jagged.jaggedness(_long({"m": [0.9, 0.8, 0.5]}))
    row = table.iloc[0]
    assert row["cv_error"] == pytest.approx(0.637377, abs=5e-7)
    assert abs(row["cv_error"] - 0.780625) > 0.1
    assert row["macro_score"] == pytest.approx(0.733333, abs=5e-7)
    assert row["mean_error"] == pytest.approx(0.266667, abs=5e-7)
    assert row["sd_error"] == pytest.approx(0.169967, abs=5e-7)
    assert row["n_domains"] == 3 and bool(row["complete"]) and row["note"] == ""


def test_columns_and_order():
    table = jagged.jaggedness(_long({"b": [0.5, 0.6], "a": [0.1, 0.9]}))
    assert tuple(table.columns) == METRIC_COLUMNS
    assert table["model"].tolist() == ["a", "b"]


def test_matches_scipy_variation_on_bundled_data():
    scores = jagged.load_scores(BUNDLED)
    table = jagged.jaggedness(scores).set_index("model")
    raw = pd.read_csv(BUNDLED)
    assert set(table.index) == set(raw["model"]) and len(table) == 29
    for model, group in raw.groupby("model"):
        errors = 1 - group["score"].to_numpy()
        assert table.loc[model, "cv_error"] == pytest.approx(scipy.stats.variation(errors, ddof=0), rel=1e-12)
        assert table.loc[model, "macro_score"] == pytest.approx(group["score"].mean(), rel=1e-12)
        assert table.loc[model, "n_domains"] == len(group)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=12), min_size=1, max_size=8))
def test_matches_scipy_variation_on_random_tables(matrix):
    scores = _long({f"m{i}": row for i, row in enumerate(matrix)})
    table = jagged.jaggedness(scores).set_index("model")
    for i, row in enumerate(matrix):
        errors = 1 - np.asarray(row)
        got = table.loc[f"m{i}", "cv_error"]
        if errors.mean() == 0:
            assert np.isnan(got) and table.loc[f"m{i}", "note"] == NOTE_NO_ERRORS
        else:
            assert got == pytest.approx(scipy.stats.variation(errors, ddof=0), rel=1e-9, abs=1e-12)


def test_cv_error_array_helper_agrees_with_scipy():
    rng = np.random.default_rng(1)
    scores = rng.uniform(0, 1, size=(5, 7))
    np.testing.assert_allclose(jagged.cv_error(scores, axis=1), scipy.stats.variation(1 - scores, axis=1))


def test_perfect_model_has_undefined_cv():
    table = jagged.jaggedness(_long({"perfect": [1.0, 1.0, 1.0], "other": [0.5, 0.7, 0.9]})).set_index("model")
    assert np.isnan(table.loc["perfect", "cv_error"])
    assert table.loc["perfect", "note"] == NOTE_NO_ERRORS
    assert table.loc["perfect", "mean_error"] == 0


def test_single_domain_model_warns_and_has_no_cv():
    scores = jagged.validate_scores(pd.DataFrame(
        {"model": ["a", "a", "b"], "domain": ["x", "y", "x"], "score": [0.5, 0.7, 0.6]}))
    with pytest.warns(JaggedWarning, match="'b' has fewer than 2 domains"):
        table = jagged.jaggedness(scores).set_index("model")
    assert np.isnan(table.loc["b", "cv_error"]) and table.loc["b", "note"] == NOTE_FEW_DOMAINS
    assert not table.loc["b", "complete"] and table.loc["a", "complete"]


def test_no_model_with_two_domains_is_an_error():
    scores = jagged.validate_scores(pd.DataFrame({"model": ["a", "b"], "domain": ["x", "y"], "score": [0.5, 0.6]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(JaggedInputError, match="no model has scores in at least 2 domains"):
            jagged.jaggedness(scores)


def test_nearly_equal_errors_stay_accurate():
    """Two-pass variance: a one-pass formula would lose these tiny deviations."""
    base = 0.3
    values = [base, base + 1e-9, base - 1e-9, base]
    table = jagged.jaggedness(_long({"m": values}))
    expected = scipy.stats.variation(1 - np.asarray(values), ddof=0)
    assert table["cv_error"].iloc[0] == pytest.approx(expected, rel=1e-6)


def test_row_order_does_not_change_the_numbers():
    """Grouped rows take the segment-sum path, shuffled rows the bincount path."""
    raw = pd.read_csv(BUNDLED)
    grouped = jagged.jaggedness(jagged.validate_scores(raw))
    shuffled = jagged.jaggedness(jagged.validate_scores(raw.sample(frac=1, random_state=3)))
    pd.testing.assert_frame_equal(grouped, shuffled, check_exact=False, rtol=1e-12)


def test_names_are_stripped_and_merged():
    scores = jagged.validate_scores(pd.DataFrame(
        {"model": [" a", "a ", "b"], "domain": ["x", "y ", "x"], "score": [0.5, 0.6, 0.7]}))
    assert sorted(scores["model"].astype(str).unique()) == ["a", "b"]
    with pytest.warns(JaggedWarning, match="'b' has fewer than 2 domains"):
        table = jagged.jaggedness(scores).set_index("model")
    assert table.loc["a", "n_domains"] == 2
