"""Identities that must hold on any input, checked with hypothesis over extreme inputs.

Scores 0, 1 and tiny (5e-324, 1e-300, 1 − 2⁻⁵³), weights from 1e-300 to the largest float,
2 to 1,000 domains, models without errors and a single domain. The references are
independent: exact rational arithmetic (``fractions.Fraction`` of the very floats the
functions receive) for the weights and the wedge, ``scipy.stats.variation`` for the CV.
One fixed settings profile (:data:`PROPERTIES`: derandomised, no deadline, a modest number of
examples) keeps the module fast and its runs reproducible.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jagged
from jagged.errors import JaggedInputError
from jagged.stats.weights import normalise_weights

PROPERTIES = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EPS = np.finfo(float).eps
LARGEST = float(np.finfo(float).max)

score_values = st.one_of(st.sampled_from([0.0, 1.0, 5e-324, 1e-300, 1e-16, 1.0 - 2.0 ** -53, 0.5]),
                         st.floats(0.0, 1.0, allow_nan=False))
weight_values = st.one_of(st.sampled_from([0.0, 1e-300, 1e-200, 1.0, 1e300, 1e308, LARGEST]),
                          st.floats(1e-300, LARGEST, allow_nan=False, allow_infinity=False))
domains = st.one_of(st.integers(2, 12), st.integers(13, 1000))


@st.composite
def tables(draw: st.DrawFn, min_domains: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(scores M × D, raw weights D): 1–3 models, some of them without errors."""
    d = draw(st.integers(min_domains, 12) | st.integers(max(min_domains, 13), 1000))
    m = draw(st.integers(1, 3))
    scores = draw(hnp.arrays(float, (m, d), elements=score_values))
    if draw(st.booleans()):
        scores[0] = 1.0                                    # a model with no errors
    raw = draw(hnp.arrays(float, d, elements=weight_values))
    assume(raw.max() > 0)
    return scores, raw


def long_table(scores: np.ndarray) -> pd.DataFrame:
    m, d = scores.shape
    frame = pd.DataFrame({"model": np.repeat([f"m{i}" for i in range(m)], d),
                          "domain": np.tile([f"d{j:04d}" for j in range(d)], m), "score": scores.ravel()})
    return jagged.validate_scores(frame)


def weight_frame(rows: dict[str, np.ndarray], d: int) -> pd.DataFrame:
    return pd.DataFrame(np.vstack(list(rows.values())), index=list(rows), columns=[f"d{j:04d}" for j in range(d)])


def exact_d_cov(w: np.ndarray, e: np.ndarray) -> Fraction:
    """D · Cov_pop(w, e) = Σ_d (w_d − w̄)(e_d − ē), exactly, for the given floats."""
    wf, ef = [Fraction(float(x)) for x in w], [Fraction(float(x)) for x in e]
    w_bar, e_bar = sum(wf) / len(wf), sum(ef) / len(ef)
    return sum((a - w_bar) * (b - e_bar) for a, b in zip(wf, ef))


@PROPERTIES
@given(hnp.arrays(float, st.tuples(st.integers(1, 3), st.integers(1, 1000)), elements=weight_values))
def test_normalised_weights_are_finite_non_negative_sum_to_one_and_keep_the_proportions(raw):
    assume((raw.max(axis=1) > 0).all())
    w = normalise_weights(raw, [f"p{i}" for i in range(len(raw))])
    assert np.isfinite(w).all() and (w >= 0).all()
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=0, atol=raw.shape[1] * 2 * EPS)
    for row, got in zip(raw, w):
        exact = [Fraction(float(x)) for x in row]
        total = sum(exact)
        visible = row >= row.max() * 1e-290                # far below the largest, a weight may underflow to 0
        want = np.array([float(x / total) for x in exact])
        np.testing.assert_allclose(got[visible], want[visible], rtol=1e-12, atol=0)
        assert (got[~visible] <= 1e-280).all()


@PROPERTIES
@given(tables())
def test_wedge_identities_hold_for_extreme_scores_and_weights(case):
    scores, raw = case
    m, d = scores.shape
    w = normalise_weights(raw[None, :], ["p"])[0]
    table = jagged.deployment_metrics(long_table(scores), weight_frame({"p": w}, d)).set_index("model")
    for i in range(m):
        s = scores[i]
        e = 1.0 - s
        row = table.loc[f"m{i}"]
        bound, wedge = row["wedge_bound"], row["wedge"]
        assert abs(wedge) <= bound * (1 + 1e-9) + 1e-14, (wedge, bound)
        reference = float(exact_d_cov(w, e))
        assert abs(wedge - reference) <= 1e-9 * (abs(reference) + bound) + 1e-14, (wedge, reference)
        assert s.min() - 1e-12 <= row["dep_score"] <= s.max() + 1e-12
        assert abs(wedge - (s.mean() - row["dep_score"])) <= 1e-12
        corr = row["exposure_error_corr"]
        assert np.isnan(corr) or -1.0 <= corr <= 1.0
        if np.isfinite(corr):
            assert abs(corr * bound - wedge) <= 1e-9 * bound + 1e-14


@PROPERTIES
@given(domains, st.integers(1, 3), weight_values.filter(lambda v: v > 0), st.data())
def test_uniform_weights_of_any_size_give_wedge_exactly_zero(d, m, value, data):
    scores = data.draw(hnp.arrays(float, (m, d), elements=score_values))
    w = normalise_weights(np.full((1, d), value), ["flat"])
    assert (w == 1.0 / d).all()
    table = jagged.deployment_metrics(long_table(scores), weight_frame({"flat": w[0]}, d)).set_index("model")
    assert (table["wedge"] == 0.0).all() and (table["wedge_bound"] == 0.0).all()
    np.testing.assert_allclose(table.loc[[f"m{i}" for i in range(m)], "dep_score"], scores.mean(axis=1),
                               rtol=0, atol=1e-12)


@PROPERTIES
@given(tables())
def test_cv_error_is_the_population_coefficient_of_variation(case):
    scores, _ = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = jagged.jaggedness(long_table(scores)).set_index("model")
    for i, s in enumerate(scores):
        e = 1.0 - s
        row = table.loc[f"m{i}"]
        if e.mean() == 0:
            assert np.isnan(row["cv_error"]) and row["note"] == "no errors: CV undefined"
            continue
        with np.errstate(all="ignore"):
            reference = scipy.stats.variation(e)            # ddof = 0
        # rounding of the two-pass sd: a few ulps of the largest error, relative to the mean error
        slack = 64 * EPS * e.max() / e.mean()
        assert abs(row["cv_error"] - reference) <= 1e-9 * reference + slack, (row["cv_error"], reference)
        assert row["sd_error"] == pytest.approx(np.std(e), rel=1e-9, abs=64 * EPS * e.max())


@PROPERTIES
@given(st.lists(score_values, min_size=1, max_size=3), weight_values.filter(lambda v: v > 0))
def test_one_domain_has_no_cv_and_no_wedge(scores, value):
    table = long_table(np.array(scores)[:, None])
    with pytest.raises(JaggedInputError, match="at least 2 domains"):
        jagged.jaggedness(table)
    dep = jagged.deployment_metrics(table, weight_frame({"p": normalise_weights(np.array([[value]]), ["p"])[0]}, 1))
    assert (dep["wedge"] == 0.0).all() and (dep["wedge_bound"] == 0.0).all()
    np.testing.assert_array_equal(dep["dep_score"], scores)
