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


@st.composite
def counted_tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """A per-domain table with item counts (2–12 items, any number right, some cells missing), or the item-level
    table behind one (0/1 or partial credit): the inputs whose intervals the issue found outside their estimate."""
    m, d = draw(st.integers(2, 4)), draw(st.integers(3, 6))
    n = draw(hnp.arrays(np.int64, (m, d), elements=st.integers(2, 12)))
    right = np.minimum(draw(hnp.arrays(np.int64, (m, d), elements=st.integers(0, 12))), n)
    keep = draw(hnp.arrays(bool, (m, d), elements=st.booleans())) | (np.arange(d) < 3)[None, :]
    models, domains = [f"m{i}" for i in range(m)], [f"d{j}" for j in range(d)]
    if draw(st.booleans()):
        rows = [(models[i], domains[j], right[i, j] / n[i, j], n[i, j]) for i in range(m) for j in range(d)
                if keep[i, j]]
        frame = pd.DataFrame(rows, columns=["model", "domain", "score", "n_items"])
        return jagged.validate_scores(frame, "t", line_offset=None), None
    partial = draw(st.booleans())
    records = [(models[i], domains[j], f"{domains[j]}-q{q}", float(q < right[0, j]) * (0.5 if partial and q % 3 == 0
                                                                                        else 1.0))
               for i in range(m) for j in range(d) for q in range(n[0, j] + i % 2) if keep[i, j]]
    frame = pd.DataFrame(records, columns=["model", "domain", "item", "correct"])
    frame["correct"] = np.where(np.arange(len(frame)) % (m + 1) == 0, 1.0 - frame["correct"], frame["correct"])
    dataset = jagged.load(frame)
    return dataset.scores, dataset.items


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(counted_tables())
def test_every_estimate_lies_in_its_own_interval(case):
    """Issue 29: each <stat>_lo / <stat>_hi of the metrics table and of the glance contains the value printed with it
    (cv_error's the noise-corrected value), floors included, on every route of the bootstrap."""
    from jagged.analysis import Analysis, metrics_table
    from jagged.options import AnalysisOptions
    from jagged.readers.dataset import Dataset
    from jagged.stats.intervals import interval_triples, outside_intervals
    from jagged.views import glance

    scores, items = case
    dataset = Dataset(scores=scores, source="t", paths=[], format="long", items=items)
    options = AnalysisOptions(bootstrap=30, seed=3, profiles=("uniform", "items"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = metrics_table(dataset, options)      # its own check raises on a value outside its interval
        except JaggedInputError:                          # no model with 2 domains
            return
    pairs = {estimate for estimate, _, _ in interval_triples(table.columns)}
    assert {"cv_error_corrected", "macro_score", "dep_score", "wedge", "relative_jaggedness_corrected"} <= pairs
    assert outside_intervals(table).empty
    for estimate, lo, hi in interval_triples(table.columns):
        both = table[lo].notna() & table[estimate].notna()
        assert (table.loc[both, lo] <= table.loc[both, hi]).all()
        if estimate.endswith("_corrected"):               # a floored value: a floored interval
            assert (table.loc[both, lo] >= 0).all()
    analysis = Analysis(dataset=dataset, options=options)
    analysis.table = table
    findings = glance.glance(analysis, contributors=[("jaggedness", glance.jaggedness_findings),
                                                     ("profiles", glance.profiles_finding)])
    for f in findings:
        assert not (np.isfinite(f.lo) and not f.lo - 1e-9 <= f.value <= f.hi + 1e-9), f
